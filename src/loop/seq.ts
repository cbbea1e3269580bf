/**
 * The seq of a run's next model request (replayed calls included). Never counts a call an
 * interruption cut short as answered.
 */
import type { RequestTrace } from '../types/index.js';

/**
 * P2/R18: the `seq` of a run's next model request beyond its `seq_base` — the model calls that gave
 * a reply. A call an interruption cut short (Ctrl-C, SIGTERM, an abort signal) is counted (R30) but
 * marked `unanswered`, so resuming asks again and a scripted model replays that entry, as it does
 * after kill -9 (where the count was never saved). A session's next run starts its `seq_base` here.
 */
export function repliedCalls(run: { model_calls: number; requests: readonly Pick<RequestTrace, 'unanswered'>[] }): number {
  let cut = 0;
  for (const r of run.requests) if (r.unanswered) cut++;
  return run.model_calls - cut;
}
