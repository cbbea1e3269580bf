/**
 * Where each leg of a run starts: a new request, an answer to its question, or the owner's answer to
 * its card. Each takes the run through the run module (start or claim) at once — so a second answer
 * is refused at once — and drives it with the one engine when asked (now, or when a server's queue
 * gets to it); each ends with `run_finished`, and every event is kept in the run's journal (when it has a store).
 */
import type { Answer, ApprovalRecord, LoopEvent, Mode, RunResult, TaskParent, UntrustedSource } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { storableText } from '../util/text.js';
import { type EngineDeps, RunLeg } from './engine.js';
import { journaled } from './journal.js';
import { type NewRun, RunWriter } from './run.js';
import { unstorableNote } from './storable.js';
import { ended } from './tasks.js';

export interface StartInput {
  message: string;
  /** Default agent. */
  mode?: Mode;
  pluginDirs?: string[];
  /** Continue a session: its id, transcript, contract and scripted position. */
  session?: NewRun['session'];
  /** Notes for the run's trace from before it started (skills skipped, R25). */
  notes?: readonly string[];
  /** PC9: who starts the run, as the operator's policy sees it. */
  principal?: NewRun['principal'];
  /** A delegate's run: its parent, the parent's session (C5: it works in it), and what the parent had read (U2). */
  delegate?: { parent: TaskParent; session_id: string; untrusted: readonly UntrustedSource[] };
  /** The run's id, when it is made from what started it (a delegate's). */
  id?: string;
  /** D5: a delegate's run starts only within this limit, checked atomically by the store. */
  limit?: NewRun['limit'];
  /** R18: the names of the tools declared in code in the run's pool (stored: only a process that has them carries it on). */
  appTools?: readonly string[];
}

/**
 * What a leg is, for a job queue (#15): a process that does not drive a leg hands its run to the
 * queue with this, and a worker takes the leg up again from it (`queuedLeg`).
 */
export type LegJob =
  | { kind: 'start' }
  | { kind: 'answer'; seq: number; answer: Answer }
  | { kind: 'approval'; approval_id: string }
  | { kind: 'continue' };

/** A leg whose run is started or claimed: `drive()` works it (once) until it ends or pauses. */
export interface Leg {
  readonly run_id: string;
  readonly session_id: string;
  /** What this leg is, should it be handed to a queue instead of driven here. */
  readonly job: LegJob;
  /** A delegate's run: the run that started it (told when this run ends, so it goes on). */
  readonly parent_run?: string;
  drive(): AsyncGenerator<LoopEvent, RunResult>;
}

function leg(run: RunWriter, work: (leg: RunLeg) => AsyncGenerator<LoopEvent, RunResult>, deps: EngineDeps, job: LegJob): Leg {
  let driven = false;
  // R18: claimed by this process: not taken over by it until the leg is over (RunLeg lets go).
  run.legBegins();
  return {
    run_id: run.state.id,
    session_id: run.state.session_id,
    job,
    ...(run.state.parent ? { parent_run: run.state.parent.run_id } : {}),
    drive() {
      if (driven) throw new KeelError('conflict', `run ${run.state.id}: this leg was already driven`);
      driven = true;
      // The engine's clock (its time limit) starts when the leg is driven, not while it waited.
      const events = work(new RunLeg(deps, run));
      // No store, no journal: the events go straight out (a layer that kept nothing cost every event a few promise turns).
      return deps.store ? journaled(run, events) : events;
    },
  };
}

/** A new run, stored at once. */
export async function startLeg(deps: EngineDeps, input: StartInput): Promise<Leg> {
  // Issue 27: the user's request is made storable where it enters, and the run notes it.
  const request = storableText(input.message);
  const run = await RunWriter.start(
    {
      request: request.text,
      mode: input.mode ?? 'agent',
      model: deps.model.spec,
      plugin_dirs: input.pluginDirs ?? [],
      session: input.session,
      notes: request.replaced ? [...(input.notes ?? []), unstorableNote('request', request.replaced)] : input.notes,
      ...(input.principal ? { principal: input.principal } : {}),
      ...(input.id ? { id: input.id } : {}),
      ...(input.limit ? { limit: input.limit } : {}),
      ...(input.appTools?.length ? { app_tools: input.appTools } : {}),
      ...(input.delegate
        ? { parent: input.delegate.parent, session_id: input.delegate.session_id, inherited_untrusted: input.delegate.untrusted }
        : {}),
    },
    deps.store,
    deps.now,
  );
  return leg(run, (l) => l.start(), deps, { kind: 'start' });
}

