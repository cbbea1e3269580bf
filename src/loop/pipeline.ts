/**
 * The one path of a tool call, read top to bottom: prepare → execute → finalize.
 *
 * - prepare: parse the arguments (R21), check them against the schema, ask the gate (`decide`),
 *   and for a call that needs a card, the plugin's `validate` and `describe` (A1).
 * - execute: the fresh mode check (C5, a decision, never a crash), `onToolCall` hooks, the effect
 *   record (R29), the side-effect ledger when the call runs under an approval (A2), the handler.
 * - finalize: `onToolResult` hooks.
 *
 * The engine's reply loop and the approval continuation both call it, so an approved call gets the
 * run's abort signal, mode and events like any other. Every sentence it writes is in sentences.ts.
 */
import { describeCall } from '../approvals/card.js';
import type { Registry } from '../plugin-host/host.js';
import { type Decision, decide, denialOf, type GateState, type LedgerEntry, type PolicyVerdict, SUBMIT_TOOL } from '../policy/gate.js';
import { ModeDenied } from '../policy/modes.js';
import type { Menu } from '../prompt/menu.js';
import type {
  ApprovalItem,
  ApprovalStore,
  EffectRecord,
  Mode,
  Outcome,
  OutsideValue,
  ToolCall,
  ToolOutput,
  ToolSpec,
  UntrustedSource,
} from '../types/index.js';
import { boundAndFreeze, capText, MAX_ARGS_CHARS, MAX_ARGS_DEPTH, outputText } from '../util/bounds.js';
import { crashPoint } from '../util/crash.js';
import { callKey, canonicalJson } from '../util/json.js';
import { closestNames, storableText, truncate } from '../util/text.js';
import { SAY } from './sentences.js';
import { mapSame } from './storable.js';

/**
 * Intake: a reply the core can carry out call by call. Refused (the whole reply, before anything of
 * it runs or is kept) when a call has no id or two calls share one: results could not be told apart
 * (R19). Arguments nested too deep or too large to keep are replaced by a note, and the call is then
 * answered as invalid (R21).
 */
export function admitReply(calls: ToolCall[]): { problem: string } | { calls: ToolCall[] } {
  const seen = new Set<string>();
  for (const c of calls) {
    if (typeof c.id !== 'string' || c.id === '') return { problem: `the model's reply has a tool call (${String(c.name)}) without an id` };
    if (seen.has(c.id)) return { problem: `the model's reply uses the call id ${c.id} twice, so its results could not be told apart` };
    seen.add(c.id);
  }
  return {
    calls: mapSame(calls, (c) => {
      if (c.args === undefined || c.args === null || typeof c.args !== 'object') return c;
      // Frozen from here on: the transcript, the records, hooks and the handler all see these arguments, unchanged.
      const over = boundAndFreeze(c.args);
      if (over?.over === 'depth') return { id: c.id, name: c.name, raw_args: SAY.argumentsTooDeep(MAX_ARGS_DEPTH) };
      if (over) return { id: c.id, name: c.name, raw_args: SAY.argumentsTooLarge(over.size, MAX_ARGS_CHARS) };
      return c;
    }),
  };
}

/**
 * What prepare decided for one call; `verdict`: what the operator's policy said of it, when it was
 * asked (PC11: the trace names the policies that decided every call).
 */
export type Prepared = Decided & { verdict?: PolicyVerdict };

type Decided =
  /** The core answers the call itself (unknown, denied, invalid, held, refused): nothing runs. */
  | { kind: 'answered'; outcome: Outcome; result: string }
  /** R13: the earlier result, marked; `nth` counts the repeats of that call. */
  | { kind: 'repeat'; earlier: LedgerEntry; nth: number; result: string }
  /** R13: the same call as `call_id`, which waits on a card in this reply: its result, once that call ran. */
  | { kind: 'repeat_of_card'; call_id: string }
  /** R17: the run pauses for the user's answer. */
  | { kind: 'ask_user'; question: string }
  /** A1: the call needs the owner's card: `prepareApproval` checks it and words it; `outside`: the values its card marks (O2). */
  | { kind: 'needs_card'; tool: ToolSpec; args: Record<string, unknown>; outside?: OutsideValue[] }
  /**
   * `key`: the call's repeat key (callKey), for the gate to remember the call by once it ran (R13).
   * `allowed_after_untrusted`: the operator rule that let this write run although the run read untrusted content (U4).
   */
  | { kind: 'execute'; tool: ToolSpec; args: Record<string, unknown>; key: string; allowed_after_untrusted?: string };

