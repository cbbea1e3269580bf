/**
 * The PostgreSQL store (S4): the same interfaces and the same semantics as the SQLite file, for
 * deployments where a server and several workers on several machines share one database.
 *
 * It connects lazily: constructing it opens nothing, and the first query connects and brings the
 * schema up to date (numbered migrations, under an advisory lock, so two processes starting at once
 * migrate once). Everything a method writes is one transaction or one statement.
 */
import type pg from 'pg';
import type PgBoss from 'pg-boss';
import type {
  ApprovalCard,
  ApprovalItem,
  ApprovalRecord,
  ApprovalStatus,
  AuditRecord,
  EventQuery,
  JournalEntry,
  LedgerRow,
  Memory,
  Message,
  Mode,
  Principal,
  PushSubscriptionRecord,
  RequestTrace,
  RunEvent,
  RunQuery,
  RunState,
  RunSummary,
  SessionRecord,
  Store,
  StoredEvent,
  UntrustedSource,
  VapidKeys,
} from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { optionalImport } from '../util/optional.js';
import { redact } from '../util/redact.js';
import { MIGRATIONS, type Migration } from './pg-migrations.js';
import { contentHash, type StepRow, stepRow, stepsFrom, toolsBlob } from './trace.js';

type Row = Record<string, unknown>;

/**
 * pg and pg-boss load on first use: a run on the SQLite store, and `keel --help`, never load them.
 * They are optional packages (util/optional.ts): an app without them is told what to install.
 */
const NEEDS_PG = 'the PostgreSQL store (--store postgres://…, KEEL_STORE)';
async function loadPg(): Promise<typeof pg> {
  return (await optionalImport('pg', NEEDS_PG, () => import('pg'))).default;
}
type Stored = { messages: number; steps: number; requests: number };
/**
 * A statement: its text, and for the hot ones a name (issue 29), under which each connection
 * prepares it once — parsed and planned once per connection instead of at every call.
 */
type Sql = string | { name: string; text: string };
/** What a run write queries through: a transaction's client or the pool. */
interface Queryable {
  query<R extends pg.QueryResultRow = Row>(sql: Sql, params?: unknown[]): Promise<pg.QueryResult<R>>;
}
/** A query config for pg: a named statement is prepared once per connection (see Sql). */
const config = (sql: Sql, values: unknown[]): pg.QueryConfig => (typeof sql === 'string' ? { text: sql, values } : { ...sql, values });
/** A statement prepared once per connection under `name`. */
const named = (name: string, text: string) => ({ name: `keel_${name}`, text });

/** Advisory lock keys (first half): migrations, and the journal's append order. */
const LOCK_MIGRATE = 0x6b65656c; // 'keel'
const LOCK_JOURNAL = 0x6b65656d;
const LOCK_QUEUE = 0x6b65656e;
/** The channel journal appends notify on (payload: `SCHEMA RUN_ID`). */
const EVENTS_CHANNEL = 'keel_events';

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

/** Wraps a JSON text PostgreSQL's JSONB cannot hold (a NUL character), so it round-trips whole. */
const NUL_WRAP = 'keel:json-with-nul';

/** The JSON text to store for a value (see NUL_WRAP). Throws, like JSON.stringify, on what JSON cannot hold. */
function jsonb(v: unknown): string {
  const text = JSON.stringify(v);
  if (text === undefined) throw new TypeError('a value JSON cannot hold');
  return text.includes('\\u0000') ? JSON.stringify({ [NUL_WRAP]: text }) : text;
}

/** A value read back from a JSONB column (already parsed by pg). */
function unjsonb<T>(v: unknown): T {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && keys[0] === NUL_WRAP && typeof o[NUL_WRAP] === 'string') return JSON.parse(o[NUL_WRAP] as string) as T;
  }
  return v as T;
}

const INSERT_APPROVAL = `INSERT INTO approvals (id,run_id,pause_seq,items,card,status,requested_at,expires_at,answered_at,answered_by,reason,consent_writes)
  VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`;

function approvalParams(a: ApprovalRecord): unknown[] {
  return [
    a.id,
    a.run_id,
    a.pause_seq,
    jsonb(a.items),
    jsonb(a.card),
    a.status,
    a.requested_at,
    a.expires_at,
    a.answered_at,
    a.answered_by,
    a.reason,
    a.consent_writes,
  ];
}

const jsonArray = (xs: readonly unknown[]) => `[${xs.map(jsonb).join(',')}]`;

const GET_SESSION = named('get_session', 'SELECT id, mode, last_run_id, contract, updated_at FROM sessions WHERE id = $1');
const SAVE_SESSION = named(
  'save_session',
  `INSERT INTO sessions (id, mode, last_run_id, contract, updated_at) VALUES ($1, $2, $3, $4, $5)
   ON CONFLICT (id) DO UPDATE SET mode = excluded.mode, last_run_id = excluded.last_run_id, contract = excluded.contract, updated_at = excluded.updated_at`,
);
const INSERT_RUN = named(
  'insert_run',
  `INSERT INTO runs (id,status,reason,request,mode,model,plugin_dirs,answer,pause,pause_seq,model_calls,effects,notes,warnings,owner,session_id,seq_base,contract,created_at,updated_at,inherited_untrusted,parent_run,depth,delegate,task_id,parent_request,principal)
   VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27)`,
);
const CLAIM_PAUSE = named(
  'claim_pause',
  `UPDATE runs SET status = 'running', owner = $1, updated_at = $2, lease_until = now() + $5 * interval '1 millisecond'
   WHERE id = $3 AND status = 'paused' AND pause_seq = $4`,
);
const RECHECK = named(
  'recheck_run',
  'SELECT n_messages AS messages, n_steps AS steps, n_requests AS requests, owner FROM runs WHERE id = $1',
);

/** One journal append (see appendEvent). */
const APPEND_EVENT = named(
  'append_event',
  `WITH e AS (
     INSERT INTO run_events (run_id, type, at, body)
     SELECT $1, $2, $3, $4::jsonb FROM (SELECT pg_advisory_xact_lock($5, hashtext(current_schema()))) AS l RETURNING id
   ) SELECT e.id, pg_notify('${EVENTS_CHANNEL}', $6) FROM e`,
);

/**
 * A run's save (issue 29): if the database holds what this process believes ($20, $22, $25) and the
 * run is still this process's ($27), the run's row is locked, the new blobs, messages, steps, tool
 * counts and requests appended, its fields written — and the journal events that go with the save
 * appended ($28–$30), under the journal's advisory lock taken before their ids are drawn (as in
 * appendEvent: ids become visible in the order drawn, S5), with a notification ($32) at commit —
 * each only if its mode ($33, '' for any) is the session's as this statement reads it, or the
 * session has no record (JournalEntry.onlyInMode; the same snapshot as the mode returned).
 * No events: no lock. Returns the session's mode (C5) and the events' ids.
 */
