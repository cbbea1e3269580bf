/**
 * The SQLite store's journal (S5): each event a run emits, with an id that grows across the file, and
 * the one row a save writes (its events and its part of the run's trace, issue 29); and the journal
 * group, the transaction every write of the store commits with. Never hands out an id twice (ids are
 * drawn under the file's write lock), and never keeps another store of this process waiting on its
 * group: every store commits its group before it writes or reads the journal.
 */
import type Database from 'better-sqlite3';
import type { EventQuery, JournalEntry, RunEvent, StoredEvent } from '../../types/index.js';
import { eventJson, readEvents } from '../trace.js';
import { blobText, keepBlob } from './blobs.js';
import { type Row, type SqliteState, shaped } from './state.js';

/** The id the journal's next row takes: after the last row's events (or its one id when it holds none). */
const NEXT_EVENT_ID = 'COALESCE((SELECT id + MAX(COALESCE(n, 1), 1) FROM run_events ORDER BY id DESC LIMIT 1), 1)';

/** Stores of this process with journal rows not yet committed. */
const PENDING = new Set<SqliteState>();

/** Every other store of this process commits its journal group (before a write or a journal read). */
function commitOthers(self: SqliteState): void {
  for (const s of [...PENDING]) if (s !== self) commitEvents(s);
}

export function journalStatements(db: Database.Database): Record<string, Database.Statement> {
  const p = (sql: string) => db.prepare(sql);
  return {
    appendEvent: p(`INSERT INTO run_events (id, run_id, type, at, body) VALUES (${NEXT_EVENT_ID}, ?, ?, ?, ?)`),
    insertWrite: p(`INSERT INTO run_events (id, run_id, type, at, body, n, part) VALUES (${NEXT_EVENT_ID}, ?, ?, ?, ?, ?, ?)`),
    extendRow: p('UPDATE run_events SET body = ?, n = ?, at_rest = ?, part = ? WHERE id = ?'),
    lastEventRow: p('SELECT id FROM run_events ORDER BY id DESC LIMIT 1'),
    // The journal group's transaction (appendEvent), prepared once rather than parsed at each step.
    begin: p('BEGIN IMMEDIATE'),
    commit: p('COMMIT'),
  };
}

/**
 * Journal rows commit in groups: the first of a tick opens a transaction that the store's next
 * write of any kind (a claim, an answer), or the end of the tick, commits — so a step's events
 * cost one commit, not one each, and a run's saves made in the same tick (hundreds of runs whose
 * replies come in together) share one commit (see groupWrite). This connection reads them at once;
 * others see them within the tick (every store of this process commits its group before it writes
 * or reads the journal, so two stores in one process never wait on each other). A crash loses at
 * most that tick's events, which no other process was shown, and saves no caller was told were made.
 */
export async function appendEvent(st: SqliteState, runId: string, event: RunEvent, at: string): Promise<number> {
  openGroup(st);
  const body = eventJson(event, keepBlob(st));
  st.lastAppended = undefined;
  const id = Number(st.stmt.appendEvent.run(runId, event.type, at, body).lastInsertRowid);
  st.lastAppended = { runId, id, body, group: st.group };
  return id;
}

/** Opens this store's journal group (the file's write lock taken), committed at the end of the tick at the latest. */
function openGroup(st: SqliteState): void {
  if (st.eventsPending && st.db.inTransaction) return;
  // A group SQLite rolled back under us (an I/O error): its waiting writes are told, and a new one opens.
  if (st.eventsPending) commitEvents(st);
  commitOthers(st);
  st.stmt.begin.run();
  st.group++;
  st.eventsPending = true;
  PENDING.add(st);
  setImmediate(() => commitEvents(st));
}

/**
 * A run's write (a run created, a step saved, a session saved; `runId`: the run it is for). It
 * commits at once, as a write of its own, until another run writes in the same tick of the event
 * loop (a lone run, even one whose steps never leave the microtask queue, waits for no turn of the
 * loop); from then to the end of the tick — hundreds of runs whose replies came in together — each
 * is made inside this store's group, in its own savepoint (`f` runs its own transaction; one that
 * fails rolls back alone), and they share the group's one commit. Either way the promise resolves
 * with what `f` returned only once the write is committed (the same durability as a commit of its
 * own: no caller is told of a write before it is in the file), and is rejected if the group fails.
 */
export function groupWrite<T>(st: SqliteState, runId: string, f: () => T): Promise<T> {
  const tick = st.tick;
  if (!tick) {
    st.tick = { runId, batching: false };
    setImmediate(() => {
      st.tick = undefined;
    });
  } else if (!tick.batching && tick.runId !== runId) tick.batching = true;
  if (!st.tick?.batching) return Promise.resolve(write(st, f));
  openGroup(st);
  const out = f();
  return new Promise<T>((resolve, reject) => st.waiting.push({ resolve: () => resolve(out), reject }));
}

/**
 * A write that commits now: after the other stores of this process commit their groups (a store
 * waiting on another in the same thread would wait for ever), inside this store's group, which
 * commits with it.
 */
export function write<T>(st: SqliteState, f: () => T): T {
  commitOthers(st);
  let out: T;
  try {
    out = f();
  } catch (err) {
    commitEvents(st);
    throw err;
  }
  // A write inside the group is kept only if the group commits: if it does not, the write fails.
  commitEvents(st, true);
  return out;
}

