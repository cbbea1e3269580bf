/**
 * `keel serve` over real HTTP on an ephemeral loopback port: a run that pauses on a card, watched
 * over SSE, approved with an approver token — the call runs once; reject; a second answer (409);
 * roles (401/403); an expired card (410); every JSON response checked against /v1/openapi.json.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ScriptEntry } from '../../src/models/script.js';
import { calls, script } from '../support/helpers.js';
import { events, type Reply, readUntil, type TestServer, testServer } from '../support/server.js';

const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1', 'm2'] } };
const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

let s: TestServer;
let doc: { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>> };
const ajv = new Ajv2020({ strict: false, allErrors: true });
let n = 0;

before(async () => {
  s = await testServer();
  doc = (await s.api('GET', '/v1/openapi.json')).body;
});
after(() => s.close());

/** Checks a JSON response against the OpenAPI document's schema for its route and status. */
function conforms(r: Reply, method: string, route: string): void {
  const op = doc.paths[route]?.[method.toLowerCase()];
  assert.ok(op, `the OpenAPI document has ${method} ${route}`);
  const resp = op.responses[String(r.status)];
  assert.ok(resp, `${method} ${route} documents status ${r.status}`);
  const type = r.status >= 400 ? 'application/problem+json' : 'application/json';
  assert.equal(r.headers.get('content-type')?.split(';')[0], type, `${method} ${route} ${r.status} content type`);
  const schema = resp.content?.[type]?.schema as { $ref?: string } | undefined;
  assert.ok(schema, `${method} ${route} ${r.status} has a schema`);
  const resolved = schema.$ref
    ? (doc as unknown as { components: { schemas: Record<string, object> } }).components.schemas.Problem
    : schema;
  const validate = ajv.compile({ ...resolved, $id: `s${n++}` });
  assert.ok(
    validate(r.body),
    `${method} ${route} ${r.status}: ${JSON.stringify(validate.errors)}\n${JSON.stringify(r.body).slice(0, 500)}`,
  );
}

