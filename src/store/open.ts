/**
 * Which store a Keel opens: KEEL_STORE (SQLite path or PostgreSQL URL) or keel.db under KEEL_HOME.
 * Never opens a URL it cannot parse.
 */
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Store } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { redact } from '../util/redact.js';
import { isPostgresUrl, PostgresStore } from './postgres.js';
import { SqliteStore } from './sqlite.js';

/**
 * The store a Keel uses: KEEL_STORE when set (`sqlite:PATH`, or `postgres://…` for a database
 * several servers and workers share), else `keel.db` under KEEL_HOME. A PostgreSQL store connects
 * on first use (and brings its schema up to date then); a bad URL is refused here.
 * Every mistake in that setting, or in the place it points at, is one line saying what and how to
 * fix it — never a stack trace.
 */
export function openStore(home: string, env: NodeJS.ProcessEnv = process.env): Store {
  const spec = env.KEEL_STORE?.trim();
  let file = join(home, 'keel.db');
  let where = `KEEL_HOME (${home})`;
  if (spec) {
    if (isPostgresUrl(spec)) {
      try {
        return new PostgresStore(spec, { leaseMs: leaseFromEnv(env) });
      } catch (err) {
        throw new KeelError('config', `KEEL_STORE: ${(err as Error).message}`);
      }
    }
    if (!spec.startsWith('sqlite:') || spec.length === 'sqlite:'.length) {
      throw new KeelError(
        'config',
        `KEEL_STORE=${redact(spec)} is not a store Keel knows: write sqlite:PATH or postgres://USER@HOST:PORT/DATABASE (USER:PASSWORD@ with a password), or unset it to use ${file}`,
      );
    }
    file = resolve(spec.slice('sqlite:'.length));
    where = `KEEL_STORE (${spec})`;
  }
  const dir = dirname(file);
  const dirStat = statOf(dir);
  if (dirStat && !dirStat.isDirectory()) throw new KeelError('config', `${where}: ${dir} is a file, not a folder: point it at a folder`);
  const fileStat = statOf(file);
  if (fileStat?.isDirectory()) throw new KeelError('config', `${where}: ${file} is a folder, not a database file`);
  const leaseMs = leaseFromEnv(env);
  try {
    return new SqliteStore(file, { leaseMs });
  } catch (err) {
    throw new KeelError('config', `${where}: ${explain(err, file, dir)}`);
  }
}

function statOf(p: string) {
  try {
    return statSync(p);
  } catch {
    return undefined;
  }
}

function explain(err: unknown, file: string, dir: string): string {
  const e = err as NodeJS.ErrnoException & { code?: string };
  const msg = e?.message ?? String(err);
  switch (e?.code) {
    case 'ENOTDIR':
    case 'EEXIST':
      return `a part of ${dir} is a file, not a folder: point it at a folder`;
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return `cannot write ${dir} (${e.code}): choose a place you can write, or fix its permissions`;
    case 'SQLITE_NOTADB':
    case 'SQLITE_CORRUPT':
      return `${file} is not a readable Keel database (${msg}): move it aside and Keel starts a new one`;
    case 'SQLITE_BUSY':
    case 'SQLITE_LOCKED':
      return `${file} is locked by another process (${msg}): wait for it to finish, or stop it, and try again`;
    case 'SQLITE_CANTOPEN':
    case 'SQLITE_READONLY':
    case 'SQLITE_PERM':
      return `cannot open ${file} for writing (${msg}): check the file and its folder's permissions`;
    default:
      return `cannot open the store ${file}: ${msg}`;
  }
}

/** KEEL_LEASE_MS: how long a run's lease lasts without renewal, on either store (default 30 s). */
function leaseFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const v = env.KEEL_LEASE_MS?.trim();
  if (!v) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 100)
    throw new KeelError('config', `KEEL_LEASE_MS=${v} is not a whole number of milliseconds (at least 100)`);
  return n;
}
