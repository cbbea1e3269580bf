/**
 * A9 through `keel serve`, on SQLite and PostgreSQL: a card routed to the group finance (as a
 * policy annotated `@approvers("finance")` routes it; here test/support/routed.ts sets it where the
 * gate will) is answered only by a token in finance. Any other approver gets 403 naming the group and
 * the card stays pending, nothing run; a finance token answers it, exactly once; a batch holding one
 * such card is refused whole; a viewer is refused as before; the card keeps approvers and policy.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { calls, script } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { byTool, routeCards } from '../support/routed.js';
import { type TestServer, testServer } from '../support/server.js';

after(() => dropSchemas());

const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));
const sent = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('send_email'));

async function until(s: TestServer, runId: string, done: (run: { status: string }) => boolean, ms = 20_000) {
  const deadline = Date.now() + ms;
  let last = { status: '?' };
  while (Date.now() < deadline) {
    last = (await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer })).body;
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`run ${runId} is still ${last.status} after ${ms} ms`);
}

/** A run paused on the card of one call; the card's id. */
async function pausedOn(s: TestServer, name: string, tool: string, args: Record<string, unknown>): Promise<{ run: string; card: string }> {
  const model = script(s.home, [{ tool_calls: [{ id: 't1', name: tool, args }] }, { text: 'Done.' }], `script-${name}.yaml`);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: `${tool} ${name}`, model } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await until(s, r.body.run_id, (x) => x.status === 'paused');
  const list = await s.api('GET', `/v1/approvals?run=${r.body.run_id}`, { token: s.viewer });
  return { run: r.body.run_id, card: list.body.approvals[0].id };
}

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`A9 (${kind}): a card routed to finance — another approver is 403 naming the group and nothing runs; a finance token answers it once; a batch with it is refused whole`, async (t) => {
    const env: Record<string, string> = {};
    if (kind === 'postgres') Object.assign(env, { KEEL_STORE: withSchema(await testPgUrl(), freshSchema()), KEEL_SERVE_WORK: '1' });
    const s = await testServer(env);
    t.after(() => s.close());
    const store = s.srv.keel.store;
    assert.ok(store);
    routeCards(store, byTool(['trash_email'], ['finance'], ['big-trash']));
    const made = await s.api('POST', '/v1/tokens', { token: s.admin, body: { name: 'fay', role: 'approver', groups: ['finance'] } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.deepEqual(made.body.groups, ['finance']);
    const fay = made.body.token as string;
    assert.deepEqual((await s.api('GET', '/v1/whoami', { token: fay })).body, { name: 'fay', role: 'approver', groups: ['finance'] });
    const bad = await s.api('POST', '/v1/tokens', { token: s.admin, body: { name: 'x', role: 'approver', groups: ['Finance'] } });
    assert.equal(bad.status, 400);

    const routed = await pausedOn(s, 'r1', 'trash_email', { ids: ['m1'] });
    const got = await s.api('GET', `/v1/approvals/${routed.card}`, { token: s.viewer });
    // Both stores keep the card's routing and the policy that asked.
    assert.deepEqual(got.body.card.approvers, ['finance']);
    assert.deepEqual(got.body.card.policy, ['big-trash']);

    const viewer = await s.api('POST', `/v1/approvals/${routed.card}`, { token: s.viewer, body: { decision: 'approve' } });
    assert.equal(viewer.status, 403);
    assert.match(viewer.body.detail, /token vic is a viewer/, 'a viewer is refused by its role, as before');
    for (const decision of ['approve', 'reject'] as const) {
      const ana = await s.api('POST', `/v1/approvals/${routed.card}`, { token: s.approver, body: { decision } });
      assert.equal(ana.status, 403, JSON.stringify(ana.body));
      assert.match(ana.body.detail, /routed to the group finance: only a token in it may answer it, and ana-phone is in no group/);
    }
    const edit = await s.api('POST', `/v1/approvals/${routed.card}`, {
      token: s.approver,
      body: { decision: 'approve', arguments: { ids: ['m2'] } },
    });
    assert.equal(edit.status, 403, 'an edit by an outsider is refused as an answer is');
    assert.equal((await s.api('GET', `/v1/approvals/${routed.card}`, { token: s.viewer })).body.status, 'pending');
    assert.equal(trashed(s.home).length, 0, 'nothing ran');

    // A batch holding the routed card beside an unrouted one is refused whole, naming the routed card.
    const plain = await pausedOn(s, 'p1', 'send_email', { to: 'bob', subject: 'hi' });
    const gotPlain = await s.api('GET', `/v1/approvals/${plain.card}`, { token: s.viewer });
    assert.equal(gotPlain.body.card.approvers, undefined, 'a card no policy routed has no approvers');
    const batch = await s.api('POST', '/v1/approvals/answer', {
      token: s.approver,
      body: { ids: [plain.card, routed.card], decision: 'approve' },
    });
    assert.equal(batch.status, 403, JSON.stringify(batch.body));
    assert.match(batch.body.detail, new RegExp(`approval ${routed.card} is routed to the group finance.*; nothing was answered`));
    const byRun = await s.api('POST', '/v1/approvals/answer', { token: s.approver, body: { run: routed.run, decision: 'reject' } });
    assert.equal(byRun.status, 403, 'a run’s pending cards are checked as ids are');
    for (const c of [plain.card, routed.card])
      assert.equal((await s.api('GET', `/v1/approvals/${c}`, { token: s.viewer })).body.status, 'pending', `${c} still waits`);

    // The finance token answers both, in one batch: each once.
    const ok = await s.api('POST', '/v1/approvals/answer', { token: fay, body: { ids: [routed.card, plain.card], decision: 'approve' } });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.deepEqual(
      ok.body.results.map((x: { outcome: string }) => x.outcome),
      ['answered', 'answered'],
    );
    const again = await s.api('POST', `/v1/approvals/${routed.card}`, { token: fay, body: { decision: 'approve' } });
    assert.equal(again.status, 409, 'answered once');
    await until(s, routed.run, (x) => x.status === 'done');
    await until(s, plain.run, (x) => x.status === 'done');
    assert.deepEqual(trashed(s.home), ['trash_email {"ids":["m1"]}']);
    assert.equal(sent(s.home).length, 1);
    const answered = await s.api('GET', `/v1/approvals/${routed.card}`, { token: s.viewer });
    assert.equal(answered.body.answered_by, 'fay');

    // A single answer by a finance token (groups given later with keel tokens groups' function), once.
    const second = await pausedOn(s, 'r2', 'trash_email', { ids: ['m3'] });
    const tokens = (await import('../../src/server/access/tokens.js')).Tokens.at(s.home);
    tokens.setGroups('ana-phone', { add: ['finance'] });
    const now = await s.api('POST', `/v1/approvals/${second.card}`, { token: s.approver, body: { decision: 'approve' } });
    assert.equal(now.status, 200, 'a running server sees a token’s new groups at its next request');
    await until(s, second.run, (x) => x.status === 'done');
    assert.deepEqual(trashed(s.home), ['trash_email {"ids":["m1"]}', 'trash_email {"ids":["m3"]}']);
    const audit = await store.listAudit(routed.card);
    assert.ok(
      audit.some((r) => r.action === 'approve_refused_forbidden' && r.actor === 'ana-phone'),
      'the refusal is audited',
    );
  });
}
