/**
 * The one way a card is answered: recorded once (audited, journalled), edits re-checked, routing
 * (A9) enforced, from the API, the CLI, chat and the library alike. Never answers a card twice, and
 * never lets anything but a person's answer approve.
 */
import { deriveGateState, type PolicyVerdict } from '../policy/gate.js';
import type { ApprovalItem, ApprovalRecord, CallRecord, Store, ToolSpec } from '../types/index.js';
import { MAX_ARGS_CHARS, MAX_ARGS_DEPTH, overBounds } from '../util/bounds.js';
import { KeelError } from '../util/errors.js';
import { callKey, canonicalJson } from '../util/json.js';
import { storableText } from '../util/text.js';
import { describeCall, editedCard } from './card.js';
import { type Answerer, mayAnswer, notYours } from './who.js';

export type ApprovalDecision = 'approve' | 'reject';

const EXPIRED = 'expired before it was answered';

/** The reason a card is closed with when the MCP client whose call it holds is gone (S3, `keel mcp serve`). */
export const CLIENT_GONE = 'client_gone';

/** A8: the most cards (ids) — and runs — one batch answers: the API's, the console's and the library's cap. */
export const MAX_BATCH = 200;

/** The reason a card is closed with when its run is cancelled (issue 40: in the cancel's own claim). */
export const RUN_CANCELLED = 'the run was cancelled';

/** The answer joins the run's journal, so live clients (an inbox, the run's page) see the card close. */
function journal(
  store: Store,
  a: Pick<ApprovalRecord, 'id' | 'run_id'>,
  status: 'approved' | 'rejected' | 'expired',
  by: string,
  reason: string | null,
  at: string,
): Promise<number> {
  return store.appendEvent(a.run_id, { type: 'approval_answered', approval_id: a.id, status, answered_by: by, reason }, at);
}

/**
 * A7: the owner's edit of a card's calls, approved as edited. `arguments` is, for a card with one
 * call, that call's new arguments; for a card with several, `{ "<call_id>": {...} }` (a call left
 * out keeps the model's arguments). `tool` finds the card's tools in its run's pool.
 */
export interface ApprovalEdit {
  arguments: Record<string, unknown>;
  tool: (name: string) => ToolSpec | undefined;
  /** The plugin's `validate` as the loop runs it before a card is made: its problem with the call, if any. */
  validate: (tool: ToolSpec, args: Record<string, unknown>) => Promise<string | undefined>;
  /** The run's calls so far (its steps, then the paused reply's): what the repeat guard knows as run (R13). */
  calls: readonly CallRecord[];
  /** PC10: the operator's policy, asked about an edited call as if the model had made it (the run's principal, mode and reads bound in). */
  policy?: (tool: ToolSpec, args: Record<string, unknown>) => PolicyVerdict;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A7: the card's calls with the owner's edit applied, each checked as a model's call is (the tool's
 * JSON Schema, R21) and by the plugin's `validate` (A1); a tool declared `editable: false` refuses
 * any edit. Issue 40: it is held to the same bounds as a model's call (depth and size, measured before
 * anything recursive reads it), and to the repeat guard (R13): an edit may not make a call the same
 * as another on the card or as one the run already ran. An edited call is worded again by its tool's
 * `describe`, the model's words kept beside. A refusal is bad_input naming the call and the field;
 * nothing is stored. Undefined when the edit changes nothing.
 */
