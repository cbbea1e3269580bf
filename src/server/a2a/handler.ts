/**
 * Issue 48 (S11–S13): Keel's A2A request handler — the official SDK's DefaultRequestHandler, with what a
 * message means in Keel put in front of it. A message without a task starts a run (its context is
 * the run's session); a message on a task answers what the run waits for, through the facade's one
 * answer path (A3: a card's answer through answerApproval, with the token as who answers, so A9's
 * groups and A7's checks of an edit apply; a question's through answerRun, claimed once). Only then
 * does the SDK take the request, with the run's id as the task's: its executor drives the claimed
 * leg and reports the run's journal. Never answers anything twice: a replayed answer meets the
 * answer path's own refusal and changes nothing; a replayed start message starts nothing.
 */
import { randomUUID } from 'node:crypto';
import type { AgentCard, CancelTaskRequest, Message, SendMessageRequest, StreamResponse, SubscribeToTaskRequest, Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  type RequestContext,
  type ServerCallContext,
  type User,
} from '@a2a-js/sdk/server';
import { isMcpSession, type Keel } from '../../keel/keel.js';
import type { Leg } from '../../loop/legs.js';
import { allowedModel } from '../../models/index.js';
import { ModelError } from '../../models/types.js';
import type { Mode, RunState, Store } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { storableText } from '../../util/text.js';
import { type Role, tokenPrincipal } from '../access/tokens.js';
import type { Hub, LegRunner } from '../workers/runner.js';
import { type FollowDeps, followRun } from './follow.js';
import { delegateChain, KeelTaskStore, taskOf } from './tasks.js';

/** What the handler is given by keel serve. */
export interface A2aDeps extends FollowDeps {
  keel: Keel;
  store: Store;
  hub: Hub;
  runner: Pick<LegRunner, 'submit' | 'isQueued' | 'isActive'>;
  /** The plugin folders runs use (the server's). */
  pluginDirs: string[];
  /** The model runs use unless a message names one. */
  model?: string;
  /** Model specs a message may name besides the default (keel serve --allow-model). */
  allowedModels: string[];
}

/** The caller: a keel serve token (name, role, groups), as the SDK's user. */
export class TokenUser implements User {
  constructor(readonly who: { name: string; role: Role; groups: readonly string[] }) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.who.name;
  }
}

/** Keys of the call context's state: the leg a message claimed, the request's signal, the HTTP status and code of a refusal. */
export const STATE = { plan: 'keel.plan', signal: 'keel.signal', status: 'keel.status', code: 'keel.code' } as const;

/** Keel's own JSON-RPC codes (the implementation-defined range A2A leaves): a missing token, a role or group that may not. */
export const CODES = { unauthenticated: -32040, forbidden: -32043 } as const;

/** A leg a message claimed, driven by the executor once the SDK has taken the request (or by `release`, if it never does). */
interface Plan {
  /** The task: the run the client's message is about. */
  task: { id: string; session_id: string };
  /** D1: the delegates the task's run waits for, outermost first (followed too). */
  chain: string[];
  leg: Leg;
  /** The journal rows the task's client has already: followed from after this one. */
  after: number;
  /** The client's message, as the task's history shows it. */
  message: Message;
  /** A new run (its request is the message), not an answer. */
  fresh: boolean;
  go(): void;
}

const CONTEXT_ID = /^[A-Za-z0-9_.:-]{1,200}$/;
const MODES: readonly Mode[] = ['agent', 'plan', 'goal'];

const textOf = (m: Message) =>
  m.parts
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .filter(Boolean)
    .join('\n')
    .trim();

function dataOf(m: Message): Record<string, unknown> | undefined {
  for (const p of m.parts) {
    const v = p.content?.$case === 'data' ? p.content.value : undefined;
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  }
  return undefined;
}

/** Issue 27: text no store can hold is refused by name, as the HTTP API refuses it. */
function unstorable(value: unknown, where: string): string | undefined {
  if (typeof value === 'string') return storableText(value).replaced ? where : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [k, v] of Object.entries(value)) {
    if (storableText(k).replaced) return where;
    const found = unstorable(v, `${where}.${k}`);
    if (found) return found;
  }
  return undefined;
}

const callerOf = (ctx: ServerCallContext) => {
  const u = ctx.user;
  if (!(u instanceof TokenUser)) throw new UnsupportedOperationError('who is calling is not known');
  return u.who;
};