/**
 * The leg `open` makes, driven when the consumer first asks for an event, its events going out as the
 * leg's own generator yields them: no generator of the caller's stands between (an async generator
 * delegating with `yield*` costs each event promise turns of its own). A `return()` or `throw()`
 * before the first `next()` opens nothing; once `open` failed, the stream is over.
 */
function whenAsked(open: () => Promise<Leg>): AsyncGenerator<LoopEvent, RunResult> {
  let inner: AsyncGenerator<LoopEvent, RunResult> | undefined;
  let opening: Promise<AsyncGenerator<LoopEvent, RunResult>> | undefined;
  const opened = () =>
    (opening ??= open().then(
      (l) => (inner = l.drive()),
      (err: unknown) => {
        inner = over();
        throw err;
      },
    ));
  /** Closed before it was opened: over, as a finished generator is, without opening anything. */
  const closed = () => {
    inner = over();
    return inner;
  };
  const gen: AsyncGenerator<LoopEvent, RunResult> = {
    next: (...a) => (inner ? inner.next(...a) : opened().then((g) => g.next(...a))),
    return: (v) => (inner ?? (opening ? undefined : closed()))?.return(v) ?? opened().then((g) => g.return(v)),
    throw: (e) => (inner ?? (opening ? undefined : closed()))?.throw(e) ?? opened().then((g) => g.throw(e)),
    [Symbol.asyncIterator]: () => gen,
  };
  return gen;
}

/** A stream that is over: its leg could not be opened, or it was closed first. */
function over(): AsyncGenerator<LoopEvent, RunResult> {
  return (async function* () {})() as unknown as AsyncGenerator<LoopEvent, RunResult>;
}

/** Streaming API: every event as it happens, ending with the run's result. */
export function streamRun(deps: EngineDeps, input: StartInput): AsyncGenerator<LoopEvent, RunResult> {
  return whenAsked(() => startLeg(deps, input));
}

/** Blocking API: the same events, collected. */
export async function collect(gen: AsyncGenerator<LoopEvent, RunResult>, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
  while (true) {
    const n = await gen.next();
    if (n.done) return n.value;
    onEvent?.(n.value);
  }
}

function storeOf(deps: EngineDeps): NonNullable<EngineDeps['store']> {
  if (!deps.store) throw new KeelError('bad_input', 'this run has no store: nothing to resume');
  return deps.store;
}

/** The answer becomes the ask_user call's result (same call id); the run continues. */
export async function answerLeg(deps: EngineDeps, runId: string, given: Answer): Promise<Leg> {
  // Issue 27: the answer is made storable before it is kept anywhere (the run, the journal, a queued leg).
  const text = storableText(given.text);
  const answer = text.replaced ? { ...given, text: text.text } : given;
  const { run, pause } = await RunWriter.claimForAnswer(storeOf(deps), runId, answer, deps.now);
  if (text.replaced) run.note(unstorableNote('answer', text.replaced));
  return leg(run, (l) => l.continueAfterAnswer(pause, answer), deps, { kind: 'answer', seq: pause.seq, answer });
}

export function streamResume(deps: EngineDeps, runId: string, answer: Answer): AsyncGenerator<LoopEvent, RunResult> {
  return whenAsked(() => answerLeg(deps, runId, answer));
}

/**
 * Continues a run whose approval has been answered (or expired), or takes over one a dead
 * process left while running its approved calls.
 */
export async function approvalLeg(deps: EngineDeps, approval: ApprovalRecord): Promise<Leg> {
  const { run, pause } = await RunWriter.claimForApproval(storeOf(deps), approval, deps.now);
  return leg(run, (l) => l.continueAfterApproval(pause, approval), deps, { kind: 'approval', approval_id: approval.id });
}

export function streamApprovalContinuation(deps: EngineDeps, approval: ApprovalRecord): AsyncGenerator<LoopEvent, RunResult> {
  return whenAsked(() => approvalLeg(deps, approval));
}

