/**
 * D1/D2: what the loop knows of delegates' runs. A delegate is a run of its own (its parent
 * recorded); the task tools live above the loop (src/subagents), and tell the leg through here that
 * a task_wait call waits for a delegate that has not ended, so the leg pauses (`awaiting_task`)
 * instead of holding the process.
 */

import { untrustedRead } from './result.js';
import type { RunView } from './run.js';
import { SAY } from './sentences.js';

export interface TaskWait {
  task_id: string;
  child_run: string;
  delegate: string;
}

/**
 * task_wait calls that wait, by run and call id: set by the handler, taken by the leg that ran it
 * right after the call (the handler cannot pause a leg itself; the ids are unique to the call).
 */
const waits = new Map<string, TaskWait>();

/** The handler of task_wait: this call waits for that delegate's run (with a store, the leg pauses). */
export function awaitTask(runId: string, callId: string, wait: TaskWait): void {
  waits.set(`${runId}\u0000${callId}`, wait);
}

/** The leg, after a call ran: whether it waits for a delegate (taken once). */
export function takeTaskWait(runId: string, callId: string): TaskWait | undefined {
  const key = `${runId}\u0000${callId}`;
  const w = waits.get(key);
  if (w) waits.delete(key);
  return w;
}

export function ended(run: Pick<RunView, 'status'>): boolean {
  return run.status === 'done' || run.status === 'failed';
}

/**
 * task_wait's result for a delegate's run: its status, what ran and its answer. U2: a delegate's
 * answer carries its run's provenance: what it read from outside the user, its parent has read too.
 */
export function taskResult(child: RunView, taskId: string): { content: string; untrusted?: string } {
  const delegate = child.parent?.delegate ?? 'delegate';
  const status =
    child.status === 'done' ? 'done' : child.status === 'failed' ? (child.reason === 'cancelled' ? 'stopped' : 'failed') : child.status;
  const ran = child.steps.filter((s) => s.outcome === 'ran' && s.tool !== 'ask_user').map((s) => s.tool);
  const content = SAY.taskReport(taskId, delegate, status, child.model_calls, ran, child.answer);
  const read = untrustedRead(child);
  if (!read.length) return { content };
  return { content, untrusted: `delegate ${delegate} (${taskId}) read ${read[0].tool}: ${read[0].label}` };
}