/** What a waiting run (the task's, or a delegate's it waits for) takes as an answer, in one sentence (the refusal of a message that is not one). */
function waitsFor(task: string, run: RunState): string {
  const p = run.pause;
  if (run.status === 'paused' && p?.kind === 'approval')
    return `task ${task} waits for approval ${p.approval_id}: answer with a data part { "approval": "${p.approval_id}", "decision": "approve" | "reject" }`;
  if (run.status === 'paused' && p?.kind === 'ask_user')
    return p.confirm
      ? `task ${task} asks to confirm ${p.confirm.tools.join(', ')}: answer with a data part { "confirm": true } or { "confirm": false } (a free-text answer is not a decision)`
      : `task ${task} asks a question: answer with its text`;
  return `task ${task} is working: nothing waits for an answer`;
}

/** A KeelError as the A2A error a client reads, with the HTTP status and code the transport sends for it. */
function refusal(err: unknown, ctx: ServerCallContext): unknown {
  if (err instanceof ModelError) return new RequestMalformedError(err.message);
  if (!(err instanceof KeelError)) return err;
  switch (err.code) {
    case 'not_found':
      return new TaskNotFoundError(err.message);
    case 'bad_input':
      return new RequestMalformedError(err.message);
    case 'forbidden':
      ctx.state.set(STATE.status, 403);
      ctx.state.set(STATE.code, CODES.forbidden);
      return new UnsupportedOperationError(err.message);
    case 'unavailable':
      ctx.state.set(STATE.status, 503);
      return err;
    default:
      return new UnsupportedOperationError(`${err.message}; nothing changed`);
  }
}

/** Runs the leg a message claimed and reports its run's journal as the task's events. */
class RunExecutor implements AgentExecutor {
  constructor(
    private readonly d: A2aDeps,
    private readonly tasks: KeelTaskStore,
  ) {}

  async execute(rc: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const plan = rc.context.state.get(STATE.plan) as Plan | undefined;
    const task = await this.tasks.load(rc.taskId, rc.context);
    if (!plan || !task) throw new UnsupportedOperationError(`task ${rc.taskId} has no leg to run here`);
    // The task as it stands now: working, with the client's message in its history (a new run's request is that message).
    const rest = task.history.filter((h) => h.messageId !== plan.message.messageId);
    const history = plan.fresh ? [plan.message, ...rest.slice(1)] : [...rest, plan.message];
    bus.publish(
      AgentEvent.task({
        ...task,
        history,
        status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
      }),
    );
    plan.go();
    const signal = rc.context.state.get(STATE.signal) as AbortSignal | undefined;
    for await (const e of followRun(this.d, plan.task, plan.after, signal, plan.chain)) bus.publish(e);
  }

  /** Unused: the handler cancels a task itself, through Keel's cancel. */
  async cancelTask(taskId: string): Promise<void> {
    throw new TaskNotCancelableError(`task ${taskId}: cancel it with CancelTask`);
  }
}

export class KeelRequestHandler extends DefaultRequestHandler {
  private readonly tasks: KeelTaskStore;
  /** One start per message in this process at a time: a resend meets the first one's record. */
  private readonly starting = new Map<string, Promise<unknown>>();

  constructor(
    card: AgentCard,
    private readonly d: A2aDeps,
  ) {
    const tasks = new KeelTaskStore(d.store);
    // No bus outlives its executor: a task that waits is followed again from the journal, not from memory.
    super(card, tasks, new RunExecutor(d, tasks), undefined, undefined, undefined, undefined, undefined, { keepBusAliveStates: [] });
    this.tasks = tasks;
  }

  override async sendMessage(params: SendMessageRequest, ctx: ServerCallContext): Promise<Message | Task> {
    const ready = await this.prepare(params, ctx);
    try {
      return await super.sendMessage(ready, ctx);
    } finally {
      this.release(ctx);
    }
  }

  override async *sendMessageStream(params: SendMessageRequest, ctx: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const ready = await this.prepare(params, ctx);
    try {
      yield* super.sendMessageStream(ready, ctx);
    } finally {
      this.release(ctx);
    }
  }

  /** A claimed leg the SDK never ran (it refused the request after the claim) still goes on: its answer is recorded. */
  private release(ctx: ServerCallContext): void {
    (ctx.state.get(STATE.plan) as Plan | undefined)?.go();
  }