/** A prepared call with its card worded: what the engine carries out. */
export type Ready = Exclude<Prepared, { kind: 'needs_card' }> | { kind: 'approval'; item: ApprovalItem };

export interface PrepareInput {
  call: ToolCall;
  pool: ReadonlyMap<string, ToolSpec>;
  menu: Pick<Menu, 'admissible'>;
  mode: Mode;
  gate: GateState;
  /** What this reply has already left pending: one question or card set at a time. */
  pending: { question: boolean; approvals: boolean };
  /** PC8: the operator's Cedar policy, when a policy file is configured (the run's principal, mode and reads bound in). */
  policy?: CallPolicy;
}

/** PC8: asks the operator's policy about one well-formed call of a pool tool. */
export type CallPolicy = (tool: ToolSpec, args: Record<string, unknown>) => PolicyVerdict;

function argumentsProblem(call: ToolCall, tool: ToolSpec | undefined): string | undefined {
  if (call.args === undefined) return SAY.argumentsNotJson(truncate(String(call.raw_args ?? ''), 120));
  if (call.args === null || typeof call.args !== 'object' || Array.isArray(call.args)) return SAY.argumentsNotObject;
  return tool?.checkArgs(call.args);
}

function answered(outcome: Outcome, result: string): Prepared {
  return { kind: 'answered', outcome, result };
}

/** Decides what happens to one call. Synchronous: nothing of the plugin's runs here. */
export function prepareCall(x: PrepareInput): Prepared {
  const { call, pool } = x;
  const tool = pool.get(call.name);
  const args = call.args ?? {};
  const argsProblem = argumentsProblem(call, tool);
  // The repeat key is only looked at for valid arguments.
  const key = argsProblem ? '' : callKey(call.name, args);
  // PC8: the policy is asked at most once per call, and only if the gate gets that far.
  let verdict: PolicyVerdict | undefined;
  const policy = x.policy;
  const decision = decide({
    name: call.name,
    tool,
    admissible: x.menu.admissible(call.name),
    argsProblem,
    key,
    // One shape for every call (issue 49): absent values are undefined, not left out by a spread.
    args: argsProblem ? undefined : args,
    mode: x.mode,
    state: x.gate,
    verdict: policy && tool ? () => (verdict ??= policy(tool, args)) : undefined,
  });
  const prepared = decided(x, decision, tool, args, key);
  if (verdict) prepared.verdict = verdict;
  return prepared;
}

function decided(x: PrepareInput, decision: Decision, tool: ToolSpec | undefined, args: Record<string, unknown>, key: string): Prepared {
  const { call, pool } = x;
  switch (decision.kind) {
    case 'unknown_tool': {
      const names = [...pool.keys()].filter((n) => x.menu.admissible(n));
      return answered('unknown_tool', SAY.unknownTool(call.name, closestNames(call.name, names)));
    }
    case 'deny':
      if (decision.policies) return answered('denied_by_policy', SAY.forbiddenByPolicy(call.name, decision.policies));
      return decision.by === 'policy'
        ? answered('denied_by_policy', SAY.deniedByPolicy(call.name, decision.mode, tool?.policy?.modes))
        : answered('denied_by_mode', SAY.deniedByMode(call.name, decision.mode, SUBMIT_TOOL[decision.mode]));
    case 'invalid_arguments':
      return answered('invalid_arguments', SAY.invalidArguments(call.name, decision.problem));
    case 'ask_user':
      if (!x.gate.canPause) return answered('error', SAY.cannotAsk);
      if (x.pending.question || x.pending.approvals) return answered('error', SAY.oneThingAtATime);
      return { kind: 'ask_user', question: String(args.question ?? '') };
    case 'repeat':
      return {
        kind: 'repeat',
        earlier: decision.earlier,
        nth: decision.nth,
        result: SAY.repeat(call.name, decision.earlier.call_id, decision.earlier.content),
      };
    case 'repeat_of_card':
      return { kind: 'repeat_of_card', call_id: decision.call_id };
    case 'hold_for_confirmation':
      // R15: the sentence sends the model to ask_user, which a run that cannot pause does not declare.
      if (!x.gate.canPause) return answered('held_for_confirmation', SAY.confirmationUnavailable(call.name));
      return answered('held_for_confirmation', decision.declined ? SAY.declinedEarlier(call.name) : SAY.heldForConfirmation(call.name));
    case 'declined_call':
      return answered('rejected', SAY.declinedExactCall(call.name));
    case 'refuse_approval':
      return answered('error', SAY.approvalUnavailable(call.name));
    case 'needs_approval':
      // decide() returns needs_approval only for a pool tool.
      if (x.pending.question) return answered('invalid_arguments', SAY.notQueued(call.name, SAY.questionPendingForApproval));
      return decision.outside
        ? { kind: 'needs_card', tool: tool as ToolSpec, args, outside: decision.outside }
        : { kind: 'needs_card', tool: tool as ToolSpec, args };
    case 'run':
      return decision.allowed_after_untrusted
        ? { kind: 'execute', tool: tool as ToolSpec, args, key, allowed_after_untrusted: decision.allowed_after_untrusted }
        : { kind: 'execute', tool: tool as ToolSpec, args, key };
  }
}

