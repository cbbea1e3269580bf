/**
 * The task tools: delegates from config.yaml started as runs of their own, waited on, listed and
 * stopped, within their limits (D1–D6). Never gives a delegate a tool its parent may not use.
 */
import type { DelegateConfig, KeelConfig } from '../config/config.js';
import { RunLimitReached } from '../loop/run.js';
import { SAY } from '../loop/sentences.js';
import { awaitTask, ended, taskResult } from '../loop/tasks.js';
import { coreTool } from '../tools/builtins.js';
import type { RunState, RunSummary, ToolContext, ToolOutput, ToolSpec, UntrustedSource } from '../types/index.js';

/** What the delegates need from the Keel that runs them: its store, and a way to start, drive and stop a delegate's run. */
export interface DelegateHost {
  /** False for a Keel without a store: a delegate is a run, so none starts (D1). */
  hasStore: () => boolean;
  loadRun: (id: string) => Promise<RunState | undefined>;
  /** The delegates' runs a run started, newest first. */
  children: (parentRun: string) => Promise<RunSummary[]>;
  /** How many delegates' runs are not over, in the whole store (D5). */
  activeChildren: () => Promise<number>;
  /**
   * Starts a delegate's run (stored, its parent recorded) and has it driven: by this process, or by
   * the job queue's workers. `call_id`: the task call, from which the run's id is made (a task call
   * met again starts no second run).
   */
  startChild: (start: ChildStart) => Promise<RunState>;
  /** task_stop: ends a delegate's run for good (audited); returns the sentence for the model. */
  stopChild: (parentRun: string, child: RunState) => Promise<string>;
}

export interface ChildStart {
  parent: RunState;
  delegate: DelegateConfig;
  prompt: string;
  task_id: string;
  call_id: string;
  /** U2: what the parent had read from outside the user: its model wrote the prompt. */
  untrusted: readonly UntrustedSource[];
  /** D5: the store starts the run only while fewer delegates than this are running or paused in it (RunLimitReached). */
  max_total: number;
}

/** U2: the task family carries provenance: a delegate starts with what its parent had read, and its answer carries what it read. */
const PROVENANCE = { carriesProvenance: true } as const;

/** The tools that start and follow delegates: a delegate gets them only when it may start delegates itself (D5, max_depth). */
export const TASK_TOOLS: ReadonlySet<string> = new Set(['task', 'task_wait', 'task_list', 'task_stop']);

export type SubagentsConfig = NonNullable<KeelConfig['subagents']>;

/**
 * C8/D1: named delegates from the config. A delegate is a run of its own — stored, with its own id,
 * history, tools (a subset of its parent's) and model, its parent recorded — driven by the same
 * engine and gate as every run, so it can pause for the same person (A5) and survive its process.
 * The task tools here start and follow those runs; task_wait on one still working pauses the
 * parent (D2), which goes on when the delegate's run ends.
 */
export class Subagents {
  /** How many delegates this process started (tests assert denials create none, C6). */
  created = 0;
  private readonly delegates: Map<string, DelegateConfig>;

  constructor(
    readonly config: SubagentsConfig,
    private readonly host: DelegateHost,
  ) {
    this.delegates = new Map(config.delegates.map((d) => [d.name, d]));
  }

  get configured(): boolean {
    return this.delegates.size > 0;
  }

  /** The delegate named, with its settings (the Keel builds a delegate's run from them). */
  delegate(name: string): DelegateConfig | undefined {
    return this.delegates.get(name);
  }

  private async start(name: string, prompt: string, ctx: ToolContext): Promise<ToolOutput> {
    const d = this.delegates.get(name);
    if (!d) return { content: SAY.noDelegate(name, [...this.delegates.keys()]), is_error: true };
    if (!this.host.hasStore()) return { content: SAY.tasksNeedStore, is_error: true };
    const parent = await this.host.loadRun(ctx.run_id);
    if (!parent) return { content: SAY.tasksNeedStore, is_error: true };
    // D5: every limit reached is a result the model can act on, never a crash.
    const depth = parent.parent?.depth ?? 0;
    if (depth >= this.config.max_depth) return { content: SAY.tooDeep(depth, this.config.max_depth), is_error: true };
    const children = await this.host.children(parent.id);
    const mine = children.filter((c) => c.status === 'running' || c.status === 'paused').length;
    if (mine >= this.config.max_concurrent) return { content: SAY.tooManyTasks(mine, this.config.max_concurrent, 'run'), is_error: true };
    const all = await this.host.activeChildren();
    if (all >= this.config.max_total) return { content: SAY.tooManyTasks(all, this.config.max_total, 'total'), is_error: true };
    const taskId = `tk_${children.length + 1}`;
    let child: RunState;
    try {
      child = await this.host.startChild({
        parent,
        delegate: d,
        prompt,
        task_id: taskId,
        call_id: ctx.call_id,
        untrusted: ctx.untrusted ?? [],
        max_total: this.config.max_total,
      });
    } catch (err) {
      // D5: the count above is a hint; the store's own check as it inserts the run is the limit (runs started at once).
      if (err instanceof RunLimitReached)
        return { content: SAY.tooManyTasks(this.config.max_total, this.config.max_total, 'total'), is_error: true };
      throw err;
    }
    this.created++;
    return SAY.taskStarted(child.parent?.task_id ?? taskId, name);
  }