const SAVE = named(
  'save_run',
  `WITH
        r AS (SELECT id FROM runs WHERE id = $1 AND n_messages = $20 AND n_steps = $22 AND n_requests = $25
              AND ($27::text IS NULL OR owner IS NOT DISTINCT FROM $27) FOR UPDATE),
        b AS (INSERT INTO blobs (hash, body) SELECT h, x::jsonb FROM unnest($18::text[], $19::text[]) AS x(h, x) ON CONFLICT (hash) DO NOTHING),
        m AS (INSERT INTO messages (run_id, seq, body) SELECT r.id, $20 + e.ord - 1, e.body FROM r, jsonb_array_elements($21::jsonb) WITH ORDINALITY AS e(body, ord)),
        s AS (INSERT INTO steps (run_id, seq, body) SELECT r.id, $22 + e.ord - 1, e.body FROM r, jsonb_array_elements($23::jsonb) WITH ORDINALITY AS e(body, ord)),
        u AS (INSERT INTO tool_usage (tool, calls) SELECT tool, COUNT(*) FROM r, unnest($24::text[]) AS u(tool) GROUP BY tool
              ON CONFLICT (tool) DO UPDATE SET calls = tool_usage.calls + excluded.calls),
        q AS (INSERT INTO requests (run_id, seq, step, system_hash, tools_hash, meta)
              SELECT r.id, $25 + e.ord - 1, (e.x->'m'->>'step')::int, e.x->>'s', e.x->>'t', e.x->'m'
              FROM r, jsonb_array_elements($26::jsonb) WITH ORDINALITY AS e(x, ord)),
        l AS (SELECT pg_advisory_xact_lock($31, hashtext(current_schema())) FROM r WHERE jsonb_array_length($28::jsonb) > 0),
        ev AS (INSERT INTO run_events (run_id, type, at, body)
              SELECT r.id, ($29::text[])[e.ord], ($30::text[])[e.ord], e.body
              FROM r, l, jsonb_array_elements($28::jsonb) WITH ORDINALITY AS e(body, ord)
              WHERE ($33::text[])[e.ord] = '' OR NOT EXISTS (SELECT 1 FROM runs x JOIN sessions z ON z.id = x.session_id
                      WHERE x.id = $1 AND z.mode <> ($33::text[])[e.ord])
              ORDER BY e.ord RETURNING id)
      UPDATE runs SET status=$2, reason=$3, mode=$4, answer=$5, pause=$6, pause_seq=$7, model_calls=$8, effects=$9, notes=$10,
        warnings=$11, contract=$12, updated_at=$13, n_messages=$14, n_steps=$15, n_requests=$16,
        lease_until = CASE WHEN $2 = 'running' THEN now() + $17 * interval '1 millisecond' END FROM r WHERE runs.id = r.id
      RETURNING (SELECT mode FROM sessions WHERE sessions.id = runs.session_id) AS session_mode,
        (SELECT array_agg(id) FROM ev) AS event_ids,
        (SELECT pg_notify('${EVENTS_CHANNEL}', $32) FROM (SELECT 1 FROM ev LIMIT 1) AS x) IS NULL AS quiet`,
);

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
function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? '';
  const msg = (err as Error)?.message ?? '';
  return (
    /^(ECONN|ENOTFOUND|EAI_|ETIMEDOUT|EHOST|ENET)/.test(code) ||
    /^(28|3D|08|57P)/.test(code) ||
    /Connection terminated|timeout expired/i.test(msg)
  );
}

export interface MigrationState {
  version: number;
  name: string;
  applied_at: string | null;
}

/** Applies the migrations this database lacks, under an advisory lock; returns the versions applied now. */
export async function migrate(client: pg.ClientBase, schema: string, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [LOCK_MIGRATE, schema]);
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    const done = new Set(
      (await client.query<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations`)).rows.map((r) => r.version),
    );
    const newest = Math.max(0, ...done);
    const known = Math.max(0, ...migrations.map((m) => m.version));
    if (newest > known) {
      throw new KeelError(
        'config',
        `the PostgreSQL store's schema ${schema} is at migration ${newest}, newer than this Keel knows (${known}): upgrade Keel`,
      );
    }
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL search_path TO ${schema}`);
        await client.query(m.sql);
        await client.query(`INSERT INTO ${schema}.schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw new KeelError('config', `migration ${m.version} (${m.name}) failed: ${(err as Error).message}`);
      }
      applied.push(m.version);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_MIGRATE, schema]).catch(() => {});
  }
}

/** Every known migration, with when it was applied here (null: pending). Changes nothing. */
export async function migrationStatus(
  client: pg.ClientBase,
  schema: string,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<{ migrations: MigrationState[]; unknown: number[] }> {
  const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`${schema}.schema_migrations`]);
  const rows = exists.rows[0]?.t
    ? (
        await client.query<{ version: number; name: string; applied_at: Date }>(
          `SELECT version, name, applied_at FROM ${schema}.schema_migrations ORDER BY version`,
        )
      ).rows
    : [];
  const at = new Map(rows.map((r) => [r.version, r.applied_at.toISOString()]));
  return {
    migrations: migrations.map((m) => ({ version: m.version, name: m.name, applied_at: at.get(m.version) ?? null })),
    unknown: rows.map((r) => r.version).filter((v) => !migrations.some((m) => m.version === v)),
  };
}

export interface PostgresStoreOptions {
  /** Pool size (default 10). */
  max?: number;
  /** How long a run's lease lasts without renewal (default 30 s; KEEL_LEASE_MS). */
  leaseMs?: number;
}

/** What a worker is to do with a run handed to the queue (#15): one leg. */
export type LegJob =
  | { kind: 'start' }
  | { kind: 'answer'; seq: number; answer: { text: string; confirm?: boolean } }
  | { kind: 'approval'; approval_id: string }
  | { kind: 'continue' };

/** The job queue's name, in pg-boss. */
export const LEG_QUEUE = 'keel-legs';

/**
 * How often a leg's job is offered again when the worker that fetched it died before it held the
 * run (the job expired in the hand-over, see handoverSeconds). Each try is one fetch: a spare try
 * that finds the run already held ends as a conflict, which is harmless.
 */
const HANDOVER_TRIES = 20;

