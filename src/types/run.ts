/**
 * The shared vocabulary of runs: messages, calls, records, pauses, events, results. Types only;
 * imports nothing of Keel's but types.
 */
import type { CardText, Effect, Mode, OutsideValue, UntrustedSource } from './tools.js';

/** A tool call as the model asked for it. `args` is absent when the arguments did not parse. */
export interface ToolCall {
  id: string;
  name: string;
  args?: Record<string, unknown>;
  /** The raw argument text when it was not valid JSON. */
  raw_args?: string;
}

export type Message =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls: ToolCall[] }
  | { role: 'tool'; call_id: string; name: string; content: string; is_error: boolean };

/** What happened to a call. */
export type Outcome =
  | 'ran'
  | 'held_for_confirmation'
  | 'awaiting_approval'
  | 'denied_by_mode'
  /** An operator rule forbids the call (deny, or a mode the rule leaves out). */
  | 'denied_by_policy'
  | 'repeat'
  | 'unknown_tool'
  | 'invalid_arguments'
  /** The owner rejected the call's card: it did not run (the result gives the reason). Not an error. */
  | 'rejected'
  | 'error';

/** Why a run ended or paused. */
export type EndReason =
  | 'final_answer'
  | 'answered_by_tool'
  | 'awaiting_user_input'
  | 'awaiting_approval'
  | 'max_steps'
  | 'stalled'
  | 'timeout'
  | 'model_error'
  | 'halted'
  | 'approval_expired'
  | 'approval_rejected'
  /** Paused: Ctrl-C or SIGTERM stopped the leg at a safe point; `keel resume RUN` continues it. */
  | 'interrupted'
  /** Ended by `keel runs cancel` (audited). */
  | 'cancelled'
  /** The final answer did not match the run's `output` schema, also after one retry. */
  | 'invalid_output'
  /** The store refused the run's state for a reason that trying again will not change (issue 27): failed, never taken over again. */
  | 'store_error'
  /** The model's text reply was cut off at its output token limit: a cut-off text is never the answer (issue 26). */
  | 'truncated'
  /** An MCP session's run, ended because its client left (S3): no model answered anything. */
  | 'session_closed'
  /** Paused: task_wait on a delegate that has not ended; the run goes on when it ends. */
  | 'awaiting_task';

export type RunStatus = 'running' | 'paused' | 'done' | 'failed';

/**
 * Who started a run, as an operator policy sees it (`principal` in Cedar): a `keel serve` token's
 * name, role and groups; the local user at the CLI; an MCP client's token; an application's own actor.
 */
export interface Principal {
  kind: 'token' | 'user' | 'mcp' | 'app';
  name: string;
  /** A token's role (viewer, approver, admin); absent for the local user and an app. */
  role?: string;
  groups: readonly string[];
}

/** One call's record in the trace (`steps[]`). */
export interface CallRecord {
  step: number;
  call_id: string;
  tool: string;
  args: Record<string, unknown> | null;
  outcome: Outcome;
  result: string;
  is_error: boolean;
  /** Effect of the tool when it is in the pool. */
  effect?: Effect;
  /** True when the core produced the result instead of running the tool ("unusable"). */
  by_core: boolean;
  /** On an ask_user call that was a confirmation, the user's explicit yes or no. */
  decision?: 'yes' | 'no';
  /** On an approved submit_plan/submit_goal, the approver let its confirm-once writes run unasked. */
  consent_writes?: true;
  /** The owner changed the arguments before approving: the model's (`args` holds what ran). */
  edited_from?: Record<string, unknown>;
  /** Who changed them. */
  edited_by?: string;
  /** The result carried words from outside the user (the tool's `output: untrusted`): a short label of where from. */
  untrusted?: string;
  /** The operator rule that let this write run unasked although the run had read untrusted content. */
  allowed_after_untrusted?: string;
  /** the operator policies (Cedar `@id`s) that decided this call, when a policy file is configured; [] for Cedar's default deny. */
  policy?: string[];
}

/** A non-read call that started, recorded before it ran. */
export interface EffectRecord {
  call_id: string;
  tool: string;
  effect: Effect;
  args: Record<string, unknown>;
}

/** One declaration as sent, with whether the tool may run (`requests[].tools[]`). */
export interface DeclaredTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  available: boolean;
}