  /** A task of this run, by the id task gave (tk_N) or its run's id. */
  private async task(runId: string, id: unknown): Promise<RunState | undefined> {
    const want = String(id);
    for (const c of await this.host.children(runId)) {
      if (c.id !== want) {
        const run = await this.host.loadRun(c.id);
        if (run?.parent?.task_id === want) return run;
        continue;
      }
      return this.host.loadRun(c.id);
    }
    return undefined;
  }

  private static report(child: RunState): ToolOutput {
    const out = taskResult(child, child.parent?.task_id ?? child.id);
    // U2: a delegate's answer carries its run's provenance: what it read from outside the user, its parent has read too.
    return out.untrusted ? { content: out.content, untrusted: true, source: out.untrusted } : out.content;
  }

  tools(): ToolSpec[] {
    const id = { id: { type: 'string', description: 'The task id task returned.' } };
    const names = [...this.delegates.values()].map((d) => `${d.name}${d.description ? ` (${d.description})` : ''}`).join('; ');
    return [
      coreTool<{ agent: string; prompt: string }>(
        {
          name: 'task',
          description: `Start a delegate on a self-contained piece of work; it works with its own history and tools and reports back. Delegates: ${names}.`,
          parameters: {
            type: 'object',
            properties: {
              agent: { type: 'string', enum: [...this.delegates.keys()], description: 'Which delegate.' },
              prompt: { type: 'string', description: 'Everything the delegate needs to know: it sees nothing else.' },
            },
            required: ['agent', 'prompt'],
            additionalProperties: false,
          },
          execute: (a, ctx) => this.start(a.agent, a.prompt, ctx),
        },
        PROVENANCE,
      ),
      coreTool<{ id: string; timeout_s?: number }>(
        {
          name: 'task_wait',
          description: 'Wait for a delegate task to finish and get its answer.',
          parameters: {
            type: 'object',
            // timeout_s is kept for older prompts: the wait is the run's own now (D2), stored, with no timer.
            properties: {
              ...id,
              timeout_s: { type: 'number', minimum: 1, maximum: 600, description: 'Ignored: the run waits until the task ends.' },
            },
            required: ['id'],
            additionalProperties: false,
          },
          execute: async (a, ctx) => {
            const child = await this.task(ctx.run_id, a.id);
            if (!child) return { content: SAY.noTask(String(a.id)), is_error: true };
            if (ended(child)) return Subagents.report(child);
            // D2: the run pauses for the delegate (the leg takes this wait right after the call).
            const taskId = child.parent?.task_id ?? child.id;
            awaitTask(ctx.run_id, ctx.call_id, { task_id: taskId, child_run: child.id, delegate: child.parent?.delegate ?? '' });
            return SAY.taskStillRunning(taskId);
          },
        },
        PROVENANCE,
      ),
      coreTool(
        {
          name: 'task_list',
          description: 'List delegate tasks and their status.',
          parameters: { type: 'object', properties: {}, additionalProperties: false },
          execute: async (_a, ctx) => {
            const rows: string[] = [];
            for (const c of await this.host.children(ctx.run_id)) {
              const run = await this.host.loadRun(c.id);
              if (run?.parent)
                rows.unshift(
                  `${run.parent.task_id} ${run.parent.delegate} ${run.status}${run.reason ? ` (${run.reason})` : ''} run ${run.id}`,
                );
            }
            return rows.length ? rows.join('\n') : SAY.noTasks;
          },
        },
        PROVENANCE,
      ),
      coreTool<{ id: string }>(
        {
          name: 'task_stop',
          description: 'Stop a running delegate task.',
          parameters: { type: 'object', properties: id, required: ['id'], additionalProperties: false },
          execute: async (a, ctx) => {
            const child = await this.task(ctx.run_id, a.id);
            if (!child) return { content: SAY.noTask(String(a.id)), is_error: true };
            const taskId = child.parent?.task_id ?? child.id;
            if (ended(child)) return SAY.taskAlreadyOver(taskId, child.reason === 'cancelled' ? 'stopped' : child.status);
            return this.host.stopChild(ctx.run_id, child);
          },
        },
        PROVENANCE,
      ),
    ];
  }
}

/** A note for the delegate's trace naming the tools its config asks for that the pool lacks. */
export function missingNote(name: string, wanted: readonly string[], pool: readonly ToolSpec[]): string[] {
  const missing = wanted.filter((n) => !pool.some((t) => t.name === n));
  return missing.length ? [`delegate ${name}: tools not available: ${missing.join(', ')}`] : [];
}
