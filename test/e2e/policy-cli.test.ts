/**
 * Operator policy in Cedar through the real CLI (PC8, PC9, PC11): `keel run` decides a run's calls
 * with the config's policy file (a forbid before the handler, an `@ask` card, the trace naming the
 * policies), and `keel serve` refuses to start on a file that does not check, naming file:line:col.
 * Issue 47: `keel policy check` and `explain` with `--app MODULE` see an application's own tools
 * declared in code — a module in JavaScript, or in TypeScript importing `keel` and `zod` as the
 * README's app does — where without it they are "not mounted".
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { calls, json, keel, script, tempHome } from '../support/helpers.js';
import { PAYMENTS, POLICY } from '../support/policy.js';
import { readmeBlock } from '../support/readme.js';

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

/** The newcomer's app (issue 47): its tools in a module of their own, which the app and `--app` both import — the README's. */
const TOOLS_MJS = readmeBlock('policy-app-tools');
const TOOLS_TS = `// tools.ts: the same tools, as the README's app writes them
import { defineTool } from 'keel';
import { z } from 'zod';

const sendMoney = defineTool({
  name: 'send_money',
  description: 'Send money to someone',
  parameters: z.object({ to: z.string(), amount: z.number().int() }),
  effect: 'write',
  execute: ({ to, amount }: { to: string; amount: number }) => \`Sent \${amount} to \${to}.\`,
});
export default [sendMoney];
`;
const APP_POLICY = `@id("app-tools")
permit (principal, action == Keel::Action::"call", resource in Keel::Plugin::"app");

@id("questions")
permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"ask_user");

@id("big-transfer")
@ask
permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"send_money")
when { context.args.amount > 500 };
`;

test("issue 47: keel policy check and explain --app MODULE see the app's own tools declared in code (JavaScript, or TypeScript importing keel and zod)", async () => {
  const { home: dir, env } = home(APP_POLICY);
  writeFileSync(join(dir, 'tools.mjs'), TOOLS_MJS);
  writeFileSync(join(dir, 'tools.ts'), TOOLS_TS);
  const none = await keel(['policy', 'check'], env);
  assert.equal(none.code, 1, 'without the app, the policy names a tool that is not mounted');
  assert.match(none.stdout, /no tool named "send_money" is mounted/);
  const check = await keel(['policy', 'check', '--app', join(dir, 'tools.mjs')], env);
  assert.equal(check.code, 0, `${check.stdout}${check.stderr}`);
  assert.match(check.stdout, /policy\.cedar: 3 policies, 0 error\(s\), 1 warning\(s\)\n$/, 'submit_plan and the others are not permitted');
  assert.doesNotMatch(check.stdout, /ask_user is not permitted/);
  const big = await keel(['policy', 'explain', 'send_money', '--args', '{"to":"bob","amount":900}', '--app', join(dir, 'tools.ts')], env);
  assert.equal(big.code, 0, big.stderr);
  assert.match(
    big.stdout,
    /^send_money as .* mode agent: ask: an approval card pinned to these arguments\n {2}by app-tools \(.*\)\n {2}by big-transfer \(.*policy\.cedar:9:1\)\n/,
  );
  const read = await keel(
    ['policy', 'explain', 'send_money', '--args', '{"to":"bob","amount":5}', '--read-from', 'read_inbox', '--app', join(dir, 'tools.mjs')],
    env,
  );
  assert.equal(read.code, 0, read.stderr);
  assert.match(read.stdout, /, the run has read from read_inbox: permit: held until the user confirms this exact call/);
  const schema = await keel(['policy', 'schema', '--app', join(dir, 'tools.mjs')], env);
  assert.match(schema.stdout, /\/\/ {3}send_money \(app, write\): \{ to: String, amount: Long \}/);
  writeFileSync(join(dir, 'nothing.mjs'), 'export const answer = 42;\n');
  const bad = await keel(['policy', 'check', '--app', join(dir, 'nothing.mjs')], env);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /nothing\.mjs exports no tools: export the list your app gives new Keel\(\{ tools \}\)/);
});
