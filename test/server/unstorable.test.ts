/**
 * Issue 27 (items 8 and 9), through the HTTP API on both stores: text no store can hold (a NUL, a
 * lone UTF-16 surrogate) in a request, an id, a session, `?session=` or a reason is a 400 problem
 * naming the field — PostgreSQL answered 500 — and a store out of reach is 503 with Retry-After,
 * not a client error (it was 422). Free text the API refuses here is made storable, not refused,
 * where it enters through the library (test/loop/unstorable.test.ts).
 */
import assert from 'node:assert/strict';
import { createServer, Socket as NetSocket, type Server, type Socket } from 'node:net';
import { after, test } from 'node:test';
import { script } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { type TestServer, testServer } from '../support/server.js';

after(() => dropSchemas());

/** A body with JSON escapes as written (JSON.stringify would write a lone surrogate as its escape anyway). */
const raw = (text: string) => text;

async function refusesUnstorable(s: TestServer): Promise<void> {
  const cases: { method: string; path: string; raw?: string; field: string }[] = [
    { method: 'POST', path: '/v1/runs', raw: raw('{"request":"trash \\ud83d the deals"}'), field: 'body.request' },
    { method: 'POST', path: '/v1/runs', raw: raw('{"request":"hi \\u0000 there"}'), field: 'body.request' },
    { method: 'POST', path: '/v1/runs', raw: raw('{"request":"hi","session":"ses\\u0000x"}'), field: 'body.session' },
    { method: 'GET', path: '/v1/runs?session=ses%00x', field: 'query.session' },
    { method: 'GET', path: '/v1/runs/run%00x', field: 'path.id' },
    { method: 'GET', path: '/v1/sessions/ses%00x', field: 'path.id' },
    { method: 'GET', path: '/v1/approvals?run=run%00x', field: 'query.run' },
    { method: 'POST', path: '/v1/approvals/ap_1', raw: raw('{"decision":"reject","reason":"no \\u0000"}'), field: 'body.reason' },
    { method: 'POST', path: '/v1/approvals/ap_1', raw: raw('{"decision":"reject","reason":"no \\udc00"}'), field: 'body.reason' },
    { method: 'POST', path: '/v1/runs/run_1/cancel', raw: raw('{"reason":"x\\ud800"}'), field: 'body.reason' },
    { method: 'POST', path: '/v1/runs/run_1/answer', raw: raw('{"text":"yes \\u0000"}'), field: 'body.text' },
  ];
  for (const c of cases) {
    const r = await s.api(c.method, c.path, { token: s.approver, ...(c.raw ? { raw: c.raw } : {}) });
    assert.equal(r.status, 400, `${c.method} ${c.path} ${c.raw ?? ''}: ${JSON.stringify(r.body)}`);
    assert.equal(r.headers.get('content-type')?.split(';')[0], 'application/problem+json');
    assert.deepEqual(
      r.body.errors.map((e: { field: string }) => e.field),
      [c.field],
      `${c.method} ${c.path} names ${c.field}`,
    );
    assert.match(r.body.detail, /no store can hold/);
  }
  // A whole emoji, bidi controls and U+FFFD itself are ordinary text: accepted.
  const model = script(s.home, [{ text: 'ok 😀' }]);
  const ok = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'say 😀 \u202e\u2066 \ufffd', model } });
  assert.equal(ok.status, 202, JSON.stringify(ok.body));
}

test('issue 27.8: SQLite — text no store can hold in a request, an id, a session, ?session= or a reason is a 400 naming the field', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  await refusesUnstorable(s);
});

test('issue 27.8: PostgreSQL — the same 400 naming the field, never a 500', async (t) => {
  const s = await testServer({ KEEL_STORE: withSchema(await testPgUrl(), freshSchema()) });
  t.after(() => s.close());
  assert.equal(s.srv.keel.store?.kind, 'postgres');
  await refusesUnstorable(s);
});

/** A TCP relay on loopback to PostgreSQL, which the test can cut (as an outage would). */
async function relay(target: URL): Promise<{ port: number; cut(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = new NetSocket();
    sockets.add(inbound).add(outbound);
    outbound.connect(Number(target.port || 5432), target.hostname, () => {
      inbound.pipe(outbound);
      outbound.pipe(inbound);
    });
    for (const x of [inbound, outbound]) {
      x.on('error', () => {});
      x.on('close', () => sockets.delete(x));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    cut: async () => {
      await new Promise<void>((r) => {
        server.close(() => r());
        for (const x of sockets) x.destroy();
      });
    },
  };
}

test('issue 27.9: PostgreSQL out of reach is 503 with Retry-After (was 422)', async (t) => {
  const real = new URL(withSchema(await testPgUrl(), freshSchema()));
  const r = await relay(real);
  const via = new URL(real);
  via.hostname = '127.0.0.1';
  via.port = String(r.port);
  const s = await testServer({ KEEL_STORE: via.toString() });
  t.after(() => s.close());
  assert.equal((await s.api('GET', '/v1/runs', { token: s.viewer })).status, 200, 'reachable through the relay');
  await r.cut();
  for (const path of ['/v1/runs', '/v1/runs/run_1', '/v1/approvals']) {
    const res = await s.api('GET', path, { token: s.viewer });
    assert.equal(res.status, 503, `${path}: ${JSON.stringify(res.body)}`);
    assert.equal(res.headers.get('retry-after'), '5', `${path} says when to try again`);
    assert.match(res.body.detail, /cannot reach the PostgreSQL store/);
    assert.doesNotMatch(res.body.detail, /password|secret/);
  }
  const started = await s.api('POST', '/v1/runs', {
    token: s.approver,
    body: { request: 'hello', model: script(s.home, [{ text: 'hi' }]) },
  });
  assert.equal(started.status, 503, JSON.stringify(started.body));
  // The OpenAPI document lists both answers.
  const doc = (await s.api('GET', '/v1/openapi.json')).body;
  assert.ok(doc.paths['/v1/runs'].get.responses['503'], 'GET /v1/runs documents 503');
  assert.ok(doc.paths['/v1/runs/{id}'].get.responses['400'], 'GET /v1/runs/{id} documents 400');
});
