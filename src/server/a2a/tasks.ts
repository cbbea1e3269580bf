/**
 * Issue 48 (S11, S12): a run as an A2A task, and the SDK's TaskStore backed by Keel's own store. The task IS
 * the run: its id is the run's id, its context the run's session, its state the run's status and
 * pause, its result the run's answer. Nothing is stored twice: `save` keeps nothing (what the SDK
 * would save — the messages it appends, its view of the status — is read back from the run), so a
 * task lives exactly as long as its run and says what the run says after any restart. A pause's
 * message is the card in the one card renderer's words (renderCardText) beside a data part with the
 * card's own content; never a second rendering, never words a model could put there instead.
 */
import type { Artifact, ListTasksRequest, ListTasksResponse, Message, Part, Task, TaskStatus } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { renderCardText, renderConfirmation } from '../../approvals/card.js';
import type { PauseSummary, RunState, RunStatus, Store } from '../../types/index.js';

/** A text part, as the SDK's types hold one. */
export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined };
}

/** A data part: structured content a client acts on. */
export function dataPart(value: Record<string, unknown>): Part {
  return { content: { $case: 'data', value }, mediaType: 'application/json', filename: '', metadata: undefined };
}

/** A message from Keel (the agent) about a task. */
export function agentMessage(run: Pick<RunState, 'id' | 'session_id'>, messageId: string, parts: Part[]): Message {
  return {
    messageId,
    contextId: run.session_id,
    taskId: run.id,
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The user's words in a task's history. */
function userMessage(run: Pick<RunState, 'id' | 'session_id'>, messageId: string, text: string): Message {
  return { ...agentMessage(run, messageId, [textPart(text)]), role: Role.ROLE_USER };
}

/**
 * A card's content as a client acts on it: the approval's id, each call with its tool, its exact
 * arguments and its tool's own words (`describe`), what the run has read from outside the user (U6),
 * and everything else the card carries — whatever fields a card or its items gain are passed through.
 */
export function cardData(p: Extract<PauseSummary, { kind: 'approval' }>): Record<string, unknown> {
  const { items: shown, ...card } = p.card;
  return {
    approval: p.approval_id,
    ...card,
    items: p.items.map(({ card: describe, ...item }, n) => ({ ...shown[n], ...item, describe })),
    untrusted: p.card.untrusted ?? [],
  };
}

/**
 * What a waiting task asks, in words and as data: a card, a confirmation of held writes, or a
 * question. `from` is the run that asks when it is not the task's own: a delegate of it (D1), whose
 * id the data part names (`run_id`).
 */
export function pauseMessage(run: Pick<RunState, 'id' | 'session_id'>, p: PauseSummary, from = run.id): Message | undefined {
  const id = `${from}-p${p.seq}`;
  const by = from === run.id ? {} : { run_id: from };
  if (p.kind === 'approval')
    return agentMessage(run, id, [textPart(renderCardText(p.card, p.approval_id)), dataPart({ ...cardData(p), ...by })]);
  if (p.kind !== 'ask_user') return undefined;
  if (p.confirm)
    return agentMessage(run, id, [
      textPart([p.question, ...renderConfirmation(p.confirm).map((l) => l.trim())].join('\n')),
      dataPart({ confirm: { ...p.confirm, untrusted: p.confirm.untrusted ?? [] }, question: p.question, ...by }),
    ]);
  return agentMessage(run, id, [textPart(p.question), dataPart({ question: p.question, ...by })]);
}

/** A pause that waits for a person (a card, a question, a confirmation). */
export const asksPerson = (p: PauseSummary | null | undefined): boolean => p?.kind === 'approval' || p?.kind === 'ask_user';

/**
 * D1: the delegates a run waits for, down to the one that waits for a person (or still works):
 * a task's pause may be its delegate's card or question. Empty when the run waits for no delegate.
 */
export async function delegateChain(store: Store, run: RunState): Promise<RunState[]> {
  const chain: RunState[] = [];
  let at = run;
  while (at.status === 'paused' && at.pause?.kind === 'task' && chain.length < 16) {
    const child = await store.loadRun(at.pause.child_run);
    if (!child) break;
    chain.push(child);
    at = child;
  }
  return chain;
}

/** A reply of the run that calls tools, as a working task's status: the model's words, and which tools it calls (not with what). */
export function progressMessage(
  run: Pick<RunState, 'id' | 'session_id'>,
  step: number,
  text: string,
  calls: readonly { id: string; name: string }[],
): Message {
  const parts = text.trim() ? [textPart(text)] : [];
  parts.push(dataPart({ calls: calls.map((c) => ({ tool: c.name, call_id: c.id })) }));
  return agentMessage(run, `${run.id}-r${step}`, parts);
}

/** How a run that ended says so: Keel's answer, or why it failed, with the reason as data. */
export function endMessage(
  run: Pick<RunState, 'id' | 'session_id'>,
  status: RunStatus,
  reason: string | null,
  answer: string | null,
): Message {
  const words = answer ?? `The run ${status === 'failed' ? 'failed' : 'ended'}${reason ? ` (${reason})` : ''}.`;
  return agentMessage(run, `${run.id}-end`, [textPart(words), dataPart({ status, reason })]);
}

/** The task state of a run's status: a waiting run is input-required; a cancelled one canceled. */
export function stateOf(status: RunStatus, reason: string | null, pause: PauseSummary | null | undefined): TaskState {
  if (status === 'done') return TaskState.TASK_STATE_COMPLETED;
  if (status === 'failed') return reason === 'cancelled' ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_FAILED;
  if (status === 'paused' && asksPerson(pause)) return TaskState.TASK_STATE_INPUT_REQUIRED;
  // Running, interrupted (carried on at the next start) or waiting for a delegate: Keel is working on it.
  return TaskState.TASK_STATE_WORKING;
}

/** The run's answer as the task's artifact. */
export function answerArtifact(answer: string): Artifact {
  return {
    artifactId: 'answer',
    name: 'answer',
    description: "Keel's answer",
    parts: [textPart(answer)],
    metadata: undefined,
    extensions: [],
  };
}

/** The status a run is in now, with its message (the card, question, answer or reason); `asking` is the delegate that waits for a person, if one does. */
export function statusOf(run: RunState, asking?: RunState): TaskStatus {
  if (asking?.pause && asksPerson(asking.pause) && run.status === 'paused')
    return {
      state: TaskState.TASK_STATE_INPUT_REQUIRED,
      message: pauseMessage(run, asking.pause, asking.id),
      timestamp: asking.updated_at,
    };
  const state = stateOf(run.status, run.reason, run.pause);
  const message =
    state === TaskState.TASK_STATE_INPUT_REQUIRED && run.pause
      ? pauseMessage(run, run.pause)
      : run.status === 'failed'
        ? endMessage(run, run.status, run.reason, run.answer)
        : undefined;
  return { state, message, timestamp: run.updated_at };
}

/**
 * The run as a task. Its history: the request, each question the run asked with the answer it got,
 * then what it waits for (its own pause, or `asking`'s: the delegate that waits for a person) or why it failed.
 */
export function taskOf(run: RunState, asking?: RunState): Task {
  const status = statusOf(run, asking);
  const history: Message[] = [userMessage(run, `${run.id}-u`, run.request)];
  for (const s of run.steps) {
    if (s.tool !== 'ask_user') continue;
    const q = typeof s.args?.question === 'string' ? s.args.question : '';
    history.push(agentMessage(run, `${run.id}-q-${s.call_id}`, [textPart(q)]), userMessage(run, `${run.id}-a-${s.call_id}`, s.result));
  }
  if (status.message) history.push(status.message);
  return {
    id: run.id,
    contextId: run.session_id,
    status,
    artifacts: run.status === 'done' && run.answer !== null ? [answerArtifact(run.answer)] : [],
    history,
    metadata: { keel: { run_id: run.id, status: run.status, reason: run.reason, mode: run.mode } },
  };
}

/** The one Keel status a task state comes from, when there is one ('any' for working: running or paused between legs; 'none': no run is ever in it). */
function statusFor(state: TaskState): RunStatus | 'any' | 'none' {
  switch (state) {
    case TaskState.TASK_STATE_COMPLETED:
      return 'done';
    case TaskState.TASK_STATE_FAILED:
    case TaskState.TASK_STATE_CANCELED:
      return 'failed';
    case TaskState.TASK_STATE_INPUT_REQUIRED:
      return 'paused';
    case TaskState.TASK_STATE_WORKING:
      return 'any';
    default:
      return 'none';
  }
}

const cursorOf = (r: { created_at: string; id: string }) => Buffer.from(JSON.stringify([r.created_at, r.id])).toString('base64url');
function cursorFrom(token: string): { created_at: string; id: string } | undefined {
  try {
    const [created_at, id] = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (typeof created_at === 'string' && typeof id === 'string') return { created_at, id };
  } catch {
    // not one of ours: undefined
  }
  return undefined;
}

/** Where a call keeps the SDK's working copy of the tasks it touched (its context's state). */
const WORKING = 'keel.tasks';

/**
 * The SDK's TaskStore over Keel's store. `load` reads the run. `save` writes nothing to Keel: the
 * run is the task already. What the SDK saves in the middle of one call — the status it applies
 * from the run's own journal events, the client's message in the history — is that call's working
 * copy, kept in the call's context and read back by the same call only (so one answer does not read
 * the whole run again at every event); the next call, and every other reader, reads the run. Every
 * reader of a token sees every run (A9: roles, as the HTTP API shows them); a delegate's run is
 * part of the task that started it, not a task of its own in a listing.
 */
export class KeelTaskStore implements TaskStore {
  constructor(private readonly store: Store) {}

  private working(context: ServerCallContext | undefined): Map<string, Task> | undefined {
    if (!context) return undefined;
    let m = context.state.get(WORKING) as Map<string, Task> | undefined;
    if (!m) context.state.set(WORKING, (m = new Map()));
    return m;
  }

  async load(taskId: string, context?: ServerCallContext): Promise<Task | undefined> {
    const copy = this.working(context)?.get(taskId);
    if (copy) return structuredClone(copy);
    const run = await this.store.loadRun(taskId);
    return run ? this.taskOf(run) : undefined;
  }

  /** The run as a task, a delegate's card or question shown as the task's own when the run waits for it. */
  async taskOf(run: RunState): Promise<Task> {
    return taskOf(run, run.pause?.kind === 'task' ? (await delegateChain(this.store, run)).pop() : undefined);
  }

  /** The run is the task: nothing is written to Keel; the SDK's working copy lasts as long as its call. */
  async save(task: Task, context?: ServerCallContext): Promise<void> {
    this.working(context)?.set(task.id, structuredClone(task));
  }

  async list(params: ListTasksRequest, _context?: ServerCallContext): Promise<ListTasksResponse> {
    const pageSize = params.pageSize ?? 50;
    // Unspecified (0): no filter.
    const want = params.status ? params.status : undefined;
    const from = want === undefined ? 'any' : statusFor(want);
    const tasks: Task[] = [];
    if (from === 'none') return { tasks, nextPageToken: '', pageSize, totalSize: 0 };
    let before = params.pageToken ? cursorFrom(params.pageToken) : undefined;
    let more = true;
    // Newest first, a page of runs at a time, until the page of tasks is full (filters skip rows).
    while (more && tasks.length < pageSize) {
      const rows = await this.store.listRuns({
        limit: pageSize,
        before,
        ...(from !== 'any' ? { status: from } : {}),
        ...(params.contextId ? { session_id: params.contextId } : {}),
      });
      more = rows.length === pageSize;
      for (const r of rows) {
        before = { created_at: r.created_at, id: r.id };
        if (r.parent_run || (params.statusTimestampAfter && r.updated_at < params.statusTimestampAfter)) continue;
        const run = await this.store.loadRun(r.id);
        if (!run) continue;
        const task = await this.taskOf(run);
        if (want !== undefined && task.status?.state !== want) continue;
        tasks.push(task);
        if (tasks.length === pageSize) {
          more ||= r !== rows[rows.length - 1];
          break;
        }
      }
    }
    return { tasks, nextPageToken: more && before ? cursorOf(before) : '', pageSize, totalSize: tasks.length };
  }
}