  /** The message acted on — a run started, or what a run waits for answered — and the request as the SDK then takes it. */
  private async prepare(params: SendMessageRequest, ctx: ServerCallContext): Promise<SendMessageRequest> {
    const m = params.message;
    if (!m?.messageId) throw new RequestMalformedError('message.messageId is required.');
    try {
      // A card's answer sent without its task (only the approval's id) is the answer on the card's task.
      const card = !m.taskId && !textOf(m) ? dataOf(m)?.approval : undefined;
      const taskId = typeof card === 'string' ? await this.rootOf((await this.d.store.getApproval(card))?.run_id) : undefined;
      const plan =
        m.taskId || taskId
          ? await this.answer(taskId ? { ...m, taskId } : m, ctx)
          : await this.start(m, { ...(m.metadata ?? {}), ...(params.metadata ?? {}) }, ctx);
      ctx.state.set(STATE.plan, plan);
      return { ...params, message: { ...m, taskId: plan.task.id, contextId: plan.task.session_id } };
    } catch (err) {
      throw refusal(err, ctx);
    }
  }

  /** D1: the task a run belongs to — its own, or the run that started it, for a delegate's. */
  private async rootOf(runId: string | undefined): Promise<string | undefined> {
    let run = runId ? await this.d.store.loadRun(runId) : undefined;
    for (let depth = 0; run?.parent && depth < 16; depth++) run = (await this.d.store.loadRun(run.parent.run_id)) ?? run;
    return run?.id;
  }

  private plan(leg: Leg, after: number, message: Message, fresh: boolean, task: RunState | Leg = leg, chain: RunState[] = []): Plan {
    let gone = false;
    const ids = 'run_id' in task ? { id: task.run_id, session_id: task.session_id } : { id: task.id, session_id: task.session_id };
    return {
      task: ids,
      chain: chain.map((c) => c.id),
      leg,
      after,
      fresh,
      message: { ...message, taskId: ids.id, contextId: ids.session_id },
      go: () => {
        if (gone) return;
        gone = true;
        try {
          this.d.runner.submit(leg);
        } catch {
          // The server is stopping: the run stays claimed by this process, and its next start carries it on.
        }
        this.d.hub.wake(leg.run_id);
      },
    };
  }

  private audit(actor: string, action: string, subject: string, detail: unknown): Promise<void> {
    return this.d.store.audit({ at: new Date().toISOString(), actor, action, subject, detail: JSON.stringify(detail) });
  }

  /** A message without a task: a new run in the message's context (a Keel session; a new one when none is given). */
  private async start(m: Message, metadata: Record<string, unknown> | undefined, ctx: ServerCallContext): Promise<Plan> {
    const who = callerOf(ctx);
    const { keel, store, stopping } = this.d;
    const text = textOf(m);
    if (!text)
      throw new RequestMalformedError(
        dataOf(m)
          ? 'a data part answers a task: send it with the taskId of the task that waits for it'
          : 'a message that starts a task needs text',
      );
    if (m.contextId && !CONTEXT_ID.test(m.contextId))
      throw new RequestMalformedError('contextId: a context id is 1 to 200 letters, digits and _ . : - (it names a Keel session)');
    const bad = unstorable(text, 'message.parts') ?? unstorable(metadata, 'metadata');
    if (bad) throw new RequestMalformedError(`${bad} holds text no store can hold (a NUL character, or half of a UTF-16 surrogate pair)`);
    const model = typeof metadata?.model === 'string' ? metadata.model : undefined;
    const mode = typeof metadata?.mode === 'string' ? (metadata.mode as Mode) : undefined;
    if (mode !== undefined && !MODES.includes(mode)) throw new RequestMalformedError(`metadata.mode: one of ${MODES.join(', ')}`);
    // The model as POST /v1/runs allows it: one refusal for every model the server does not let a request choose.
    if (model !== undefined && model !== this.d.model && !(await allowedModel(model, this.d.allowedModels)))
      throw new RequestMalformedError('metadata.model: this server does not let a run choose that model (keel serve --allow-model)');
    if (stopping()) {
      ctx.state.set(STATE.status, 503);
      throw new UnsupportedOperationError('the server is stopping: it takes no new runs');
    }
    const key = `a2a:${who.name}:${m.messageId}`;
    const prev = this.starting.get(key) ?? Promise.resolve();
    const work = prev.then(async () => {
      // A resend (a retry, a second client) of a message that started a task starts nothing again.
      const seen = (await store.listAudit(key)).find((a) => a.action === 'a2a_message');
      if (seen) {
        const { run_id } = JSON.parse(seen.detail) as { run_id: string };
        throw new UnsupportedOperationError(
          `message ${m.messageId} started task ${run_id} already: nothing started again (GetTask reads it)`,
        );
      }
      const session = m.contextId || `a2a-${randomUUID()}`;
      const leg = await keel.startRun(text, {
        model: model ?? this.d.model,
        pluginDirs: this.d.pluginDirs,
        mode,
        session,
        createSession: true,
        // PC9: the token is the run's principal for the operator's policy.
        principal: tokenPrincipal(who),
      });
      await this.audit(who.name, 'start_run', leg.run_id, { mode: mode ?? null, session, via: 'a2a' });
      await this.audit(who.name, 'a2a_message', key, { run_id: leg.run_id });
      return this.plan(leg, 0, m, true);
    });
    const kept = work.catch(() => undefined);
    this.starting.set(key, kept);
    void kept.then(() => {
      if (this.starting.get(key) === kept) this.starting.delete(key);
    });
    return work;
  }

