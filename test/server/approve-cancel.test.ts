/**
 * Approve racing cancel (issue 40): `POST /v1/approvals/ID` (approve) and `POST /v1/runs/RUN/cancel`
 * sent at the same moment, round after round, on SQLite and PostgreSQL. One winner each round, and
 * the card, the run, the audit and what ran all say the same thing: an approve that wins runs the
 * call once and the cancel is refused 409; a cancel that wins closes the card (rejected, audited)
 * in the same transaction as it takes the run, and the approve is refused 409 (A3, R18, S4).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { calls, script } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { type TestServer, testServer } from '../support/server.js';

after(() => dropSchemas());

const ROUNDS = 10;
/** How much later the approve (odd rounds) or the cancel (even rounds) is sent, in ms. */
const LATER = [0, 3, 10, 30, 60];

async function runUntil(s: TestServer, runId: string, done: (run: { status: string; reason: string }) => boolean, ms = 20_000) {
  const deadline = Date.now() + ms;
  // biome-ignore lint/suspicious/noExplicitAny: a run's view, checked field by field
  let last: any = { status: '?', reason: '?' };
  while (Date.now() < deadline) {
    last = (await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer })).body;
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`run ${runId} is still ${last.status} (${last.reason}) after ${ms} ms`);
}

const pause = (ms: number) => (ms ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`A3/R18 (${kind}): approve racing cancel over HTTP, ${ROUNDS} rounds — one winner; the card, the run, the audit and what ran agree`, async (t) => {
    const env: Record<string, string> = {};
    if (kind === 'postgres') Object.assign(env, { KEEL_STORE: withSchema(await testPgUrl(), freshSchema()), KEEL_SERVE_WORK: '1' });
    const s = await testServer(env);
    t.after(() => s.close());
    const canceller = (await s.api('POST', '/v1/tokens', { token: s.admin, body: { name: 'ben-laptop', role: 'approver' } })).body.token;
    const store = s.srv.keel.store;
    assert.ok(store);
    const tally = { approve: 0, cancel: 0 };
    const problems: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const args = { to: 'ana', subject: `${kind} note ${i + 1}` };
      const model = script(s.home, [{ tool_calls: [{ id: 't1', name: 'send_email', args }] }, { text: 'Sent.' }], `round-${i}.yaml`);
      const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'send the email to ana', model } });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      const runId = r.body.run_id as string;
      const paused = await runUntil(s, runId, (x) => x.status === 'paused' || x.status === 'done' || x.status === 'failed');
      assert.equal(paused.status, 'paused', JSON.stringify(paused));
      const card = paused.approval.id as string;
      // Issue 40: the run's card gives its call as data too, not only rendered.
      assert.deepEqual(paused.approval.card.items[0].args, args);
      // Both at once, or one of them (in turn) a moment later, so that each wins some rounds and
      // the moments in between, where they meet in the store, are tried.
      const later = LATER[Math.floor(i / 2) % LATER.length];
      const [yes, stop] = await Promise.all([
        pause(i % 2 ? later : 0).then(() => s.api('POST', `/v1/approvals/${card}`, { token: s.approver, body: { decision: 'approve' } })),
        pause(i % 2 ? 0 : later).then(() => s.api('POST', `/v1/runs/${runId}/cancel`, { token: canceller, body: {} })),
      ]);
      const round = `round ${i + 1}: approve ${yes.status} ${JSON.stringify(yes.body).slice(0, 160)}; cancel ${stop.status} ${JSON.stringify(stop.body).slice(0, 160)}`;
      const problem = (p: string) => problems.push(`${round}: ${p}`);
      const won = yes.status === 200 && stop.status === 409 ? 'approve' : stop.status === 200 && yes.status === 409 ? 'cancel' : undefined;
      if (!won) {
        problem('not one winner and one 409');
        continue;
      }
      tally[won]++;
      const run = await runUntil(s, runId, (x) => x.status === 'done' || x.status === 'failed');
      const approval = (await s.api('GET', `/v1/approvals/${card}`, { token: s.viewer })).body;
      const decisions = (await store.listAudit(card)).filter((row) => row.action === 'approved' || row.action === 'rejected');
      const ran = calls(s.home, 'mail-calls.log').filter((l) => l === `send_email ${JSON.stringify(args)}`).length;
      if (won === 'approve') {
        if (approval.status !== 'approved' || approval.answered_by !== 'ana-phone')
          problem(`the card is ${approval.status} by ${approval.answered_by}`);
        if (ran !== 1) problem(`the approved call ran ${ran} times`);
        if (run.status !== 'done') problem(`the run ended ${run.status} (${run.reason})`);
        if (decisions.length !== 1 || decisions[0].action !== 'approved' || decisions[0].actor !== 'ana-phone')
          problem(`the audit holds ${decisions.map((d) => `${d.action} by ${d.actor}`).join(', ') || 'no decision'}`);
      } else {
        if (approval.status !== 'rejected' || approval.answered_by !== 'ben-laptop')
          problem(`the card is ${approval.status} by ${approval.answered_by}, not closed by the cancel`);
        if (ran !== 0) problem(`the call of a cancelled run ran ${ran} times`);
        if (run.status !== 'failed' || run.reason !== 'cancelled') problem(`the run ended ${run.status} (${run.reason})`);
        if (decisions.length !== 1 || decisions[0].action !== 'rejected' || decisions[0].actor !== 'ben-laptop')
          problem(`the audit holds ${decisions.map((d) => `${d.action} by ${d.actor}`).join(', ') || 'no decision'}`);
      }
    }
    t.diagnostic(`${kind}: approve won ${tally.approve}, cancel won ${tally.cancel} of ${ROUNDS}`);
    assert.deepEqual(problems, []);
  });
}
