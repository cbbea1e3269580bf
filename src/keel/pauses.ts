/**
 * Answering a run's pauses one after another through a PauseResponder (chat, the demo, embedders):
 * its questions and cards, or its delegate's (D3), until it ends or the responder leaves one open.
 * Never answers a pause the responder did not answer, and a refused edit leaves its card pending.
 */
import type { LoopEvent, PausedResult, RunResult } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { decide } from './approvals.js';
import type { KeelCore } from './core.js';
import type { ContinueOptions, PauseResponder } from './options.js';

/** Keel.answerPauses: a run's pauses answered until it ends or the responder leaves one open. */
export async function answerPauses<T = unknown>(
  core: KeelCore,
  first: RunResult<T>,
  responder: PauseResponder,
  o: ContinueOptions<T> | ((e: LoopEvent) => void) = {},
): Promise<{ result: RunResult<T>; pauses: number }> {
  const opts: ContinueOptions<T> = typeof o === 'function' ? { onEvent: o } : o;
  let result = first;
  let pauses = 0;
  while (result.status === 'paused') {
    // D3: a run waiting for its delegate is answered through what the delegate waits for (its question or card).
    const p = waitedFor(result);
    if (p.reason === 'awaiting_user_input') {
      const from = p !== result && result.reason === 'awaiting_task' ? await askedBy(core, p.run_id) : undefined;
      const answer = await responder.answer(p.question, p.confirm, from);
      if (answer === undefined) break;
      pauses++;
      result = await core.keel.answer(p.run_id, answer, opts);
    } else if (p.reason === 'awaiting_approval') {
      let refused: string | undefined;
      let next: RunResult<T> | undefined;
      while (!next) {
        const d = await responder.decide(refused === undefined ? p.approval : { ...p.approval, refused });
        if (!d) break;
        try {
          next = await decide(core, p.approval.id, d.decision, {
            ...opts,
            actor: d.actor,
            reason: d.reason ?? null,
            consentWrites: d.consentWrites,
            arguments: d.arguments,
          });
        } catch (err) {
          // A7: a refused edit leaves the card pending: the approver is asked again, told why.
          if (!(d.arguments && err instanceof KeelError && err.code === 'bad_input')) throw err;
          refused = err.message;
        }
      }
      if (!next) break;
      pauses++;
      result = next;
    } else break;
  }
  return { result, pauses };
}

/** Which delegate asks a question its parent's result shows (for the responder to say so). */
async function askedBy(core: KeelCore, runId: string): Promise<{ delegate: string; run_id: string; parent_run: string } | undefined> {
  const p = (await core.store?.loadRun(runId))?.parent;
  return p && { delegate: p.delegate, run_id: runId, parent_run: p.run_id };
}

/** What a paused run waits for a person to answer: its own pause, or its delegate's (and theirs, down the chain). */
function waitedFor(r: PausedResult): PausedResult {
  return r.reason === 'awaiting_task' && r.task.waiting ? waitedFor(r.task.waiting) : r;
}
