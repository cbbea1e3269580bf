/**
 * The gate, one pure function for every tool call. Never performs I/O: what it needs (the
 * operator policy's verdict included) is passed in.
 */
import type { CallRecord, Mode, Principal, ToolSpec, UntrustedSource } from '../types/index.js';
import { callKey } from '../util/json.js';
import { type OutsideValue, type OwnWords, outsideValues, ownWordsOf } from './own-words.js';

/**
 * The gate: one pure function deciding what happens to a tool call, in the order
 * unknown → mode → arguments → operator policy (Cedar) → ask_user → repeat → effect gate.
 * Most of Keel's rules (docs/rules.md) live here; the engine only carries out the decision.
 */
export type Decision =
  /** `allowed_after_untrusted`: an operator rule let this write run as before although the run read untrusted content (U4). */
  | { kind: 'run'; allowed_after_untrusted?: string }
  | { kind: 'ask_user' }
  /** R15: held; `declined` when the user already said no to this tool in this run (R16). */
  | { kind: 'hold_for_confirmation'; declined: boolean }
  /**
   * `narrowed`: the card exists only because the run read untrusted content (U3): a yes no longer covers this call.
   * `outside`: an open-world call's values that are not the user's own (O2), for the card to mark.
   */
  | { kind: 'needs_approval'; narrowed?: true; outside?: OutsideValue[] }
  /** U5: the person already refused this exact call in this run: refused at once, never asked again. */
  | { kind: 'declined_call' }
  | { kind: 'refuse_approval' }
  /** C2/C4, or an operator rule: `by` says which, for the sentence and the outcome; `policies`: the Cedar policies that forbade it (PC8). */
  | { kind: 'deny'; mode: Mode; by: 'mode' | 'policy'; policies?: string[] }
  | { kind: 'unknown_tool' }
  | { kind: 'invalid_arguments'; problem: string }
  | { kind: 'repeat'; earlier: LedgerEntry; nth: number }
  /** R13: the same call as one waiting on a card in this reply: answered as its repeat once it ran, never run itself. */
  | { kind: 'repeat_of_card'; call_id: string };

/** An executed call the repeat guard remembers (R13). */
export interface LedgerEntry {
  call_id: string;
  tool: string;
  content: string;
  is_error: boolean;
  /** How many times this exact call was repeated after it ran. */
  repeats: number;
  /** Read results go stale once anything writes (R13). */
  read: boolean;
}

/** What the gate needs to know about the run so far. Derived from the trace (see deriveGateState). */
export interface GateState {
  /** Executed calls by `tool + canonical args`; reads drop out after any write (R13). */
  executed: Map<string, LedgerEntry>;
  /** Confirm-once tools the user has consented to in this run (R16). */
  consented: Set<string>;
  /** Confirm-once tools held and not yet followed by an answered ask_user. */
  heldAwaitingAnswer: Set<string>;
  /** Confirm-once tools the user said no to in this run (R16): held again, with a sentence that says so. */
  declined: Set<string>;
  /** R16: an approved plan or goal whose approver let its confirm-once writes run unasked. */
  consentAll: boolean;
  /** False when the run has no store to pause in (A5). */
  canPause: boolean;
  /** R13: calls waiting on a card in this reply, by `tool + canonical args`: the call id of the first. */
  carded: Map<string, string>;
  /** U2: what the run has read from outside the user, in order (the results of `output: untrusted` tools). */
  untrusted: UntrustedSource[];
  /** U3: exact calls (`tool + canonical args`) the person was shown and said yes to. */
  consentedCalls: Set<string>;
  /** U5: exact calls the person refused (a confirmation's no, a rejected card). */
  declinedCalls: Set<string>;
  /** The keys of the calls held since the last answered question: what its yes or no covers. */
  heldCalls: Set<string>;
  /** O2: the user's own words in this session (requests, answers, edits), made on first use. */
  own?: () => OwnWords;
  /** `untrusted` as handlers are lent it: frozen, made again only when a read joins it (see readView). */
  view?: readonly UntrustedSource[];
}

