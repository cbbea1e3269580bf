/**
 * The console's batch form (A8, issue 40) posted as a browser posts it, with its session cookie and
 * CSRF token: every item is checked before any card is answered, as `POST /v1/approvals/answer`
 * checks them — a batch naming an unknown run answers nothing (the ticked card stays pending, its
 * run paused) — and a batch is capped as the API caps it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_BATCH } from '../../src/approvals/respond.js';
import { calls, script } from '../support/helpers.js';
import { type TestServer, testServer } from '../support/server.js';

async function runUntil(s: TestServer, runId: string, done: (run: { status: string }) => boolean, ms = 15_000) {
  const deadline = Date.now() + ms;
  let last = { status: '?' };
  while (Date.now() < deadline) {
    last = (await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer })).body;
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`run ${runId} is still ${last.status} after ${ms} ms`);
}

/** Logs in as a browser does: the session cookie, and the CSRF token the inbox's forms carry. */
async function login(s: TestServer, token: string): Promise<{ cookie: string; csrf: string }> {
  const first = await fetch(`${s.url}/login`);
  const nonce = /keel_login=([^;]+)/.exec(first.headers.get('set-cookie') ?? '')?.[1] ?? '';
  const posted = await fetch(`${s.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `keel_login=${nonce}` },
    body: new URLSearchParams({ csrf: nonce, token }).toString(),
  });
  const cookie = posted.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => !c.startsWith('keel_login=') && !c.endsWith('='));
  assert.ok(cookie, `logged in (${posted.status})`);
  const inbox = await (await fetch(`${s.url}/`, { headers: { cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(inbox)?.[1];
  assert.ok(csrf, 'the inbox carries a CSRF token');
  return { cookie, csrf };
}

test('A8 (issue 40): a console batch with a ticked card and an unknown run answers nothing; a batch over the cap answers nothing; CSRF holds', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const model = script(s.home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed.' }]);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'trash m1', model } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const run = r.body.run_id as string;
  await runUntil(s, run, (x) => x.status === 'paused');
  const card = (await s.api('GET', `/v1/approvals?run=${run}`, { token: s.viewer })).body.approvals[0].id as string;
  const { cookie, csrf } = await login(s, s.approver);
  const post = (fields: Record<string, string>) =>
    fetch(`${s.url}/approvals/answer`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams(fields).toString(),
    });
  const pending = async () => (await s.api('GET', `/v1/approvals/${card}`, { token: s.viewer })).body.status;

  // A ticked card and an unknown run: refused whole, before the card is answered.
  const bad = await post({ csrf, decision: 'approve', [`id.${card}`]: '1', 'run.run_nope': '1' });
  assert.equal(bad.status, 404);
  assert.match(await bad.text(), /no run run_nope/);
  assert.equal(await pending(), 'pending', 'the ticked card was not answered');
  assert.equal((await s.api('GET', `/v1/runs/${run}`, { token: s.viewer })).body.status, 'paused');

  // More cards than the API takes in one batch: refused whole.
  const many: Record<string, string> = { csrf, decision: 'approve', [`id.${card}`]: '1' };
  for (let i = 0; i < MAX_BATCH; i++) many[`id.apr_x${i}`] = '1';
  const over = await post(many);
  assert.equal(over.status, 400);
  assert.match(await over.text(), new RegExp(`at most ${MAX_BATCH}`));
  assert.equal(await pending(), 'pending', 'a batch over the cap answered nothing');

  // Without the CSRF token: refused, nothing answered.
  const forged = await post({ csrf: 'forged', decision: 'approve', [`id.${card}`]: '1' });
  assert.equal(forged.status, 403);
  assert.equal(await pending(), 'pending');

  // The same card alone: answered, its call runs once.
  const ok = await post({ csrf, decision: 'approve', [`id.${card}`]: '1' });
  assert.equal(ok.status, 200);
  await runUntil(s, run, (x) => x.status === 'done');
  assert.equal(await pending(), 'approved');
  assert.equal(calls(s.home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length, 1);
});