export interface RequestTrace {
  step: number;
  system: string;
  tools: DeclaredTool[];
  /** Names in the pool that were not declared this request (no silent truncation). */
  dropped: string[];
  /** The tools declared this request because a find_tools search of this run found them. */
  found?: string[];
  input_tokens?: number;
  usage?: { input: number; output: number; cost?: number };
  /**
   * The call was cut short by an interruption (Ctrl-C, SIGTERM, an abort signal) and gave no reply:
   * counted in `model_calls`, but resuming asks again — a scripted model replays the entry, as after kill -9.
   */
  unanswered?: true;
}

export interface PendingResult {
  call_id: string;
  name: string;
  /** Undefined while the pause holds it (the ask_user answer, the approved call's result). */
  content?: string;
  is_error: boolean;
}

export interface ApprovalItem {
  call_id: string;
  tool: string;
  /** The call's arguments: the model's, or the owner's edit once approved with one. */
  args: Record<string, unknown>;
  card: CardText;
  /** The owner changed the arguments before approving: what the model asked for. */
  original_args?: Record<string, unknown>;
  /** Who changed them (the approver). */
  edited_by?: string;
  /** The card's words for the model's call, once `card` words the edited one (issue 40). */
  original_card?: CardText;
  /** the operator policies that asked for this call's card (`@ask` permits). */
  policy?: string[];
  /** the groups a policy's `@approvers` routes this call's card to (any one suffices). */
  approvers?: string[];
  /** O2: an open-world call's values that are not the user's own (what its card marks). */
  outside?: OutsideValue[];
}

export interface ApprovalCard {
  title: string;
  items: {
    tool: string;
    title: string;
    lines: string[];
    undo: string;
    call: string;
    /** A7: the owner edited this call: the card shows the edited call; these are the model's words and call. */
    original?: { title: string; lines: string[]; call: string };
    /** Who edited it. */
    edited_by?: string;
    /** O2: the call sends its arguments out (open_world), and these values of them did not come from the user. */
    outside?: OutsideValue[];
  }[];
  request: string;
  /**
   * A plan or goal card: the approver may also let the confirm-once writes made while carrying
   * it out run without asking (destructive calls and pinned writes keep their cards).
   */
  offers_write_consent?: true;
  /** What the run had read from outside the user when the card was made (labels are others' words: escape them). */
  untrusted?: UntrustedSource[];
  /** The groups whose tokens alone may answer the card (any one suffices), set by an operator policy; absent, roles decide as before. */
  approvers?: string[];
  /** The ids of the operator policies that asked for the card ("Asked by policy big-payment"). */
  policy?: string[];
  /** A delegate's card: which delegate, the run that started it, and that run's request (the user's words). */
  chain?: { delegate: string; parent_run: string; request: string };
}

/**
 * A card as a run's result gives it (issue 40): each item also carries its call's id and
 * structured arguments, as the stored pause has them (the model's; and, once edited, the
 * owner's with `original_args` and `edited_by`), beside the rendered `call`.
 */
export interface ResultCard extends ApprovalCard {
  items: (ApprovalCard['items'][number] & Pick<ApprovalItem, 'call_id' | 'args' | 'original_args' | 'edited_by'>)[];
}

/**
 * A question asked while writes are held is a confirmation: it names the held tools and the
 * calls waiting on them, and its answer carries an explicit yes or no.
 */
export interface Confirmation {
  tools: string[];
  /** The held calls, each as the core renders it (the tool's `describe`): a yes covers exactly these once the run has read untrusted content. */
  items: { call_id: string; tool: string; args: Record<string, unknown> | null; title?: string; lines?: string[] }[];
  /** What the run had read from outside the user when it asked. */
  untrusted?: UntrustedSource[];
}

/** What the user says to a paused question: text, and for a confirmation an explicit yes or no. */
export interface Answer {
  text: string;
  confirm?: boolean;
}

/** An approved proposal from a contract mode. */
export type Contract =
  | { kind: 'plan'; summary?: string; steps: string[] }
  | { kind: 'goal'; outcome: string; criteria: string[]; boundaries: string[] };