/**
 * Commits the journal rows written since the last commit (and the writes made inside the group),
 * then tells the writes waiting on it (groupWrite). If the commit fails, all of it rolls back, what
 * this process remembers of the file is forgotten, the waiting writes fail with the error, and
 * `failWrite` says whether it is thrown (to the write the group carried) or reported.
 */
export function commitEvents(st: SqliteState, failWrite = false): void {
  if (!st.eventsPending) return;
  st.eventsPending = false;
  PENDING.delete(st);
  const waiting = st.waiting;
  st.waiting = [];
  if (!st.db.open || !st.db.inTransaction) {
    // Closed, or rolled back under the group: the writes waiting on it were not kept.
    for (const w of waiting) w.reject(new Error('the store was closed before this write was committed'));
    return;
  }
  try {
    st.stmt.commit.run();
  } catch (err) {
    try {
      st.db.exec('ROLLBACK');
    } catch {
      // nothing left to roll back
    }
    st.stored.clear();
    st.written.clear();
    st.knownBlobs.clear();
    st.lastAppended = undefined;
    for (const w of waiting) w.reject(err);
    if (failWrite) throw err;
    if (!waiting.length) process.stderr.write(`keel: the store could not keep a run's latest events: ${(err as Error).message}\n`);
    return;
  }
  for (const w of waiting) w.resolve();
}

export async function latestEventId(st: SqliteState): Promise<number> {
  commitOthers(st);
  const last = 'SELECT id + MAX(COALESCE(n, 1), 1) - 1 FROM run_events ORDER BY id DESC LIMIT 1';
  return (shaped(st, `SELECT COALESCE((${last}), 0) AS id`).get() as { id: number }).id;
}

export async function listEvents(st: SqliteState, q: EventQuery = {}): Promise<StoredEvent[]> {
  commitOthers(st);
  const after = q.after ?? 0;
  const limit = q.limit ?? 1000;
  const byRun = q.run_id ? ' AND run_id = ?' : '';
  const runArgs = q.run_id ? [q.run_id] : [];
  // A save's row holds several events: reading starts at the row that holds `after`.
  let from = (
    shaped(st, `SELECT COALESCE(MAX(id), 0) AS id FROM run_events WHERE id <= ?${byRun}`).get(after, ...runArgs) as { id: number }
  ).id;
  // A row of one event is filtered by its type here; a save's row once its events are read.
  const types = q.types ? ` AND (n IS NOT NULL OR type IN (${q.types.map(() => '?').join(',')}))` : '';
  const sql = `SELECT id, run_id, at, at_rest, body, n FROM run_events WHERE id >= ?${byRun} AND (n IS NULL OR n > 0)${types} ORDER BY id LIMIT ?`;
  const wanted = q.types ? new Set<string>(q.types) : undefined;
  const out: StoredEvent[] = [];
  const text = blobText(st);
  while (out.length < limit) {
    const rows = shaped(st, sql).all(from, ...runArgs, ...(q.types ?? []), limit) as Row[];
    for (const r of rows) {
      const run_id = r.run_id as string;
      const id = r.id as number;
      const events = readEvents(r.body as string, text);
      for (let i = 0; i < events.length; i++) {
        const at = (i > 0 && (r.at_rest as string | null)) || (r.at as string);
        if (id + i > after && (!wanted || wanted.has(events[i].type))) out.push({ id: id + i, run_id, at, event: events[i] });
      }
    }
    if (rows.length < limit) break;
    from = (rows[rows.length - 1].id as number) + 1;
  }
  return out.length > limit ? out.slice(0, limit) : out;
}

/** The run's reply this store appended, if it is still the journal's last row: the save's row may extend it. */
export function extendable(st: SqliteState, runId: string): { runId: string; id: number; body: string } | undefined {
  const reply = st.lastAppended;
  if (reply?.runId !== runId) return undefined;
  // Appended in the group still open: no other process has written since (the group holds the
  // file's write lock), and this store appended nothing after it (that clears lastAppended).
  if (reply.group === st.group && st.eventsPending && st.db.inTransaction) return reply;
  return reply.id === (st.stmt.lastEventRow.get() as { id: number } | undefined)?.id ? reply : undefined;
}

/**
 * A save's one journal row: its events (their ids consecutive, in order, drawn under the file's
 * write lock) and its part of the run's trace. Returns the first event's id.
 */
export function insertWrite(
  st: SqliteState,
  runId: string,
  entries: readonly JournalEntry[],
  part: string | null,
  reply?: { id: number; body: string },
): number {
  let events = '';
  const keep = keepBlob(st);
  for (let i = 0; i < entries.length; i++) events += (i ? ',' : '') + eventJson(entries[i].event, keep);
  const first = entries[0];
  st.lastAppended = undefined;
  // The run's reply is still the journal's last row (no id after it is taken): the save extends it,
  // its events taking the ids after the reply's — a step is one row, the reply's.
  if (reply) {
    st.stmt.extendRow.run(`[${reply.body}${events ? `,${events}` : ''}]`, 1 + entries.length, first?.at ?? null, part, reply.id);
    return reply.id + 1;
  }
  const r = st.stmt.insertWrite.run(runId, first?.event.type ?? 'trace', first?.at ?? '', `[${events}]`, entries.length, part);
  return Number(r.lastInsertRowid);
}
