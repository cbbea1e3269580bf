/**
 * Cards through `keel serve` (issue 27): a card expired by a read — not by the sweep — ends its run
 * in the same step, on SQLite and on PostgreSQL (A4); a rejected card's calls have their own outcome,
 * `rejected`, in the API's schema and the console's trace, never a red error badge (R27).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { calls, script } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { type TestServer, testServer } from '../support/server.js';

after(() => dropSchemas());

const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1'] } };
const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

/** Polls a run until `done` says so; fails, with the last state, after `ms`. */
async function runUntil(s: TestServer, runId: string, done: (run: { status: string; reason: string }) => boolean, ms = 15_000) {
  const deadline = Date.now() + ms;
  let last: { status: string; reason: string } = { status: '?', reason: '?' };
  while (Date.now() < deadline) {
    last = (await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer })).body;
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`run ${runId} is still ${last.status} (${last.reason}) after ${ms} ms`);
}

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`A4 (${kind}): a card expired by GET /v1/approvals ends its run at once — the sweep is not needed, nothing runs`, async (t) => {
    const env: Record<string, string> = { KEEL_APPROVAL_TTL_MINUTES: '0.001', KEEL_SERVE_SWEEP_MS: '600000' };
    if (kind === 'postgres') Object.assign(env, { KEEL_STORE: withSchema(await testPgUrl(), freshSchema()), KEEL_SERVE_WORK: '1' });
    const s = await testServer(env);
    t.after(() => s.close());
    const model = script(s.home, [{ tool_calls: [TRASH] }, { text: 'never asked' }]);
    const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'trash m1', model } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    await runUntil(s, r.body.run_id, (run) => run.status === 'paused');
    await new Promise((res) => setTimeout(res, 150));
    const list = await s.api('GET', `/v1/approvals?run=${r.body.run_id}`, { token: s.viewer });
    assert.equal(list.status, 200);
    assert.equal(list.body.approvals[0].status, 'expired', 'the read marked the card expired');
    const ended = await runUntil(s, r.body.run_id, (run) => run.status !== 'paused' && run.status !== 'running');
    assert.equal(ended.status, 'failed');
    assert.equal(ended.reason, 'approval_expired');
    assert.equal(trashed(s.home).length, 0);
  });
}

test('A4: a card expired by GET /v1/approvals/{id} ends its run too', async (t) => {
  const s = await testServer({ KEEL_APPROVAL_TTL_MINUTES: '0.001', KEEL_SERVE_SWEEP_MS: '600000' });
  t.after(() => s.close());
  const model = script(s.home, [{ tool_calls: [TRASH] }, { text: 'never asked' }]);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'trash m1', model } });
  await runUntil(s, r.body.run_id, (run) => run.status === 'paused');
  const cards = (await s.srv.keel.store?.listApprovals({ run_id: r.body.run_id })) ?? [];
  await new Promise((res) => setTimeout(res, 150));
  const one = await s.api('GET', `/v1/approvals/${cards[0].id}`, { token: s.viewer });
  assert.equal(one.body.status, 'expired');
  const ended = await runUntil(s, r.body.run_id, (run) => run.status === 'failed');
  assert.equal(ended.reason, 'approval_expired');
});

test('R27: a rejected card’s call is `rejected` in the API (its OpenAPI schema allows it) and in the console (a neutral badge, not red)', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const model = script(s.home, [{ tool_calls: [TRASH] }, { text: 'Nothing changed.' }]);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'trash m1', model } });
  await runUntil(s, r.body.run_id, (run) => run.status === 'paused');
  const cards = (await s.srv.keel.store?.listApprovals({ run_id: r.body.run_id })) ?? [];
  const no = await s.api('POST', `/v1/approvals/${cards[0].id}`, { token: s.approver, body: { decision: 'reject', reason: 'not today' } });
  assert.equal(no.status, 200, JSON.stringify(no.body));
  const run = await runUntil(s, r.body.run_id, (x) => x.status === 'done');
  const step = (run as unknown as { steps: { call_id: string; outcome: string; result: string }[] }).steps.find((x) => x.call_id === 't1');
  assert.equal(step?.outcome, 'rejected');
  assert.match(step?.result ?? '', /not today/);
  const doc = JSON.stringify((await s.api('GET', '/v1/openapi.json')).body);
  assert.match(doc, /"invalid_arguments","rejected","error"/, 'the OpenAPI outcome enum has rejected');

  // The console's run page, logged in as a browser would.
  const login = await fetch(`${s.url}/login`);
  const nonce = /keel_login=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')?.[1] ?? '';
  const posted = await fetch(`${s.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `keel_login=${nonce}` },
    body: new URLSearchParams({ csrf: nonce, token: s.viewer }).toString(),
  });
  const cookie = posted.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => !c.startsWith('keel_login=') && !c.endsWith('='));
  assert.ok(cookie, `logged in (${posted.status})`);
  const html = await (await fetch(`${s.url}/runs/${r.body.run_id}`, { headers: { cookie: cookie ?? '' } })).text();
  assert.match(html, /class="badge b-call-rejected">rejected</);
  assert.doesNotMatch(html, /class="badge b-error"/);
  assert.match(html, /<tr class="o-rejected">/);
});
