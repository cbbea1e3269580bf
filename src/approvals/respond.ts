import type { ApprovalRecord, Store } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { storableText } from '../util/text.js';

export type ApprovalDecision = 'approve' | 'reject';

const EXPIRED = 'expired before it was answered';

/** The answer joins the run's journal, so live clients (an inbox, the run's page) see the card close. */
function journal(
  store: Store,
  a: ApprovalRecord,
  status: 'approved' | 'rejected' | 'expired',
  by: string,
  reason: string | null,
  at: string,
): Promise<number> {
  return store.appendEvent(a.run_id, { type: 'approval_answered', approval_id: a.id, status, answered_by: by, reason }, at);
}

/**
 * A3: the one function every surface (CLI, HTTP, web console) answers an approval through.
 * Unknown id → not_found; answered → conflict; past its expiry → marked expired, nothing runs.
 * Every decision is audited. It only records the answer: Keel.respondToApproval records it and continues the run.
 */
export async function recordApprovalAnswer(
  store: Store,
  id: string,
  decision: ApprovalDecision,
  actor: string,
  reason: string | null = null,
  now: Date = new Date(),
  options: { consentWrites?: boolean } = {},
): Promise<ApprovalRecord> {
  // Issue 27: who answered and why are made storable here, the same way in every store.
  actor = storableText(actor).text;
  if (reason !== null) reason = storableText(reason).text;
  const a = await store.getApproval(id);
  if (!a) throw new KeelError('not_found', `no approval ${id}`, 'keel approvals list shows them');
  const consentWrites = Boolean(options.consentWrites);
  if (consentWrites && (decision !== 'approve' || !a.card.offers_write_consent)) {
    throw new KeelError(
      'bad_input',
      decision !== 'approve'
        ? 'letting writes run applies to an approval, not a rejection'
        : `approval ${id} is not a plan or a goal: letting its writes run unasked does not apply (each destructive call and pinned write has its own card)`,
    );
  }
  if (a.status !== 'pending') {
    throw new KeelError(
      'conflict',
      `approval ${id} was already ${a.status}${a.answered_by ? ` by ${a.answered_by}` : ''}${a.answered_at ? ` at ${a.answered_at}` : ''}; it cannot be answered again`,
    );
  }
  const at = now.toISOString();
  if (now.getTime() > Date.parse(a.expires_at)) {
    if (await store.answerApproval(id, 'expired', 'system', EXPIRED, at)) await journal(store, a, 'expired', 'system', EXPIRED, at);
    await store.audit({ at, actor, action: `${decision}_refused_expired`, subject: id, detail: `expired at ${a.expires_at}` });
    return { ...a, status: 'expired', answered_at: at, answered_by: 'system', reason: EXPIRED };
  }
  const status = decision === 'approve' ? 'approved' : 'rejected';
  if (!(await store.answerApproval(id, status, actor, reason, at, consentWrites))) {
    throw new KeelError('conflict', `approval ${id} was answered by someone else just now; it cannot be answered again`);
  }
  await journal(store, a, status, actor, reason, at);
  await store.audit({
    at,
    actor,
    action: status,
    subject: id,
    detail: JSON.stringify({
      run_id: a.run_id,
      calls: a.items.map((i) => ({ tool: i.tool, args: i.args })),
      reason,
      consent_writes: consentWrites,
    }),
  });
  return { ...a, status, answered_at: at, answered_by: actor, reason, consent_writes: consentWrites };
}

/** A4: marks every pending approval past its expiry as expired (audited). Returns them. */
export async function expireApprovals(store: Store, now: Date = new Date()): Promise<ApprovalRecord[]> {
  const out: ApprovalRecord[] = [];
  for (const a of await store.listApprovals({ status: 'pending' })) {
    if (now.getTime() <= Date.parse(a.expires_at)) continue;
    const at = now.toISOString();
    if (await store.answerApproval(a.id, 'expired', 'system', EXPIRED, at)) {
      await journal(store, a, 'expired', 'system', EXPIRED, at);
      await store.audit({ at, actor: 'system', action: 'expired', subject: a.id, detail: `expired at ${a.expires_at}` });
      out.push({ ...a, status: 'expired', answered_at: at, answered_by: 'system' });
    }
  }
  return out;
}