  /** A message on a task: the answer to what its run waits for — a card, a confirmation, a question. */
  private async answer(m: Message, ctx: ServerCallContext): Promise<Plan> {
    const who = callerOf(ctx);
    const { keel, store } = this.d;
    const run = await store.loadRun(m.taskId);
    if (!run) throw new TaskNotFoundError(`no task ${m.taskId}`);
    if (m.contextId && m.contextId !== run.session_id)
      throw new RequestMalformedError(`contextId ${m.contextId} is not the context of task ${run.id} (${run.session_id})`);
    if (run.status === 'done' || run.status === 'failed')
      throw new UnsupportedOperationError(`task ${run.id} has ended (${run.reason}): it takes no more messages; nothing changed`);
    if (isMcpSession(run))
      throw new UnsupportedOperationError(
        `task ${run.id} is an MCP session's: its cards are answered in Keel's console or CLI, or by its MCP client`,
      );
    const data = dataOf(m);
    const text = textOf(m);
    const bad = unstorable(text, 'message.parts') ?? unstorable(data, 'message.parts.data');
    if (bad) throw new RequestMalformedError(`${bad} holds text no store can hold (a NUL character, or half of a UTF-16 surrogate pair)`);
    // The client has the journal up to here: the task's events are what the answer sets going.
    const after = await store.latestEventId();
    // D1: the run may wait for a delegate, and the delegate for a person: its card or question is the task's.
    const chain = run.status === 'paused' && run.pause?.kind === 'task' ? await delegateChain(store, run) : [];
    while (chain.length && (chain[chain.length - 1].status === 'done' || chain[chain.length - 1].status === 'failed')) chain.pop();
    const asking = chain.length ? chain[chain.length - 1] : run;
    // The run as read here is the call's working copy of the task: the SDK does not read it again.
    await this.tasks.save(taskOf(run, chain.length ? asking : undefined), ctx);
    if (data && 'approval' in data) {
      const id = data.approval;
      const decision = data.decision;
      if (typeof id !== 'string') throw new RequestMalformedError('approval: the id of the card, as the task gave it');
      if (decision !== 'approve' && decision !== 'reject') throw new RequestMalformedError('decision: "approve" or "reject"');
      if (data.arguments !== undefined && (typeof data.arguments !== 'object' || data.arguments === null || Array.isArray(data.arguments)))
        throw new RequestMalformedError('arguments: a JSON object (a card of several calls: { "<call_id>": {...} })');
      if (data.reason !== undefined && typeof data.reason !== 'string') throw new RequestMalformedError('reason: text');
      const card = await store.getApproval(id);
      if (!card || (card.run_id !== run.id && !chain.some((c) => c.id === card.run_id)))
        throw new RequestMalformedError(`approval ${id} is not a card of task ${run.id}`);
      // A3/A9: the one answer path, as this token — its groups decide a routed card; an edit is checked as everywhere (A7).
      const { leg } = await keel.answerApproval(id, decision, {
        actor: who.name,
        reason: typeof data.reason === 'string' ? data.reason.slice(0, 2000) : null,
        ...(data.arguments !== undefined ? { arguments: data.arguments as Record<string, unknown> } : {}),
        ...(data.consent_writes === true ? { consentWrites: true } : {}),
        who: { name: who.name, role: who.role, groups: who.groups, kind: 'token' },
      });
      if (!leg) throw new UnsupportedOperationError(`approval ${id} is answered; its run is carried on elsewhere`);
      return this.plan(leg, after, m, false, run, chain.slice(0, chain.findIndex((c) => c.id === card.run_id) + 1));
    }
    const p = asking.status === 'paused' ? asking.pause : null;
    if (data && 'confirm' in data) {
      if (typeof data.confirm !== 'boolean') throw new RequestMalformedError('confirm: true or false');
      if (p?.kind !== 'ask_user' || !p.confirm) throw new UnsupportedOperationError(waitsFor(run.id, asking));
      const leg = await keel.answerRun(asking.id, { text: text || (data.confirm ? 'yes' : 'no'), confirm: data.confirm });
      await this.audit(who.name, 'answer_question', asking.id, { confirm: data.confirm, via: 'a2a' });
      return this.plan(leg, after, m, false, run, chain);
    }
    if (!text) throw new RequestMalformedError(`the message holds no answer: ${waitsFor(run.id, asking)}`);
    // R16: a confirmation takes a decision, not words; a card takes its data part.
    if (p?.kind !== 'ask_user' || p.confirm) throw new RequestMalformedError(waitsFor(run.id, asking));
    const leg = await keel.answerRun(asking.id, { text });
    await this.audit(who.name, 'answer_question', asking.id, { confirm: null, via: 'a2a' });
    return this.plan(leg, after, m, false, run, chain);
  }

