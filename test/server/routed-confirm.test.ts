/**
 * Issue 47 (A9/PC8), through `keel serve` on SQLite and PostgreSQL with a real Cedar policy file: a
 * plain permit annotated `@approvers("finance")` on a confirm-once write routes every way the call is
 * consented. The held write is never put to the run's principal as a confirmation (which any
 * approver could answer with `POST /v1/runs/ID/answer {confirm: true}`): it waits on an approval card
 * pinned to its arguments and routed to finance — an approver outside finance is refused (403) and
 * nothing runs; a finance token approves it and it runs once. An unrouted write keeps its confirmation.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { calls, script, tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { PAYMENTS } from '../support/policy.js';
import { type TestServer, testServer } from '../support/server.js';

after(() => dropSchemas());

/** Every call its declared gate; payments are routed to finance, without `@ask`. */
export const ROUTED_PAY = `@id("everything")
permit (principal, action == Keel::Action::"call", resource);

@id("finance-pays")
@approvers("finance")
permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay");
`;

async function until(s: TestServer, runId: string, ms = 20_000) {
  const deadline = Date.now() + ms;
  let last = { status: '?' };
  while (Date.now() < deadline) {
    last = (await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer })).body;
    if (last.status !== 'running') return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`run ${runId} is still ${last.status} after ${ms} ms`);
}

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`A9/PC8 (${kind}): a confirm-once write routed by a plain @approvers permit waits on a routed card, never a confirmation an outsider could answer`, async (t) => {
    const env: Record<string, string> = {};
    if (kind === 'postgres') Object.assign(env, { KEEL_STORE: withSchema(await testPgUrl(), freshSchema()), KEEL_SERVE_WORK: '1' });
    const home = tempHome('keel-routed-confirm-');
    writeFileSync(join(home, 'policy.cedar'), ROUTED_PAY);
    writeFileSync(join(home, 'config.yaml'), 'policy_file: policy.cedar\n');
    const s = await testServer(env, home, [PAYMENTS]);
    t.after(() => s.close());
    const fay = (await s.api('POST', '/v1/tokens', { token: s.admin, body: { name: 'fay', role: 'approver', groups: ['finance'] } })).body
      .token as string;
    const paid = () => calls(home, 'payments.log');

    // The model does as a confirm-once write asks: call, ask once, call again.
    const model = script(home, [
      { tool_calls: [{ id: 'p1', name: 'pay', args: { to: 'acme', amount: 120 } }] },
      { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Pay Acme 120?' } }] },
      { tool_calls: [{ id: 'p2', name: 'pay', args: { to: 'acme', amount: 120 } }] },
      { text: 'I paid the Acme bill.' },
    ]);
    const started = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'pay the Acme bill', model } });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const runId = started.body.run_id as string;
    const paused = await until(s, runId);
    assert.equal(paused.status, 'paused');
    assert.equal((paused as { reason?: string }).reason, 'awaiting_approval', 'a routed call waits on its card, not on a confirmation');

    // The answer route that takes a confirmation has nothing to answer: the run waits on a card.
    const answered = await s.api('POST', `/v1/runs/${runId}/answer`, { token: s.approver, body: { text: 'yes', confirm: true } });
    assert.ok(answered.status >= 400, `a confirmation is refused: ${answered.status} ${JSON.stringify(answered.body)}`);
    assert.deepEqual(paid(), [], 'nothing ran');

    const [card] = (await s.api('GET', `/v1/approvals?run=${runId}`, { token: s.viewer })).body.approvals;
    assert.deepEqual(card.card.approvers, ['finance']);
    assert.equal(card.items[0].tool, 'pay');
    assert.deepEqual(card.items[0].args, { to: 'acme', amount: 120 }, 'pinned to its arguments');
    const outsider = await s.api('POST', `/v1/approvals/${card.id}`, { token: s.approver, body: { decision: 'approve' } });
    assert.equal(outsider.status, 403, JSON.stringify(outsider.body));
    assert.match(outsider.body.detail, /routed to the group finance/);
    assert.deepEqual(paid(), [], 'nothing ran');

    const member = await s.api('POST', `/v1/approvals/${card.id}`, { token: fay, body: { decision: 'approve' } });
    assert.equal(member.status, 200, JSON.stringify(member.body));
    const after = await until(s, runId);
    // The model's own ask_user then comes with no write held: a plain question, its answer no consent.
    assert.equal(after.status, 'paused');
    assert.deepEqual(paid(), ['pay {"to":"acme","amount":120}'], 'the approved call ran, once');
  });
}

test('PC8: a confirm-once write the policy does not route keeps its confirmation', async (t) => {
  const home = tempHome('keel-routed-confirm-');
  writeFileSync(join(home, 'policy.cedar'), ROUTED_PAY.replace('Keel::Tool::"pay"', 'Keel::Tool::"wipe"'));
  writeFileSync(join(home, 'config.yaml'), 'policy_file: policy.cedar\n');
  const s = await testServer({}, home, [PAYMENTS]);
  t.after(() => s.close());
  const model = script(home, [
    { tool_calls: [{ id: 'p1', name: 'pay', args: { to: 'acme', amount: 120 } }] },
    { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Pay Acme 120?' } }] },
  ]);
  const started = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'pay the Acme bill', model } });
  const paused = await until(s, started.body.run_id);
  assert.equal((paused as { reason?: string }).reason, 'awaiting_user_input');
});