/**
 * PC8: what the operator's Cedar policy file says of one call (src/policy/cedar.ts evaluates it):
 * `forbid` (a forbid matched, or no permit did), `ask` (allowed, and a permit that allowed it is
 * `@ask`: a card pinned to the arguments), `permit` (the tool's declared gate). `policies` names the
 * policies that decided (`@id`s); `approvers` the groups an `@approvers` permit routes a card to (A9).
 */
export interface PolicyVerdict {
  decision: 'forbid' | 'ask' | 'permit';
  policies: string[];
  approvers?: string[];
  /** For `ask`: the `@ask` permits among `policies` (what the card says asked for it). */
  asked_by?: string[];
  /** O4: the permits among `policies` annotated `@after_untrusted("allow")`: the call runs without a card after untrusted reads. */
  after_untrusted?: string[];
  /** Evaluation errors Cedar reported (a policy skipped), for the trace. */
  errors?: string[];
}

/** PC8: one call as the operator's policy is asked about it (Cedar's principal, resource and context). */
export interface PolicyRequest {
  tool: ToolSpec;
  /** Already checked against the tool's schema. */
  args: Record<string, unknown>;
  mode: Mode;
  session?: string | null;
  principal: Principal;
  /** What the run has read from outside the user (U2); [] when nothing. */
  untrusted: readonly UntrustedSource[];
  /** The time of the call. */
  at: Date;
  /** The IANA time zone `context.hour`, `minute` and `weekday` are read in; default the process's local time. */
  timeZone?: string;
}

/** PC9: the principal of a run stored before runs recorded who started them: a local user with no name and no groups. */
export const UNRECORDED_PRINCIPAL: Principal = Object.freeze({ kind: 'user' as const, name: '', groups: Object.freeze([]) });

/** PC8: an operator policy, parsed once (src/policy/cedar.ts): synchronous, so the gate stays one pure step. */
export interface PolicyEvaluator {
  evaluate(req: PolicyRequest): PolicyVerdict;
}

export interface GateInput {
  name: string;
  /** The pool's tool, or undefined when the name is in no pool. */
  tool: ToolSpec | undefined;
  /** Whether the tool is declared on this request's menu (or admissible to it). */
  admissible: boolean;
  /** Parse or schema problem with the arguments, if any. */
  argsProblem?: string;
  /** `tool + canonical args` (see callKey). */
  key: string;
  /** The call's arguments, once well-formed: an open-world call's values are looked at (O2). */
  args?: Record<string, unknown>;
  mode: Mode;
  state: GateState;
  /** PC8: the operator's policy for this call, when a policy file is configured: asked only once the call is known and well-formed. */
  verdict?: () => PolicyVerdict | undefined;
}

/** O2: no words at all (a gate state built without the run's record: every value is someone else's). */
const NO_WORDS: OwnWords = ownWordsOf([]);

/** U2: how the trace names the core's own exception (a tool that marks what it writes untrusted). */
export const CARRIES_PROVENANCE = 'core: marks what it writes or starts as untrusted';

/** The tool each contract mode submits its proposal with (C1). */
export const SUBMIT_TOOL: Record<Mode, string | undefined> = { agent: undefined, plan: 'submit_plan', goal: 'submit_goal' };

/**
 * Why a tool may not run in this mode: the mode's allowlist (C2: in a contract mode only reads,
 * ask_user and that mode's own submit tool may run), or an operator rule (deny, or a mode the rule
 * leaves out). Undefined when it may run.
 */
export function denialOf(tool: ToolSpec, mode: Mode): 'mode' | 'policy' | undefined {
  const p = tool.policy;
  if (p?.deny) return 'policy';
  if (mode !== 'agent' && tool.declaration.effect !== 'read' && tool.name !== 'ask_user' && tool.name !== SUBMIT_TOOL[mode]) return 'mode';
  if (p?.modes && !p.modes.includes(mode)) return 'policy';
  return undefined;
}

export function executableInMode(tool: ToolSpec, mode: Mode): boolean {
  return denialOf(tool, mode) === undefined;
}

