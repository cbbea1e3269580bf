/**
 * The PostgreSQL store's journal (S5): events appended under an advisory lock, so ids become
 * visible in the order drawn; read back after an id; and LISTEN/NOTIFY wake-ups across processes.
 * Never hands out an id twice nor lets a reader that saw id N later find a new row below N; a
 * wake-up only says "read what is new" — the journal stays the source of truth.
 */
import type pg from 'pg';
import type { EventQuery, RunEvent, StoredEvent } from '../../types/index.js';
import { explainPgError, LOCK_JOURNAL, loadPg, named } from './connection.js';
import { jsonb, unjsonb } from './json.js';
import type { PgPool } from './pool.js';

/** The channel journal appends notify on (payload: `SCHEMA RUN_ID`). */
export const EVENTS_CHANNEL = 'keel_events';

/** One journal append (see appendEvent). */
const APPEND_EVENT = named(
  'append_event',
  `WITH e AS (
     INSERT INTO run_events (run_id, type, at, body)
     SELECT $1, $2, $3, $4::jsonb FROM (SELECT pg_advisory_xact_lock($5, hashtext(current_schema()))) AS l RETURNING id
   ) SELECT e.id, pg_notify('${EVENTS_CHANNEL}', $6) FROM e`,
);

/**
 * Appends to the journal. Appends are serialised by a transaction-scoped advisory lock taken
 * before the id is drawn, so ids become visible in the order they were drawn: a reader that has
 * seen id N never later finds a new row below N (S5, across processes). Each append commits as
 * durably as the server is set to: an event a client was shown is never lost by a crash of the
 * database server either, so an id is never handed out twice.
 */
export async function appendEvent(db: PgPool, runId: string, event: RunEvent, at: string): Promise<number> {
  const r = await db.q<{ id: string }>(APPEND_EVENT, [runId, event.type, at, jsonb(event), LOCK_JOURNAL, `${db.target.schema} ${runId}`]);
  return Number(r.rows[0].id);
}

/**
 * Live wake-ups across processes (S5): every journal append notifies, at its commit, the
 * processes listening here — a server whose SSE clients follow a run another process works. The
 * journal stays the source of truth: a wake-up only says "read what is new". The listening
 * connection reconnects by itself; `onWake('*')` after a reconnect says anything may be new.
 * Returns the function that stops listening.
 */
export async function listen(db: PgPool, onWake: (runId: string) => void): Promise<() => Promise<void>> {
  await db.ensureReady();
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const prefix = `${db.target.schema} `;
  const connect = async (again: boolean): Promise<void> => {
    const c = new (await loadPg()).Client({ connectionString: db.target.connectionString, application_name: 'keel-listen' });
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
    throw explainPgError(err, db.target.shown);
  }
  return async () => {
    stopped = true;
    clearTimeout(retry);
    const c = client;
    client = undefined;
    await c?.end().catch(() => {});
  };
}

export async function latestEventId(db: PgPool): Promise<number> {
  return Number((await db.q<{ id: string }>('SELECT COALESCE(MAX(id), 0) AS id FROM run_events')).rows[0].id);
}

export async function listEvents(db: PgPool, q: EventQuery = {}): Promise<StoredEvent[]> {
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
  return (await db.q(sql, args)).rows.map((r) => ({
    id: Number(r.id),
    run_id: r.run_id as string,
    at: r.at as string,
    event: unjsonb<RunEvent>(r.body),
  }));
}
