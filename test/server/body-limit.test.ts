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
import { type TestServer, testServer } from '../support/server.js';

const LIMIT = 64 * 1024;
const CHUNK = Buffer.alloc(16 * 1024, 'a');
let s: TestServer;

before(async () => {
  s = await testServer({ KEEL_MAX_BODY_BYTES: String(LIMIT) });
});
after(() => s?.close());

interface Sent {
  status: number;
  body: string;
  /** Bytes of the body written before the answer came. */
  sent: number;
}

/**
 * POSTs a body of `declared` bytes (or chunked, with no length, when `declared` is 'chunked'), but
 * writes at most `upTo` bytes and then holds the request open, waiting for the answer.
 */
function oversized(
  path: string,
  o: { declared: number | 'chunked'; upTo: number; headers?: Record<string, string>; method?: string },
): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { 'content-type': 'application/x-www-form-urlencoded', ...(o.headers ?? {}) };
    if (o.declared !== 'chunked') headers['content-length'] = o.declared;
    const req = request(`${s.url}${path}`, { method: o.method ?? 'POST', headers });
    let sent = 0;
    let answered = false;
    const t = setTimeout(() => {
      req.destroy();
      reject(new Error(`${path}: no answer after ${sent} bytes of a body over the limit: the server waits for the whole body`));
    }, 10_000);
    req.on('response', (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        clearTimeout(t);
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body, sent });
      });
    });
    req.on('error', (err) => {
      if (!answered) {
        clearTimeout(t);
        reject(err);
      }
    });
    const pump = () => {
      const end = o.declared === 'chunked' ? o.upTo : Math.min(o.upTo, o.declared);
      while (!answered && sent < end) {
        const chunk = CHUNK.subarray(0, Math.min(CHUNK.length, end - sent));
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
    };
    req.flushHeaders();
    pump();
  });
}

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
