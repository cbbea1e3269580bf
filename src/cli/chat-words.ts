/**
 * What `keel chat` says to a person about each call and warning, in its own short words instead of
 * the core's sentences to the model. Never prints a model's, tool's or plugin's text unescaped.
 */
import { SAY } from '../loop/sentences.js';
import { SUBMIT_TOOL } from '../policy/gate.js';
import type { CallRecord, Mode, RunResult } from '../types/index.js';

/**
 * What `keel chat` shows a person (S6). The core's sentences in a tool result (SAY) are written
 * for the model — "ask once with ask_user…", "do not call it again" — and chat shows its own short
 * wording for each outcome instead. Each core sentence is recognised by building it with SAY itself
 * (with a marker where the part that varies goes), so a change of wording there is followed here.
 */

const SLOT = '\u0000';

/** The part of `text` that stands where `make` put its argument, or undefined when `text` is not that sentence. */
function slotOf(text: string, make: (slot: string) => string): string | undefined {
  const parts = make(SLOT).split(SLOT);
  if (parts.length === 1) return text === parts[0] ? '' : undefined;
  if (parts.length !== 2) return undefined;
  const [pre, post] = parts;
  if (text.length < pre.length + post.length || !text.startsWith(pre) || !text.endsWith(post)) return undefined;
  return text.slice(pre.length, text.length - post.length);
}

function oneLine(s: string, n = 160): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > n ? `${flat.slice(0, n)}…` : flat;
}

const MODES: readonly Mode[] = ['agent', 'plan', 'goal'];

/** One call's outcome in a person's words: a mark after the call, and what the tool itself said (if anything). */
export function chatOutcome(r: Pick<CallRecord, 'tool' | 'outcome' | 'result' | 'is_error' | 'decision'>): {
  mark: string;
  detail?: string;
} {
  const t = r.tool;
  const text = r.result;
  switch (r.outcome) {
    case 'ran':
      if (t === 'ask_user') {
        if (r.decision === 'yes') return { mark: '✓ you confirmed' };
        if (r.decision === 'no') return { mark: '✓ you declined: nothing it held is written' };
        return { mark: '✓ you answered', detail: text || undefined };
      }
      // The tool's own words: what it returned is shown as it is.
      return r.is_error ? { mark: '✗ the tool reported a problem', detail: text || undefined } : { mark: '✓', detail: text || undefined };
    case 'held_for_confirmation':
      return text === SAY.declinedEarlier(t)
        ? { mark: '⏸ held: you declined it earlier in this run' }
        : { mark: '⏸ held until you confirm' };
    case 'awaiting_approval':
      return { mark: '⏳ waiting for approval' };
    case 'denied_by_mode': {
      const mode = MODES.find((m) => text === SAY.deniedByMode(t, m, SUBMIT_TOOL[m]));
      return { mark: `⛔ denied: ${mode ? `${mode} mode` : 'this mode'} allows only reads` };
    }
    case 'denied_by_policy':
      return { mark: '⛔ denied by policy: an operator rule forbids it' };
    case 'repeat':
      return { mark: '↺ repeat: the same call as before; its earlier result was used again' };
    case 'unknown_tool':
      return { mark: '✗ unknown tool: no tool by that name is available' };
    case 'invalid_arguments': {
      const problem = slotOf(text, (s) => SAY.invalidArguments(t, s));
      if (problem !== undefined) return { mark: `✗ invalid arguments: ${oneLine(problem)}` };
      const refused = slotOf(text, (s) => SAY.notQueued(t, s));
      if (refused === SAY.questionPendingForApproval) return { mark: '✗ held back: it came with a question in the same reply' };
      if (refused !== undefined) return { mark: `✗ its plugin refused the arguments: ${oneLine(refused)}` };
      return { mark: '✗ invalid arguments' };
    }
    case 'rejected':
      return { mark: rejectedMark(t, text) ?? '✗ rejected: nothing changed' };
    case 'error':
      return { mark: coreError(t, text) };
  }
}

/** A rejected card's call, with the owner's reason when there was one. */
function rejectedMark(t: string, text: string): string | undefined {
  if (text === SAY.rejected(t, null)) return '✗ rejected: nothing changed';
  const reason = slotOf(text, (s) => SAY.rejected(t, s));
  return reason !== undefined ? `✗ rejected (${oneLine(reason)}): nothing changed` : undefined;
}