export function decide(input: GateInput): Decision {
  const { tool, state } = input;
  if (!tool || !input.admissible) return { kind: 'unknown_tool' };
  // C4/C9: the mode decides before arguments, hooks or handlers are looked at.
  const denied = denialOf(tool, input.mode);
  if (denied) return { kind: 'deny', mode: input.mode, by: denied };
  if (input.argsProblem) return { kind: 'invalid_arguments', problem: input.argsProblem };
  // PC8: the operator's policy sees every well-formed call: a forbid (or no permit: Cedar's default
  // deny) is final, before hooks, handlers or any consent a person gave.
  const verdict = input.verdict?.();
  if (verdict?.decision === 'forbid') return { kind: 'deny', mode: input.mode, by: 'policy', policies: verdict.policies };
  if (tool.name === 'ask_user') return { kind: 'ask_user' };
  const earlier = state.executed.get(input.key);
  if (earlier) return { kind: 'repeat', earlier, nth: earlier.repeats + 1 };
  // R13: a call identical to one waiting on a card is that call's repeat: approving the card runs it once.
  const carded = state.carded.get(input.key);
  if (carded !== undefined) return { kind: 'repeat_of_card', call_id: carded };
  // U5: a no is remembered: the very call the person refused is not put to them again.
  if (state.declinedCalls.has(input.key)) return { kind: 'declined_call' };
  // PC8: an `@ask` permit puts the call on a card pinned to its arguments, whatever its declared gate
  // and whatever the person consented to before: a policy tightens, never loosens. A9: a call the
  // policy routes (`@approvers`) that asks anyone at all is consented only on its routed card.
  if (tool.gate === 'approval' || verdict?.decision === 'ask' || (verdict?.approvers?.length && tool.gate !== 'none'))
    return state.canPause ? { kind: 'needs_approval' } : { kind: 'refuse_approval' };
  // U3: once words from outside the user are in the run, a yes covers only the exact calls the
  // person was shown; every other write waits on a card pinned to its arguments — unless an
  // operator rule lets this write run as before (U4, audited) or a Cedar permit says so (O4).
  const narrowed = state.untrusted.length > 0;
  const exception = narrowed
    ? (tool.policy?.after_untrusted && tool.policy.rule) ||
      (verdict?.after_untrusted?.length && `policy ${verdict.after_untrusted.join(', ')}`) ||
      (tool.carriesProvenance && CARRIES_PROVENANCE) ||
      undefined
    : undefined;
  // O2: after outside words, an open-world call whose values are not all the user's own would send
  // someone else's choice of data out: the person sees that exact call first (a yes covers only it).
  const outside =
    narrowed && tool.declaration.open_world && !state.consentedCalls.has(input.key)
      ? outsideValues(input.args ?? {}, tool.parameters, state.own?.() ?? NO_WORDS)
      : undefined;
  const leaves = outside !== undefined && outside.length > 0;
  // A read changes nothing: what it has read is recorded once it ran (a read an operator rule tightened is gated as a write).
  if (tool.gate === 'none' && tool.declaration.effect === 'read') {
    if (!leaves) return { kind: 'run' };
    if (exception) return { kind: 'run', allowed_after_untrusted: exception };
    return state.canPause ? { kind: 'needs_approval', narrowed: true, outside } : { kind: 'refuse_approval' };
  }
  if (narrowed && !exception) {
    if (state.consentedCalls.has(input.key)) return { kind: 'run' };
    // O2: an open-world write carrying values the user did not write goes on a card that marks them.
    if (leaves) return state.canPause ? { kind: 'needs_approval', narrowed: true, outside } : { kind: 'refuse_approval' };
    // Never asked about yet: held, and the confirmation shows exactly these calls (R15).
    const asked = state.consentAll || state.consented.has(tool.name) || state.declined.has(tool.name);
    if (tool.gate === 'confirm_once' && !asked) return { kind: 'hold_for_confirmation', declined: false };
    return state.canPause ? { kind: 'needs_approval', narrowed: true } : { kind: 'refuse_approval' };
  }
  const run: Decision = exception ? { kind: 'run', allowed_after_untrusted: exception } : { kind: 'run' };
  if (tool.gate === 'none') return run;
  if (state.consentAll || state.consented.has(tool.name) || state.consentedCalls.has(input.key)) return run;
  return { kind: 'hold_for_confirmation', declined: state.declined.has(tool.name) };
}

