/**
 * Issue 48 (S11; S5): a run's journal as A2A task events — the status and the answer of the task a run
 * is. The journal is the source, read after each wake-up (or every pollMs, for a run another
 * process works: a PostgreSQL store's notifications wake the hub too), so a live stream, a
 * re-subscription and a restarted server tell the same thing. Stops where the task stops: at a
 * pause that waits for a person (input-required), at the run's end, or when the server stops.
 * Never reads the model's words as a task's state: only the run's own pause and end.
 */
import { TaskState } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutionEvent } from '@a2a-js/sdk/server';
import type { RunState, Store } from '../../types/index.js';
import type { Hub } from '../workers/runner.js';
import { answerArtifact, endMessage, pauseMessage, stateOf } from './tasks.js';

export interface FollowDeps {
  store: Store;
  hub: Hub;
  /** How often the journal is read without a wake-up (runs another process works). */
  pollMs: number;
  /** The server is stopping: a leg it pauses is carried on by the next start, not followed now. */
  stopping(): boolean;
}

/** Follows run `run`'s journal after row `after`, as the task's status and artifact updates, until it waits, ends, or `signal` aborts. */
export async function* followRun(
  d: FollowDeps,
  run: Pick<RunState, 'id' | 'session_id'>,
  after: number,
  signal?: AbortSignal,
): AsyncGenerator<AgentExecutionEvent> {
  const ids = { taskId: run.id, contextId: run.session_id, metadata: undefined };
  let last = after;
  let dirty = false;
  let wake: (() => void) | undefined;
  const poke = () => {
    dirty = true;
    wake?.();
    wake = undefined;
  };
  // A text delta is never stored: only a grown journal is worth a read.
  const unsubscribe = d.hub.subscribe(run.id, (m) => {
    if (m.delta === undefined) poke();
  });
  signal?.addEventListener('abort', poke);
  try {
    while (!signal?.aborted) {
      const rows = await d.store.listEvents({ run_id: run.id, after: last, limit: 200, types: ['paused', 'run_finished'] });
      for (const r of rows) {
        last = r.id;
        const e = r.event;
        if (e.type === 'paused') {
          const message = pauseMessage(run, e.pause);
          if (!message) continue;
          yield AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED, message, timestamp: r.at } });
          return;
        }
        if (e.type !== 'run_finished') continue;
        const res = e.result;
        if (res.status === 'done') {
          yield AgentEvent.artifactUpdate({ ...ids, artifact: answerArtifact(res.answer), append: false, lastChunk: true });
          yield AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: r.at } });
          return;
        }
        if (res.status === 'failed') {
          const message = endMessage(run, res.status, res.reason, res.answer);
          yield AgentEvent.statusUpdate({ ...ids, status: { state: stateOf(res.status, res.reason, null), message, timestamp: r.at } });
          return;
        }
        // Paused between legs (a delegate's wait, a worker that stopped and queued it again): still working.
        if (res.reason === 'interrupted' && d.stopping()) return;
      }
      if (rows.length === 200) continue;
      if (d.stopping()) return;
      if (!dirty) {
        await new Promise<void>((res) => {
          const timer = setTimeout(poke, d.pollMs);
          wake = () => {
            clearTimeout(timer);
            res();
          };
        });
      }
      dirty = false;
    }
  } finally {
    unsubscribe();
    signal?.removeEventListener('abort', poke);
  }
}
