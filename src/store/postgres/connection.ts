/**
 * Reaching the PostgreSQL store: its URL, pg loaded on first use, what a statement is, the advisory
 * lock keys, and one clear line for a failure to connect (`withPostgres`: one connection for one job).
 * Never shows a password: every URL and message that may be printed goes through redact.
 */
import type pg from 'pg';
import { KeelError } from '../../util/errors.js';
import { optionalImport } from '../../util/optional.js';
import { redact } from '../../util/redact.js';

export type Row = Record<string, unknown>;

/**
 * pg and pg-boss load on first use: a run on the SQLite store, and `keel --help`, never load them.
 * They are optional packages (util/optional.ts): an app without them is told what to install.
 */
const NEEDS_PG = 'the PostgreSQL store (--store postgres://…, KEEL_STORE)';
export async function loadPg(): Promise<typeof pg> {
  return (await optionalImport('pg', NEEDS_PG, () => import('pg'))).default;
}
/**
 * A statement: its text, and for the hot ones a name (issue 29), under which each connection
 * prepares it once — parsed and planned once per connection instead of at every call.
 */
export type Sql = string | { name: string; text: string };
/** What a run write queries through: a transaction's client or the pool. */
export interface Queryable {
  query<R extends pg.QueryResultRow = Row>(sql: Sql, params?: unknown[]): Promise<pg.QueryResult<R>>;
}
/** A query config for pg: a named statement is prepared once per connection (see Sql). */
export const config = (sql: Sql, values: unknown[]): pg.QueryConfig =>
  typeof sql === 'string' ? { text: sql, values } : { ...sql, values };
/** A statement prepared once per connection under `name`. */
export const named = (name: string, text: string) => ({ name: `keel_${name}`, text });

/** Advisory lock keys (first half): migrations, and the journal's append order. */
export const LOCK_MIGRATE = 0x6b65656c; // 'keel'
export const LOCK_JOURNAL = 0x6b65656d;
export const LOCK_QUEUE = 0x6b65656e;
/** D5: starting a delegate's run under a limit (one at a time per schema). */
export const LOCK_DELEGATES = 0x6b65656f;

/** A URL Keel accepts for PostgreSQL. */
export function isPostgresUrl(spec: string): boolean {
  return /^postgres(ql)?:\/\//i.test(spec.trim());
}

export interface PostgresTarget {
  /** The URL pg connects with (Keel's own parameters removed). */
  connectionString: string;
  /** The schema Keel's tables live in (`?schema=NAME`, default public). */
  schema: string;
  /** The URL as it may be printed: no password. */
  shown: string;
}

/**
 * Reads a PostgreSQL URL: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME&…]`.
 * A mistake is one line saying what is wrong (the password never shown).
 */
export function parsePostgresUrl(spec: string): PostgresTarget {
  const shown = redact(spec.trim());
  let u: URL;
  try {
    u = new URL(spec.trim());
  } catch {
    throw new KeelError(
      'config',
      `${shown} is not a valid PostgreSQL URL: write postgres://USER@HOST:PORT/DATABASE (USER:PASSWORD@ with a password)`,
    );
  }
  if (!/^postgres(ql)?:$/i.test(u.protocol)) {
    throw new KeelError('config', `${shown} is not a PostgreSQL URL: it must start with postgres://`);
  }
  if (!u.hostname && !u.searchParams.get('host')) {
    throw new KeelError('config', `${shown} names no host: write postgres://USER@HOST:PORT/DATABASE (USER:PASSWORD@ with a password)`);
  }
  if (u.port && !(Number(u.port) > 0 && Number(u.port) < 65536)) throw new KeelError('config', `${shown}: ${u.port} is not a port`);
  const schema = u.searchParams.get('schema') ?? 'public';
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new KeelError('config', `${shown}: schema=${schema} is not a schema name Keel accepts (lowercase letters, digits and _)`);
  }
  u.searchParams.delete('schema');
  return { connectionString: u.toString(), schema, shown: redact(u.toString()).replace(/\?$/, '') };
}

/** One line for a connection failure: where, and what to do. */
export function explainPgError(err: unknown, shown: string): KeelError {
  if (err instanceof KeelError) return err;
  const e = err as NodeJS.ErrnoException & { code?: string; message?: string };
  const msg = redact(e?.message ?? String(err)).split('\n')[0];
  switch (e?.code) {
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ECONNRESET':
      return new KeelError(
        'unavailable',
        `cannot reach the PostgreSQL store ${shown} (${e.code}): is PostgreSQL running there? check the URL`,
      );
    case '28P01':
    case '28000':
      return new KeelError('config', `the PostgreSQL store ${shown} refused the login (${msg}): check the user and password in the URL`);
    case '3D000':
      return new KeelError('config', `the PostgreSQL store ${shown}: ${msg}: create it (createdb) or name another database in the URL`);
    default:
      // Issue 27: an outage (a lost connection, a server shutting down or starting) is `unavailable`, not the user's mistake.
      if (/timeout|terminated/i.test(msg) || /^(08|57P)/.test(e?.code ?? '')) {
        return new KeelError('unavailable', `cannot reach the PostgreSQL store ${shown}: ${msg}`);
      }
      return new KeelError('config', `the PostgreSQL store ${shown} failed: ${msg}`);
  }
}

/** Whether an error is about reaching the database rather than about a query. */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? '';
  const msg = (err as Error)?.message ?? '';
  return (
    /^(ECONN|ENOTFOUND|EAI_|ETIMEDOUT|EHOST|ENET)/.test(code) ||
    /^(28|3D|08|57P)/.test(code) ||
    /Connection terminated|timeout expired/i.test(msg)
  );
}

/** One connection for one job (`keel db`): opened, used, closed; a failure to connect is one clear line. */
export async function withPostgres<T>(spec: string | PostgresTarget, f: (c: pg.Client, target: PostgresTarget) => Promise<T>): Promise<T> {
  const target = typeof spec === 'string' ? parsePostgresUrl(spec) : spec;
  const { Client } = await loadPg();
  const client = new Client({ connectionString: target.connectionString, connectionTimeoutMillis: 10_000, application_name: 'keel' });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => {});
    throw explainPgError(err, target.shown);
  }
  try {
    return await f(client, target);
  } catch (err) {
    throw isConnectionError(err) ? explainPgError(err, target.shown) : err;
  } finally {
    await client.end().catch(() => {});
  }
}