export class PostgresStore implements Store {
  readonly kind = 'postgres';
  readonly target: PostgresTarget;
  private readonly maxConnections: number;
  /** The connection pool, made on first use (see loadPg). */
  private poolMade: pg.Pool | undefined;
  private ready: Promise<void> | undefined;
  private closed = false;
  /** Hashes of blobs this process knows are stored (the table is content-addressed, rows never deleted). */
  private readonly knownBlobs = new Set<string>();
  /** How long a lease lasts without renewal. */
  readonly leaseMs: number;
  /** Runs this store holds (claimed or created running), with the owner that holds them: their leases are renewed. */
  private readonly held = new Map<string, string>();
  /** Runs this store held and lost (their lease ran out and another process took them): never saved from here again. */
  private readonly lost = new Map<string, string | null>();
  private heartbeat: NodeJS.Timeout | undefined;
  private boss: Promise<PgBoss> | undefined;

  constructor(url: string | PostgresTarget, o: PostgresStoreOptions = {}) {
    this.target = typeof url === 'string' ? parsePostgresUrl(url) : url;
    this.maxConnections = o.max ?? 10;
    this.leaseMs = o.leaseMs ?? 30_000;
  }

  /** The pool, once ensureReady made it. */
  private get pool(): pg.Pool {
    if (!this.poolMade) throw new Error('the PostgreSQL store is not connected yet');
    return this.poolMade;
  }

  get schema(): string {
    return this.target.schema;
  }

  /** Connects and migrates, once (again after a failure). */
  private ensureReady(): Promise<void> {
    this.ready ??= (async () => {
      if (this.closed) throw new Error('the store is closed');
      if (!this.poolMade) {
        const { Pool } = await loadPg();
        const pool = new Pool({
          connectionString: this.target.connectionString,
          max: this.maxConnections,
          connectionTimeoutMillis: 10_000,
          application_name: 'keel',
          options: `-c search_path=${this.target.schema}`,
        });
        // An idle connection that breaks (the server restarted) is dropped; the next query opens another.
        pool.on('error', () => {});
        this.poolMade = pool;
      }
      const client = await this.pool.connect();
      try {
        await migrate(client, this.target.schema);
      } finally {
        client.release();
      }
    })().catch((err) => {
      this.ready = undefined;
      throw explainPgError(err, this.target.shown);
    });
    return this.ready;
  }

  private async q<R extends pg.QueryResultRow = Row>(sql: Sql, params: unknown[] = []): Promise<pg.QueryResult<R>> {
    await this.ensureReady();
    try {
      return await this.pool.query<R>(config(sql, params));
    } catch (err) {
      throw isConnectionError(err) ? explainPgError(err, this.target.shown) : err;
    }
  }

