/**
 * Issue 28 through `keel serve`: `POST /v1/approvals/{id}` with `arguments` approves the edited
 * call (A7) — refused edits are 400 naming the field and nothing runs — and `POST
 * /v1/approvals/answer` answers several cards, each once (A8). A viewer can do neither (S3).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { calls, script } from '../support/helpers.js';
import { type TestServer, testServer } from '../support/server.js';

const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

async function until(s: TestServer, runId: string, done: (run: { status: string }) => boolean, ms = 15_000) {
  const deadline = Date.now() + ms;
  let last = { status: '?' };
  while (Date.now() < deadline) {
    last = (await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer })).body;
    if (done(last))
      return last as {
        status: string;
        steps: { call_id: string; args: unknown; edited_from?: unknown; edited_by?: string; result: string }[];
      };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`run ${runId} is still ${last.status} after ${ms} ms`);
}

async function pausedOn(s: TestServer, id: string): Promise<{ run: string; card: string }> {
  const model = script(
    s.home,
    [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: [id] } }] }, { text: 'Done.' }],
    `script-${id}.yaml`,
  );
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: `trash ${id}`, model } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await until(s, r.body.run_id, (x) => x.status === 'paused');
  const list = await s.api('GET', `/v1/approvals?run=${r.body.run_id}`, { token: s.viewer });
  return { run: r.body.run_id, card: list.body.approvals[0].id };
}

test('A7/S3: arguments on POST /v1/approvals/{id} — refused edits are 400 naming the field; the edited call runs once; a viewer is 403', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const { run, card } = await pausedOn(s, 'm1');
  const viewer = await s.api('POST', `/v1/approvals/${card}`, {
    token: s.viewer,
    body: { decision: 'approve', arguments: { ids: ['m2'] } },
  });
  assert.equal(viewer.status, 403);
  const schema = await s.api('POST', `/v1/approvals/${card}`, {
    token: s.approver,
    body: { decision: 'approve', arguments: { ids: 'm2' } },
  });
  assert.equal(schema.status, 400, JSON.stringify(schema.body));
  assert.equal(schema.body.errors[0].field, 'body.arguments');
  assert.match(schema.body.detail, /ids must be array/);
  const validate = await s.api('POST', `/v1/approvals/${card}`, {
    token: s.approver,
    body: { decision: 'approve', arguments: { ids: ['m7'] } },
  });
  assert.equal(validate.status, 400);
  assert.match(validate.body.detail, /no email with id m7/);
  assert.equal((await s.api('GET', `/v1/approvals/${card}`, { token: s.viewer })).body.status, 'pending');
  assert.equal(trashed(s.home).length, 0, 'nothing ran');
  const ok = await s.api('POST', `/v1/approvals/${card}`, { token: s.approver, body: { decision: 'approve', arguments: { ids: ['m3'] } } });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.deepEqual(ok.body.approval.items[0].args, { ids: ['m3'] });
  assert.deepEqual(ok.body.approval.items[0].original_args, { ids: ['m1'] });
  assert.equal(ok.body.approval.items[0].edited_by, 'ana-phone', 'the token’s name is who edited');
  const done = await until(s, run, (x) => x.status === 'done');
  const step = done.steps.find((x) => x.call_id === 't1');
  assert.deepEqual(step?.args, { ids: ['m3'] });
  assert.deepEqual(step?.edited_from, { ids: ['m1'] });
  assert.deepEqual(trashed(s.home), ['trash_email {"ids":["m3"]}']);
  const doc = JSON.stringify((await s.api('GET', '/v1/openapi.json')).body);
  assert.match(doc, /\/v1\/approvals\/answer/);
  assert.match(doc, /original_args/);
});

test('A8/S3: POST /v1/approvals/answer approves three cards, each once; one answered meanwhile is a conflict; a viewer is 403', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const a = await pausedOn(s, 'm1');
  const b = await pausedOn(s, 'm2');
  const c = await pausedOn(s, 'm3');
  const viewer = await s.api('POST', '/v1/approvals/answer', { token: s.viewer, body: { ids: [a.card], decision: 'approve' } });
  assert.equal(viewer.status, 403);
  const empty = await s.api('POST', '/v1/approvals/answer', { token: s.approver, body: { decision: 'approve' } });
  assert.equal(empty.status, 400);
  await s.api('POST', `/v1/approvals/${b.card}`, { token: s.approver, body: { decision: 'reject' } });
  const r = await s.api('POST', '/v1/approvals/answer', {
    token: s.approver,
    body: { ids: [a.card, b.card, c.card], decision: 'approve', reason: 'all fine' },
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(
    r.body.results.map((x: { id: string; outcome: string }) => [x.id, x.outcome]),
    [
      [a.card, 'answered'],
      [b.card, 'conflict'],
      [c.card, 'answered'],
    ],
  );
  for (const x of [a, b, c]) await until(s, x.run, (run) => run.status === 'done');
  assert.deepEqual(trashed(s.home).sort(), ['trash_email {"ids":["m1"]}', 'trash_email {"ids":["m3"]}']);
  // "All from this run": the run's pending cards.
  const d = await pausedOn(s, 'm2');
  const byRun = await s.api('POST', '/v1/approvals/answer', { token: s.approver, body: { run: d.run, decision: 'reject' } });
  assert.deepEqual(
    byRun.body.results.map((x: { id: string; outcome: string }) => [x.id, x.outcome]),
    [[d.card, 'answered']],
  );
});

/** Arguments `levels` deep, counting the arguments object itself as a model's call counts it. */
function deepArgs(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { end: true };
  for (let i = 2; i < levels; i++) v = { a: v };
  return { ids: ['m2'], note: v };
}