export async function editedItems(a: ApprovalRecord, edit: ApprovalEdit, actor: string): Promise<ApprovalItem[] | undefined> {
  const given = edit.arguments;
  if (!isObject(given)) throw new KeelError('bad_input', 'arguments: must be a JSON object');
  let byCall: Record<string, unknown>;
  if (a.items.length === 1) byCall = { [a.items[0].call_id]: given };
  else {
    const unknown = Object.keys(given).filter((k) => !a.items.some((i) => i.call_id === k));
    if (unknown.length)
      throw new KeelError(
        'bad_input',
        `arguments.${unknown[0]}: approval ${a.id} has ${a.items.length} calls (${a.items.map((i) => i.call_id).join(', ')}): give { "<call_id>": {...arguments} } for the calls you change`,
      );
    byCall = given;
  }
  let changed = false;
  const items: ApprovalItem[] = [];
  for (const item of a.items) {
    const args = byCall[item.call_id];
    const where = a.items.length === 1 ? 'arguments' : `arguments.${item.call_id}`;
    if (args === undefined) {
      items.push(item);
      continue;
    }
    if (!isObject(args)) throw new KeelError('bad_input', `${where}: the arguments of ${item.tool} must be a JSON object`);
    // Issue 40: measured without recursion first, so arguments nested thousands deep are refused, not a stack overflow.
    const over = overBounds(args);
    if (over?.over === 'depth')
      throw new KeelError(
        'bad_input',
        `${where}: nested deeper than ${MAX_ARGS_DEPTH} levels, the most a call's arguments may be (as a model's)`,
      );
    if (over)
      throw new KeelError(
        'bad_input',
        `${where}: over the limit of ${MAX_ARGS_CHARS} characters a call's arguments may have (as a model's)`,
      );
    if (canonicalJson(args) === canonicalJson(item.args)) {
      items.push(item);
      continue;
    }
    const tool = edit.tool(item.tool);
    if (!tool) throw new KeelError('bad_input', `${where}: ${item.tool} is no longer available: its call cannot be edited`);
    if (tool.declaration.editable === false)
      throw new KeelError(
        'bad_input',
        `${where}: ${item.tool} is declared editable: false: its arguments cannot be changed; approve or reject the call as it is`,
      );
    const text = storableText(JSON.stringify(args));
    if (text.replaced) throw new KeelError('bad_input', `${where}: holds text no store can keep (a NUL or a lone surrogate)`);
    const copy = JSON.parse(JSON.stringify(args)) as Record<string, unknown>;
    const schema = tool.checkArgs(copy);
    if (schema) throw new KeelError('bad_input', `${where}: do not fit ${item.tool}'s parameters: ${schema}`);
    const problem = await edit.validate(tool, copy);
    if (problem) throw new KeelError('bad_input', `${where}: ${item.tool} refuses them: ${problem}`);
    const verdict = edit.policy?.(tool, copy);
    if (verdict) policyCheck(where, item, verdict);
    changed = true;
    items.push({
      ...item,
      ...(verdict?.decision === 'ask' ? { policy: [...(verdict.asked_by ?? verdict.policies)] } : {}),
      args: copy,
      // Issue 40: the card words the call that runs (its own copy: describe cannot change what runs).
      card: describeCall(tool, structuredClone(copy)),
      original_args: item.original_args ?? item.args,
      original_card: item.original_card ?? item.card,
      edited_by: actor,
    });
  }
  if (!changed) return undefined;
  repeatCheck(items, edit.calls);
  return items;
}

/**
 * PC10: an edit is a new request: the operator's policy decides the edited call as if the model had
 * made it. One it forbids, or whose card it would send to other groups than the card's, is refused
 * naming the policy — an edit never widens what the policy allowed, nor moves who may answer.
 */
function policyCheck(where: string, item: ApprovalItem, verdict: PolicyVerdict): void {
  const named = verdict.policies.length ? `policy ${verdict.policies.join(', ')}` : 'no policy permits it';
  if (verdict.decision === 'forbid')
    throw new KeelError(
      'bad_input',
      `${where}: the operator's policy forbids the edited ${item.tool} call (${named}); approve or reject the call as it is`,
    );
  const groups = (g: readonly string[] | undefined) => [...new Set(g ?? [])].sort().join(', ');
  const was = groups(item.approvers);
  const now = groups(verdict.approvers);
  if (was !== now)
    throw new KeelError(
      'bad_input',
      `${where}: the edited ${item.tool} call would be answered by ${now ? `the group ${now}` : 'any approver'} (${named}), not ${was ? `the group ${was}` : 'any approver'} as this card is; approve or reject the call as it is`,
    );
}

/**
 * R13 for edited calls (issue 40): a call runs once. An edited call the same (tool and canonical
 * arguments) as another call on the card, or as a call the run already ran, is refused naming it.
 */
function repeatCheck(items: readonly ApprovalItem[], calls: readonly CallRecord[]): void {
  const where = (i: ApprovalItem) => (items.length === 1 ? 'arguments' : `arguments.${i.call_id}`);
  const keys = items.map((i) => callKey(i.tool, i.args));
  // A pending card holds no edit: an item with the model's arguments beside its own was edited now.
  const isEdited = (i: ApprovalItem) => i.original_args !== undefined;
  for (let n = 0; n < items.length; n++) {
    const earlier = keys.indexOf(keys[n]);
    if (earlier === n || !(isEdited(items[n]) || isEdited(items[earlier]))) continue;
    const [blamed, other] = isEdited(items[n]) ? [items[n], items[earlier]] : [items[earlier], items[n]];
    throw new KeelError(
      'bad_input',
      `${where(blamed)}: would make this ${blamed.tool} call the same call as ${other.call_id} on this card, and a call runs once (R13): change the arguments, or approve the card as it is`,
    );
  }
  const executed = deriveGateState(calls, false).executed;
  for (let n = 0; n < items.length; n++) {
    if (!isEdited(items[n])) continue;
    const ran = executed.get(keys[n]);
    if (ran)
      throw new KeelError(
        'bad_input',
        `${where(items[n])}: ${items[n].tool} already ran with these arguments in this run (call ${ran.call_id}), and a call runs once (R13): change them, or reject the card`,
      );
  }
}