  /** Runs `f` in one transaction on one connection: committed whole, or rolled back whole. */
  async transaction<T>(f: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    await this.ensureReady();
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw explainPgError(err, this.target.shown);
    }
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const out = await f(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (e) {
        broken = e as Error;
      }
      throw isConnectionError(err) ? explainPgError(err, this.target.shown) : err;
    } finally {
      client.release(broken);
    }
  }

  /** The run's fields that change as it goes, in the order both INSERT_RUN and SAVE take them. */
  private progressParams(run: RunState): unknown[] {
    return [
      run.answer === null ? null : jsonb(run.answer),
      run.pause ? jsonb(run.pause) : null,
      run.pause_seq,
      run.model_calls,
      jsonb(run.effects),
      jsonb(run.notes),
      jsonb(run.warnings),
    ];
  }

  private runParams(run: RunState): unknown[] {
    return [
      run.id,
      run.status,
      run.reason,
      jsonb(run.request),
      run.mode,
      run.model,
      jsonb(run.plugin_dirs),
      ...this.progressParams(run),
      run.owner,
      run.session_id,
      run.seq_base,
      run.contract ? jsonb(run.contract) : null,
      run.created_at,
      run.updated_at,
      run.inherited_untrusted?.length ? jsonb(run.inherited_untrusted) : null,
      run.parent?.run_id ?? null,
      run.parent?.depth ?? 0,
      run.parent?.delegate ?? null,
      run.parent?.task_id ?? null,
      run.parent ? jsonb(run.parent.request) : null,
      run.principal ? jsonb(run.principal) : null,
    ];
  }

  /** Queries on the pool, one statement each (a run write outside a transaction). */
  private readonly pooled: Queryable = { query: (sql, params) => this.q(sql, params) };

  /** What the database holds of each run this process wrote or read: where its next save appends. */
  private readonly stored = new Map<string, Stored>();

  /**
   * Appends what the database does not hold of a run yet and writes its fields, in one statement on
   * `c`, if the database holds what this process believes (`had`) and the run is still this
   * process's (when it holds it): the row is locked and checked in the same statement. False when
   * it does not: the caller looks again. The transcript only grows (R19).
   */
  private async writeRun(
    c: Queryable,
    run: RunState,
    had: Stored,
    blobsAdded: string[],
    events: readonly JournalEntry[],
  ): Promise<{ mode: Mode | undefined; ids: number[] } | false> {
    const now = { messages: run.messages.length, steps: run.steps.length, requests: run.requests.length };
    for (const k of ['messages', 'steps', 'requests'] as const) {
      if (now[k] < had[k]) throw new Error(`run ${run.id}: ${k} went from ${had[k]} to ${now[k]}; a run's trace is never rewritten`);
    }
    const holder = this.held.get(run.id);
    const steps: StepRow[] = [];
    for (let seq = had.steps; seq < now.steps; seq++) steps.push(stepRow(run, seq));
    // R23: each call that ran counts once towards its tool's use (a record is written once).
    const ran = run.steps.slice(had.steps).flatMap((x) => (x.outcome === 'ran' ? [x.tool] : []));
    const blobs: [string, string][] = [];
    const requests: { s: string; t: string; m: unknown }[] = [];
    for (let seq = had.requests; seq < now.requests; seq++) {
      const { system, tools, ...meta } = run.requests[seq];
      const sh = contentHash(system);
      const t = toolsBlob(tools);
      for (const [hash, text] of [
        [sh, jsonb(system)],
        [t.hash, t.body],
      ] as const) {
        if (!this.knownBlobs.has(hash) && !blobs.some((b) => b[0] === hash)) blobs.push([hash, text]);
      }
      requests.push({ s: sh, t: t.hash, m: meta });
    }
    // Everything new, the run's fields and the journal events that go with them in one statement:
    // one round trip for a step (issue 29), prepared once per connection.
    const r = await c.query(SAVE, [
      run.id,
      run.status,
      run.reason,
      run.mode,
      ...this.progressParams(run),
      run.contract ? jsonb(run.contract) : null,
      run.updated_at,
      now.messages,
      now.steps,
      now.requests,
      this.leaseMs,
      blobs.map((b) => b[0]),
      blobs.map((b) => b[1]),
      had.messages,
      jsonArray(run.messages.slice(had.messages)),
      had.steps,
      jsonArray(steps),
      ran,
      had.requests,
      jsonArray(requests),
      holder ?? null,
      events.length ? jsonArray(events.map((e) => e.event)) : '[]',
      events.map((e) => e.event.type),
      events.map((e) => e.at),
      LOCK_JOURNAL,
      `${this.target.schema} ${run.id}`,
      events.map((e) => e.onlyInMode ?? ''),
    ]);
    if (r.rowCount !== 1) return false;
    blobsAdded.push(...blobs.map((b) => b[0]));
    // The ids were drawn in the events' order (under the journal's lock): the smallest is the first event's.
    const ids = ((r.rows[0]?.event_ids as string[] | null) ?? []).map(Number).sort((a, b) => a - b);
    // C5: the session's mode as stored, read by the save's own statement (no round trip of its own).
    return { mode: (r.rows[0]?.session_mode as Mode | null) ?? undefined, ids };
  }

  /** Why a save found the run other than expected: the counts it holds now, or an error. */
  private async recheck(c: Queryable, run: RunState): Promise<Stored> {
    const row = (await c.query<Stored & { owner: string | null }>(RECHECK, [run.id])).rows[0];
    if (!row) throw new Error(`run ${run.id} is not in the store: it cannot be saved`);
    // A run this process held and another took over (its lease ran out) is not written from here.
    const holder = this.held.get(run.id);
    if (holder !== undefined && row.owner !== holder) {
      this.lost.set(run.id, row.owner);
      this.held.delete(run.id);
      throw new KeelError('conflict', `run ${run.id} was taken over by ${row.owner ?? 'the queue'}: this process lost its lease`);
    }
    return { messages: row.messages, steps: row.steps, requests: row.requests };
  }

  /** A save: one statement when this process knows what the database holds, else it looks first. */
  private async save(c: Queryable, run: RunState, blobsAdded: string[], events: JournalEntry[] = []): Promise<Mode | undefined> {
    let had = this.stored.get(run.id) ?? (await this.recheck(c, run));
    let saved: { mode: Mode | undefined; ids: number[] } | false;
    for (let attempt = 0; ; attempt++) {
      // Checked before every attempt: the lease may be found lost (renewLeases) while one is retried.
      if (this.lost.has(run.id)) {
        const by = this.lost.get(run.id);
        throw new KeelError('conflict', `run ${run.id} was taken over by ${by ?? 'the queue'}: this process lost its lease`);
      }
      saved = await this.writeRun(c, run, had, blobsAdded, events);
      if (saved) break;
      if (attempt > 3) throw new Error(`run ${run.id} is being saved by another process at the same time`);
      had = await this.recheck(c, run);
    }
    this.stored.set(run.id, { messages: run.messages.length, steps: run.steps.length, requests: run.requests.length });
    // The events the statement kept: it read the session's mode in the same snapshot it returned.
    const mode = saved.mode;
    const kept = events.filter((e) => !e.onlyInMode || mode === undefined || mode === e.onlyInMode);
    if (saved.ids.length !== kept.length) throw new Error(`run ${run.id}: the save appended ${saved.ids.length} of ${kept.length} events`);
    for (let i = 0; i < kept.length; i++) kept[i].id = saved.ids[i];
    return saved.mode;
  }

  /** A run write; blobs it wrote are remembered only once it committed; on failure what we believed is forgotten. */
  private async runWrite<T>(runId: string, f: (c: Queryable, blobsAdded: string[]) => Promise<T>, inTransaction: boolean): Promise<T> {
    const added: string[] = [];
    let out: T;
    try {
      if (inTransaction) out = await this.transaction((c) => f(c, added));
      else {
        await this.ensureReady();
        out = await f(this.pooled, added);
      }
    } catch (err) {
      this.stored.delete(runId);
      throw err;
    }
    for (const h of added) this.knownBlobs.add(h);
    return out;
  }

  async createRun(run: RunState): Promise<void> {
    if (run.status === 'running' && run.owner) this.hold(run.id, run.owner);
    this.stored.set(run.id, { messages: 0, steps: 0, requests: 0 });
    await this.runWrite(
      run.id,
      async (c, added) => {
        await c.query(INSERT_RUN, this.runParams(run));
        await this.save(c, run, added);
      },
      true,
    );
  }

  async saveRun(run: RunState, events?: JournalEntry[], card?: ApprovalRecord): Promise<Mode | undefined> {
    // One statement: atomic by itself; with a pause's card, the card and the save in one transaction.
    const mode = card
      ? await this.runWrite(
          run.id,
          async (c, added) => {
            await c.query(INSERT_APPROVAL, approvalParams(card));
            return this.save(c, run, added, events);
          },
          true,
        )
      : await this.runWrite(run.id, (c, added) => this.save(c, run, added, events), false);
    if (run.status !== 'running') this.held.delete(run.id);
    return mode;
  }

  async loadRun(id: string): Promise<RunState | undefined> {
    // One statement, one snapshot: the run's fields and its whole trace as of one moment.
    const r = (
      await this.q(
        `SELECT r.*,
          COALESCE((SELECT jsonb_agg(body ORDER BY seq) FROM messages WHERE run_id = r.id), '[]') AS t_messages,
          COALESCE((SELECT jsonb_agg(body ORDER BY seq) FROM steps WHERE run_id = r.id), '[]') AS t_steps,
          COALESCE((SELECT jsonb_agg(jsonb_build_object('m', q.meta, 's', s.body, 't', t.body) ORDER BY q.seq)
             FROM requests q JOIN blobs s ON s.hash = q.system_hash JOIN blobs t ON t.hash = q.tools_hash WHERE q.run_id = r.id), '[]') AS t_requests
         FROM runs r WHERE r.id = $1`,
        [id],
      )
    ).rows[0];
    if (!r) return undefined;
    const messages = (r.t_messages as unknown[]).map((m) => unjsonb<Message>(m));
    const requests = (r.t_requests as { m: Record<string, unknown>; s: unknown; t: unknown }[]).map(
      (x) => ({ ...x.m, system: unjsonb<string>(x.s), tools: unjsonb(x.t) }) as RequestTrace,
    );
    const run: RunState = {
      id: r.id as string,
      status: r.status as RunState['status'],
      reason: (r.reason as RunState['reason']) ?? null,
      request: unjsonb<string>(r.request),
      mode: r.mode as RunState['mode'],
      model: r.model as string,
      plugin_dirs: unjsonb(r.plugin_dirs),
      answer: r.answer === null ? null : unjsonb<string>(r.answer),
      pause: r.pause === null ? null : unjsonb(r.pause),
      pause_seq: r.pause_seq as number,
      model_calls: r.model_calls as number,
      effects: unjsonb(r.effects),
      notes: unjsonb(r.notes),
      warnings: unjsonb(r.warnings),
      owner: (r.owner as string | null) ?? null,
      session_id: r.session_id as string,
      seq_base: r.seq_base as number,
      contract: r.contract === null ? null : unjsonb(r.contract),
      ...(r.inherited_untrusted !== null && r.inherited_untrusted !== undefined
        ? { inherited_untrusted: unjsonb<UntrustedSource[]>(r.inherited_untrusted) }
        : {}),
      ...(r.principal !== null && r.principal !== undefined ? { principal: unjsonb<Principal>(r.principal) } : {}),
      ...(typeof r.parent_run === 'string'
        ? {
            parent: {
              run_id: r.parent_run,
              delegate: r.delegate as string,
              depth: r.depth as number,
              task_id: r.task_id as string,
              request: unjsonb<string>(r.parent_request),
            },
          }
        : {}),
      messages,
      steps: stepsFrom(
        (r.t_steps as unknown[]).map((s) => unjsonb<StepRow>(s)),
        messages,
      ),
      requests,
      created_at: r.created_at as string,
      updated_at: r.updated_at as string,
    };
    this.stored.set(id, { messages: run.messages.length, steps: run.steps.length, requests: run.requests.length });
    return run;
  }

  async listRuns(q: RunQuery = {}): Promise<RunSummary[]> {
    const where: string[] = [];
    const args: unknown[] = [];
    const arg = (v: unknown) => {
      args.push(v);
      return `$${args.length}`;
    };
    if (q.status) where.push(`status = ${arg(q.status)}`);
    if (q.session_id) where.push(`session_id = ${arg(q.session_id)}`);
    if (q.before) where.push(`(created_at, id) < (${arg(q.before.created_at)}, ${arg(q.before.id)})`);
    if (q.parent_run) where.push(`parent_run = ${arg(q.parent_run)}`);
    const sql = `SELECT id,status,reason,request,mode,model,model_calls,session_id,created_at,updated_at,parent_run FROM runs
      ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ${arg(q.limit ?? 50)}`;
    return (await this.q(sql, args)).rows.map((r) => ({
      id: r.id as string,
      session_id: r.session_id as string,
      status: r.status as RunSummary['status'],
      reason: (r.reason as RunSummary['reason']) ?? null,
      request: unjsonb<string>(r.request),
      mode: r.mode as RunSummary['mode'],
      model: r.model as string,
      model_calls: r.model_calls as number,
      created_at: r.created_at as string,
      updated_at: r.updated_at as string,
      parent_run: (r.parent_run as string | null) ?? null,
    }));
  }

  async claimPause(runId: string, seq: number, owner: string): Promise<boolean> {
    const r = await this.q(CLAIM_PAUSE, [owner, new Date().toISOString(), runId, seq, this.leaseMs]);
    if (r.rowCount === 1) this.hold(runId, owner);
    return r.rowCount === 1;
  }

  /**
   * Issue 40: one transaction. The run's cards are locked first (the one its pause waits on, and
   * every pending one), so an approve's UPDATE of the card either committed before — the claim sees
   * it answered and is refused — or waits for this transaction and finds the card rejected.
   */
  async claimToCancel(
    runId: string,
    seq: number,
    owner: string,
    close: { actor: string; reason: string; at: string },
  ): Promise<string[] | undefined> {
    const closed = await this.transaction(async (c) => {
      const cards = await c.query<{ status: string; pause_seq: number }>(
        "SELECT status, pause_seq FROM approvals WHERE run_id = $1 AND (pause_seq = $2 OR status = 'pending') FOR UPDATE",
        [runId, seq],
      );
      if (cards.rows.some((r) => r.pause_seq === seq && (r.status === 'approved' || r.status === 'rejected'))) return undefined;
      const claimed = await c.query(CLAIM_PAUSE.text, [owner, new Date().toISOString(), runId, seq, this.leaseMs]);
      if (claimed.rowCount !== 1) return undefined;
      const r = await c.query<{ id: string }>(
        "UPDATE approvals SET status = 'rejected', answered_by = $1, reason = $2, answered_at = $3 WHERE run_id = $4 AND status = 'pending' RETURNING id",
        [close.actor, close.reason, close.at, runId],
      );
      return r.rows.map((x) => x.id);
    });
    if (closed) this.hold(runId, owner);
    return closed;
  }

  async takeOver(runId: string, seq: number, deadOwner: string | null, owner: string, ownerGone = false): Promise<boolean> {
    // A valid lease always wins (issue 27.3): its holder is alive somewhere, whatever updated_at says.
    const r = await this.q(
      `UPDATE runs SET owner = $1, updated_at = $2, lease_until = now() + $6 * interval '1 millisecond'
       WHERE id = $3 AND status = 'running' AND pause_seq = $4 AND owner IS NOT DISTINCT FROM $5
         AND (lease_until IS NULL OR lease_until < now() OR $7::boolean)`,
      [owner, new Date().toISOString(), runId, seq, deadOwner, this.leaseMs, ownerGone],
    );
    if (r.rowCount === 1) this.hold(runId, owner);
    return r.rowCount === 1;
  }

  /** This process holds a run: its lease is renewed until the run pauses, ends or is handed to the queue. */
  private hold(runId: string, owner: string): void {
    this.held.set(runId, owner);
    this.lost.delete(runId);
    if (!this.heartbeat && !this.closed) {
      this.heartbeat = setInterval(
        () => {
          this.renewLeases().catch(() => {});
        },
        Math.max(50, Math.floor(this.leaseMs / 3)),
      );
      this.heartbeat.unref();
    }
  }

  /** Renews the leases of the runs this process holds; a run another process took is marked lost. */
  async renewLeases(): Promise<void> {
    if (!this.held.size) return;
    const entries = [...this.held];
    const r = await this.q<{ id: string }>(
      `UPDATE runs SET lease_until = now() + $3 * interval '1 millisecond'
       WHERE (id, owner) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND status = 'running' RETURNING id`,
      [entries.map((e) => e[0]), entries.map((e) => e[1]), this.leaseMs],
    );
    const kept = new Set(r.rows.map((x) => x.id));
    for (const [id, owner] of entries) {
      if (kept.has(id) || this.held.get(id) !== owner) continue;
      // Gone from 'running' by this process's own save is not a loss; a changed owner is. The run
      // stays held until that is known, so a save meanwhile still checks its owner (never unchecked).
      const now = (await this.q<{ owner: string | null; status: string }>('SELECT owner, status FROM runs WHERE id = $1', [id])).rows[0];
      if (this.held.get(id) !== owner) continue;
      this.held.delete(id);
      if (now?.status === 'running' && now.owner !== owner) this.lost.set(id, now.owner);
    }
  }

  /**
   * How long a worker has between fetching a leg's job and holding its run (then it completes the
   * job): a job still active after that was fetched by a worker that died in between, and the queue
   * offers it again. As long as the lease, at least a second (the queue's finest grain).
   */
  get handoverSeconds(): number {
    return Math.max(1, Math.ceil(this.leaseMs / 1000));
  }

  /** Queues a leg inside the caller's transaction (pg-boss's `db` option): the job exists exactly when the change commits. */
  private async sendLeg(boss: PgBoss, c: pg.PoolClient, runId: string, job: LegJob): Promise<void> {
    await boss.send(
      LEG_QUEUE,
      { run_id: runId, ...job },
      {
        retryLimit: HANDOVER_TRIES,
        // A second between tries: after a failure to start (the database was away) a pause, not a spin.
        retryDelay: 1,
        expireInSeconds: this.handoverSeconds,
        db: { executeSql: (text, values) => c.query(text, values) },
      },
    );
  }

  /** Stops renewing a run's lease (its leg failed here): once it runs out, a worker takes the run over. */
  release(runId: string): void {
    this.held.delete(runId);
  }

  /** The job queue in this database (pg-boss), started on first use. */
  queue(): Promise<PgBoss> {
    this.boss ??= (async () => {
      await this.ensureReady();
      const { default: PgBoss } = await optionalImport(
        'pg-boss',
        'the job queue of the PostgreSQL store (keel serve, keel worker)',
        () => import('pg-boss'),
      );
      const boss = new PgBoss({
        connectionString: this.target.connectionString,
        schema: this.target.schema === 'public' ? 'pgboss' : `${this.target.schema}_boss`,
        max: 4,
        application_name: 'keel-queue',
        // Expiry is checked by the queue's maintenance: as often as a hand-over may last (see handoverSeconds).
        maintenanceIntervalSeconds: this.handoverSeconds,
      });
      boss.on('error', () => {});
      // Processes starting together install the queue's schema and create the queue one at a time.
      const lock = await this.pool.connect();
      try {
        await lock.query('SELECT pg_advisory_lock($1, hashtext($2))', [LOCK_QUEUE, this.target.schema]);
        await boss.start();
        // A job is the hand-over of a run to a worker, not the leg (which may run for hours, held by its
        // lease): each job carries its own tries and expiry (sendLeg); these are only the queue's defaults.
        if (!(await boss.getQueue(LEG_QUEUE)))
          await boss.createQueue(LEG_QUEUE, { name: LEG_QUEUE, retryLimit: 0, expireInSeconds: 4 * 3600 });
      } catch (err) {
        await boss.stop({ graceful: false, wait: false }).catch(() => {});
        throw err;
      } finally {
        await lock.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_QUEUE, this.target.schema]).catch(() => {});
        lock.release();
      }
      return boss;
    })().catch((err) => {
      this.boss = undefined;
      throw explainPgError(err, this.target.shown);
    });
    return this.boss;
  }

  /**
   * Hands a run this process holds to the queue: in one transaction, the run is released (no owner,
   * no lease) and its leg is queued as a job — so the leg is never lost and never queued twice.
   * False when the run is not held by `owner` any more (another process has it).
   */
  async handOff(runId: string, owner: string, job: LegJob): Promise<boolean> {
    const boss = await this.queue();
    const done = await this.transaction(async (c) => {
      const r = await c.query("UPDATE runs SET owner = NULL, lease_until = NULL WHERE id = $1 AND status = 'running' AND owner = $2", [
        runId,
        owner,
      ]);
      if (r.rowCount !== 1) return false;
      await this.sendLeg(boss, c, runId, job);
      return true;
    });
    if (done) this.held.delete(runId);
    return done;
  }

  /**
   * Runs whose lease ran out (their process died or was cut off): each is released and queued to be
   * taken over, in one transaction, at most once. Returns their ids.
   */
  async reapExpired(limit = 100): Promise<string[]> {
    const due = (
      await this.q<{ id: string; owner: string | null }>(
        "SELECT id, owner FROM runs WHERE status = 'running' AND lease_until < now() ORDER BY lease_until LIMIT $1",
        [limit],
      )
    ).rows;
    if (!due.length) return [];
    const boss = await this.queue();
    const out: string[] = [];
    for (const { id, owner } of due) {
      const taken = await this.transaction(async (c) => {
        const r = await c.query(
          `UPDATE runs SET owner = NULL, lease_until = NULL
           WHERE id = $1 AND status = 'running' AND owner IS NOT DISTINCT FROM $2 AND lease_until < now()`,
          [id, owner],
        );
        if (r.rowCount !== 1) return false;
        await this.sendLeg(boss, c, id, { kind: 'continue' });
        return true;
      });
      if (taken) out.push(id);
    }
    return out;
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const r = (await this.q(GET_SESSION, [id])).rows[0];
    if (!r) return undefined;
    return {
      id: r.id as string,
      mode: r.mode as SessionRecord['mode'],
      last_run_id: (r.last_run_id as string | null) ?? null,
      contract: r.contract === null ? null : unjsonb(r.contract),
      updated_at: r.updated_at as string,
    };
  }

  async saveSession(s: SessionRecord): Promise<void> {
    await this.q(SAVE_SESSION, [s.id, s.mode, s.last_run_id, s.contract ? jsonb(s.contract) : null, s.updated_at]);
  }

  /**
   * Appends to the journal. Appends are serialised by a transaction-scoped advisory lock taken
   * before the id is drawn, so ids become visible in the order they were drawn: a reader that has
   * seen id N never later finds a new row below N (S5, across processes). Each append commits as
   * durably as the server is set to: an event a client was shown is never lost by a crash of the
   * database server either, so an id is never handed out twice.
   */
  async appendEvent(runId: string, event: RunEvent, at: string): Promise<number> {
    const r = await this.q<{ id: string }>(APPEND_EVENT, [
      runId,
      event.type,
      at,
      jsonb(event),
      LOCK_JOURNAL,
      `${this.target.schema} ${runId}`,
    ]);
    return Number(r.rows[0].id);
  }

  /**
   * Live wake-ups across processes (S5): every journal append notifies, at its commit, the
   * processes listening here — a server whose SSE clients follow a run another process works. The
   * journal stays the source of truth: a wake-up only says "read what is new". The listening
   * connection reconnects by itself; `onWake('*')` after a reconnect says anything may be new.
   * Returns the function that stops listening.
   */
  async listen(onWake: (runId: string) => void): Promise<() => Promise<void>> {
    await this.ensureReady();
    let client: pg.Client | undefined;
    let stopped = false;
    let retry: NodeJS.Timeout | undefined;
    const prefix = `${this.target.schema} `;
    const connect = async (again: boolean): Promise<void> => {
      const c = new (await loadPg()).Client({ connectionString: this.target.connectionString, application_name: 'keel-listen' });
      c.on('notification', (m) => {
        if (m.payload?.startsWith(prefix)) onWake(m.payload.slice(prefix.length));
      });
      const lost = () => {
        if (stopped || client !== c) return;
        client = undefined;
        c.end().catch(() => {});
        retry = setTimeout(() => connect(true).catch(() => lost()), 1000);
        retry.unref();
      };
      c.on('error', lost);
      c.on('end', lost);
      client = c;
      await c.connect();
      await c.query(`LISTEN ${EVENTS_CHANNEL}`);
      if (again) onWake('*');
    };
    try {
      await connect(false);
    } catch (err) {
      throw explainPgError(err, this.target.shown);
    }
    return async () => {
      stopped = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    };
  }

  async toolUsage(limit: number): Promise<{ tool: string; calls: number }[]> {
    const r = await this.q<{ tool: string; calls: string }>('SELECT tool, calls FROM tool_usage ORDER BY calls DESC, tool LIMIT $1', [
      Math.max(0, Math.floor(limit)),
    ]);
    return r.rows.map((x) => ({ tool: x.tool, calls: Number(x.calls) }));
  }

  async latestEventId(): Promise<number> {
    return Number((await this.q<{ id: string }>('SELECT COALESCE(MAX(id), 0) AS id FROM run_events')).rows[0].id);
  }

  async listEvents(q: EventQuery = {}): Promise<StoredEvent[]> {
    const args: unknown[] = [q.after ?? 0];
    const where = ['id > $1'];
    if (q.run_id) {
      args.push(q.run_id);
      where.push(`run_id = $${args.length}`);
    }
    if (q.types) {
      args.push(q.types);
      where.push(`type = ANY($${args.length}::text[])`);
    }
    args.push(q.limit ?? 1000);
    const sql = `SELECT id, run_id, at, body FROM run_events WHERE ${where.join(' AND ')} ORDER BY id LIMIT $${args.length}`;
    return (await this.q(sql, args)).rows.map((r) => ({
      id: Number(r.id),
      run_id: r.run_id as string,
      at: r.at as string,
      event: unjsonb<RunEvent>(r.body),
    }));
  }

  async createApproval(a: ApprovalRecord): Promise<void> {
    await this.q(INSERT_APPROVAL, approvalParams(a));
  }

  private approvalFromRow(r: Row): ApprovalRecord {
    return {
      id: r.id as string,
      run_id: r.run_id as string,
      pause_seq: r.pause_seq as number,
      items: unjsonb(r.items),
      card: unjsonb(r.card),
      status: r.status as ApprovalStatus,
      requested_at: r.requested_at as string,
      expires_at: r.expires_at as string,
      answered_at: (r.answered_at as string | null) ?? null,
      answered_by: (r.answered_by as string | null) ?? null,
      reason: (r.reason as string | null) ?? null,
      consent_writes: r.consent_writes === true,
    };
  }

  async getApproval(id: string): Promise<ApprovalRecord | undefined> {
    const r = (await this.q('SELECT * FROM approvals WHERE id = $1', [id])).rows[0];
    return r ? this.approvalFromRow(r) : undefined;
  }

  async listApprovals(filter: { status?: ApprovalStatus; run_id?: string } = {}): Promise<ApprovalRecord[]> {
    const where: string[] = [];
    const args: unknown[] = [];
    if (filter.status) {
      args.push(filter.status);
      where.push(`status = $${args.length}`);
    }
    if (filter.run_id) {
      args.push(filter.run_id);
      where.push(`run_id = $${args.length}`);
    }
    const sql = `SELECT * FROM approvals ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY requested_at, ord`;
    return (await this.q(sql, args)).rows.map((r) => this.approvalFromRow(r));
  }

  async answerApproval(
    id: string,
    status: Exclude<ApprovalStatus, 'pending'>,
    actor: string,
    reason: string | null,
    at: string,
    consentWrites = false,
    items?: ApprovalItem[],
    card?: ApprovalCard,
  ): Promise<boolean> {
    const r = await this.q(
      "UPDATE approvals SET status = $1, answered_by = $2, reason = $3, answered_at = $4, consent_writes = $5, items = COALESCE($7::jsonb, items), card = COALESCE($8::jsonb, card) WHERE id = $6 AND status = 'pending'",
      [status, actor, reason, at, consentWrites, id, items ? jsonb(items) : null, card ? jsonb(card) : null],
    );
    return r.rowCount === 1;
  }

  async audit(row: AuditRecord): Promise<void> {
    await this.q('INSERT INTO audit (at, actor, action, subject, detail) VALUES ($1, $2, $3, $4, $5)', [
      row.at,
      row.actor,
      row.action,
      row.subject,
      jsonb(row.detail),
    ]);
  }

  async listAudit(subject?: string): Promise<AuditRecord[]> {
    const rows = subject
      ? (await this.q('SELECT at, actor, action, subject, detail FROM audit WHERE subject = $1 ORDER BY id', [subject])).rows
      : (await this.q('SELECT at, actor, action, subject, detail FROM audit ORDER BY id')).rows;
    return rows.map((r) => ({
      at: r.at as string,
      actor: r.actor as string,
      action: r.action as string,
      subject: r.subject as string,
      detail: unjsonb<string>(r.detail),
    }));
  }

  async ledgerStart(row: Omit<LedgerRow, 'state' | 'result' | 'is_error'>): Promise<boolean> {
    const r = await this.q(
      "INSERT INTO ledger (approval_id, call_id, tool, args_json, state) VALUES ($1, $2, $3, $4, 'started') ON CONFLICT DO NOTHING",
      [row.approval_id, row.call_id, row.tool, row.args_json],
    );
    return r.rowCount === 1;
  }

  async ledgerFinish(approvalId: string, callId: string, result: string, isError: boolean): Promise<void> {
    await this.q("UPDATE ledger SET state = 'finished', result = $1, is_error = $2 WHERE approval_id = $3 AND call_id = $4", [
      jsonb(result),
      isError,
      approvalId,
      callId,
    ]);
  }

  async ledgerGet(approvalId: string, callId: string): Promise<LedgerRow | undefined> {
    const r = (await this.q('SELECT * FROM ledger WHERE approval_id = $1 AND call_id = $2', [approvalId, callId])).rows[0];
    if (!r) return undefined;
    return {
      approval_id: r.approval_id as string,
      call_id: r.call_id as string,
      tool: r.tool as string,
      args_json: r.args_json as string,
      state: r.state as LedgerRow['state'],
      result: r.result === null ? null : unjsonb<string>(r.result),
      is_error: r.is_error === true,
    };
  }

  private memoryFromRow(r: Row): Memory {
    return {
      id: r.id as number,
      text: unjsonb<string>(r.text),
      status: r.status as Memory['status'],
      created_at: r.created_at as string,
      updated_at: r.updated_at as string,
      ...(r.untrusted !== null && r.untrusted !== undefined ? { untrusted: unjsonb<string>(r.untrusted) } : {}),
    };
  }

  async memoryAdd(text: string, untrusted?: string): Promise<Memory> {
    const now = new Date().toISOString();
    const r = await this.q(
      "INSERT INTO memories (text, status, created_at, updated_at, untrusted) VALUES ($1, 'active', $2, $2, $3) RETURNING *",
      [jsonb(text), now, untrusted === undefined ? null : jsonb(untrusted)],
    );
    return this.memoryFromRow(r.rows[0]);
  }

  async memorySearch(query: string, limit: number): Promise<Memory[]> {
    const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    const active = (await this.q("SELECT * FROM memories WHERE status = 'active' ORDER BY id")).rows.map((r) => this.memoryFromRow(r));
    const scored = active
      .map((m) => ({ m, score: words.filter((w) => m.text.toLowerCase().includes(w)).length }))
      .filter((x) => words.length === 0 || x.score > 0)
      .sort((a, b) => b.score - a.score || b.m.id - a.m.id);
    return scored.slice(0, limit).map((x) => x.m);
  }

  async memoryUpdate(
    id: number,
    patch: { text?: string; status?: Memory['status']; untrusted?: string | null },
  ): Promise<Memory | undefined> {
    // U2: $5 says whether the provenance changes ($6 the new one, NULL: trusted again).
    const r = await this.q(
      'UPDATE memories SET text = COALESCE($1::jsonb, text), status = COALESCE($2, status), updated_at = $3, untrusted = CASE WHEN $5 THEN $6::jsonb ELSE untrusted END WHERE id = $4 RETURNING *',
      [
        patch.text === undefined ? null : jsonb(patch.text),
        patch.status ?? null,
        new Date().toISOString(),
        id,
        patch.untrusted !== undefined,
        patch.untrusted ? jsonb(patch.untrusted) : null,
      ],
    );
    return r.rows[0] ? this.memoryFromRow(r.rows[0]) : undefined;
  }

  async addFeedback(runId: string, text: string): Promise<void> {
    await this.q('INSERT INTO feedback (run_id, text, at) VALUES ($1, $2, $3)', [runId, jsonb(text), new Date().toISOString()]);
  }

  async pushKeys(candidate?: VapidKeys): Promise<VapidKeys | undefined> {
    const read = async () => (await this.q<VapidKeys>('SELECT public_key, private_key, created_at FROM push_keys WHERE id = 1')).rows[0];
    const kept = await read();
    if (kept || !candidate) return kept;
    await this.q('INSERT INTO push_keys (id, public_key, private_key, created_at) VALUES (1, $1, $2, $3) ON CONFLICT (id) DO NOTHING', [
      candidate.public_key,
      candidate.private_key,
      candidate.created_at,
    ]);
    return read();
  }

  async addPushSubscription(
    sub: PushSubscriptionRecord,
    max: number,
  ): Promise<{ status: 'added' | 'updated' | 'full'; subscription?: PushSubscriptionRecord }> {
    const cols = 'id, owner, owner_id, endpoint, p256dh, auth, label, created_at';
    return this.transaction(async (c) => {
      // One owner's subscriptions are counted and added one caller at a time (the bound holds under races).
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`keel_push:${sub.owner_id}`]);
      const had = await c.query<PushSubscriptionRecord>(
        `UPDATE push_subscriptions SET p256dh = $1, auth = $2, label = $3, owner = $4 WHERE owner_id = $5 AND endpoint = $6 RETURNING ${cols}`,
        [sub.p256dh, sub.auth, sub.label, sub.owner, sub.owner_id, sub.endpoint],
      );
      if (had.rows[0]) return { status: 'updated' as const, subscription: had.rows[0] };
      const n = Number((await c.query('SELECT COUNT(*) AS n FROM push_subscriptions WHERE owner_id = $1', [sub.owner_id])).rows[0].n);
      if (n >= max) return { status: 'full' as const };
      const added = await c.query<PushSubscriptionRecord>(
        `INSERT INTO push_subscriptions (${cols}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${cols}`,
        [sub.id, sub.owner, sub.owner_id, sub.endpoint, sub.p256dh, sub.auth, sub.label, sub.created_at],
      );
      return { status: 'added' as const, subscription: added.rows[0] };
    });
  }

  async listPushSubscriptions(ownerId?: string): Promise<PushSubscriptionRecord[]> {
    const cols = 'id, owner, owner_id, endpoint, p256dh, auth, label, created_at';
    const r =
      ownerId === undefined
        ? await this.q<PushSubscriptionRecord>(`SELECT ${cols} FROM push_subscriptions ORDER BY created_at, ord`)
        : await this.q<PushSubscriptionRecord>(`SELECT ${cols} FROM push_subscriptions WHERE owner_id = $1 ORDER BY created_at, ord`, [
            ownerId,
          ]);
    return r.rows;
  }

  async removePushSubscription(id: string): Promise<boolean> {
    return (await this.q('DELETE FROM push_subscriptions WHERE id = $1', [id])).rowCount === 1;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    const boss = this.boss;
    this.boss = undefined;
    if (boss) await (await boss.catch(() => undefined))?.stop({ graceful: false, wait: true, timeout: 5000 });
    await this.poolMade?.end();
  }
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
