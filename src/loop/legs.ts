/**
 * Where each leg of a run starts: a new request, an answer to its question, or the owner's answer to
 * its card. Each takes the run through the run module (start or claim) and drives it with the one
 * engine; each ends with `run_finished`.
 */
import type { Answer, ApprovalRecord, LoopEvent, Mode, RunResult } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { type EngineDeps, RunLeg } from './engine.js';
import { type NewRun, RunWriter } from './run.js';

export interface StartInput {
  message: string;
  /** Default agent. */
  mode?: Mode;
  pluginDirs?: string[];
  /** Continue a session: its id, transcript, contract and scripted position. */
  session?: NewRun['session'];
  /** Notes for the run's trace from before it started (skills skipped, R25). */
  notes?: readonly string[];
}

/** Streaming API: every event as it happens, ending with the run's result (R14). */
export async function* streamRun(deps: EngineDeps, input: StartInput): AsyncGenerator<LoopEvent, RunResult> {
  const run = await RunWriter.start(
    {
      request: input.message,
      mode: input.mode ?? 'agent',
      model: deps.model.spec,
      plugin_dirs: input.pluginDirs ?? [],
      session: input.session,
      notes: input.notes,
    },
    deps.store,
    deps.now,
  );
  return yield* new RunLeg(deps, run).start();
}

/** Blocking API: the same events, collected (R14). */
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

/** R17/R18: the answer becomes the ask_user call's result (same call id); the run continues. */
export async function* streamResume(deps: EngineDeps, runId: string, answer: Answer): AsyncGenerator<LoopEvent, RunResult> {
  const { run, pause } = await RunWriter.claimForAnswer(storeOf(deps), runId, answer, deps.now);
  return yield* new RunLeg(deps, run).continueAfterAnswer(pause, answer);
}

/**
 * A2: continues a run whose approval has been answered (or expired), or takes over one a dead
 * process left while running its approved calls.
 */
export async function* streamApprovalContinuation(deps: EngineDeps, approval: ApprovalRecord): AsyncGenerator<LoopEvent, RunResult> {
  const { run, pause } = await RunWriter.claimForApproval(storeOf(deps), approval, deps.now);
  return yield* new RunLeg(deps, run).continueAfterApproval(pause, approval);
}

/**
 * Carries on a run that waits for no one: one interrupted between steps (Ctrl-C, SIGTERM), or one
 * whose process died mid-leg (taken over; its calls in flight are answered, never re-run). A run
 * whose process died after its question was answered asks the question again.
 */
export async function* streamContinue(deps: EngineDeps, runId: string): AsyncGenerator<LoopEvent, RunResult> {
  const store = storeOf(deps);
  // A run waiting on its card is continued by the card's answer: refused before anything is claimed.
  const waiting = (await store.loadRun(runId))?.pause;
  if (waiting?.kind === 'approval') {
    throw new KeelError(
      'not_paused',
      `run ${runId} waits for approval ${waiting.approval_id}: keel approvals approve|reject ${waiting.approval_id}`,
    );
  }
  const run = await RunWriter.claimStalled(store, runId, deps.now);
  const leg = new RunLeg(deps, run);
  const pause = run.state.pause;
  if (run.state.status === 'paused' && pause?.kind === 'interrupted') return yield* leg.continueAfterInterruption();
  if (pause?.kind === 'ask_user') return yield* leg.reopenQuestion();
  return yield* leg.recover();
}

/** `keel runs cancel`: ends a paused or stalled run for good; a run a live process drives is refused. */
export async function* streamCancel(deps: EngineDeps, runId: string, why: string): AsyncGenerator<LoopEvent, RunResult> {
  const run = await RunWriter.claimStalled(storeOf(deps), runId, deps.now);
  return yield* new RunLeg(deps, run).cancel(why);
}
