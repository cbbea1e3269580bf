/**
 * How a leg stops: it pauses (for an answer, an approval, a delegate's task, or an interruption) or
 * the run ends — each through one save that journals the events saying so, shown only once stored.
 * Never shows an event before the save that keeps it (issue 29), and never leaves the leg's timer
 * or interruption listener behind.
 */
import type { ApprovalRecord, EndReason, LoopEvent, RunResult } from '../types/index.js';
import type { LegState } from './leg-state.js';
import { interruption, toResult } from './result.js';
import type { RunView, RunWriter } from './run.js';
import { SAY } from './sentences.js';

/** How a leg ends: what `end` takes. */
export type Ending = [status: 'done' | 'failed', reason: EndReason, why?: string, answer?: string];

/** Saves the run and shows the events that save journaled (issue 29: never before they are stored). */
export async function* saved(leg: LegState): AsyncGenerator<LoopEvent, void> {
  for (const e of await leg.run.save()) yield e;
}

export async function* pauseInterrupted(leg: LegState, step: number): AsyncGenerator<LoopEvent, RunResult> {
  const why = leg.interrupted ?? 'interrupted';
  leg.run.note(`interrupted: ${why}`);
  return yield* pause(leg, { kind: 'interrupted', seq: leg.run.nextPauseSeq(), step, why });
}

export async function* pause(
  leg: LegState,
  pause: Parameters<RunWriter['pause']>[0],
  card?: ApprovalRecord,
): AsyncGenerator<LoopEvent, RunResult> {
  leg.release();
  const reason =
    pause.kind === 'approval'
      ? 'awaiting_approval'
      : pause.kind === 'interrupted'
        ? 'interrupted'
        : pause.kind === 'task'
          ? 'awaiting_task'
          : 'awaiting_user_input';
  // The pause's own events are journaled by its save (issue 29), after the step's held-back ones.
  let result: RunResult | undefined;
  const announce = (v: RunView): LoopEvent[] => {
    result = toResult(v);
    return [
      { type: 'paused', pause },
      { type: 'run_finished', result },
    ];
  };
  for (const e of await leg.run.pause(pause, reason, announce, card)) yield e;
  return result ?? toResult(leg.run.state);
}

export async function* end(leg: LegState, ...[status, reason, why, answer]: Ending): AsyncGenerator<LoopEvent, RunResult> {
  leg.release();
  for (const tool of leg.gate.heldAwaitingAnswer) leg.run.warn(SAY.heldNeverAsked(tool));
  let result: RunResult | undefined;
  const announce = (v: RunView): LoopEvent => {
    result = toResult(v);
    return { type: 'run_finished', result };
  };
  // The end's event is journaled by its save (issue 29), after the step's held-back ones.
  for (const e of await leg.run.end(status, reason, answer ?? interruption(leg.run.state, reason, why, leg.limits), announce)) yield e;
  return result ?? toResult(leg.run.state);
}
