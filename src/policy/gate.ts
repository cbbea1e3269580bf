import type { CallRecord, Mode, ToolSpec } from '../types/index.js';
import { callKey } from '../util/json.js';

/**
 * The gate: one pure function deciding what happens to a tool call, in the order
 * unknown → mode → arguments → ask_user → repeat → effect gate.
 * Most of Keel's rules (docs/rules.md) live here; the engine only carries out the decision.
 */
export type Decision =
  | { kind: 'run' }
  | { kind: 'ask_user' }
  /** R15: held; `declined` when the user already said no to this tool in this run (R16). */
  | { kind: 'hold_for_confirmation'; declined: boolean }
  | { kind: 'needs_approval' }
  | { kind: 'refuse_approval' }
  /** C2/C4, or an operator rule: `by` says which, for the sentence and the outcome. */
  | { kind: 'deny'; mode: Mode; by: 'mode' | 'policy' }
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
  mode: Mode;
  state: GateState;
}

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
  if (tool.name === 'ask_user') return { kind: 'ask_user' };
  const earlier = state.executed.get(input.key);
  if (earlier) return { kind: 'repeat', earlier, nth: earlier.repeats + 1 };
  // R13: a call identical to one waiting on a card is that call's repeat: approving the card runs it once.
  const carded = state.carded.get(input.key);
  if (carded !== undefined) return { kind: 'repeat_of_card', call_id: carded };
  switch (tool.gate) {
    case 'none':
      return { kind: 'run' };
    case 'confirm_once':
      if (state.consentAll || state.consented.has(tool.name)) return { kind: 'run' };
      return { kind: 'hold_for_confirmation', declined: state.declined.has(tool.name) };
    case 'approval':
      return state.canPause ? { kind: 'needs_approval' } : { kind: 'refuse_approval' };
  }
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
  if (r.outcome === 'held_for_confirmation') state.heldAwaitingAnswer.add(r.tool);
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
    state.heldAwaitingAnswer.clear();
    return;
  }
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

export function deriveGateState(records: readonly CallRecord[], canPause: boolean): GateState {
  const state: GateState = {
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