/** Why and where a run waits. `seq` makes each pause resumable at most once. */
export type Pause =
  | {
      kind: 'ask_user';
      seq: number;
      call_id: string;
      question: string;
      /** Set when writes are held: the answer must say yes or no. */
      confirm?: Confirmation;
      /**
       * The core asks, not the model: it answered while writes it never asked about were held. No
       * model call waits on `call_id`; a yes runs the held calls (once) and the model is told.
       */
      by_core?: true;
      step: number;
      results: PendingResult[];
      calls: CallRecord[];
    }
  | {
      kind: 'approval';
      seq: number;
      approval_id: string;
      card: ApprovalCard;
      step: number;
      items: ApprovalItem[];
      results: PendingResult[];
      calls: CallRecord[];
    }
  /** The leg was interrupted between steps (Ctrl-C, SIGTERM): nothing is half done; resuming goes on. */
  | { kind: 'interrupted'; seq: number; step: number; why: string }
  /** Task_wait on a delegate's run that has not ended: the run goes on when it ends (its result is task_wait's). */
  | {
      kind: 'task';
      seq: number;
      call_id: string;
      task_id: string;
      /** The delegate's run, and which delegate it is. */
      child_run: string;
      delegate: string;
      step: number;
      results: PendingResult[];
      calls: CallRecord[];
    };

/** A delegate's run: the run that started it (with `task`), as which delegate, how deep, and that run's request. */
export interface TaskParent {
  run_id: string;
  delegate: string;
  /** 1 for a delegate of a top-level run, 2 for a delegate's delegate, … */
  depth: number;
  /** The id task gave the parent's model (`tk_N`, numbered per parent). */
  task_id: string;
  /** The parent's request: the user's words the delegate works for (shown on its cards). */
  request: string;
}

/** A run's whole state: what the store keeps and a new process resumes from. */
export interface RunState {
  id: string;
  status: RunStatus;
  reason: EndReason | null;
  request: string;
  mode: Mode;
  model: string;
  plugin_dirs: string[];
  answer: string | null;
  pause: Pause | null;
  pause_seq: number;
  model_calls: number;
  effects: EffectRecord[];
  messages: Message[];
  steps: CallRecord[];
  requests: RequestTrace[];
  notes: string[];
  /** What the user should know that did not stop the run: a plugin failed to mount, a held write was never asked about. */
  warnings: string[];
  /** The session the run belongs to: its mode and history carry across runs. */
  session_id: string;
  /**
   * Model calls the session's earlier runs made with this run's model spec: a scripted model
   * continues from there, so one script can drive a whole session.
   */
  seq_base: number;
  /** The approved contract the run works under, if any. */
  contract: Contract | null;
  /** A delegate's: what its parent run had read from outside the user when it started the delegate (its prompt may carry it). */
  inherited_untrusted?: UntrustedSource[];
  /** who started the run (a token, the local user, an MCP client, the app): what an operator policy's `principal` is. */
  principal?: Principal;
  /**
   * The names of the tools declared in code (an application's `new Keel({ tools })`, a
   * run's `tools`) in the run's pool when it started: only a process that has them carries it on.
   */
  app_tools?: string[];
  /** The process driving the run (`host:pid`), set when it starts or claims a pause. */
  owner: string | null;
  created_at: string;
  updated_at: string;
  /** Set on a delegate's run: the run that started it. */
  parent?: TaskParent;
}

/** What every result carries, whatever its status (what `keel run --json` prints). */
export interface RunResultBase {
  run_id: string;
  mode: Mode;
  model_calls: number;
  effects: EffectRecord[];
  requests: {
    system: string;
    tools: { name: string; description: string; available: boolean }[];
    input_tokens?: number;
    dropped: string[];
    /** Declared because a find_tools search of this run found them. */
    found?: string[];
  }[];
  steps: Omit<CallRecord, 'by_core' | 'effect' | 'step'>[];
  /** What the run has read from outside the user (results of tools declared `output: untrusted`), in order. */
  untrusted: UntrustedSource[];
  notes: string[];
  /** Printed to stderr by the CLI: a plugin that failed or is degraded, a held write never asked about. */
  warnings: string[];
}

/** The pause fields a result of another kind does not have (so they read as undefined without narrowing). */
interface NoPause {
  question?: undefined;
  confirm?: undefined;
  approval?: undefined;
}

/** The run ended with an answer: the model's, or a tool's that answers directly, or the last usable one of a repeated call. */
export interface DoneResult<T = unknown> extends RunResultBase, NoPause {
  status: 'done';
  reason: EndReason;
  answer: string;
  /** With the `output` option: the answer parsed and checked against its schema. */
  output?: T;
}

/** The run ended without finishing: the answer says what was done, why it stopped and how to go on. */
export interface FailedResult extends RunResultBase, NoPause {
  status: 'failed';
  reason: EndReason | null;
  answer: string | null;
  output?: undefined;
}

interface PausedBase extends RunResultBase {
  status: 'paused';
  answer: string | null;
  output?: undefined;
}

