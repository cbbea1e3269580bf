/** A real `keel serve` for tests: in this process (startServer) or as a CLI process, on an ephemeral loopback port. */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { type RunningServer, startServer } from '../../src/server/serve.js';
import { readSse, type SseEvent } from '../../src/util/sse.js';
import { ensureBuilt, FIXTURES, KEEL_BIN, ROOT, tempHome } from './helpers.js';

export interface Reply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are checked field by field
  body: any;
}

export async function call(
  base: string,
  method: string,
  path: string,
  o: { token?: string; body?: unknown; headers?: Record<string, string>; raw?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.body !== undefined || o.raw !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body)),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, headers: res.headers, body };
}

/** Opens a run's (or the inbox's) event stream. */
export async function events(
  base: string,
  path: string,
  token: string,
  lastEventId?: string,
): Promise<{ status: number; next(): Promise<SseEvent | undefined>; close(): void }> {
  const ac = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const res = await fetch(`${base}${path}`, { headers, signal: ac.signal });
  if (!res.body || res.status !== 200) return { status: res.status, next: async () => undefined, close: () => ac.abort() };
  const it = readSse(res.body);
  return {
    status: res.status,
    next: async () => {
      try {
        const n = await it.next();
        return n.done ? undefined : n.value;
      } catch {
        return undefined;
      }
    },
    close: () => ac.abort(),
  };
}

/** Reads events until `until` says stop (or the stream ends); fails after `ms`. */
export async function readUntil(
  s: { next(): Promise<SseEvent | undefined> },
  until: (e: SseEvent) => boolean,
  ms = 20_000,
): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const e = await Promise.race([s.next(), new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), deadline - Date.now()))]);
    if (e === 'timeout') break;
    if (!e) return out;
    out.push(e);
    if (until(e)) return out;
  }
  throw new Error(`no matching event within ${ms} ms; got: ${out.map((e) => e.event).join(', ')}`);
}

export interface TestServer {
  home: string;
  url: string;
  srv: RunningServer;
  admin: string;
  approver: string;
  viewer: string;
  api(method: string, path: string, o?: Parameters<typeof call>[3]): Promise<Reply>;
  close(): Promise<void>;
}

/** startServer in this process, on a fresh home with the fixture plugins; admin, approver and viewer tokens. */
export async function testServer(
  env: Record<string, string> = {},
  home = tempHome('keel-serve-'),
  pluginDirs: string[] = [FIXTURES],
): Promise<TestServer> {
  const srv = await startServer({
    port: 0,
    pluginDirs,
    allowedModels: ['script:'],
    env: { ...process.env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '', KEEL_CONFIRM_ONCE_TOOLS: '', ...env },
    log: () => {},
  });
  const admin = srv.adminToken as string;
  const api = (method: string, path: string, o?: Parameters<typeof call>[3]) => call(srv.url, method, path, o);
  const approver = (await api('POST', '/v1/tokens', { token: admin, body: { name: 'ana-phone', role: 'approver' } })).body.token;
  const viewer = (await api('POST', '/v1/tokens', { token: admin, body: { name: 'vic', role: 'viewer' } })).body.token;
  return {
    home,
    url: srv.url,
    srv,
    admin,
    approver,
    viewer,
    api,
    close: async () => {
      await srv.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** `keel serve` as a user starts it: a CLI process. Resolves once it prints its URL. */
export async function cliServer(
  home: string,
  env: Record<string, string> = {},
  args: string[] = [],
): Promise<{ url: string; child: ChildProcess; stdout: () => string; stderr: () => string; exited: Promise<number | null> }> {
  ensureBuilt();
  const base = { ...process.env };
  delete base.KEEL_PLUGINS;
  delete base.KEEL_CONFIRM_ONCE_TOOLS;
  const child = spawn(process.execPath, [KEEL_BIN, 'serve', '--port', '0', '--plugins', FIXTURES, '--allow-model', 'script:', ...args], {
    cwd: ROOT,
    env: { ...base, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const url = await new Promise<string>((res, rej) => {
    const t = setTimeout(() => rej(new Error(`keel serve did not start:\n${out}\n${err}`)), 30_000);
    child.stdout?.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(t);
        res(m[1]);
      }
    });
    child.on('exit', (code) => rej(new Error(`keel serve exited (${code}):\n${out}\n${err}`)));
  });
  return { url, child, stdout: () => out, stderr: () => err, exited };
}