/**
 * A3: the one function every surface (CLI, HTTP, web console) answers an approval through.
 * Unknown id → not_found; answered → conflict; past its expiry → marked expired, nothing runs.
 * Every decision is audited. It only records the answer: Keel.respondToApproval records it and continues the run.
 * A9: `who` is who answers (default: an application, the library's authority, named `actor`); a
 * card routed to groups `who` may not answer for is refused here, before anything else is looked
 * at — forbidden (HTTP 403), audited, the card left pending — so no surface can skip the check.
 */
export async function recordApprovalAnswer(
  store: Store,
  id: string,
  decision: ApprovalDecision,
  actor: string,
  reason: string | null = null,
  now: Date = new Date(),
  options: { consentWrites?: boolean; edit?: ApprovalEdit; who?: Answerer } = {},
): Promise<ApprovalRecord> {
  // Issue 27: who answered and why are made storable here, the same way in every store.
  actor = storableText(actor).text;
  if (reason !== null) reason = storableText(reason).text;
  const a = await store.getApproval(id);
  if (!a) throw new KeelError('not_found', `no approval ${id}`, 'keel approvals list shows them');
  const who = options.who ?? { name: actor, groups: [], kind: 'app' };
  if (!mayAnswer(a.card, who)) {
    await store.audit({
      at: now.toISOString(),
      actor,
      action: `${decision}_refused_forbidden`,
      subject: id,
      detail: JSON.stringify({ approvers: a.card.approvers, groups: who.groups, kind: who.kind }),
    });
    throw notYours(id, a.card, who);
  }
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
    // S3: a card closed because its MCP client left says so, and that nothing ran.
    const gone = a.status === 'rejected' && a.reason === CLIENT_GONE;
    // Issue 40: a card its run's cancel closed says so, and that nothing ran.
    const cancelled = a.status === 'rejected' && a.reason === RUN_CANCELLED;
    throw new KeelError(
      'conflict',
      `approval ${id} was already ${a.status}${a.answered_by ? ` by ${a.answered_by}` : ''}${a.answered_at ? ` at ${a.answered_at}` : ''}${gone ? ': closed because the MCP client that made the call left (client_gone), and nothing ran — the client makes the call again for a new card' : ''}${cancelled ? `: closed because its run ${a.run_id} was cancelled, and nothing ran` : ''}; it cannot be answered again`,
    );
  }
  if (options.edit && decision !== 'approve') {
    throw new KeelError('bad_input', 'arguments: editing applies to an approval, not a rejection');
  }
  const at = now.toISOString();
  if (now.getTime() > Date.parse(a.expires_at)) {
    if (await store.answerApproval(id, 'expired', 'system', EXPIRED, at)) await journal(store, a, 'expired', 'system', EXPIRED, at);
    await store.audit({ at, actor, action: `${decision}_refused_expired`, subject: id, detail: `expired at ${a.expires_at}` });
    return { ...a, status: 'expired', answered_at: at, answered_by: 'system', reason: EXPIRED };
  }
  const status = decision === 'approve' ? 'approved' : 'rejected';
  // A7: the approval is pinned to the owner's arguments, stored with the answer in one update.
  const edited = options.edit ? await editedItems(a, options.edit, actor) : undefined;
  // Issue 40: the card's words follow the edit (the model's kept beside them), stored in the same update.
  const card = edited ? editedCard(a.card, edited) : undefined;
  if (!(await store.answerApproval(id, status, actor, reason, at, consentWrites, edited, card))) {
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
      calls: (edited ?? a.items).map((i) => ({
        call_id: i.call_id,
        tool: i.tool,
        args: i.args,
        ...(i.original_args ? { original_args: i.original_args, edited_by: i.edited_by } : {}),
      })),
      reason,
      consent_writes: consentWrites,
      ...(edited ? { edited_by: actor } : {}),
    }),
  });
  return {
    ...a,
    ...(edited && card ? { items: edited, card } : {}),
    status,
    answered_at: at,
    answered_by: actor,
    reason,
    consent_writes: consentWrites,
  };
}

/**
 * Issue 40: the cards a cancel closed in the same transaction that took their run (RunStore
 * claimToCancel) are journalled and audited as any rejection is, by who cancelled.
 */
export async function recordCardsClosed(store: Store, runId: string, ids: readonly string[], actor: string, at: string): Promise<void> {
  for (const id of ids) {
    await journal(store, { id, run_id: runId }, 'rejected', actor, RUN_CANCELLED, at);
    await store.audit({ at, actor, action: 'rejected', subject: id, detail: JSON.stringify({ run_id: runId, reason: RUN_CANCELLED }) });
  }
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
