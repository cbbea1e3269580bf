import type { DelegateConfig, KeelConfig } from '../config/config.js';
import { DEFAULT_LIMITS, type Limits, RunLeg } from '../loop/engine.js';
import { collect } from '../loop/legs.js';
import { type RunView, RunWriter } from '../loop/run.js';
import type { ModelClient } from '../models/types.js';
import type { Registry } from '../plugin-host/host.js';
import { coreTool } from '../tools/builtins.js';
import type { Mode, RunResult, ToolSpec, UntrustedSource } from '../types/index.js';

/** What the delegates need from the Keel that runs them. */
export interface DelegateHost {
  /** The parent run's pool: a delegate gets the subset its config names. */
  registry: () => Registry;
  createModel: (spec: string) => Promise<ModelClient>;
  /** The parent run's model spec and session (the delegate reads the session's mode fresh, C5). */
  parent: (runId: string) => Promise<{ model: string; session_id: string }>;
  /** The session's mode now (C5): a delegate works in its parent's session. */
  currentMode: (run: RunView) => Mode;
  limits: Partial<Limits>;
}

interface Task {
  id: string;
  delegate: string;
  parentRun: string;
  status: 'running' | 'done' | 'failed' | 'stopped';
  leg: RunLeg;
  done: Promise<RunResult>;
  result?: RunResult;
}

/** U2: the task family carries provenance: a delegate starts with what its parent had read, and its answer carries what it read. */
const PROVENANCE = { carriesProvenance: true } as const;

const TASK_FAMILY = new Set(['task', 'task_wait', 'task_list', 'task_stop', 'ask_user']);

/**
 * C8: named delegates from the config, each run with its own isolated history through the
 * same engine and gate (one loop body), with a subset of the parent's tools. Delegate runs have no
 * store, so they cannot pause: ask_user and approvals are refused inside them (A5).
 */
export class Subagents {
  readonly tasks = new Map<string, Task>();
  /** How many delegates were ever started (tests assert denials create none, C6). */
  created = 0;
  private readonly delegates: Map<string, DelegateConfig>;
  private readonly maxConcurrent: number;

  constructor(
    config: NonNullable<KeelConfig['subagents']>,
    private readonly host: DelegateHost,
  ) {
    this.delegates = new Map(config.delegates.map((d) => [d.name, d]));
    this.maxConcurrent = config.max_concurrent;
  }

  get configured(): boolean {
    return this.delegates.size > 0;
  }

  private running(): number {
    return [...this.tasks.values()].filter((t) => t.status === 'running').length;
  }

  private async start(name: string, prompt: string, parentRun: string, untrusted: readonly UntrustedSource[]): Promise<string> {
    const d = this.delegates.get(name);
    if (!d) throw new Error(`no delegate named ${name} (configured: ${[...this.delegates.keys()].join(', ')})`);
    if (this.running() >= this.maxConcurrent) {
      throw new Error(`${this.running()} delegates are already running (limit ${this.maxConcurrent}): wait for one with task_wait first`);
    }
    const parent = await this.host.parent(parentRun);
    const reg = this.host.registry();
    const pool = reg.pool.filter((t) => d.tools.includes(t.name) && !TASK_FAMILY.has(t.name));
    const registry: Registry = { ...reg, pool, byName: new Map(pool.map((t) => [t.name, t])), close: async () => {} };
    const model = await this.host.createModel(d.model ?? parent.model);
    const run = await RunWriter.start(
      {
        request: prompt,
        mode: 'agent',
        model: model.spec,
        plugin_dirs: [],
        session_id: parent.session_id,
        notes: missingNote(name, d.tools, pool),
        // U2: the parent's model wrote the prompt; if the parent had read others' words, so may the prompt.
        inherited_untrusted: untrusted,
      },
      null,
    );
    const leg = new RunLeg(
      {
        registry,
        model,
        store: null,
        limits: { ...DEFAULT_LIMITS, ...this.host.limits, ...(d.max_steps ? { maxSteps: d.max_steps } : {}) },
        instructions: d.instructions,
        currentMode: this.host.currentMode,
      },
      run,
    );
    this.created++;
    const id = `tk_${this.created}`;
    const task: Task = { id, delegate: name, parentRun, status: 'running', leg, done: collect(leg.start()) };
    this.tasks.set(id, task);
    task.done.then(
      (r) => {
        task.result = r;
        if (task.status === 'running') task.status = r.status === 'done' ? 'done' : 'failed';
      },
      () => {
        task.status = 'failed';
      },
    );
    return id;
  }