/** `ask_user`: the run waits for the user's answer. */
export interface QuestionPause extends PausedBase {
  reason: 'awaiting_user_input';
  question: string;
  confirm?: undefined;
  approval?: undefined;
}

/** Held writes: the question is a confirmation, answered yes or no. */
export interface ConfirmationPause extends PausedBase {
  reason: 'awaiting_user_input';
  question: string;
  /** The held writes, answered with `{ confirm: true | false }`. */
  confirm: Confirmation;
  approval?: undefined;
}

/** A card: the run waits for the owner to approve or reject exact calls. */
export interface ApprovalPause extends PausedBase {
  reason: 'awaiting_approval';
  approval: { id: string; card: ResultCard };
  question?: undefined;
  confirm?: undefined;
}

/** Ctrl-C, SIGTERM or an abort signal stopped the leg at a safe point; resume carries it on. */
export interface InterruptedPause extends PausedBase, NoPause {
  reason: 'interrupted';
}

/**
 * the run waits for a delegate it started (task_wait); it goes on when the delegate's run ends.
 * `waiting`: what the delegate itself waits for, when it waits for a person (its question or card).
 */
export interface TaskPause extends PausedBase, NoPause {
  reason: 'awaiting_task';
  task: { id: string; run_id: string; delegate: string; waiting?: PausedResult };
}

export type PausedResult = QuestionPause | ConfirmationPause | ApprovalPause | InterruptedPause | TaskPause;

/**
 * A run's result: narrow on `status` (done, paused, failed), then a pause on `reason` — and a
 * question on `confirm` (held writes) — to get what it carries, typed.
 */
export type RunResult<T = unknown> = DoneResult<T> | PausedResult | FailedResult;

/**
 * What a leg emits as it works. With a store, every event but a text delta is kept in the run's
 * journal before it is emitted, and carries the journal's `id` (ids grow across the whole store).
 */
export type LoopEvent = (
  | { type: 'run_started'; run_id: string; session_id: string; mode: Mode; request: string; resumed: boolean }
  | { type: 'model_request'; step: number; system: string; tools: DeclaredTool[]; dropped: string[] }
  | { type: 'text_delta'; text: string }
  | { type: 'assistant'; step: number; text: string; tool_calls: ToolCall[] }
  | { type: 'tool_result'; step: number; record: CallRecord }
  | { type: 'paused'; pause: Pause }
  | { type: 'run_finished'; result: RunResult }
) & { id?: number };

/** A run's result without its trace (the requests and steps a client reads from the run itself). */
export type RunOutcome = RunResult extends infer R ? (R extends RunResult ? Omit<R, 'requests' | 'steps'> : never) : never;

/** A pause as the journal keeps it: why and where the run waits, without the calls it holds. */
export type PauseSummary =
  | Omit<Extract<Pause, { kind: 'ask_user' }>, 'results' | 'calls'>
  | Omit<Extract<Pause, { kind: 'approval' }>, 'results' | 'calls'>
  | Extract<Pause, { kind: 'interrupted' }>
  | Omit<Extract<Pause, { kind: 'task' }>, 'results' | 'calls'>;

/**
 * An event of a run's journal: what live clients (the server's SSE streams, webhooks) receive and a
 * client that reconnects reads back. Compact: a model request names its tools without their schemas
 * and the prompt; a finished leg carries the outcome, not the whole trace.
 */
export type RunEvent =
  | { type: 'run_started'; run_id: string; session_id: string; mode: Mode; request: string; resumed: boolean }
  /**
   * A request's menu: how many tools were declared and how many of the pool were left off, and the
   * declared names when there are at most 64 (the run's trace holds every request's whole menu).
   */
  | { type: 'model_request'; step: number; declared: number; dropped: number; tools?: { name: string; available: boolean }[] }
  | { type: 'assistant'; step: number; text: string; tool_calls: ToolCall[] }
  | { type: 'tool_result'; step: number; record: CallRecord }
  | { type: 'paused'; pause: PauseSummary }
  | { type: 'run_finished'; result: RunOutcome }
  /** The owner answered the run's card (or it expired): written by whoever answered it. */
  | {
      type: 'approval_answered';
      approval_id: string;
      status: 'approved' | 'rejected' | 'expired';
      answered_by: string | null;
      reason: string | null;
    };

/** A journal row: the event, its run, when, and its id (ids grow across the whole store). */
export interface StoredEvent {
  id: number;
  run_id: string;
  at: string;
  event: RunEvent;
}
