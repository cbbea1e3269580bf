/**
 * MCP tasks (S3, protocol 2025-11-25) of one connection: what a call made as a task tells its task
 * while it waits, and the connection's in-memory task store that tasks/get, tasks/result, tasks/list
 * and tasks/cancel read. Never answers a card itself: tasks/cancel goes to the session (`onCancel`),
 * which rejects the task's card or refuses, and a task never ends twice.
 */
import { randomUUID } from 'node:crypto';
import { type CreateTaskOptions, isTerminal, type TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { Result, Task } from '@modelcontextprotocol/sdk/types.js';
import { text } from './options.js';

/**
 * A call made as an MCP task (S3): it waits for its card's answer however long (no `--wait`: the
 * client polls the task), and says where it stands.
 */
export interface TaskWatch {
  /** The call now waits on the user: its card (the id), or a confirmation asked by elicitation. */
  waiting(card: string | undefined, message: string): Promise<void>;
  /** Set when the card or the user refused the call: why (the task ends `failed`). */
  refused?: string;
}

/** A call made as a task, while it waits or runs. */
export interface TaskEntry {
  /** Ends its wait: cancelled, or the session closed. */
  stop: AbortController;
  /** The card it waits on, once it does. */
  card?: string;
  /** A tasks/cancel under way: true once the card is rejected (the task is then cancelled), false if refused. */
  cancelled?: Promise<boolean>;
}

/** How often a task's client is told to poll it (ms). */
export const TASK_POLL_MS = 1_000;
/** The reason a card is rejected with when the client cancels its task (tasks/cancel). */
export const TASK_CANCELLED = 'cancelled by the MCP client (tasks/cancel)';

/**
 * The MCP tasks of one connection (S3), in memory, like the session they belong to: a task lives
 * while its call waits (its card's expiry bounds that) and for its `ttl` once it ended. tasks/cancel
 * reaches `onCancel` first, which rejects the task's card — or refuses, and the task goes on; a
 * failed or cancelled task says why in its status message, and tasks/result gives the call's result.
 */
export class ConnectionTasks implements TaskStore {
  private readonly tasks = new Map<string, { task: Task; result?: Result; timer?: NodeJS.Timeout }>();
  onCancel?: (taskId: string) => Promise<string>;

  async createTask(params: CreateTaskOptions): Promise<Task> {
    const now = new Date().toISOString();
    const task: Task = {
      taskId: `task_${randomUUID()}`,
      status: 'working',
      ttl: params.ttl ?? null,
      createdAt: now,
      lastUpdatedAt: now,
      pollInterval: params.pollInterval ?? TASK_POLL_MS,
    };
    this.tasks.set(task.taskId, { task });
    return { ...task };
  }

  async getTask(taskId: string): Promise<Task | null> {
    const t = this.tasks.get(taskId);
    return t ? { ...t.task } : null;
  }

  private live(taskId: string) {
    const t = this.tasks.get(taskId);
    if (!t) throw new Error(`no task ${taskId}`);
    if (isTerminal(t.task.status)) throw new Error(`task ${taskId} has already ended (${t.task.status})`);
    return t;
  }

  private end(t: { task: Task; timer?: NodeJS.Timeout }, status: Task['status']): void {
    t.task.status = status;
    t.task.lastUpdatedAt = new Date().toISOString();
    if (t.task.ttl) {
      t.timer = setTimeout(() => this.tasks.delete(t.task.taskId), t.task.ttl);
      t.timer.unref();
    }
  }

  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result): Promise<void> {
    const t = this.live(taskId);
    t.result = result;
    this.end(t, status);
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const t = this.tasks.get(taskId);
    if (!t?.result) throw new Error(`task ${taskId} has no result${t ? ` (it is ${t.task.status})` : ''}`);
    return t.result;
  }

  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string): Promise<void> {
    this.live(taskId);
    if (status === 'cancelled' && this.onCancel) {
      statusMessage = await this.onCancel(taskId);
      const t = this.live(taskId);
      t.result = text(statusMessage, true);
    }
    const t = this.live(taskId);
    if (statusMessage) t.task.statusMessage = statusMessage;
    if (isTerminal(status)) this.end(t, status);
    else {
      t.task.status = status;
      t.task.lastUpdatedAt = new Date().toISOString();
    }
  }

  /** Why a task is about to fail: its status message. */
  explain(taskId: string, message: string): void {
    const t = this.tasks.get(taskId);
    if (t && !isTerminal(t.task.status)) t.task.statusMessage = message;
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    // One connection's tasks: one page.
    return { tasks: cursor ? [] : [...this.tasks.values()].map((t) => ({ ...t.task })) };
  }

  close(): void {
    for (const t of this.tasks.values()) clearTimeout(t.timer);
    this.tasks.clear();
  }
}