/**
 * Carries on a run that waits for no one: one interrupted between steps (Ctrl-C, SIGTERM), or one
 * whose process died mid-leg (taken over; its calls in flight are answered, never re-run). A run
 * whose process died after its question was answered asks the question again.
 */
export async function continueLeg(deps: EngineDeps, runId: string): Promise<Leg> {
  const store = storeOf(deps);
  // A run waiting on its card is continued by the card's answer: refused before anything is claimed.
  const waiting = (await store.loadRun(runId))?.pause;
  if (waiting?.kind === 'approval') {
    throw new KeelError(
      'not_paused',
      `run ${runId} waits for approval ${waiting.approval_id}: answer the approval, and the run goes on`,
      `keel approvals approve|reject ${waiting.approval_id}`,
    );
  }
  // D2: a run waiting for its delegate goes on once the delegate's run has ended: refused before the claim until then.
  const child = waiting?.kind === 'task' ? await store.loadRun(waiting.child_run) : undefined;
  if (waiting?.kind === 'task' && !(child && ended(child))) {
    throw new KeelError(
      'not_paused',
      `run ${runId} waits for its delegate's task ${waiting.task_id} (run ${waiting.child_run}, ${child?.status ?? 'not in the store'}): it goes on when that run ends`,
      `keel runs show ${waiting.child_run}`,
    );
  }
  const run = await RunWriter.claimStalled(store, runId, deps.now);
  const pause = run.state.pause;
  const job: LegJob = { kind: 'continue' };
  if (pause?.kind === 'task' && child) return leg(run, (l) => l.continueAfterTask(pause, child), deps, job);
  if (run.state.status === 'paused' && pause?.kind === 'interrupted') return leg(run, (l) => l.continueAfterInterruption(), deps, job);
  if (pause?.kind === 'ask_user') return leg(run, (l) => l.reopenQuestion(), deps, job);
  return leg(run, (l) => l.recover(), deps, job);
}

/**
 * A leg a worker takes from the queue (#15): the run was handed over (no owner) by the process that
 * started or claimed it, with what to do. The run is taken (atomically: one worker gets it), then
 * the leg goes on exactly as it would have there. A start or an answer whose run is no longer
 * waiting for it is refused (another process carried it on).
 */
export async function queuedLeg(deps: EngineDeps, runId: string, job: Exclude<LegJob, { kind: 'approval' | 'continue' }>): Promise<Leg> {
  const store = storeOf(deps);
  const s = await store.loadRun(runId);
  if (!s) throw new KeelError('not_found', `no run ${runId} in the store`);
  if (s.status !== 'running' || s.owner !== null) {
    throw new KeelError('conflict', `run ${runId} is not waiting in the queue (status ${s.status}, held by ${s.owner ?? 'no one'})`);
  }
  if (job.kind === 'answer') {
    const pause = s.pause;
    if (pause?.kind !== 'ask_user' || pause.seq !== job.seq)
      throw new KeelError('conflict', `run ${runId} no longer waits at question ${job.seq}`);
    const run = await RunWriter.claimStalled(store, runId, deps.now);
    return leg(run, (l) => l.continueAfterAnswer(pause, job.answer), deps, job);
  }
  if (s.pause || s.steps.length || s.model_calls) throw new KeelError('conflict', `run ${runId} has started already`);
  const run = await RunWriter.claimStalled(store, runId, deps.now);
  return leg(run, (l) => l.start(), deps, job);
}

export function streamContinue(deps: EngineDeps, runId: string): AsyncGenerator<LoopEvent, RunResult> {
  return whenAsked(() => continueLeg(deps, runId));
}

/**
 * `keel runs cancel`: ends a paused or stalled run for good; a run a live process drives is refused,
 * as is one whose card was answered first (issue 40). A paused run's pending cards are closed
 * (rejected, by `close.actor`) in the same transaction that takes the run: their ids are returned.
 */
export async function cancelLeg(
  deps: EngineDeps,
  runId: string,
  why: string,
  close: { actor: string; reason: string; at: string },
): Promise<{ leg: Leg; closed: string[] }> {
  const { run, closed } = await RunWriter.claimToCancel(storeOf(deps), runId, close, deps.now);
  return { leg: leg(run, (l) => l.cancel(why), deps, { kind: 'continue' }), closed };
}