/** A body over the server's limit (1 MB), sent with node:http: the server answers before reading it all. */
function oversized(base: string, token: string): Promise<number> {
  const body = JSON.stringify({ request: 'x'.repeat(1_100_000) });
  return new Promise((res, rej) => {
    const req = request(`${base}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (r) => {
      r.resume();
      res(r.statusCode ?? 0);
    });
    req.on('error', rej);
    req.end(body);
  });
}

async function startRun(entries: ScriptEntry[], request: string, token = s.approver, name = `script-${n++}.yaml`) {
  const model = script(s.home, entries, name);
  const r = await s.api('POST', '/v1/runs', { token, body: { request, model } });
  return { r, model };
}

test('S2/A1/A3: a run pauses on a card, its SSE stream shows it; an approver approves; the call runs once and the run finishes', async () => {
  const { r } = await startRun([{ tool_calls: [TRASH] }, { text: 'Moved both to Trash.' }], 'trash the two promotions');
  assert.equal(r.status, 202, JSON.stringify(r.body));
  conforms(r, 'POST', '/v1/runs');
  const runId = r.body.run_id as string;
  assert.match(runId, /^run_/);
  assert.equal(r.body.events, `/v1/runs/${runId}/events`);

  const stream = await events(s.url, r.body.events, s.viewer);
  assert.equal(stream.status, 200);
  const first = await readUntil(stream, (e) => e.event === 'paused');
  assert.deepEqual(
    first.map((e) => e.event).filter((t) => t !== 'text_delta'),
    ['run_started', 'model_request', 'assistant', 'paused'],
  );
  assert.ok(
    first.every((e) => e.event === 'text_delta' || /^\d+$/.test(e.id ?? '')),
    'every stored event has an id',
  );
  const paused = JSON.parse(first.at(-1)?.data ?? '{}');
  assert.equal(paused.pause.kind, 'approval');
  assert.deepEqual(paused.pause.card.items[0].lines, ['Your weekly deals', 'Flash sale ends tonight']);
  const approvalId = paused.pause.approval_id as string;
  assert.equal(trashed(s.home).length, 0, 'nothing ran before the approval');

  const pending = await s.api('GET', '/v1/approvals?status=pending', { token: s.viewer });
  conforms(pending, 'GET', '/v1/approvals');
  assert.ok(pending.body.approvals.some((a: { id: string }) => a.id === approvalId));

  const ok = await s.api('POST', `/v1/approvals/${approvalId}`, { token: s.approver, body: { decision: 'approve' } });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  conforms(ok, 'POST', '/v1/approvals/{id}');
  assert.equal(ok.body.approval.status, 'approved');
  assert.equal(ok.body.approval.answered_by, 'ana-phone', 'answered with the token’s name');

  const rest = await readUntil(stream, (e) => e.event === 'run_finished' && JSON.parse(e.data).result.status === 'done');
  stream.close();
  const kinds = rest.map((e) => e.event).filter((t) => t !== 'text_delta');
  assert.deepEqual(kinds.slice(0, 4), ['run_finished', 'approval_answered', 'run_started', 'tool_result']);
  const ran = rest.filter((e) => e.event === 'tool_result').map((e) => JSON.parse(e.data).record);
  assert.deepEqual(
    ran.map((x) => [x.tool, x.outcome]),
    [['trash_email', 'ran']],
  );
  assert.deepEqual(trashed(s.home), ['trash_email {"ids":["m1","m2"]}'], 'exactly once');

  const run = await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer });
  conforms(run, 'GET', '/v1/runs/{id}');
  assert.equal(run.body.status, 'done');
  assert.equal(run.body.answer, 'Moved both to Trash.');
  const audit = await s.srv.keel.store!.listAudit(approvalId);
  assert.deepEqual(
    audit.map((a) => [a.actor, a.action]),
    [['ana-phone', 'approved']],
  );

  // A second answer: 409, and nothing runs again.
  const again = await s.api('POST', `/v1/approvals/${approvalId}`, { token: s.approver, body: { decision: 'approve' } });
  assert.equal(again.status, 409);
  conforms(again, 'POST', '/v1/approvals/{id}');
  assert.match(again.body.detail, /already approved by ana-phone/);
  assert.equal(trashed(s.home).length, 1);

  // A finished run's stream, read again from an id, ends: 204 once nothing is left.
  const done = await events(s.url, `/v1/runs/${runId}/events`, s.viewer, rest.at(-1)?.id);
  assert.equal(done.status, 204);
});

test('A2: reject with a reason over HTTP: nothing runs; the run finishes and the card says who and why', async () => {
  const before = trashed(s.home).length;
  const { r } = await startRun([{ tool_calls: [TRASH] }, { text: 'I left them alone.' }], 'trash the promotions');
  const stream = await events(s.url, r.body.events, s.viewer);
  const paused = JSON.parse((await readUntil(stream, (e) => e.event === 'paused')).at(-1)?.data ?? '{}');
  const res = await s.api('POST', `/v1/approvals/${paused.pause.approval_id}`, {
    token: s.approver,
    body: { decision: 'reject', reason: 'keep them' },
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.approval.status, 'rejected');
  assert.equal(res.body.approval.reason, 'keep them');
  const rest = await readUntil(stream, (e) => e.event === 'run_finished' && JSON.parse(e.data).result.status !== 'paused');
  stream.close();
  const result = rest.filter((e) => e.event === 'tool_result').map((e) => JSON.parse(e.data).record)[0];
  assert.match(result.result, /rejected.*keep them/);
  assert.equal(trashed(s.home).length, before, 'nothing ran');
  assert.equal(JSON.parse(rest.at(-1)?.data ?? '{}').result.answer, 'I left them alone.');
});

test('roles: no token 401, a viewer may read but not start, answer or approve (403), a revoked token 401', async () => {
  const noToken = await s.api('GET', '/v1/runs');
  assert.equal(noToken.status, 401);
  conforms(noToken, 'GET', '/v1/runs');
  const bad = await s.api('GET', '/v1/runs', { token: 'keel_not-a-token' });
  assert.equal(bad.status, 401);

  const list = await s.api('GET', '/v1/runs', { token: s.viewer });
  assert.equal(list.status, 200);
  conforms(list, 'GET', '/v1/runs');

  const { r } = await startRun([{ text: 'hi' }], 'hello', s.viewer);
  assert.equal(r.status, 403);
  conforms(r, 'POST', '/v1/runs');
  assert.match(r.body.detail, /vic is a viewer; this call needs a approver|needs a approver|needs an? approver/);

  const { r: started } = await startRun([{ tool_calls: [TRASH] }, { text: 'done' }], 'trash them');
  const stream = await events(s.url, started.body.events, s.viewer);
  const paused = JSON.parse((await readUntil(stream, (e) => e.event === 'paused')).at(-1)?.data ?? '{}');
  stream.close();
  const viewerApproves = await s.api('POST', `/v1/approvals/${paused.pause.approval_id}`, {
    token: s.viewer,
    body: { decision: 'approve' },
  });
  assert.equal(viewerApproves.status, 403, 'the server refuses a viewer');
  const card = await s.api('GET', `/v1/approvals/${paused.pause.approval_id}`, { token: s.viewer });
  conforms(card, 'GET', '/v1/approvals/{id}');
  assert.equal(card.body.status, 'pending', 'still pending');
  const tokensAsApprover = await s.api('GET', '/v1/tokens', { token: s.approver });
  assert.equal(tokensAsApprover.status, 403, 'only admins manage tokens');

  // A revoked token stops working at once.
  const made = await s.api('POST', '/v1/tokens', { token: s.admin, body: { name: 'temp', role: 'approver' } });
  conforms(made, 'POST', '/v1/tokens');
  assert.equal((await s.api('GET', '/v1/whoami', { token: made.body.token })).body.name, 'temp');
  const revoked = await s.api('DELETE', `/v1/tokens/${made.body.id}`, { token: s.admin });
  conforms(revoked, 'DELETE', '/v1/tokens/{id}');
  assert.equal((await s.api('GET', '/v1/whoami', { token: made.body.token })).status, 401);
  const listed = await s.api('GET', '/v1/tokens', { token: s.admin });
  conforms(listed, 'GET', '/v1/tokens');
  assert.ok(!JSON.stringify(listed.body).includes(made.body.token), 'tokens are never listed');
  // Clean up the paused run so later tests see a quiet server.
  await s.api('POST', `/v1/approvals/${paused.pause.approval_id}`, { token: s.approver, body: { decision: 'reject' } });
});

test('a body is validated: problem+json names the field; unknown fields, wrong types, bad JSON, wrong media type, too large', async () => {
  const missing = await s.api('POST', '/v1/runs', { token: s.approver, body: { model: 'script:x' } });
  assert.equal(missing.status, 400);
  conforms(missing, 'POST', '/v1/runs');
  assert.ok(missing.body.errors.some((e: { field: string }) => e.field === 'body.request'));
  const extra = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'x', approve: true } });
  assert.equal(extra.status, 400);
  assert.ok(extra.body.errors.some((e: { field: string; message: string }) => e.field === 'body' && /approve/.test(e.message)));
  const mode = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'x', mode: 'god' } });
  assert.ok(mode.body.errors.some((e: { field: string }) => e.field === 'body.mode'));
  const broken = await s.api('POST', '/v1/runs', { token: s.approver, raw: '{"request": ' });
  assert.equal(broken.status, 400);
  assert.equal(broken.body.errors[0].field, 'body');
  const text = await s.api('POST', '/v1/runs', { token: s.approver, raw: 'request=x', headers: { 'content-type': 'text/plain' } });
  assert.equal(text.status, 415);
  assert.equal(await oversized(s.url, s.approver), 413);
  const decision = await s.api('POST', '/v1/approvals/apr_nope', { token: s.approver, body: { decision: 'maybe' } });
  assert.equal(decision.status, 400);
  assert.equal(decision.body.errors[0].field, 'body.decision');
  const unknown = await s.api('POST', '/v1/approvals/apr_nope', { token: s.approver, body: { decision: 'approve' } });
  assert.equal(unknown.status, 404);
  conforms(unknown, 'POST', '/v1/approvals/{id}');
  const noRun = await s.api('GET', '/v1/runs/run_nope', { token: s.viewer });
  assert.equal(noRun.status, 404);
  const plugins = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'x', plugins: ['/etc'] } });
  assert.equal(plugins.status, 400);
  assert.equal(plugins.body.errors[0].field, 'body.plugins.0', 'a run may not load code from anywhere');
  const model = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'x', model: 'openai:gpt-4o' } });
  assert.equal(model.status, 403);
  assert.equal(model.body.errors[0].field, 'body.model');
  const cursor = await s.api('GET', '/v1/runs?cursor=zzz', { token: s.viewer });
  assert.equal(cursor.status, 400);
  assert.equal(cursor.body.errors[0].field, 'query.cursor');
});

test('no CORS unless configured; health and readiness need no token; openapi is 3.1', async () => {
  const h = await s.api('GET', '/v1/health', { headers: { origin: 'https://evil.example' } });
  assert.equal(h.status, 200);
  conforms(h, 'GET', '/v1/health');
  assert.equal(h.headers.get('access-control-allow-origin'), null);
  const ready = await s.api('GET', '/v1/ready');
  assert.equal(ready.status, 200);
  conforms(ready, 'GET', '/v1/ready');
  assert.equal(ready.body.store, 'sqlite');
  assert.equal(doc && (doc as unknown as { openapi: string }).openapi, '3.1.0');
});

test('lists, paging, sessions and mode changes, plugins', async () => {
  // A session with two runs, then paging through every run without a repeat.
  const first = await startRun([{ text: 'one' }], 'first');
  const sessionId = first.r.body.session_id as string;
  const s1 = await events(s.url, first.r.body.events, s.viewer);
  await readUntil(s1, (e) => e.event === 'run_finished');
  s1.close();
  const second = await s.api('POST', '/v1/runs', {
    token: s.approver,
    body: { request: 'second', model: first.model, session: sessionId },
  });
  assert.equal(second.status, 202, JSON.stringify(second.body));
  const s2 = await events(s.url, second.body.events, s.viewer);
  await readUntil(s2, (e) => e.event === 'run_finished');
  s2.close();

  const ses = await s.api('GET', `/v1/sessions/${sessionId}`, { token: s.viewer });
  conforms(ses, 'GET', '/v1/sessions/{id}');
  assert.deepEqual(
    ses.body.runs.map((r: { run_id: string }) => r.run_id),
    [second.body.run_id, first.r.body.run_id],
  );
  const mode = await s.api('PUT', `/v1/sessions/${sessionId}/mode`, { token: s.approver, body: { mode: 'plan' } });
  assert.equal(mode.status, 200);
  conforms(mode, 'PUT', '/v1/sessions/{id}/mode');
  assert.equal(mode.body.mode, 'plan');
  const audit = await s.srv.keel.store!.listAudit(sessionId);
  assert.deepEqual(
    audit.map((a) => [a.actor, a.action]),
    [['ana-phone', 'set_mode']],
  );
  assert.equal((await s.api('PUT', `/v1/sessions/${sessionId}/mode`, { token: s.viewer, body: { mode: 'agent' } })).status, 403);

  const all = (await s.api('GET', '/v1/runs?limit=200', { token: s.viewer })).body.runs.map((r: { run_id: string }) => r.run_id);
  const paged: string[] = [];
  let cursor: string | null = null;
  do {
    const page: Reply = await s.api('GET', `/v1/runs?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: s.viewer });
    conforms(page, 'GET', '/v1/runs');
    paged.push(...page.body.runs.map((r: { run_id: string }) => r.run_id));
    cursor = page.body.next_cursor;
  } while (cursor);
  assert.deepEqual(paged, all, 'every run once, in order');
  const done = (await s.api('GET', '/v1/runs?status=done', { token: s.viewer })).body.runs;
  assert.ok(done.length >= 2 && done.every((r: { status: string }) => r.status === 'done'));

  const plugins = await s.api('GET', '/v1/plugins', { token: s.viewer });
  conforms(plugins, 'GET', '/v1/plugins');
  const mail = plugins.body.plugins.find((p: { name: string }) => p.name === 'mail');
  const trash = mail.tools.find((t: { name: string }) => t.name === 'trash_email');
  assert.equal(trash.effect, 'destructive');
  assert.equal(trash.gate, 'approval');
  assert.ok(plugins.body.builtins.some((t: { name: string }) => t.name === 'ask_user'));
});