/** The console's inbox as the approver's browser gets it: log in with the token, then GET /. */
async function inboxHtml(s: TestServer): Promise<string> {
  const login = await fetch(`${s.url}/login`);
  const nonce = /name="csrf" value="([^"]+)"/.exec(await login.text())?.[1] ?? '';
  const jar = (login.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
  const posted = await fetch(`${s.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar, origin: s.url },
    body: new URLSearchParams({ csrf: nonce, token: s.approver }).toString(),
  });
  assert.equal(posted.status, 303);
  const session = (posted.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
  return (await fetch(`${s.url}/`, { headers: { cookie: session } })).text();
}

test('A7/R21 (issue 40): an edit nested 100 or 3,000 levels deep is 400 naming body.arguments; the card stays pending and nothing runs', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const { run, card } = await pausedOn(s, 'm1');
  for (const levels of [100, 3000]) {
    const r = await s.api('POST', `/v1/approvals/${card}`, {
      token: s.approver,
      body: { decision: 'approve', arguments: deepArgs(levels) },
    });
    assert.equal(r.status, 400, `${levels} levels: ${JSON.stringify(r.body).slice(0, 300)}`);
    assert.equal(r.body.errors[0].field, 'body.arguments');
    assert.match(r.body.detail, /nested deeper than 64 levels/);
  }
  assert.equal((await s.api('GET', `/v1/approvals/${card}`, { token: s.viewer })).body.status, 'pending');
  assert.equal((await s.api('GET', `/v1/runs/${run}`, { token: s.viewer })).body.status, 'paused');
  assert.equal(trashed(s.home).length, 0, 'nothing ran');
  // The card still answers: approved as the model asked, the call runs once.
  const ok = await s.api('POST', `/v1/approvals/${card}`, { token: s.approver, body: { decision: 'approve' } });
  assert.equal(ok.status, 200);
  await until(s, run, (x) => x.status === 'done');
  assert.deepEqual(trashed(s.home), ['trash_email {"ids":["m1"]}']);
});

test('A7/R13 (issue 40): an edit that repeats a call on the card is 400; the edited call’s own words are on the card, the API and the console', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const model = script(
    s.home,
    [
      {
        tool_calls: [
          { id: 't1', name: 'trash_email', args: { ids: ['m1'] } },
          { id: 't2', name: 'trash_email', args: { ids: ['m2'] } },
        ],
      },
      { text: 'Done.' },
    ],
    'script-two.yaml',
  );
  const started = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'trash m1 and m2', model } });
  const run = started.body.run_id;
  await until(s, run, (x) => x.status === 'paused');
  const card = (await s.api('GET', `/v1/approvals?run=${run}`, { token: s.viewer })).body.approvals[0].id;
  const twice = await s.api('POST', `/v1/approvals/${card}`, {
    token: s.approver,
    body: { decision: 'approve', arguments: { t2: { ids: ['m1'] } } },
  });
  assert.equal(twice.status, 400, JSON.stringify(twice.body));
  assert.equal(twice.body.errors[0].field, 'body.arguments.t2');
  assert.match(twice.body.detail, /same call as t1 on this card/);
  assert.equal((await s.api('GET', `/v1/approvals/${card}`, { token: s.viewer })).body.status, 'pending');
  const ok = await s.api('POST', `/v1/approvals/${card}`, {
    token: s.approver,
    body: { decision: 'approve', arguments: { t2: { ids: ['m3', 'm1', 'm2'] } } },
  });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  await until(s, run, (x) => x.status === 'done');
  assert.deepEqual(trashed(s.home), ['trash_email {"ids":["m1"]}', 'trash_email {"ids":["m3","m1","m2"]}']);
  const stored = (await s.api('GET', `/v1/approvals/${card}`, { token: s.viewer })).body;
  for (const a of [ok.body.approval, stored]) {
    assert.equal(a.items[1].card.title, 'Move 3 email(s) to Trash');
    assert.equal(a.items[1].original_card.title, 'Move 1 email(s) to Trash');
    assert.equal(a.card.items[1].title, 'Move 3 email(s) to Trash');
    assert.equal(a.card.items[1].call, 'trash_email({"ids":["m3","m1","m2"]})');
    assert.equal(a.card.items[1].original.call, 'trash_email({"ids":["m2"]})');
  }
  // The console's card (answered today) shows the edited call's words, and what the model asked for beside them.
  const html = await inboxHtml(s);
  const at = html.indexOf(`id="card-${card}"`);
  assert.ok(at > 0, 'the answered card is on the inbox');
  const shown = html.slice(at, html.indexOf('</article>', at));
  assert.match(shown, /Move 3 email\(s\) to Trash/);
  assert.match(
    shown,
    /Edited by ana-phone; was: Move 1 email\(s\) to Trash <code>trash_email\(\{&quot;ids&quot;:\[&quot;m2&quot;\]\}\)<\/code>/,
  );
});
