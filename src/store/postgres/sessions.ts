/**
 * The PostgreSQL store's sessions (each one's mode, last run and contract), memories and feedback.
 * Never forgets where a memory came from: its untrusted provenance is kept with it (U2).
 */
import type { Memory, SessionRecord } from '../../types/index.js';
import { named, type Row } from './connection.js';
import { jsonb, unjsonb } from './json.js';
import type { PgPool } from './pool.js';

const GET_SESSION = named('get_session', 'SELECT id, mode, last_run_id, contract, updated_at FROM sessions WHERE id = $1');
const SAVE_SESSION = named(
  'save_session',
  `INSERT INTO sessions (id, mode, last_run_id, contract, updated_at) VALUES ($1, $2, $3, $4, $5)
   ON CONFLICT (id) DO UPDATE SET mode = excluded.mode, last_run_id = excluded.last_run_id, contract = excluded.contract, updated_at = excluded.updated_at`,
);

export async function getSession(db: PgPool, id: string): Promise<SessionRecord | undefined> {
  const r = (await db.q(GET_SESSION, [id])).rows[0];
  if (!r) return undefined;
  return {
    id: r.id as string,
    mode: r.mode as SessionRecord['mode'],
    last_run_id: (r.last_run_id as string | null) ?? null,
    contract: r.contract === null ? null : unjsonb(r.contract),
    updated_at: r.updated_at as string,
  };
}

export async function saveSession(db: PgPool, s: SessionRecord): Promise<void> {
  await db.q(SAVE_SESSION, [s.id, s.mode, s.last_run_id, s.contract ? jsonb(s.contract) : null, s.updated_at]);
}

function memoryFromRow(r: Row): Memory {
  return {
    id: r.id as number,
    text: unjsonb<string>(r.text),
    status: r.status as Memory['status'],
    created_at: r.created_at as string,
    updated_at: r.updated_at as string,
    ...(r.untrusted !== null && r.untrusted !== undefined ? { untrusted: unjsonb<string>(r.untrusted) } : {}),
  };
}

export async function memoryAdd(db: PgPool, text: string, untrusted?: string): Promise<Memory> {
  const now = new Date().toISOString();
  const r = await db.q(
    "INSERT INTO memories (text, status, created_at, updated_at, untrusted) VALUES ($1, 'active', $2, $2, $3) RETURNING *",
    [jsonb(text), now, untrusted === undefined ? null : jsonb(untrusted)],
  );
  return memoryFromRow(r.rows[0]);
}

export async function memorySearch(db: PgPool, query: string, limit: number): Promise<Memory[]> {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const active = (await db.q("SELECT * FROM memories WHERE status = 'active' ORDER BY id")).rows.map((r) => memoryFromRow(r));
  const scored = active
    .map((m) => ({ m, score: words.filter((w) => m.text.toLowerCase().includes(w)).length }))
    .filter((x) => words.length === 0 || x.score > 0)
    .sort((a, b) => b.score - a.score || b.m.id - a.m.id);
  return scored.slice(0, limit).map((x) => x.m);
}

export async function memoryUpdate(
  db: PgPool,
  id: number,
  patch: { text?: string; status?: Memory['status']; untrusted?: string | null },
): Promise<Memory | undefined> {
  // U2: $5 says whether the provenance changes ($6 the new one, NULL: trusted again).
  const r = await db.q(
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
  return r.rows[0] ? memoryFromRow(r.rows[0]) : undefined;
}

export async function addFeedback(db: PgPool, runId: string, text: string): Promise<void> {
  await db.q('INSERT INTO feedback (run_id, text, at) VALUES ($1, $2, $3)', [runId, jsonb(text), new Date().toISOString()]);
}
