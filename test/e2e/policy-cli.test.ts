/**
 * Operator policy in Cedar through the real CLI (PC8, PC9, PC11): `keel run` decides a run's calls
 * with the config's policy file (a forbid before the handler, an `@ask` card, the trace naming the
 * policies), and `keel serve` refuses to start on a file that does not check, naming file:line:col.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { calls, json, keel, script, tempHome } from '../support/helpers.js';
import { PAYMENTS, POLICY } from '../support/policy.js';

function home(policy = POLICY): { home: string; env: Record<string, string> } {
  const dir = tempHome('keel-e2e-policy-');
  writeFileSync(join(dir, 'policy.cedar'), policy);
  writeFileSync(join(dir, 'config.yaml'), 'policy_file: policy.cedar\n');
  return { home: dir, env: { KEEL_HOME: dir } };
}

type Step = { call_id: string; outcome: string; policy?: string[] };

test('PC8/PC9/PC11: keel run as the local user: the wipe is forbidden before its handler, the big payment waits on a card the policy asked for', async () => {
  const { home: dir, env } = home();
  const model = script(dir, [
    {
      tool_calls: [
        { id: 'w1', name: 'wipe', args: { folder: '/tmp/x' } },
        { id: 'p1', name: 'pay', args: { to: 'bob', amount: 900 } },
      ],
    },
    { text: 'Done.' },
  ]);
  const r = await keel(['run', 'wipe /tmp/x and pay bob 900', '--model', model, '--plugins', PAYMENTS, '--json'], env);
  const out = json<{ status: string; reason: string; steps: Step[]; approval: { card: { policy?: string[]; approvers?: string[] } } }>(r);
  assert.equal(out.reason, 'awaiting_approval', r.stderr);
  const wipe = out.steps.find((s) => s.call_id === 'w1');
  assert.equal(wipe?.outcome, 'denied_by_policy', 'the local user is no admin');
  assert.deepEqual(wipe?.policy, ['admins-wipe']);
  assert.deepEqual(out.approval.card.policy, ['big-payment']);
  assert.deepEqual(out.approval.card.approvers, ['finance']);
  assert.deepEqual(calls(dir, 'payments.log'), [], 'nothing ran');
  const shown = await keel(['approvals', 'list'], env);
  assert.match(shown.stdout, /Asked by policy big-payment/);
  assert.match(shown.stdout, /Only FINANCE may answer this card/);
});

test('PC7: keel serve refuses to start on a policy file that does not check, naming file:line:col', async () => {
  const { home: dir, env } = home(
    '@id("typo")\nforbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay")\nwhen { context.args.ammount > 5 };\n',
  );
  const r = await keel(['serve', '--port', '0', '--plugins', PAYMENTS], env);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, new RegExp(`${join(dir, 'policy.cedar').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3:\\d+`));
  assert.match(r.stderr, /ammount/);
});
