/**
 * Every sentence the core writes into a tool result (SAY): one table, so a refusal reads the same
 * everywhere. Nothing outside this file writes such a sentence.
 */
import type { Mode } from '../types/index.js';

/** R31: the last line of a find_tools result names what joined the menu; the run reads it back from its trace. */
export const ADDED_TOOLS = 'Added to your tools: ';

/** One tool a find_tools search returned, as its result lists it. */
export interface FoundLine {
  name: string;
  /** The first line of its description. */
  summary: string;
  /** What calling it does, in a few words (see `SAY.foundEffect`). */
  effect: string;
  available: boolean;
}

/** What a person said beside their yes or no, when it is more than the word itself. */
function saidMore(text: string, word: 'yes' | 'no'): string {
  const t = text.trim();
  return t && t.toLowerCase() !== word && t.toLowerCase() !== word[0] ? ` (they said: ${t})` : '';
}

/**
 * Every sentence the core writes into a tool result instead of (or about) running the tool, each
 * once. The model reads these: they say what happened to the call and what to do next, and they
 * never claim that something ran when it did not.
 */
export const SAY = {
  /** R24: a name in no pool, or hidden in this mode (C3). */
  unknownTool: (name: string, closest: readonly string[]) =>
    `Unknown tool '${name}': no such tool is available.${closest.length ? ` Closest: ${closest.join(', ')}.` : ''}`,
  /** R21: the arguments did not parse, or are not an object, or do not match the schema. */
  invalidArguments: (name: string, problem: string) => `Invalid arguments for ${name}: ${problem}. Fix them and call it again.`,
  argumentsNotJson: (raw: string) => `the arguments are not valid JSON (${raw})`,
  argumentsNotObject: 'the arguments must be a JSON object',
  argumentsTooDeep: (max: number) => `<arguments not kept by Keel: nested deeper than ${max} levels>`,
  argumentsTooLarge: (size: number, max: number) => `<arguments not kept by Keel: ${size} characters, over the limit of ${max}>`,
  /** Issue 26: the provider stopped the reply at its output token limit inside this call: never run. */
  toolCallCutOff: (name: string, limit: string) =>
    `${name} was not run: your reply was cut off at the output token limit (${limit}) while you were writing this call, so its arguments are incomplete. Call it again with shorter arguments, or do the work in smaller calls.`,
  /** Issue 26: how a cut-off reply names the limit, in a sentence for the model or the user. */
  outputLimit: (t: { tokens?: number; limit?: number }) =>
    t.limit ? `${t.limit} tokens` : t.tokens ? `reached after ${t.tokens} tokens` : "the server's limit",
  /** Issue 26: a run's warning: the model's first reply called tools its request did not declare. */
  toolsNotSeen: (spec: string, names: readonly string[]) =>
    `the model ${spec} called ${names.join(', ')}, which its first request did not declare: the server may not have shown it the tools. A likely cause is its chat template, which may not render tools (the server then drops them without saying so): use a model or template with tool calling.`,
  /** Issue 26: the model replied with no text and no tool call, also when asked again. */
  emptyReply: (spec: string) => `the model ${spec} replied with nothing (no text and no tool call), also when asked again`,
  /** R20: the run's time limit passed while the tool was still running; it may still finish on its own. */
  toolLate: (name: string) =>
    `${name} did not finish within the run's time limit: its outcome is unknown, and anything it returns later is ignored.`,
  /** C2/C4/C5: the mode's allowlist refused the call, before hooks and handler. */
  deniedByMode: (name: string, mode: Mode, submitTool: string | undefined) =>
    `${name} is unavailable in ${mode} mode: it was not run. In ${mode} mode only read tools, ask_user${submitTool ? ` and ${submitTool}` : ''} can run; put this action in your ${mode === 'goal' ? 'goal' : 'plan'} instead.`,
  /** An operator rule forbids the call (deny, or modes that leave this one out). */
  deniedByPolicy: (name: string, mode: Mode, modes: readonly Mode[] | undefined) =>
    `${name} was not run: an operator rule forbids it${modes ? ` in ${mode} mode (it runs only in ${modes.join(', ')} mode)` : ''}. Do without it, and tell the user if it was needed.`,
  /** R15: the first call of a confirm-once write. */
  heldForConfirmation: (name: string) =>
    `Not run: the user has not confirmed ${name} yet. Make every ${name} call you intend in one reply, so the user sees them all at once; then ask once with ask_user, listing every item you intend to create or change, then call ${name} once per item.`,
  /** R15 in a run that cannot pause (a delegate, C8): no ask_user to confirm with, so the write never runs. */
  confirmationUnavailable: (name: string) =>
    `Not run: ${name} needs the user's confirmation, which cannot be asked here. Do without it, and say in your answer what it would have written.`,
  /** U5: the user refused this very call (a confirmation's no, a rejected card) earlier in this run: refused at once. */
  declinedExactCall: (name: string) =>
    `Not run: the user declined this exact ${name} call earlier in this run, and Keel does not ask again. Do not call it again; tell the user it was not done.`,
  /** R16: the user said no to a tool earlier in this run; the call is held again. */
  declinedEarlier: (name: string) =>
    `Not run: the user declined ${name} earlier in this run. Do not call it again unless the user asks for it; if they may have changed their mind, ask once with ask_user.`,
  /** R16: the answer to a confirmation, as the ask_user call's result. */
  confirmed: (tools: readonly string[], text: string) =>
    `The user confirmed: go ahead with ${tools.join(', ')}.${text.trim() ? ` They said: ${text.trim()}` : ''}`,
  declined: (tools: readonly string[], text: string) =>
    `The user declined: do not run ${tools.join(', ')}; nothing was written.${text.trim() ? ` They said: ${text.trim()}` : ''} Tell the user nothing was changed, or ask what they want instead.`,
  /** The `output` option: a final answer that did not match its schema is sent back once. */
  outputMismatch: (problem: string) =>
    `[Keel] Your answer does not match the required output schema: ${problem}. Reply again with only the JSON value the system prompt describes.`,
  /** A warning in the run's result: the run ended while a write it held was never asked about. */
  heldNeverAsked: (name: string) =>
    `${name} was held for the user's confirmation, but the run ended without asking: nothing was written by it.`,
  /**
   * R16 (issue 47): the model answered while writes it never asked about were held: the core asks
   * the person itself (the question of its confirmation), naming each held call in its tool's words.
   */
  heldUnasked: (calls: readonly string[]) =>
    `Before this answer is final: the assistant called ${calls.join('; ')} without asking you, so nothing of it has run yet. Go ahead?`,
  /** R16 (issue 47): the core's own confirmation answered yes: the held calls ran once, their results for the model. */
  heldRanAfterYes: (tools: readonly string[], text: string, results: readonly string[]) =>
    `[Keel] You answered without asking the user to confirm ${tools.join(', ')}, which were held, so Keel asked them. They said yes${saidMore(text, 'yes')}, and Keel ran the held calls once:\n${results.join('\n')}\nAnswer the user from these results; do not call these tools again for the same items.`,
  /** One held call as heldRanAfterYes lists it: its tool's output is not the user's words. */
  heldCallResult: (name: string, args: string, outcome: string, result: string) =>
    `- ${name}(${args}): ${outcome}. Its output (the tool's words, not the user's): ${result}`,
  /** R16 (issue 47): the core's own confirmation answered no: nothing of the held calls ran. */
  heldDeclinedAfterAsk: (tools: readonly string[], text: string) =>
    `[Keel] You answered without asking the user to confirm ${tools.join(', ')}, which were held, so nothing of them ran. Keel asked the user, and they said no${saidMore(text, 'no')}. Tell the user nothing was changed; do not claim it was done.`,
  /** R16 (issue 47): a held call the yes covered, which the gate no longer lets run as it stands (the mode, the policy changed). */
  heldNotRunAfterYes: (name: string) =>
    `Not run: ${name} could not run as it was held (the session's mode or the operator's policy no longer allows it unasked). Call it again if it is still needed.`,
  /** R16 (issue 47): a run that cannot pause (no store) answered while writes were held: the answer says what was not done. */
  heldNotDone: (names: readonly string[]) =>
    `[Keel: nothing was written by ${names.join(', ')}: ${names.length > 1 ? 'they need' : 'it needs'} the user's confirmation, which this run cannot ask (it has no store). Whatever the answer above says, ${names.length > 1 ? 'they were' : 'it was'} not done.]`,
  /** R13: the earlier result, marked as a repeat. */
  repeat: (name: string, earlierCallId: string, earlier: string) =>
    `${earlier}\n\n[Repeat: ${name} was already called with these arguments (call ${earlierCallId}); this is that result. Do not call it again; use it.]`,
  /** A5: nowhere to pause for the owner's card. */
  approvalUnavailable: (name: string) => `${name} not run: it needs the owner's approval, which cannot be taken here.`,
  /** A1: the plugin's validate() found a problem; nothing was queued. */
  notQueued: (name: string, problem: string) => `${name} not run: ${problem}`,
  /** A1/A2: the owner approved the call, but its plugin's validate() now refuses it: it did not run. */
  refusedAfterApproval: (name: string, problem: string) =>
    `${name} not run: it was approved, but its check now refuses it (${problem}). Nothing changed.`,
  validateFailed: (message: string) => `its arguments could not be checked (${message})`,
  questionPendingForApproval: 'a question to the user is pending in this reply; call it again after the answer',
  /** R17: ask_user in a run that cannot pause (no store: delegates, embedders). */
  cannotAsk: 'Cannot ask the user here: this run has no store to pause in. Answer with what you have.',
  oneThingAtATime: 'Another question or approval is already pending in this reply: ask one thing at a time, after it is answered.',
  /** An onToolCall hook blocked the call, or failed. */
  blockedByHook: (name: string, why: string) => `${name} was not run: ${why}`,
  hookFailed: (name: string, message: string) => `${name} was not run: a tool-call hook failed (${message})`,
  /** R6: the tool's handler threw; its plugin is charged one failure. */
  toolFailed: (name: string, message: string) => `${name} is unavailable (${message}); answer without it.`,
  /** Issue 27: the tool's output held text no store can hold (NUL, a lone UTF-16 surrogate), replaced before it was kept. */
  unstorableReplaced: (replaced: number) =>
    `[Keel replaced ${replaced} character${replaced === 1 ? '' : 's'} of this output that no store can hold (NUL, or half of a UTF-16 surrogate pair) with U+FFFD]`,
  /** A2: the owner rejected the card. */
  rejected: (name: string, reason: string | null) =>
    `Not run: the owner rejected this ${name} call${reason ? ` (${reason})` : ''}. Nothing changed.`,
  /** A7: the owner changed the call's arguments on its card and approved the edited call (prefixes its result). */
  editedByOwner: (name: string, args: string) =>
    `The owner changed the arguments of this ${name} call before approving it: it ran as ${name}(${args}), not as you asked. Its result:`,
  /** A4: the card expired before anyone answered it. */
  approvalExpired: (name: string, approvalId: string) =>
    `Not run: approval ${approvalId} for this ${name} call expired before anyone answered it. Nothing changed.`,
  /** A2: a call whose intent is in the ledger but whose outcome is not: never run again. */
  unknownOutcome: (name: string) =>
    `The outcome of ${name} is unknown: Keel stopped while it was running, so it was not run again. Check its effect before trying again.`,
  /** A call in flight when Keel's process died (no effect recorded): not run again; the model decides. */
  interruptedCall: (name: string) =>
    `${name} was interrupted when Keel stopped: it may not have finished, and it was not run again. Call it again only if you still need its result.`,
  stoppedBeforeApproval: (name: string) =>
    `Not run: the run was stopped before the owner answered the card for this ${name} call. Nothing changed.`,
  questionUnanswered: 'The question was not answered: the run was stopped.',
  /** A2: the approved tool is gone from the pool (its plugin did not mount this time). */
  noLongerAvailable: (name: string) => `${name} is no longer available (its plugin did not mount); nothing was run.`,
  /** keel mcp serve: the user declined a confirm-once write when the client asked them (elicitation). */
  declinedByUser: (name: string) => `Not run: the user declined ${name} (nothing changed).`,
  /** keel mcp serve: a call for a tool the server does not offer to MCP clients. */
  notOffered: (name: string) => `Not run: ${name} is not offered here.`,
  /**
   * keel mcp serve: the call's card is not answered yet; the call returns (inside the client's
   * time-out) saying what the card asks, where it is answered, and that calling again gets the
   * outcome — true to the server's mode: without `keepCards` the card lives only as long as the
   * client's session (a client gone closes it, client_gone), with it the card outlives the session.
   */
  waitingForApproval: (
    id: string,
    title: string,
    name: string,
    asks: readonly string[] = [],
    o: { consoleUrl?: string; keepCards?: boolean } = {},
  ) =>
    [
      `Waiting for approval ${id} (${title}): nothing has run.`,
      ...(asks.length ? [`It asks: ${asks.join('; ')}.`] : []),
      `The owner answers it with keel approvals approve ${id} (or keel approvals reject ${id})${o.consoleUrl ? `, or in the console at ${o.consoleUrl}` : ''}${
        o.keepCards
          ? '; the card stays open for the owner if this client disconnects.'
          : ' while this client stays connected: if it disconnects first, the card is closed and nothing runs.'
      }`,
      o.keepCards
        ? `Call ${name} again with the same arguments, from this session or a new one, to get the outcome; it will not run twice.`
        : `Call ${name} again with the same arguments in this session to get the outcome; it will not run twice.`,
    ].join('\n'),
  /** keel mcp serve: the card the call waited on is gone from the store. */
  approvalGone: (id: string) => `Not run: approval ${id} is no longer in the store. Nothing changed.`,
  /** keel mcp serve: the card was rejected or expired. */
  approvalNotGranted: (id: string, why: string) => `Not run: approval ${id} ${why}. Nothing changed.`,
  /** R31: what a found tool's call does, as find_tools lists it. */
  foundEffect: (effect: 'read' | 'write' | 'destructive', gate: 'none' | 'confirm_once' | 'approval') =>
    effect === 'read'
      ? 'reads only'
      : `${effect === 'destructive' ? 'deletes or overwrites' : 'writes'}${gate === 'approval' ? "; each call waits for the owner's approval card" : gate === 'confirm_once' ? '; ask the user once first' : ''}`,
  /**
   * R31: a find_tools result: each tool found, best first, with its first description line and what
   * calling it does; those that may run are added to the menu (the last line says which).
   */
  foundTools: (query: string, found: readonly FoundLine[], mode: Mode) => {
    const added = found.filter((f) => f.available).map((f) => f.name);
    return [
      `Tools for "${query}", best match first:`,
      ...found.map((f) => `- ${f.name}: ${f.summary} (${f.available ? f.effect : `unavailable in ${mode} mode: calling it does nothing`})`),
      added.length ? `${ADDED_TOOLS}${added.join(', ')}.` : `None of them can run in ${mode} mode.`,
    ].join('\n');
  },
  /** R31: find_tools found nothing the mode lets the model see that is not already on its menu. */
  noToolFound: (query: string) =>
    `No other tool matches "${query}". Try other words for what the tool should do, or answer with the tools you have.`,
  /** PC8: the operator's Cedar policy forbids this call (a forbid matched, or no permit did). */
  forbiddenByPolicy: (name: string, policies: readonly string[]) =>
    `${name} was not run: the operator's policy forbids this call (${policies.length ? `policy ${policies.join(', ')}` : 'no policy permits it'}). Do without it, and tell the user if it was needed.`,
  /** PC10: an owner's edit the operator's policy would not allow as the model's call was allowed. */
  editRefusedByPolicy: (name: string, why: string) => `the edited ${name} call is not allowed by the operator's policy: ${why}`,
  /** D1: task started a delegate's run. */
  taskStarted: (id: string, delegate: string) => `Started task ${id} (${delegate}). Call task_wait with id ${id} for its answer.`,
  /** D1: a delegate's run as task_wait and task_list report it: its status, what ran, and its answer. */
  taskReport: (id: string, delegate: string, status: string, modelCalls: number, ran: readonly string[], answer: string | null) =>
    `Task ${id} (${delegate}): ${status}; ${modelCalls} model calls, tools run: ${ran.join(', ') || 'none'}.\n${answer ?? ''}`,
  /** D2: task_wait in a reply that also waits for a person: the run cannot wait for both at once. */
  taskStillRunning: (id: string) => `Task ${id} is still running; call task_wait with id ${id} again for its answer.`,
  /** D1: no such task among this run's. */
  noTask: (id: string) => `No task ${id} in this run: task_list shows its tasks.`,
  noTasks: 'No tasks.',
  noDelegate: (name: string, configured: readonly string[]) => `No delegate named ${name} (configured: ${configured.join(', ')}).`,
  /** D5: a limit refuses a new delegate: the model can wait for one, or do the work itself. */
  tooManyTasks: (running: number, limit: number, scope: 'run' | 'total') =>
    `No task started: ${running} delegates are already running ${scope === 'run' ? 'for this run' : 'in total'} (limit ${limit}). Wait for one with task_wait, or do the work yourself.`,
  tooDeep: (depth: number, limit: number) =>
    `No task started: this run is a delegate at depth ${depth}, and delegates may nest at most ${limit} deep. Do the work yourself.`,
  /** D2: task_stop ended the delegate's run (audited). */
  taskStopped: (id: string) => `Stopped task ${id}: its run was cancelled, and nothing more of it runs.`,
  taskAlreadyOver: (id: string, status: string) => `Task ${id} is already ${status}.`,
  taskNotStopped: (id: string, why: string) => `Task ${id} was not stopped: ${why}`,
  /** D2: a delegate's run needs a store (it can pause); a Keel without one starts none. */
  tasksNeedStore: 'No task started: delegates are runs, and this Keel keeps no runs (it has no store). Do the work yourself.',
} as const;
