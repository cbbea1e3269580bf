/**
 * The PostgreSQL store's approvals: the cards (created, read, listed, answered), the audit trail,
 * and the ledger that records each approved call once (A2).
 * Never answers a card twice: an answer is one conditional update of a pending card (A3).
 */
import type { ApprovalCard, ApprovalItem, ApprovalRecord, ApprovalStatus, AuditRecord, LedgerRow } from '../../types/index.js';
import type { Row } from './connection.js';
import { jsonb, unjsonb } from './json.js';
import type { PgPool } from './pool.js';

export const INSERT_APPROVAL = `INSERT INTO approvals (id,run_id,pause_seq,items,card,status,requested_at,expires_at,answered_at,answered_by,reason,consent_writes)
  VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`;

export function approvalParams(a: ApprovalRecord): unknown[] {
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

export async function createApproval(db: PgPool, a: ApprovalRecord): Promise<void> {
  await db.q(INSERT_APPROVAL, approvalParams(a));
}

function approvalFromRow(r: Row): ApprovalRecord {
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

export async function getApproval(db: PgPool, id: string): Promise<ApprovalRecord | undefined> {
  const r = (await db.q('SELECT * FROM approvals WHERE id = $1', [id])).rows[0];
  return r ? approvalFromRow(r) : undefined;
}

export async function listApprovals(db: PgPool, filter: { status?: ApprovalStatus; run_id?: string } = {}): Promise<ApprovalRecord[]> {
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
  return (await db.q(sql, args)).rows.map((r) => approvalFromRow(r));
}

export async function answerApproval(
  db: PgPool,
  id: string,
  status: Exclude<ApprovalStatus, 'pending'>,
  actor: string,
  reason: string | null,
  at: string,
  consentWrites = false,
  items?: ApprovalItem[],
  card?: ApprovalCard,
): Promise<boolean> {
  const r = await db.q(
    "UPDATE approvals SET status = $1, answered_by = $2, reason = $3, answered_at = $4, consent_writes = $5, items = COALESCE($7::jsonb, items), card = COALESCE($8::jsonb, card) WHERE id = $6 AND status = 'pending'",
    [status, actor, reason, at, consentWrites, id, items ? jsonb(items) : null, card ? jsonb(card) : null],
  );
  return r.rowCount === 1;
}

export async function audit(db: PgPool, row: AuditRecord): Promise<void> {
  await db.q('INSERT INTO audit (at, actor, action, subject, detail) VALUES ($1, $2, $3, $4, $5)', [
    row.at,
    row.actor,
    row.action,
    row.subject,
    jsonb(row.detail),
  ]);
}

export async function listAudit(db: PgPool, subject?: string): Promise<AuditRecord[]> {
  const rows = subject
    ? (await db.q('SELECT at, actor, action, subject, detail FROM audit WHERE subject = $1 ORDER BY id', [subject])).rows
    : (await db.q('SELECT at, actor, action, subject, detail FROM audit ORDER BY id')).rows;
  return rows.map((r) => ({
    at: r.at as string,
    actor: r.actor as string,
    action: r.action as string,
    subject: r.subject as string,
    detail: unjsonb<string>(r.detail),
  }));
}

export async function ledgerStart(db: PgPool, row: Omit<LedgerRow, 'state' | 'result' | 'is_error'>): Promise<boolean> {
  const r = await db.q(
    "INSERT INTO ledger (approval_id, call_id, tool, args_json, state) VALUES ($1, $2, $3, $4, 'started') ON CONFLICT DO NOTHING",
    [row.approval_id, row.call_id, row.tool, row.args_json],
  );
  return r.rowCount === 1;
}

export async function ledgerFinish(
  db: PgPool,
  approvalId: string,
  callId: string,
  result: string,
  isError: boolean,
  untrusted?: string,
): Promise<void> {
  await db.q("UPDATE ledger SET state = 'finished', result = $1, is_error = $2, untrusted = $3 WHERE approval_id = $4 AND call_id = $5", [
    jsonb(result),
    isError,
    untrusted === undefined ? null : jsonb(untrusted),
    approvalId,
    callId,
  ]);
}

export async function ledgerGet(db: PgPool, approvalId: string, callId: string): Promise<LedgerRow | undefined> {
  const r = (await db.q('SELECT * FROM ledger WHERE approval_id = $1 AND call_id = $2', [approvalId, callId])).rows[0];
  if (!r) return undefined;
  const row: LedgerRow = {
    approval_id: r.approval_id as string,
    call_id: r.call_id as string,
    tool: r.tool as string,
    args_json: r.args_json as string,
    state: r.state as LedgerRow['state'],
    result: r.result === null ? null : unjsonb<string>(r.result),
    is_error: r.is_error === true,
  };
  // U1: the label the result carried when it ran (NULL: a trusted result, or a row from before migration 7).
  if (r.untrusted !== null && r.untrusted !== undefined) row.untrusted = unjsonb<string>(r.untrusted);
  return row;
}
