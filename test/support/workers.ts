/** `keel worker` processes for the PostgreSQL end-to-end tests, started as a user starts them. */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { after, type TestContext } from 'node:test';
import { ownerOf } from '../../src/loop/run.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { ensureBuilt, KEEL_BIN, ROOT, tempHome } from './helpers.js';
import { freshSchema, testPgUrl, withSchema } from './pg.js';
import { call, cliServer, type Reply } from './server.js';

export interface WorkerProcess {
  child: ChildProcess;
  /** The owner it writes on the runs it holds (host:pid). */
  owner: string;
  exited: Promise<number | null>;
  /** What it has written to stderr so far (its log). */
  err: () => string;
}

/** Every process started here (workers and servers): those still running are killed when the test file ends. */
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** `keel worker --concurrency N`; resolves once it says it is taking legs. */
export async function startKeelWorker(env: Record<string, string>, concurrency = 2): Promise<WorkerProcess> {
  ensureBuilt();
  const base = { ...process.env };
  delete base.KEEL_PLUGINS;
  delete base.KEEL_TEST_CRASH_AT;
  const child = spawn(process.execPath, [KEEL_BIN, 'worker', '--concurrency', String(concurrency)], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  await new Promise<void>((res, rej) => {
    const t = setTimeout(() => rej(new Error(`keel worker did not start:\n${out}\n${err}`)), 30_000);
    child.stdout?.on('data', (d) => {
      out += d;
      if (/taking legs/.test(out)) {
        clearTimeout(t);
        res();
      }
    });
    child.on('exit', (code) => rej(new Error(`keel worker exited (${code}):\n${out}\n${err}`)));
  });
  return { child, owner: ownerOf(child.pid!), exited, err: () => err };
}

/** Polls `f` every 100 ms until it gives a value. */
export async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const v = await f();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * A deployment for one test: a schema of its own on the test cluster, a Keel home, a store on it for
 * the test's own reads, and `keel serve` on that store (queueing legs), with its admin token.
 */
export async function pgDeployment(t: TestContext, prefix: string, env: Record<string, string>, args: string[] = []) {
  const url = withSchema(await testPgUrl(), freshSchema());
  const home = tempHome(prefix);
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const all = { KEEL_HOME: home, KEEL_STORE: url, KEEL_COUNT_TOKENS: '0', ...env };
  const store = new PostgresStore(url);
  t.after(() => store.close());
  const srv = await cliServer(home, all, args);
  children.push(srv.child);
  const admin = /admin token: (\S+)/.exec(srv.stdout())?.[1] ?? '';
  assert.ok(admin, `keel serve printed its admin token: ${srv.stdout()}`);
  const api = (method: string, path: string, body?: unknown): Promise<Reply> => call(srv.url, method, path, { token: admin, body });
  return { url, home, env: all, store, srv, api };
}