/**
 * A1: the second half of preparing a call that needs a card: the plugin's own `validate` (a problem
 * goes back to the model as an error result and nothing is queued), then its `describe`.
 */
export async function prepareApproval(
  callId: string,
  tool: ToolSpec,
  args: Record<string, unknown>,
  verdict?: PolicyVerdict,
  outside?: readonly OutsideValue[],
): Promise<Ready> {
  const problem = await validateProblem(tool, args);
  if (problem) return { kind: 'answered', outcome: 'invalid_arguments', result: SAY.notQueued(tool.name, problem) };
  const item: ApprovalItem = { call_id: callId, tool: tool.name, args, card: describeCall(tool, args) };
  // O2: the card marks an open-world call's values that did not come from the user.
  if (outside?.length) item.outside = outside.map((o) => ({ ...o }));
  // A9/PC11: a card an `@ask` permit made says which policies asked; a policy's `@approvers` routes any card.
  if (verdict?.decision === 'ask') item.policy = [...(verdict.asked_by ?? verdict.policies)];
  if (verdict?.approvers?.length) item.approvers = [...verdict.approvers];
  return { kind: 'approval', item };
}

/** The plugin's own `validate`: its problem with the call, if any (a validate that throws is one); an owner's edit is checked with it too (A7). */
export async function validateProblem(tool: ToolSpec, args: Record<string, unknown>): Promise<string | undefined> {
  if (!tool.validate) return undefined;
  try {
    const p = await tool.validate(args);
    return typeof p === 'string' && p.trim() ? p : undefined;
  } catch (err) {
    return SAY.validateFailed(errorMessage(err));
  }
}

/** What a run lends the calls it executes. */
export interface ExecuteContext {
  run_id: string;
  request: string;
  registry: Pick<Registry, 'hooks' | 'chargeFailure'>;
  /** The session's mode now (C5): read at call time, never captured. */
  currentMode: () => Mode;
  signal: AbortSignal;
  /** Settles with ABORTED when `signal` aborts (made once per leg: listeners per call cost more than the call). */
  aborted: Promise<typeof ABORTED>;
  /** R29: stores a non-read effect before the handler starts. */
  recordEffect: (e: EffectRecord) => Promise<void>;
  /** A2: the side-effect ledger, when the call runs under an approval: it runs at most once. */
  ledger?: { store: Pick<ApprovalStore, 'ledgerStart' | 'ledgerFinish' | 'ledgerGet' | 'audit'>; approval_id: string };
  /** How much of a result is kept and shown to the model (the rest is cut, with a note). */
  maxResultChars: number;
  /** U2: what the run has read from outside the user so far, frozen (readView): handed to the handler, so a tool that stores what it is given marks it. */
  untrusted?: () => readonly UntrustedSource[];
}

export interface Executed {
  /** `ran` (the handler returned, even with an error result), `error` (the core wrote it), or denied. */
  outcome: Extract<Outcome, 'ran' | 'error' | 'denied_by_mode' | 'denied_by_policy' | 'invalid_arguments' | 'rejected'>;
  content: string;
  is_error: boolean;
  /** A2: an approved call its plugin's `validate` refuses now: why (it did not run; audited). */
  refused?: string;
  /** A2: the ledger holds the call's intent but not its outcome: it was not run again. */
  unknown_outcome?: true;
  /** U1: the result carries words from outside the user: a short label of where from. */
  untrusted?: string;
}

const NOTHING_READ: readonly UntrustedSource[] = Object.freeze([]);

