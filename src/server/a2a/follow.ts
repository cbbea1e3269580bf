/**
 * Issue 48 (S11; S5): a run's journal as A2A task events — the status and the answer of the task a run
 * is. The journal is the source, read after each wake-up (or every pollMs, for a run another
 * process works: a PostgreSQL store's notifications wake the hub too), so a live stream, a
 * re-subscription and a restarted server tell the same thing. Stops where the task stops: at a
 * pause that waits for a person (input-required), at the run's end, or when the server stops.
 * A run that waits for a delegate (D1) is followed through it: the delegate's card or question is
 * the task's. Never reads the model's words as a task's state: only the runs' own pauses and ends.
 */
import { TaskState } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutionEvent } from '@a2a-js/sdk/server';
import type { RunState, Store } from '../../types/index.js';
import type { Hub } from '../workers/runner.js';
import { answerArtifact, delegateChain, endMessage, pauseMessage, progressMessage, stateOf } from './tasks.js';

const ended = (r: RunState) => r.status === 'done' || r.status === 'failed';

export interface FollowDeps {
  store: Store;
  hub: Hub;
  /** How often the journal is read without a wake-up (runs another process works). */
  pollMs: number;
  /** The server is stopping: a leg it pauses is carried on by the next start, not followed now. */
  stopping(): boolean;
}

/**
 * Follows the task of run `run` — its journal after row `after`, and, while it waits for a
 * delegate (D1), the delegate's — as the task's status and artifact updates, until it waits for a
 * person, ends, or `signal` aborts. `chain`: the delegates it waits for already (from the outermost).
 */
export async function* followRun(
  d: FollowDeps,
  run: Pick<RunState, 'id' | 'session_id'>,
  after: number,
  signal?: AbortSignal,
  chain: readonly string[] = [],
): AsyncGenerator<AgentExecutionEvent> {
  const ids = { taskId: run.id, contextId: run.session_id, metadata: undefined };
  // The runs followed: the task's run, then the delegate it waits for, and so on down.
  const stack = [run.id, ...chain].map((id) => ({ id, last: after }));
  let dirty = false;
  let wake: (() => void) | undefined;
  const poke = () => {
    dirty = true;
    wake?.();
    wake = undefined;
  };
  // A text delta is never stored: only a grown journal is worth a read.
  const listen = (id: string) =>
    d.hub.subscribe(id, (m) => {
      if (m.delta === undefined) poke();
    });
  let unsubscribe = listen(stack[stack.length - 1].id);
  const follow = (id: string, last: number) => {
    stack.push({ id, last });
    unsubscribe();
    unsubscribe = listen(id);
  };
  signal?.addEventListener('abort', poke);
  try {
    while (!signal?.aborted) {
      const top = stack[stack.length - 1];
      const rows = await d.store.listEvents({
        run_id: top.id,
        after: top.last,
        limit: 200,
        types: ['assistant', 'paused', 'run_finished'],
      });
      let moved = false;
      for (const r of rows) {
        top.last = r.id;
        const e = r.event;
        if (e.type === 'assistant') {
          // Progress of the task's own run: a reply that calls tools (its words, and which tools) — never their arguments or results.
          if (stack.length === 1 && e.tool_calls.length)
            yield AgentEvent.statusUpdate({
              ...ids,
              status: { state: TaskState.TASK_STATE_WORKING, message: progressMessage(run, e.step, e.text, e.tool_calls), timestamp: r.at },
            });
          continue;
        }
        if (e.type === 'paused') {
          if (e.pause.kind === 'task') {
            // Waits for a delegate (or its delegate): the card or question of the one that asks is the task's;
            // the journals of those still working are followed from now.
            const from = await d.store.latestEventId();
            const child = await d.store.loadRun(e.pause.child_run);
            const path = child ? [child, ...(await delegateChain(d.store, child))] : [];
            while (path.length && ended(path[path.length - 1])) path.pop();
            const asking = path[path.length - 1];
            const message = asking?.status === 'paused' && asking.pause ? pauseMessage(run, asking.pause, asking.id) : undefined;
            if (message) {
              yield AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED, message, timestamp: r.at } });
              return;
            }
            if (!path.length) continue;
            for (const c of path) follow(c.id, from);
            moved = true;
            break;
          }
          const message = pauseMessage(run, e.pause, top.id);
          if (!message) continue;
          yield AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED, message, timestamp: r.at } });
          return;
        }
        if (e.type !== 'run_finished') continue;
        const res = e.result;
        if (stack.length > 1 && (res.status === 'done' || res.status === 'failed')) {
          // The delegate ended: the run that waited for it goes on.
          stack.pop();
          unsubscribe();
          unsubscribe = listen(stack[stack.length - 1].id);
          moved = true;
          break;
        }
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
        // Paused between legs (a worker that stopped and queued it again): still working.
        if (res.reason === 'interrupted' && d.stopping()) return;
      }
      if (moved || rows.length === 200) continue;
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
