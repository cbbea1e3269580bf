/**
 * The SQLite store's sessions (each one's mode, last run and contract), the memories `memory_correct`
 * keeps and `memory_search` finds, and the feedback left on runs. Never loses where a memory came from
 * (U2): a memory written by a run that had read untrusted content keeps its source through every
 * update unless the update says otherwise.
 */
import type Database from 'better-sqlite3';
import type { Memory, SessionRecord } from '../../types/index.js';
import { groupWrite, write } from './journal.js';
import { type Row, type SqliteState, shaped } from './state.js';

export function sessionStatements(db: Database.Database): Record<string, Database.Statement> {
  const p = (sql: string) => db.prepare(sql);
  return {
    memoryAdd: p("INSERT INTO memories (text, status, created_at, updated_at, untrusted) VALUES (?, 'active', ?, ?, ?)"),
    memoryGet: p('SELECT * FROM memories WHERE id = ?'),
    memoryActive: p("SELECT * FROM memories WHERE status = 'active' ORDER BY id"),
    feedback: p('INSERT INTO feedback (run_id, text, at) VALUES (?, ?, ?)'),
  };
}

export async function getSession(st: SqliteState, id: string): Promise<SessionRecord | undefined> {
  const r = shaped(st, 'SELECT * FROM sessions WHERE id = ?').get(id) as Row | undefined;
  if (!r) return undefined;
  return {
    id: r.id as string,
    mode: r.mode as SessionRecord['mode'],
    last_run_id: (r.last_run_id as string | null) ?? null,
    contract: r.contract ? JSON.parse(r.contract as string) : null,
    updated_at: r.updated_at as string,
  };
}

export async function saveSession(st: SqliteState, s: SessionRecord): Promise<void> {
  // Written for the run that last used the session (as it starts): its own writes commit alike.
  await groupWrite(st, s.last_run_id ?? s.id, () => {
    shaped(
      st,
      `INSERT INTO sessions (id, mode, last_run_id, contract, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(id) DO UPDATE SET mode = excluded.mode, last_run_id = excluded.last_run_id, contract = excluded.contract, updated_at = excluded.updated_at`,
    ).run(s.id, s.mode, s.last_run_id, s.contract ? JSON.stringify(s.contract) : null, s.updated_at);
  });
}

export async function memoryAdd(st: SqliteState, text: string, untrusted?: string): Promise<Memory> {
  return write(st, () => {
    const now = new Date().toISOString();
    const id = Number(st.stmt.memoryAdd.run(text, now, now, untrusted ?? null).lastInsertRowid);
    return memoryRow(st.stmt.memoryGet.get(id) as Row);
  });
}

export async function memorySearch(st: SqliteState, query: string, limit: number): Promise<Memory[]> {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const scored = (st.stmt.memoryActive.all() as Row[])
    .map(memoryRow)
    .map((m) => ({ m, score: words.filter((w) => m.text.toLowerCase().includes(w)).length }))
    .filter((x) => words.length === 0 || x.score > 0)
    .sort((a, b) => b.score - a.score || b.m.id - a.m.id);
  return scored.slice(0, limit).map((x) => x.m);
}

export async function memoryUpdate(
  st: SqliteState,
  id: number,
  patch: { text?: string; status?: Memory['status']; untrusted?: string | null },
): Promise<Memory | undefined> {
  return write(st, () => {
    const row = st.stmt.memoryGet.get(id) as Row | undefined;
    if (!row) return undefined;
    const m = memoryRow(row);
    const untrusted = patch.untrusted === undefined ? (m.untrusted ?? null) : patch.untrusted;
    st.db
      .prepare('UPDATE memories SET text = ?, status = ?, updated_at = ?, untrusted = ? WHERE id = ?')
      .run(patch.text ?? m.text, patch.status ?? m.status, new Date().toISOString(), untrusted, id);
    return memoryRow(st.stmt.memoryGet.get(id) as Row);
  });
}

export async function addFeedback(st: SqliteState, runId: string, text: string): Promise<void> {
  write(st, () => {
    st.stmt.feedback.run(runId, text, new Date().toISOString());
  });
}

/** A memory as stored: `untrusted` only when the row has one (U2). */
function memoryRow(r: Row): Memory {
  const m: Memory = {
    id: r.id as number,
    text: r.text as string,
    status: r.status as Memory['status'],
    created_at: r.created_at as string,
    updated_at: r.updated_at as string,
  };
  if (typeof r.untrusted === 'string') m.untrusted = r.untrusted;
  return m;
}
