/**
 * S3: KEEL_MAX_BODY_BYTES bounds every request that carries a body — the API's calls and the
 * console's form posts, `POST /login` first, before any other check (issue 27, item 6). A body
 * over the limit is refused with 413 *before it is buffered*: each request here declares (or
 * streams, chunked) far more than the limit but sends only a little past it and then waits; a
 * server that read the whole body first would never answer. The server's memory is measured
 * around three such 60 MB posts.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { oversized as post, type Sent } from '../support/oversized.js';
import { type TestServer, testServer } from '../support/server.js';

const LIMIT = 64 * 1024;
let s: TestServer;

before(async () => {
  s = await testServer({ KEEL_MAX_BODY_BYTES: String(LIMIT) });
});
after(() => s?.close());

/** POSTs past the limit to this server's `path` (see test/support/oversized.ts). */
const oversized = (path: string, o: Parameters<typeof post>[1]): Promise<Sent> => post(`${s.url}${path}`, o);

/** A console session: the login form's nonce, then the token exchanged for the session cookie. */
async function consoleLogin(token: string): Promise<{ cookie: string; csrf: string }> {
  const form = await fetch(`${s.url}/login`);
  const nonce = /keel_login=([^;]+)/.exec(form.headers.get('set-cookie') ?? '')?.[1];
  assert.ok(nonce, 'the login form sets its nonce cookie');
  const res = await fetch(`${s.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `keel_login=${nonce}` },
    body: new URLSearchParams({ csrf: nonce, token }),
  });
  assert.equal(res.status, 303, 'logged in');
  const cookie = (res.headers.getSetCookie().find((c) => c.startsWith('keel_session=')) ?? '').split(';')[0];
  assert.ok(cookie, 'the session cookie is set');
  const page = await (await fetch(`${s.url}/`, { headers: { cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  assert.ok(csrf, 'the inbox carries the CSRF token');
  return { cookie, csrf };
}

test('S3: POST /login with a 60 MB declared body, unauthenticated, is refused with 413 before the body is read', async () => {
  const r = await oversized('/login', { declared: 60_000_000, upTo: 2 * LIMIT });
  assert.equal(r.status, 413);
  assert.match(r.body, /larger than 65536 bytes \(KEEL_MAX_BODY_BYTES\)/);
  assert.ok(r.sent <= 2 * LIMIT, 'answered before the body was sent');
});

test('S3: a chunked /login body (no length) is refused with 413 as soon as it passes the limit', async () => {
  const r = await oversized('/login', { declared: 'chunked', upTo: 4 * LIMIT });
  assert.equal(r.status, 413);
});

test("S3: the console's form posts (logged in) and the API's calls refuse an oversized body with 413", async () => {
  const { cookie } = await consoleLogin(s.approver);
  for (const path of ['/runs', '/approvals/apr_x', '/runs/run_x/answer', '/sessions/ses_x/mode', '/logout']) {
    for (const declared of [60_000_000, 'chunked'] as const) {
      const r = await oversized(path, { declared, upTo: 4 * LIMIT, headers: { cookie } });
      assert.equal(r.status, 413, `console ${path} (${declared})`);
    }
  }
  const api = { authorization: `Bearer ${s.approver}`, 'content-type': 'application/json' };
  for (const [method, path] of [
    ['POST', '/v1/runs'],
    ['POST', '/v1/approvals/apr_x'],
    ['POST', '/v1/runs/run_x/answer'],
    ['POST', '/v1/runs/run_x/continue'],
    ['PUT', '/v1/sessions/ses_x/mode'],
  ]) {
    for (const declared of [60_000_000, 'chunked'] as const) {
      const r = await oversized(path, { declared, upTo: 4 * LIMIT, headers: api, method });
      assert.equal(r.status, 413, `${method} ${path} (${declared})`);
      assert.equal(JSON.parse(r.body).status, 413, 'a problem+json');
    }
  }
  // No token at all: still refused for its size, before anything else is looked at.
  const anon = await oversized('/v1/runs', { declared: 60_000_000, upTo: LIMIT, headers: { 'content-type': 'application/json' } });
  assert.equal(anon.status, 413);
});

test('S3: a body under the limit still works: the console logs in, the API starts a run', async () => {
  const { cookie, csrf } = await consoleLogin(s.viewer);
  const out = await fetch(`${s.url}/logout`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams({ csrf }),
  });
  assert.equal(out.status, 303);
  const r = await s.api('POST', '/v1/runs', {
    token: s.approver,
    body: { request: 'x'.repeat(LIMIT / 2), model: 'script:/nonexistent.yaml' },
  });
  assert.notEqual(r.status, 413, JSON.stringify(r.body));
});

test("S3: three 60 MB posts to /login do not grow the server's memory by their size", async () => {
  global.gc?.();
  const before = process.memoryUsage().rss;
  for (let i = 0; i < 3; i++) {
    const r = await oversized('/login', { declared: 60_000_000, upTo: 60_000_000 });
    assert.equal(r.status, 413);
  }
  const grew = process.memoryUsage().rss - before;
  console.log(`rss before ${(before / 1e6).toFixed(0)} MB, grew ${(grew / 1e6).toFixed(1)} MB over three 60 MB posts`);
  // Loose: a server that buffered one body would grow by ~60 MB or more.
  assert.ok(grew < 40e6, `rss grew ${(grew / 1e6).toFixed(1)} MB`);
});

/**
 * A 60 MB body sent whole by a real client (node:http writes all of it, as curl or a browser does,
 * without waiting for an answer first): the answer is 413, never a connection reset mid-upload.
 */
function postWhole(
  path: string,
  body: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; errors: string[] }> {
  return new Promise((resolve) => {
    const errors: string[] = [];
    let status = 0;
    let text = '';
    const req = request(`${s.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(headers['transfer-encoding'] ? {} : { 'content-length': String(body.length) }),
        ...headers,
      },
    });
    let settled = false;
    const done = () => {
      if (!settled) resolve({ status, text, errors });
      settled = true;
    };
    const failed = (err: NodeJS.ErrnoException) => {
      errors.push(err.code ?? err.message);
      done();
    };
    req.on('error', failed);
    // A reset after the answer shows on the socket only.
    req.on('socket', (socket) => socket.on('error', failed));
    req.on('response', (res) => {
      status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
      res.on('end', () => {
        // The upload goes on after the answer: it must finish (or be given up by us), not be reset.
        if (req.writableFinished) done();
        else req.once('finish', done);
      });
    });
    req.end(body);
  });
}

test('S3 (issue 40): five 60 MB posts sent whole by a real client — to /login, a console form, the API, and chunked — all get 413, never ECONNRESET or EPIPE', async () => {
  const body = Buffer.alloc(60_000_000, 'a');
  const { cookie } = await consoleLogin(s.approver);
  for (const [path, headers] of [
    ['/login', {}],
    ['/runs', { cookie }],
    ['/v1/runs', { authorization: `Bearer ${s.approver}`, 'content-type': 'application/json' }],
    ['/login', { 'transfer-encoding': 'chunked' }],
  ] as [string, Record<string, string>][]) {
    for (let i = 0; i < 5; i++) {
      const r = await postWhole(path, body, headers);
      assert.deepEqual({ status: r.status, errors: r.errors }, { status: 413, errors: [] }, `${path}, try ${i + 1}`);
      assert.match(r.text, /larger than 65536 bytes \(KEEL_MAX_BODY_BYTES\)/);
    }
  }
  // fetch, as an app would: the same 413.
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${s.url}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    assert.equal(res.status, 413, `fetch, try ${i + 1}`);
    await res.text();
  }
});