test('R16/R17: a question answered over HTTP; a second answer is refused (409)', async () => {
  const { r } = await startRun(
    [{ tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Which folder?' } }] }, { text: 'Filed under work.' }],
    'file it',
  );
  const stream = await events(s.url, r.body.events, s.viewer);
  const paused = JSON.parse((await readUntil(stream, (e) => e.event === 'paused')).at(-1)?.data ?? '{}');
  assert.equal(paused.pause.question, 'Which folder?');
  const viewerAnswers = await s.api('POST', `/v1/runs/${r.body.run_id}/answer`, { token: s.viewer, body: { text: 'work' } });
  assert.equal(viewerAnswers.status, 403);
  const a = await s.api('POST', `/v1/runs/${r.body.run_id}/answer`, { token: s.approver, body: { text: 'work' } });
  assert.equal(a.status, 202);
  conforms(a, 'POST', '/v1/runs/{id}/answer');
  const b = await s.api('POST', `/v1/runs/${r.body.run_id}/answer`, { token: s.approver, body: { text: 'home' } });
  assert.equal(b.status, 409);
  conforms(b, 'POST', '/v1/runs/{id}/answer');
  const rest = await readUntil(stream, (e) => e.event === 'run_finished' && JSON.parse(e.data).result.status === 'done');
  stream.close();
  assert.equal(JSON.parse(rest.at(-1)?.data ?? '{}').result.answer, 'Filed under work.');
  const q = rest.filter((e) => e.event === 'tool_result').map((e) => JSON.parse(e.data).record);
  assert.equal(q[0].result, 'work');
});

test('A4: an expired card answers 410 and its run ends without running anything', async () => {
  const t = await testServer({ KEEL_APPROVAL_TTL_MINUTES: '0.001' });
  try {
    const model = script(t.home, [{ tool_calls: [TRASH] }, { text: 'never' }]);
    const r = await t.api('POST', '/v1/runs', { token: t.approver, body: { request: 'trash', model } });
    const stream = await events(t.url, r.body.events, t.viewer);
    const paused = JSON.parse((await readUntil(stream, (e) => e.event === 'paused')).at(-1)?.data ?? '{}');
    await new Promise((res) => setTimeout(res, 150));
    const late = await t.api('POST', `/v1/approvals/${paused.pause.approval_id}`, { token: t.approver, body: { decision: 'approve' } });
    assert.equal(late.status, 410);
    assert.match(late.body.detail, /expired/);
    const rest = await readUntil(stream, (e) => e.event === 'run_finished' && JSON.parse(e.data).result.status !== 'paused');
    stream.close();
    assert.equal(JSON.parse(rest.at(-1)?.data ?? '{}').result.reason, 'approval_expired');
    assert.equal(trashed(t.home).length, 0);
  } finally {
    await t.close();
  }
});