  private task(id: unknown): Task {
    const t = this.tasks.get(String(id));
    if (!t) throw new Error(`no task ${id} (task_list shows them)`);
    return t;
  }

  private static describe(t: Task): string {
    const r = t.result;
    const head = `Task ${t.id} (${t.delegate}): ${t.status}`;
    if (!r) return head;
    return `${head}; ${r.model_calls} model calls, tools run: ${
      r.steps
        .filter((s) => s.outcome === 'ran')
        .map((s) => s.tool)
        .join(', ') || 'none'
    }.\n${r.answer ?? ''}`;
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
          execute: async (a, ctx) => {
            const tid = await this.start(a.agent, a.prompt, ctx.run_id, ctx.untrusted ?? []);
            return `Started task ${tid} (${a.agent}). Call task_wait with id ${tid} for its answer.`;
          },
        },
        PROVENANCE,
      ),
      coreTool<{ id: string; timeout_s?: number }>(
        {
          name: 'task_wait',
          description: 'Wait for a delegate task to finish and get its answer.',
          parameters: {
            type: 'object',
            properties: { ...id, timeout_s: { type: 'number', minimum: 1, maximum: 600, description: 'How long to wait (default 120).' } },
            required: ['id'],
            additionalProperties: false,
          },
          execute: async (a) => {
            const t = this.task(a.id);
            const ms = (a.timeout_s ?? 120) * 1000;
            let timer: NodeJS.Timeout | undefined;
            await Promise.race([t.done.catch(() => undefined), new Promise((res) => (timer = setTimeout(res, ms)))]);
            clearTimeout(timer);
            // U2: a delegate's answer carries its run's provenance: what it read from outside the user, its parent has read too.
            const read = t.result?.untrusted ?? [];
            if (!read.length) return Subagents.describe(t);
            return {
              content: Subagents.describe(t),
              untrusted: true,
              source: `delegate ${t.delegate} (${t.id}) read ${read[0].tool}: ${read[0].label}`,
            };
          },
        },
        PROVENANCE,
      ),
      coreTool(
        {
          name: 'task_list',
          description: 'List delegate tasks and their status.',
          parameters: { type: 'object', properties: {}, additionalProperties: false },
          execute: () =>
            this.tasks.size ? [...this.tasks.values()].map((t) => `${t.id} ${t.delegate} ${t.status}`).join('\n') : 'No tasks.',
        },
        PROVENANCE,
      ),
      coreTool<{ id: string }>(
        {
          name: 'task_stop',
          description: 'Stop a running delegate task.',
          parameters: { type: 'object', properties: id, required: ['id'], additionalProperties: false },
          execute: async (a) => {
            const t = this.task(a.id);
            if (t.status !== 'running') return `Task ${t.id} is already ${t.status}.`;
            t.status = 'stopped';
            t.leg.stop('stopped by task_stop');
            await t.done.catch(() => undefined);
            return `Stopped task ${t.id}.`;
          },
        },
        PROVENANCE,
      ),
    ];
  }
}

/** A note for the delegate's trace naming the tools its config asks for that the pool lacks. */
function missingNote(name: string, wanted: readonly string[], pool: readonly ToolSpec[]): string[] {
  const missing = wanted.filter((n) => !pool.some((t) => t.name === n));
  return missing.length ? [`delegate ${name}: tools not available: ${missing.join(', ')}`] : [];
}