/** An `error` outcome: every one of them is a sentence the core wrote instead of a result. */
function coreError(t: string, text: string): string {
  const failed = slotOf(text, (s) => SAY.toolFailed(t, s));
  if (failed !== undefined) return `✗ failed: ${oneLine(failed)}`;
  // The hook's failure first: a blocked call's sentence is a prefix of it.
  const hookFailed = slotOf(text, (s) => SAY.hookFailed(t, s));
  if (hookFailed !== undefined) return `✗ a tool-call hook failed: ${oneLine(hookFailed)}`;
  const blocked = slotOf(text, (s) => SAY.blockedByHook(t, s));
  if (blocked !== undefined) return `⛔ blocked by a hook: ${oneLine(blocked)}`;
  // A run stored before rejections had their own outcome (R27) kept them as errors.
  const rejected = rejectedMark(t, text);
  if (rejected) return rejected;
  if (slotOf(text, (s) => SAY.approvalExpired(t, s)) !== undefined) return '✗ its approval expired before anyone answered: nothing changed';
  const exact: [string, string][] = [
    [SAY.toolLate(t), "⚠ did not finish within the run's time limit: its outcome is unknown"],
    [SAY.unknownOutcome(t), '⚠ outcome unknown: Keel stopped while it was running, and did not run it again; check its effect'],
    [SAY.interruptedCall(t), '⚠ interrupted when Keel stopped: it may not have finished'],
    [SAY.stoppedBeforeApproval(t), '✗ the run stopped before its card was answered: nothing changed'],
    [SAY.noLongerAvailable(t), '✗ its plugin is no longer mounted: nothing ran'],
    [SAY.approvalUnavailable(t), "✗ it needs the owner's approval, which cannot be given here"],
    [SAY.cannotAsk, '✗ the question could not be asked here'],
    [SAY.oneThingAtATime, '✗ held back: another question or card was already waiting'],
    [SAY.questionUnanswered, '✗ unanswered: the run was stopped'],
  ];
  return exact.find(([said]) => said === text)?.[1] ?? '✗ error';
}

/** A call as chat prints it: the call, its outcome in a person's words, and the tool's own output if any. */
export function renderChatCall(r: Pick<CallRecord, 'tool' | 'args' | 'outcome' | 'result' | 'is_error' | 'decision'>): string {
  const args = r.args ? JSON.stringify(r.args) : '(unparseable arguments)';
  const { mark, detail } = chatOutcome(r);
  const head = `  → ${r.tool}(${args === '{}' ? '' : args})  ${mark}`;
  return detail ? `${head}\n      ${oneLine(detail)}` : head;
}

/** A run's warning in a person's words (a held write never asked about is said to the user, not about them). */
export function chatWarning(w: string): string {
  const held = slotOf(w, (s) => SAY.heldNeverAsked(s));
  return held !== undefined
    ? `${held} was held for your confirmation, but the run ended without asking you: nothing was written by it.`
    : w;
}

/** Where a chat is waiting: what it asked (a question, a confirmation, a card), or a run stopped at a safe point. */
export type Waiting =
  | { kind: 'question'; run_id: string }
  | { kind: 'confirm'; run_id: string }
  | { kind: 'card'; run_id: string; approval_id: string }
  | { kind: 'interrupted'; run_id: string };

/** What a paused run waits for. */
export function waitingOf(r: RunResult): Waiting {
  // D3: a run waiting for its delegate waits for what the delegate waits for (its question or card).
  if (r.status === 'paused' && r.reason === 'awaiting_task' && r.task.waiting) return waitingOf(r.task.waiting);
  if (r.question !== undefined) return { kind: r.confirm ? 'confirm' : 'question', run_id: r.run_id };
  if (r.approval) return { kind: 'card', run_id: r.run_id, approval_id: r.approval.id };
  return { kind: 'interrupted', run_id: r.run_id };
}

/** How to answer a paused run later, outside this chat (after Ctrl-C, or when the input ends). */
export function answerLater(w: Waiting): string {
  const run = w.run_id;
  switch (w.kind) {
    case 'question':
      return `Run ${run} stays paused until you answer. Answer it later with:\n  keel resume ${run} --answer "…"`;
    case 'confirm':
      return `Run ${run} stays paused until you confirm. Answer it later with:\n  keel resume ${run} --yes    or    keel resume ${run} --no`;
    case 'card':
      return `Run ${run} stays paused for approval ${w.approval_id}. Answer it later with:\n  keel approvals approve ${w.approval_id}    or    keel approvals reject ${w.approval_id}\n(or /approve ${w.approval_id} in keel chat)`;
    case 'interrupted':
      return `Run ${run} stopped at a safe point; nothing is half done. Continue it with:\n  keel resume ${run}`;
  }
}
