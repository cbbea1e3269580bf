/**
 * PostgreSQL for the tests. In CI, `.ci/run` starts a throwaway cluster and exports its URL as
 * KEEL_TEST_PG_URL; a PostgreSQL test there without it fails (it never skips). Elsewhere, without
 * that variable, the first test that asks starts a cluster of its own: initdb into a temporary
 * folder, on a free loopback port, as the `postgres` user when running as root (PostgreSQL refuses
 * to run as root), stopped and deleted when the test process ends.
 *
 * Each store a test opens lives in a schema of its own (`freshSchema`), so tests never see each
 * other's rows, even on one shared cluster.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** Where Debian puts PostgreSQL's programs: the newest version installed. */
export function pgBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions.length) throw new Error('PostgreSQL is not installed (apt-get install postgresql), and KEEL_TEST_PG_URL is not set');
  return join(root, versions[0], 'bin');
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

/** Runs a PostgreSQL program as a user PostgreSQL accepts: `postgres` when we are root. */
function asPg(bin: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const cmd = asRoot ? 'runuser' : bin;
  const argv = asRoot ? ['-u', 'postgres', '--', bin, ...args] : args;
  const r = spawnSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
}

async function startCluster(): Promise<string> {
  const bin = pgBinDir();
  const dir = mkdtempSync(join(tmpdir(), 'keel-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  const data = join(dir, 'data');
  asPg(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'keel', '--no-sync', '-E', 'UTF8', '--locale', 'C']);
  const port = await freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  asPg(join(bin, 'pg_ctl'), ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start']);
  process.once('exit', () => {
    // Stopped at once (the data is thrown away), then deleted.
    spawnSync(process.getuid?.() === 0 ? 'runuser' : join(bin, 'pg_ctl'), [
      ...(process.getuid?.() === 0 ? ['-u', 'postgres', '--', join(bin, 'pg_ctl')] : []),
      '-D',
      data,
      '-m',
      'immediate',
      'stop',
    ]);
    rmSync(dir, { recursive: true, force: true });
  });
  return `postgres://keel@127.0.0.1:${port}/postgres`;
}