/** U1: how long a source's label may be (it is others' words: shown escaped, never trusted). */
export const MAX_SOURCE_LABEL = 120;

/** Whatever a handler returned, as text (never throws, R21-like for tools), an error flag, and what it says of its provenance. */
function normalizeOutput(out: ToolOutput | unknown): { content: string; is_error: boolean; source?: unknown; untrusted?: boolean } {
  if (typeof out === 'string') return { content: out, is_error: false };
  try {
    if (out && typeof out === 'object' && typeof (out as { content?: unknown }).content === 'string') {
      const o = out as { content: string; is_error?: unknown; source?: unknown; untrusted?: unknown };
      return { content: o.content, is_error: Boolean(o.is_error), source: o.source, untrusted: o.untrusted === true };
    }
  } catch {
    // A throwing getter: described as text below.
  }
  return { content: outputText(out), is_error: false };
}

/**
 * U1: the label of an untrusted result: the tool's own `source` (one line, bounded, storable), else
 * the call itself. A result is untrusted when its tool is declared `output: untrusted` or the result
 * says so; a result can never make such a tool trusted.
 */
function untrustedLabel(tool: ToolSpec, args: Record<string, unknown>, source: unknown): string {
  const given = typeof source === 'string' ? storableText(source.replace(/\s+/g, ' ').trim()).text : '';
  return truncate(given || `${tool.name}(${canonicalJson(args)})`, MAX_SOURCE_LABEL);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function denied(tool: ToolSpec, mode: Mode, by = denialOf(tool, mode)): Executed {
  return by === 'policy'
    ? { outcome: 'denied_by_policy', content: SAY.deniedByPolicy(tool.name, mode, tool.policy?.modes), is_error: true }
    : { outcome: 'denied_by_mode', content: SAY.deniedByMode(tool.name, mode, SUBMIT_TOOL[mode]), is_error: true };
}

/** A result the core wrote instead of the tool's: nothing ran (or its outcome is not known). */
export function coreResult(content: string): Executed {
  return { outcome: 'error', content, is_error: true };
}

/** Runs one allowed call. Every failure becomes a result: nothing here throws. */
export async function executeCall(ctx: ExecuteContext, tool: ToolSpec, callId: string, args: Record<string, unknown>): Promise<Executed> {
  // C4/C5: the handler's authority is the session's mode now, checked before any hook sees the call.
  let mode = ctx.currentMode();
  let by = denialOf(tool, mode);
  if (by) return denied(tool, mode, by);
  const ledger = ctx.ledger;
  // A1/A2: an approved call is checked again just before it runs — the facts its card was made on
  // may have changed since (another card did the same thing). A refusal is its result, audited, and
  // it never runs. A call the ledger already holds (started or finished) is not checked again: its
  // own run may be what changed the facts.
  if (ledger && tool.validate && !(await ledger.store.ledgerGet(ledger.approval_id, callId))) {
    const problem = await validateProblem(tool, args);
    if (problem) {
      await ledger.store.audit({
        at: new Date().toISOString(),
        actor: 'system',
        action: 'approved_call_refused',
        subject: ledger.approval_id,
        detail: JSON.stringify({ run_id: ctx.run_id, call_id: callId, tool: tool.name, problem }),
      });
      return { outcome: 'invalid_arguments', content: SAY.refusedAfterApproval(tool.name, problem), is_error: true, refused: problem };
    }
  }
  // Hooks may block a call, never change what it does: the arguments are frozen (at intake, or here for
  // an approved call's pinned arguments), so an approved call runs with exactly what was approved.
  if (!Object.isFrozen(args)) boundAndFreeze(args, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY);
  const frozen = args;
  const event = { run_id: ctx.run_id, call_id: callId, tool: tool.name, args: frozen, mode };
  for (const hook of ctx.registry.hooks.onToolCall) {
    try {
      const verdict = await hook(event);
      if (verdict && typeof verdict === 'object' && 'block' in verdict)
        return coreResult(SAY.blockedByHook(tool.name, String(verdict.block)));
    } catch (err) {
      return coreResult(SAY.hookFailed(tool.name, errorMessage(err)));
    }
  }
  // A hook may take its time: the mode is read again, right before anything changes.
  mode = ctx.currentMode();
  by = denialOf(tool, mode);
  if (by) return denied(tool, mode, by);

  if (ledger) {
    const fresh = await ledger.store.ledgerStart({
      approval_id: ledger.approval_id,
      call_id: callId,
      tool: tool.name,
      args_json: JSON.stringify(args),
    });
    crashPoint('ledger-start');
    if (!fresh) {
      const row = await ledger.store.ledgerGet(ledger.approval_id, callId);
      if (row?.state === 'finished') {
        const done: Executed = { outcome: 'ran', content: row.result ?? '', is_error: row.is_error };
        // U1/U2: the result comes back as it ran — its own untrusted mark and source label kept by the
        // ledger; the declaration still counts for a row written before the ledger kept them.
        const label = row.untrusted ?? (tool.declaration.output === 'untrusted' ? untrustedLabel(tool, args, undefined) : undefined);
        if (label !== undefined) done.untrusted = label;
        return done;
      }
      return { ...coreResult(SAY.unknownOutcome(tool.name)), unknown_outcome: true };
    }
  }
  if (tool.declaration.effect !== 'read')
    await ctx.recordEffect({ call_id: callId, tool: tool.name, effect: tool.declaration.effect, args });

  let result: Executed;
  try {
    const untrusted = ctx.untrusted?.() ?? NOTHING_READ;
    const handler = tool.execute(frozen, {
      run_id: ctx.run_id,
      call_id: callId,
      mode,
      request: ctx.request,
      signal: ctx.signal,
      untrusted,
    });
    // R20: the run's time limit holds whether or not the tool listens to its signal.
    const out = ctx.signal.aborted ? ABORTED : handler instanceof Promise ? await Promise.race([handler, ctx.aborted]) : handler;
    if (out === ABORTED) {
      if (handler instanceof Promise) handler.catch(() => {}); // its late end, if any, changes nothing any more
      const late = coreResult(SAY.toolLate(tool.name));
      return tool.declaration.effect === 'read' ? late : { ...late, unknown_outcome: true };
    }
    const o = normalizeOutput(out);
    result = { outcome: 'ran', content: o.content, is_error: o.is_error };
    if (o.untrusted || tool.declaration.output === 'untrusted') result.untrusted = untrustedLabel(tool, args, o.source);
  } catch (err) {
    if (err instanceof ModeDenied) {
      result = denied(tool, err.mode);
    } else {
      ctx.registry.chargeFailure(tool);
      result = coreResult(SAY.toolFailed(tool.name, errorMessage(err)));
      // U1: the error's message is the tool's own words, which may quote what it read.
      if (tool.declaration.output === 'untrusted') result.untrusted = untrustedLabel(tool, args, undefined);
    }
  }
  const handlerRan = result.outcome === 'ran' || result.outcome === 'error';
  if (handlerRan && ctx.registry.hooks.onToolResult.length) result = await finalizeCall(ctx, event, result);
  if (result.content.length > ctx.maxResultChars) result = { ...result, content: capText(result.content, ctx.maxResultChars) };
  // Issue 27: a tool's output is made storable before anything keeps it (the ledger, the journal, the run).
  const storable = storableText(result.content);
  if (storable.replaced) result = { ...result, content: `${storable.text}\n${SAY.unstorableReplaced(storable.replaced)}` };
  if (ledger) {
    await ledger.store.ledgerFinish(ledger.approval_id, callId, result.content, result.is_error, result.untrusted);
    crashPoint('after-approved-call');
  }
  return result;
}

export const ABORTED = Symbol('aborted');

/** A promise that settles with ABORTED when the signal aborts (one per leg, raced by every call). */
export function whenAborted(signal: AbortSignal): Promise<typeof ABORTED> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(ABORTED);
    else signal.addEventListener('abort', () => resolve(ABORTED), { once: true });
  });
}

/** Result hooks may rewrite what the model sees; a failing hook leaves the result as it was. */
async function finalizeCall(
  ctx: ExecuteContext,
  event: { run_id: string; call_id: string; tool: string; args: Record<string, unknown>; mode: Mode },
  result: Executed,
): Promise<Executed> {
  let out = result;
  for (const hook of ctx.registry.hooks.onToolResult) {
    try {
      const rewritten = await hook({ ...event, content: out.content, is_error: out.is_error });
      if (rewritten && typeof rewritten === 'object' && typeof rewritten.content === 'string') {
        out = { ...out, content: rewritten.content, is_error: rewritten.is_error ?? out.is_error };
      }
    } catch {
      // A failing result hook leaves the result as the tool returned it.
    }
  }
  return out;
}