/**
 * Folds one call record into the gate state. Replaying a run's records in order rebuilds the
 * state exactly, so a resumed run (another process) decides as the original would have. `key`:
 * the record's callKey when the caller has it already (the engine's, from prepare).
 */
export function recordCall(state: GateState, r: CallRecord, key?: string): void {
  if (r.outcome === 'awaiting_approval') {
    const k = key ?? callKey(r.tool, r.args);
    if (!state.carded.has(k)) state.carded.set(k, r.call_id);
    return;
  }
  if (r.outcome === 'held_for_confirmation') {
    state.heldAwaitingAnswer.add(r.tool);
    if (r.args) state.heldCalls.add(key ?? callKey(r.tool, r.args));
  }
  // U5: a card the owner rejected is a no to that exact call (an edit is a different call: never rejected).
  if (r.outcome === 'rejected' && r.args) state.declinedCalls.add(key ?? callKey(r.tool, r.args));
  if (r.outcome === 'repeat') {
    const e = state.executed.get(key ?? callKey(r.tool, r.args));
    if (e) e.repeats++;
    return;
  }
  if (r.outcome !== 'ran' && !(r.outcome === 'error' && !r.by_core)) return;
  if (r.tool === 'ask_user') {
    // R16: an explicit yes to a question asked while a tool was held is consent to that tool (and
    // only that tool); a no leaves it unconsented. (A run stored before confirmations carried a
    // decision has none: its answer counts as consent, as it did then.)
    for (const t of state.heldAwaitingAnswer) {
      if (r.decision === 'no') state.declined.add(t);
      else {
        state.consented.add(t);
        state.declined.delete(t);
      }
    }
    // U3/U5: the confirmation showed the held calls themselves: its answer covers exactly those.
    for (const k of state.heldCalls) {
      if (r.decision === 'no') state.declinedCalls.add(k);
      else {
        state.consentedCalls.add(k);
        state.declinedCalls.delete(k);
      }
    }
    state.heldAwaitingAnswer.clear();
    state.heldCalls.clear();
    return;
  }
  noteUntrusted(state, r);
  if (r.consent_writes && (r.tool === SUBMIT_TOOL.plan || r.tool === SUBMIT_TOOL.goal)) state.consentAll = true;
  const read = r.effect === undefined || r.effect === 'read';
  if (!read) {
    // R13: a write anywhere invalidates cached reads.
    for (const [k, e] of state.executed) if (e.read) state.executed.delete(k);
  }
  state.executed.set(key ?? callKey(r.tool, r.args), {
    call_id: r.call_id,
    tool: r.tool,
    content: r.result,
    is_error: r.is_error,
    repeats: 0,
    read,
  });
}

/** U2: a result that put words from outside the user into the run's context joins what the run has read. */
export function noteUntrusted(state: GateState, r: Pick<CallRecord, 'tool' | 'call_id' | 'untrusted'>): void {
  if (r.untrusted !== undefined) state.untrusted.push(Object.freeze({ tool: r.tool, call_id: r.call_id, label: r.untrusted }));
}

/**
 * U2: what the run has read, as a handler is lent it (`ctx.untrusted`): a frozen copy, so no plugin
 * can make the run forget; made again only when a read has joined since (not at every call).
 */
export function readView(state: GateState): readonly UntrustedSource[] {
  if (state.view?.length !== state.untrusted.length) state.view = Object.freeze([...state.untrusted]);
  return state.view;
}

export function deriveGateState(
  records: readonly CallRecord[],
  canPause: boolean,
  inherited: readonly UntrustedSource[] = [],
  own?: () => OwnWords,
): GateState {
  // One literal, one shape: the gate reads this state on every call (a spread in front made each
  // state an object built property by property, out of its in-object slots — issue 49, bench/loop).
  const state: GateState = {
    own,
    untrusted: inherited.map((u) => Object.freeze({ ...u })),
    consentedCalls: new Set(),
    declinedCalls: new Set(),
    heldCalls: new Set(),
    executed: new Map(),
    consented: new Set(),
    heldAwaitingAnswer: new Set(),
    declined: new Set(),
    consentAll: false,
    canPause,
    carded: new Map(),
  };
  for (const r of records) recordCall(state, r);
  return state;
}
