/**
 * The loop engine: `RunLeg`, one leg of a run, and the one loop body (R14). Its parts, by leg:
 * leg-state.ts (the leg's state and shared plain parts), drive.ts (the step loop and the model call),
 * calls.ts (a reply's calls through the gate), continuations.ts (the legs after an answer, approval,
 * task, interruption or takeover), ends.ts (pauses and ends). Never a second loop body, and never a
 * generator of its own between a leg and its events: each method hands back its part's generator.
 */
import type { Answer, ApprovalRecord, LoopEvent, RunResult } from '../types/index.js';
import * as continued from './continuations.js';
import { DEFAULT_LIMITS, type EngineDeps, type Limits } from './deps.js';
import { drive } from './drive.js';
import { LegState } from './leg-state.js';
import type { ApprovalPause, QuestionPause, RunView, RunWriter, TaskPauseOf } from './run.js';

export { DEFAULT_LIMITS, type EngineDeps, type Limits };

/**
 * One leg of a run: from its start, an answer or an approval to its next end or pause. The only
 * loop body (R14): the streaming and the blocking API both drive it, and every leg ends with
 * `run_finished`. It changes the run only through its RunWriter.
 */
export class RunLeg {
  private readonly leg: LegState;

  constructor(deps: EngineDeps, run: RunWriter) {
    this.leg = new LegState(deps, run);
  }

  get state(): RunView {
    return this.leg.run.state;
  }

  /** Ends the run at its next step boundary (a delegate's task_stop); the model call in flight is aborted. */
  stop(why: string): void {
    this.leg.stop(why);
  }

  /**
   * Stops the leg at its next safe point — the model call in flight is aborted, a tool in flight
   * finishes — and leaves the run paused, to be continued with `keel resume RUN`. Only a run that
   * can pause (a store) is interrupted; one that cannot is halted.
   */
  interrupt(why: string): void {
    this.leg.interrupt(why);
  }

  /**
   * A new run: from the user's message to its first end or pause. The loop itself, with the leg's
   * span and first event (`traced` written into drive): every event of a new run passes no generator
   * of start's own on its way out.
   */
  start(): AsyncGenerator<LoopEvent, RunResult> {
    return drive(this.leg, true);
  }

  /** R17: the answer becomes the ask_user call's result and the run goes on (see continuations.ts). */
  continueAfterAnswer(pause: QuestionPause, answer: Answer): AsyncGenerator<LoopEvent, RunResult> {
    return continued.continueAfterAnswer(this.leg, pause, answer);
  }

  /** A2: after the owner answered the card: exactly the pinned calls run, or none (see continuations.ts). */
  continueAfterApproval(pause: ApprovalPause, approval: ApprovalRecord): AsyncGenerator<LoopEvent, RunResult> {
    return continued.continueAfterApproval(this.leg, pause, approval);
  }

  /** D2: the delegate's run this run waited for has ended: its report is the task_wait call's result. */
  continueAfterTask(pause: TaskPauseOf, child: RunView): AsyncGenerator<LoopEvent, RunResult> {
    return continued.continueAfterTask(this.leg, pause, child);
  }

  /** A run interrupted between steps goes on from where it stopped. */
  continueAfterInterruption(): AsyncGenerator<LoopEvent, RunResult> {
    return continued.continueAfterInterruption(this.leg);
  }

  /** A run whose process died mid-leg, taken over: its calls in flight are answered, none run again. */
  recover(): AsyncGenerator<LoopEvent, RunResult> {
    return continued.recover(this.leg);
  }

  /** The answer to the run's question died with its process: the question is open again. */
  reopenQuestion(): AsyncGenerator<LoopEvent, RunResult> {
    return continued.reopenQuestion(this.leg);
  }

  /** Ends an unfinished run for good (`keel runs cancel`), answering any call left without a result. */
  cancel(why: string): AsyncGenerator<LoopEvent, RunResult> {
    return continued.cancel(this.leg, why);
  }
}
