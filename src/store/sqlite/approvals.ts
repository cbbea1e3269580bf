/**
 * The SQLite store's approvals (A1–A3, A7): the cards a paused run waits on, their answers, the audit
 * trail, and the ledger of approved calls (A2). Never answers a card twice: an answer is one UPDATE of
 * the card while it is pending, so of two answers (or an answer and a cancel) exactly one lands; and a
 * ledger row is started once (INSERT OR IGNORE), so an approved call never runs twice.
 */
import type Database from 'better-sqlite3';
import type { ApprovalRecord, ApprovalStatus, ApprovalStore, AuditRecord, LedgerRow } from '../../types/index.js';
import { groupWrite, write } from './journal.js';
import { type Row, type SqliteState, shaped } from './state.js';

export function approvalStatements(db: Database.Database): Record<string, Database.Statement> {
  const p = (sql: string) => db.prepare(sql);
  return {
    insertApproval:
      p(`INSERT INTO approvals (id,run_id,pause_seq,items,card,status,requested_at,expires_at,answered_at,answered_by,reason,consent_writes)
      VALUES (@id,@run_id,@pause_seq,@items,@card,@status,@requested_at,@expires_at,@answered_at,@answered_by,@reason,@consent_writes)`),
    getApproval: p('SELECT * FROM approvals WHERE id = ?'),
    answerApproval: p(
      "UPDATE approvals SET status = ?, answered_by = ?, reason = ?, answered_at = ?, consent_writes = ?, items = COALESCE(?, items), card = COALESCE(?, card) WHERE id = ? AND status = 'pending'",
    ),
    audit: p('INSERT INTO audit (at, actor, action, subject, detail) VALUES (?, ?, ?, ?, ?)'),
    ledgerStart: p("INSERT OR IGNORE INTO ledger (approval_id, call_id, tool, args_json, state) VALUES (?, ?, ?, ?, 'started')"),
    ledgerFinish: p("UPDATE ledger SET state = 'finished', result = ?, is_error = ?, untrusted = ? WHERE approval_id = ? AND call_id = ?"),
    ledgerGet: p('SELECT * FROM ledger WHERE approval_id = ? AND call_id = ?'),
  };
}

export async function createApproval(st: SqliteState, a: ApprovalRecord): Promise<void> {
  write(st, () => insertApproval(st, a));
}

export function insertApproval(st: SqliteState, a: ApprovalRecord): void {
  st.stmt.insertApproval.run({
    ...a,
    items: JSON.stringify(a.items),
    card: JSON.stringify(a.card),
    consent_writes: a.consent_writes ? 1 : 0,
  });
}

function approvalFromRow(r: Row): ApprovalRecord {
  return {
    ...(r as unknown as ApprovalRecord),
    items: JSON.parse(r.items as string),
    card: JSON.parse(r.card as string),
    consent_writes: r.consent_writes === 1,
  };
}

export async function getApproval(st: SqliteState, id: string): Promise<ApprovalRecord | undefined> {
  const r = st.stmt.getApproval.get(id) as Row | undefined;
  return r ? approvalFromRow(r) : undefined;
}

export async function listApprovals(st: SqliteState, filter: { status?: ApprovalStatus; run_id?: string } = {}): Promise<ApprovalRecord[]> {
  const where: string[] = [];
  const args: string[] = [];
  if (filter.status) {
    where.push('status = ?');
    args.push(filter.status);
  }
  if (filter.run_id) {
    where.push('run_id = ?');
    args.push(filter.run_id);
  }
  const sql = `SELECT * FROM approvals ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY requested_at, rowid`;
  return (shaped(st, sql).all(...args) as Row[]).map((r) => approvalFromRow(r));
}

export async function answerApproval(
  st: SqliteState,
  ...[id, status, actor, reason, at, consentWrites = false, items, card]: Parameters<ApprovalStore['answerApproval']>
): Promise<boolean> {
  const itemsJson = items ? JSON.stringify(items) : null;
  const cardJson = card ? JSON.stringify(card) : null;
  return write(st, () => {
    return st.stmt.answerApproval.run(status, actor, reason, at, consentWrites ? 1 : 0, itemsJson, cardJson, id).changes === 1;
  });
}

/**
 * An audit row: resolves once committed, as every write. Rows of the same tick (hundreds of runs
 * started through the API at once: issue 49) share one commit, as the runs' own writes do (groupWrite).
 */
export async function audit(st: SqliteState, row: AuditRecord): Promise<void> {
  await groupWrite(st, row.subject, () => {
    st.stmt.audit.run(row.at, row.actor, row.action, row.subject, row.detail);
  });
}

export async function listAudit(st: SqliteState, subject?: string): Promise<AuditRecord[]> {
  const rows = subject
    ? st.db.prepare('SELECT at, actor, action, subject, detail FROM audit WHERE subject = ? ORDER BY id').all(subject)
    : st.db.prepare('SELECT at, actor, action, subject, detail FROM audit ORDER BY id').all();
  return rows as AuditRecord[];
}

export async function ledgerStart(st: SqliteState, row: Omit<LedgerRow, 'state' | 'result' | 'is_error'>): Promise<boolean> {
  return write(st, () => {
    return st.stmt.ledgerStart.run(row.approval_id, row.call_id, row.tool, row.args_json).changes === 1;
  });
}

export async function ledgerFinish(
  st: SqliteState,
  approvalId: string,
  callId: string,
  result: string,
  isError: boolean,
  untrusted?: string,
): Promise<void> {
  write(st, () => {
    st.stmt.ledgerFinish.run(result, isError ? 1 : 0, untrusted ?? null, approvalId, callId);
  });
}

export async function ledgerGet(st: SqliteState, approvalId: string, callId: string): Promise<LedgerRow | undefined> {
  const r = st.stmt.ledgerGet.get(approvalId, callId) as Row | undefined;
  if (!r) return undefined;
  const { untrusted, ...rest } = r;
  const row = { ...(rest as unknown as LedgerRow), is_error: r.is_error === 1 };
  // U1: the label the result carried when it ran (NULL: a trusted result, or a row an older Keel wrote).
  if (typeof untrusted === 'string') row.untrusted = untrusted;
  return row;
}
