/**
 * Operator policy in Cedar through the library (PC1–PC11), on both stores: each kind of decision —
 * forbid, `@ask`, permit, an argument threshold, the principal's role and groups, the mode, what the
 * run has read — decided by the one gate, named in the trace, carried on the card; an owner's edit
 * asked about again; a file changed while the Keel lives is read again.
 */
import assert from 'node:assert/strict';
import { utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { ScriptEntry } from '../../src/models/script.js';
import { PostgresStore } from '../../src/store/postgres.js';
import type { Principal, RunResult } from '../../src/types/index.js';
import { calls } from '../support/helpers.js';
import { Harness } from '../support/keel.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { PAYMENTS, POLICY } from '../support/policy.js';

after(() => dropSchemas());

type Store = 'sqlite' | 'postgres';
const STORES: Store[] = ['sqlite', 'postgres'];

async function harness(kind: Store, entries: ScriptEntry[], policy = POLICY): Promise<Harness> {
  const store = kind === 'postgres' ? new PostgresStore(withSchema(await testPgUrl(), freshSchema())) : undefined;
  const h = new Harness(entries, { pluginDirs: [PAYMENTS], ...(store ? { store } : {}) });
  writeFileSync(join(h.home, 'policy.cedar'), policy);
  writeFileSync(join(h.home, 'config.yaml'), 'policy_file: policy.cedar\n');
  return h;
}

const ran = (h: Harness) => calls(h.home, 'payments.log');
const step = (r: RunResult, id: string) => r.steps.find((s) => s.call_id === id);
const ADMIN: Principal = { kind: 'token', name: 'root', role: 'admin', groups: [] };
const INTERN: Principal = { kind: 'token', name: 'ivy', role: 'approver', groups: ['interns'] };

function run(h: Harness, message: string, principal?: Principal): Promise<RunResult> {
  return h.keel.run(message, { model: h.model, pluginDirs: [PAYMENTS], ...(principal ? { principal } : {}) });
}

for (const kind of STORES) {
  test(`PC8 (${kind}): a forbid denies the call before its handler, naming the policy in the result and the trace`, async (t) => {
    const h = await harness(kind, [
      { tool_calls: [{ id: 'w1', name: 'wipe', args: { folder: '/tmp/x' } }] },
      { text: 'I may not wipe it.' },
    ]);
    t.after(() => h.close());
    const r = await run(h, 'wipe /tmp/x', INTERN);
    assert.equal(r.status, 'done');
    assert.equal(step(r, 'w1')?.outcome, 'denied_by_policy');
    assert.deepEqual(step(r, 'w1')?.policy, ['admins-wipe']);
    assert.match(step(r, 'w1')?.result ?? '', /policy admins-wipe/);
    assert.deepEqual(ran(h), [], 'the handler never ran');
    assert.equal(r.approval, undefined, 'no card: a forbid is final');
  });

  test(`PC8/PC9 (${kind}): the same wipe started by an admin waits on its card (the declared gate), approved runs once`, async (t) => {
    const h = await harness(kind, [{ tool_calls: [{ id: 'w1', name: 'wipe', args: { folder: '/tmp/x' } }] }, { text: 'Wiped.' }]);
    t.after(() => h.close());
    const r = await run(h, 'wipe /tmp/x', ADMIN);
    assert.equal(r.reason, 'awaiting_approval');
    assert.deepEqual(step(r, 'w1')?.policy, ['everything'], 'PC11: the permit that let it reach its card');
    assert.equal(r.approval?.card.policy, undefined, 'a plain permit did not ask: the card is the declared one');
    assert.equal(r.approval?.card.approvers, undefined);
    const done = await h.keel.approve(r.approval?.id ?? '', { actor: 'root' });
    assert.equal(done.status, 'done');
    assert.deepEqual(ran(h), ['wipe {"folder":"/tmp/x"}']);
  });

  test(`PC8/A9 (${kind}): @ask over a threshold makes a card routed to its group; under it, the declared confirm-once gate`, async (t) => {
    const h = await harness(kind, [
      { tool_calls: [{ id: 'p1', name: 'pay', args: { to: 'bob', amount: 900 } }] },
      { tool_calls: [{ id: 'p2', name: 'pay', args: { to: 'bob', amount: 100 } }] },
      { text: 'Paid 900; 100 waits for you.' },
    ]);
    t.after(() => h.close());
    const r = await run(h, 'pay bob 900 and 100', ADMIN);
    assert.equal(r.reason, 'awaiting_approval', 'pay is confirm-once, but the policy asks for a card');
    assert.deepEqual(r.approval?.card.policy, ['big-payment']);
    assert.deepEqual(r.approval?.card.approvers, ['finance']);
    assert.equal(r.approval?.card.items[0].call, 'pay({"amount":900,"to":"bob"})', 'pinned to its arguments');
    const done = await h.keel.approve(r.approval?.id ?? '', { actor: 'local operator' });
    // The model answered with p2 held: the core asks the person about it (issue 47).
    assert.equal(done.status, 'paused');
    assert.deepEqual(
      done.confirm?.items.map((i) => i.call_id),
      ['p2'],
    );
    assert.equal(step(done, 'p1')?.outcome, 'ran');
    assert.equal(step(done, 'p2')?.outcome, 'held_for_confirmation', 'under the threshold: the declared gate');
    assert.ok(step(done, 'p2')?.policy?.includes('everything'), 'PC11: the permit that let it through is named');
    assert.deepEqual(ran(h), ['pay {"to":"bob","amount":900}']);
  });

  test(`PC8/U2 (${kind}): once the run has read outside content, the policy denies posting to a URL`, async (t) => {
    const h = await harness(kind, [
      { tool_calls: [{ id: 'u0', name: 'post_url', args: { url: 'https://ok.example', text: 'hi' } }] },
      { tool_calls: [{ id: 'r1', name: 'read_inbox', args: {} }] },
      { tool_calls: [{ id: 'u1', name: 'post_url', args: { url: 'https://evil.example', text: 'bills' } }] },
      { text: 'Not posted.' },
    ]);
    t.after(() => h.close());
    const r = await run(h, 'post hi, then read my mail', ADMIN);
    assert.equal(step(r, 'u0')?.outcome, 'ran', 'before the read: allowed');
    assert.equal(step(r, 'u1')?.outcome, 'denied_by_policy');
    assert.deepEqual(step(r, 'u1')?.policy, ['no-post-after-outside']);
    assert.deepEqual(ran(h), ['post_url {"url":"https://ok.example","text":"hi"}']);
  });

  test(`PC10 (${kind}): an owner's edit is asked about as a new call: a forbidden edit and one routed elsewhere are refused; the card stays pending`, async (t) => {
    const h = await harness(kind, [{ tool_calls: [{ id: 'p1', name: 'pay', args: { to: 'bob', amount: 900 } }] }, { text: 'Done.' }]);
    t.after(() => h.close());
    const r = await run(h, 'pay bob 900', ADMIN);
    const id = r.approval?.id ?? '';
    await assert.rejects(
      h.keel.approve(id, { actor: 'fin', arguments: { to: 'eve', amount: 900 } }),
      /forbids the edited pay call \(policy never-eve\)/,
    );
    await assert.rejects(
      h.keel.approve(id, { actor: 'fin', arguments: { to: 'bob', amount: 100 } }),
      /would be answered by any approver .* not the group finance/,
    );
    assert.equal((await h.keel.store?.getApproval(id))?.status, 'pending');
    const done = await h.keel.approve(id, { actor: 'fin', arguments: { to: 'bob', amount: 800 } });
    assert.equal(done.status, 'done');
    assert.deepEqual(ran(h), ['pay {"to":"bob","amount":800}'], 'the edit the policy routes the same way runs, once');
  });
}

test('PC8: no permit for a call is Cedar default deny, said as such', async (t) => {
  const h = await harness(
    'sqlite',
    [{ tool_calls: [{ id: 'l1', name: 'lookup', args: { name: 'bob' } }] }, { text: 'No lookup.' }],
    '@id("pay-only")\npermit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay");\n',
  );
  t.after(() => h.close());
  const r = await run(h, 'look up bob');
  assert.equal(step(r, 'l1')?.outcome, 'denied_by_policy');
  assert.deepEqual(step(r, 'l1')?.policy, []);
  assert.match(step(r, 'l1')?.result ?? '', /no policy permits it/);
});

test('PC9: the local user is the principal of a CLI-style run; PC7: a policy file changed on disk is read again, a bad edit keeps the last good one', async (t) => {
  // Each run is a session of its own: the script starts again at its first reply.
  const h = await harness('sqlite', [{ tool_calls: [{ id: 'l1', name: 'lookup', args: { name: 'bob' } }] }, { text: 'done' }]);
  t.after(() => h.close());
  const told: string[] = [];
  await h.keel.close();
  const { Keel } = await import('../../src/keel/keel.js');
  h.keel = new Keel({ home: h.home, onPolicyReload: (m) => told.push(m) });
  const first = await run(h, 'look up bob');
  assert.equal(step(first, 'l1')?.outcome, 'ran');
  const stored = await h.keel.getRun(first.run_id);
  assert.equal(stored.principal?.kind, 'user', 'a run started without a principal is the local user');
  assert.deepEqual(stored.principal?.groups, []);
  const file = join(h.home, 'policy.cedar');
  const later = (s: number) => utimesSync(file, new Date(Date.now() + s * 1000), new Date(Date.now() + s * 1000));
  writeFileSync(
    file,
    `${POLICY}\n@id("no-lookups")\nforbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"lookup");\n`,
  );
  later(5);
  await new Promise((r) => setTimeout(r, 1100));
  const second = await run(h, 'look up bob');
  assert.equal(step(second, 'l1')?.outcome, 'denied_by_policy');
  assert.deepEqual(step(second, 'l1')?.policy, ['no-lookups']);
  assert.match(told.join('\n'), /re-read/);
  writeFileSync(file, 'permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"nope");\n');
  later(10);
  await new Promise((r) => setTimeout(r, 1100));
  const third = await run(h, 'look up bob');
  assert.equal(step(third, 'l1')?.outcome, 'denied_by_policy', 'the last good policy stays');
  assert.match(told.join('\n'), /last good policy/);
});