  /** CancelTask is Keel's cancel (audited, its cards closed in the same step, A3); a run being worked is not cancelled under it. */
  override async cancelTask(params: CancelTaskRequest, ctx: ServerCallContext): Promise<Task> {
    const who = callerOf(ctx);
    const { keel, store, runner, hub } = this.d;
    const run = await store.loadRun(params.id);
    if (!run) throw new TaskNotFoundError(`no task ${params.id}`);
    if (run.status === 'failed' && run.reason === 'cancelled') return this.tasks.taskOf(run);
    if (run.status === 'done' || run.status === 'failed')
      throw new TaskNotCancelableError(`task ${run.id} has ended (${run.reason}) already`);
    if (isMcpSession(run)) throw new TaskNotCancelableError(`task ${run.id} is an MCP session's: its MCP server holds it`);
    if (runner.isQueued(run.id) || runner.isActive(run.id))
      throw new TaskNotCancelableError(`task ${run.id} is being worked by this server: cancel it once it waits for input`);
    const reason = typeof params.metadata?.reason === 'string' ? params.metadata.reason.slice(0, 2000) : null;
    try {
      await keel.cancel(run.id, { actor: who.name, reason });
    } catch (err) {
      if (err instanceof KeelError && (err.code === 'conflict' || err.code === 'not_paused')) throw new TaskNotCancelableError(err.message);
      throw refusal(err, ctx);
    }
    hub.wake(run.id);
    const task = await this.tasks.load(run.id);
    if (!task) throw new TaskNotFoundError(`no task ${params.id}`);
    return task;
  }

  /** SubscribeToTask: the task as it stands, then its journal as it grows, until it next waits or ends. */
  override async *resubscribe(params: SubscribeToTaskRequest, ctx: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const after = await this.d.store.latestEventId();
    const run = await this.d.store.loadRun(params.id);
    if (!run) throw new TaskNotFoundError(`no task ${params.id}`);
    const chain = run.status === 'paused' && run.pause?.kind === 'task' ? await delegateChain(this.d.store, run) : [];
    while (chain.length && (chain[chain.length - 1].status === 'done' || chain[chain.length - 1].status === 'failed')) chain.pop();
    const task = taskOf(run, chain[chain.length - 1]);
    const state = task.status?.state;
    if (state === TaskState.TASK_STATE_COMPLETED || state === TaskState.TASK_STATE_FAILED || state === TaskState.TASK_STATE_CANCELED)
      throw new UnsupportedOperationError(`task ${run.id} has ended (${run.reason}): there is nothing to subscribe to; GetTask reads it`);
    yield { payload: { $case: 'task', value: task } };
    const signal = ctx.state.get(STATE.signal) as AbortSignal | undefined;
    const ids = chain.map((c) => c.id);
    for await (const e of followRun(this.d, run, after, signal, ids)) {
      if (e.kind === 'statusUpdate') yield { payload: { $case: 'statusUpdate', value: e.data } };
      else if (e.kind === 'artifactUpdate') yield { payload: { $case: 'artifactUpdate', value: e.data } };
    }
  }
}
