import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { dirname, join, resolve } from 'node:path';
import {
  type ApprovalDecision,
  type ApprovalEdit,
  expireApprovals,
  MAX_BATCH,
  RUN_CANCELLED,
  recordApprovalAnswer,
  recordCardsClosed,
} from '../approvals/respond.js';
import { type Answerer, mayAnswer, notYours } from '../approvals/who.js';
import { type KeelConfig, loadConfig, policyFileOf } from '../config/config.js';
import type { EngineDeps, Limits } from '../loop/engine.js';
import { answerLeg, approvalLeg, cancelLeg, collect, continueLeg, type Leg, type LegJob, queuedLeg, startLeg } from '../loop/legs.js';
import { type OutputSchema, outputCheck } from '../loop/output.js';
import { validateProblem } from '../loop/pipeline.js';
import { toResult, untrustedRead } from '../loop/result.js';
import { SAY } from '../loop/sentences.js';
import { ended } from '../loop/tasks.js';
import { builtInSpec, createModel } from '../models/index.js';
import { type ModelClient, ModelError } from '../models/types.js';
import { checkAppTools } from '../plugin-host/app-tools.js';
import type { ResetRow } from '../plugin-host/data.js';
import type { Registry } from '../plugin-host/host.js';
import type { Row, ToolRow } from '../plugin-host/types.js';
import { PolicyFile } from '../policy/cedar.js';
import { type PolicyEvaluator, UNRECORDED_PRINCIPAL } from '../policy/gate.js';
import { OperatorPolicy } from '../policy/operator.js';
import { checkedPrincipal } from '../policy/principal.js';
import type { Shortlist } from '../prompt/menu.js';
import { bm25Shortlist, toolCapFromEnv } from '../prompt/shortlist.js';
import { countsTokens } from '../prompt/tokens.js';
import { openStore } from '../store/open.js';
import { type ChildStart, missingNote, Subagents, type SubagentsConfig, TASK_TOOLS } from '../subagents/delegates.js';
import type {
  Answer,
  ApprovalCard,
  ApprovalRecord,
  ApprovalStatus,
  AppTool,
  Confirmation,
  LoopEvent,
  Mode,
  PausedResult,
  Principal,
  RunQuery,
  RunResult,
  RunState,
  RunSummary,
  Store,
  ToolSpec,
} from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { type FileCache, fileCache } from '../util/file-cache.js';
import { storableText } from '../util/text.js';
import { osUser } from '../util/user.js';
import { Registries, resolvePluginDirs } from './registries.js';

export { BUNDLED_PLUGINS, keelHome, PACKAGE_ROOT } from '../config/paths.js';

import { keelHome } from '../config/paths.js';
import type { Env } from '../types/env.js';
import { Sessions } from './sessions.js';

export interface KeelOptions {
  /** Keel's home: the store and plugin data live here. Default KEEL_HOME, else ~/.keel. */
  home?: string;
  /** A store to use instead of the SQLite file under home; null for a run with nowhere to pause. */
  store?: Store | null;
  limits?: Partial<Limits>;
  shortlist?: Shortlist;
  env?: Env;
  /** Extra built-in tools (tests, embedders). */
  extraTools?: ToolSpec[];
  /**
   * The application's own tools, declared in code: each a tool definition with the fields of a
   * manifest row beside it (`effect`, `confirm`, `approval`, `guidance`, `pinned`,
   * `answers_directly`, `undo`, `contract_modes`), checked by the manifest's schema and governed by
   * the same gate and policy as a plugin's tools. `defineTool({ …, effect })` types them.
   */
  tools?: readonly AppTool[];
  /**
   * What a mistake in the application's own tools (`tools`, here or a run's) does. Default
   * `'throw'`: a tool that would be refused — its declaration or definition, a name given twice,
   * a core name, a name a plugin registers — is a KeelError (`config`) naming the tool and the field
   * (`tools[0] (pay).confirm: …`), thrown by the constructor for the Keel's own list where it can
   * tell (the names are checked against the pool when a run mounts them) and by the run for the
   * rest. `'warn'`: degraded mounting — the refused tools never reach the pool and each run says so
   * in `result.warnings`, as a plugin folder degrades.
   */
  degradedTools?: 'throw' | 'warn';
  /**
   * Plugin folders for a run that names none and no KEEL_PLUGINS is set. Default none: a library
   * user gets exactly the plugins they ask for. The CLI passes the bundled reference plugins.
   */
  defaultPluginDirs?: string[];
  /**
   * Told when the operator's policy file changed on disk: read again, or (a bad edit) kept as it
   * was, saying why. Default: a line on stderr.
   */
  onPolicyReload?: (message: string) => void;
}

/**
 * R32 (issue 40): the application's own tools are its own code, not a plugin folder: a refused one
 * is an error naming the tool and the field, unless the app chose degraded mounting.
 */
function refuseAppTools(rows: readonly Row[]): void {
  if (!rows.length) return;
  throw new KeelError(
    'config',
    `${rows.map((r) => r.message).join('; ')} — fix the tool${rows.length > 1 ? 's' : ''} declared in code, or mount the valid ones without ${rows.length > 1 ? 'them' : 'it'} with new Keel({ degradedTools: 'warn' })`,
  );
}

/**
 * What a run is given: the same options start a run and carry it on (answer, confirm, approve,
 * reject, resume), so a continuation can be given what the start was given — above all a model
 * object of the application's own, which no stored spec can rebuild. Within one Keel, a run's
 * continuations reuse the options it started with (not `signal` or `onEvent`) unless given others.
 */
export interface RunOptions<T = unknown> {
  /** A model spec (`ollama:MODEL`, `script:FILE`, …) or a `ModelClient` of the application's own. */
  model?: string | ModelClient;
  pluginDirs?: string[];
  /** Tools declared in code for this run, beside the Keel's own `tools` (give them again to a continuation in another process). */
  tools?: readonly AppTool[];
  /** The session's mode; default: the session's current mode, else agent. Start only. */
  mode?: Mode;
  /** Continue this session: the new run sees its transcript, mode and contract. Start only. */
  session?: string;
  /** With `session`: start a session of that id when none exists yet (a chat page names its conversation itself). Start only. */
  createSession?: boolean;
  /** Extra instructions, placed first in the system prompt. */
  instructions?: string;
  /** Aborting it stops the leg at its next safe point: the run pauses (`interrupted`), resumable. */
  signal?: AbortSignal;
  /** The step cap: model calls per run (default 20, KEEL_MAX_STEPS). */
  maxSteps?: number;
  /** The time limit of one leg, in ms (default 10 minutes, KEEL_TIMEOUT_MS). */
  timeoutMs?: number;
  /** How many tools the menu declares at most (default 12, KEEL_TOOL_CAP). */
  menuSize?: number;
  /**
   * The final answer must be JSON matching this zod or JSON Schema: it is checked, sent back to the
   * model once on a mismatch (then the run fails, `invalid_output`), and a done result carries it
   * parsed as `output`.
   */
  output?: OutputSchema<T>;
  /** Every event of the leg as it happens (the streaming API gives them as a generator). */
  onEvent?: (e: LoopEvent) => void;
  /**
   * Who starts the run, as the operator's Cedar policy sees it (`principal`): default the local
   * user (the OS user's name, no groups). `keel serve` gives the token's; an app gives its own user's. Start only.
   */
  principal?: Principal;
}

/** What carries a run on: the options of `run`, less those that only a start can take. */
export type ContinueOptions<T = unknown> = Omit<RunOptions<T>, 'mode' | 'session' | 'principal' | 'createSession'>;

/** Answering a card: who answers (audited; default the OS user), why, and the options of the leg that goes on. */
export interface ApprovalOptions<T = unknown> extends ContinueOptions<T> {
  actor?: string;
  reason?: string | null;
  /** For a plan or goal card (`card.offers_write_consent`): its confirm-once writes may also run without asking. */
  consentWrites?: boolean;
  /**
   * Approve the call with these arguments instead of the model's: for a card with one call, its
   * arguments; for several, `{ "<call_id>": {...} }`. Checked against the tool's JSON Schema and by
   * its `validate` (refused: bad_input naming the field, the card stays pending); exactly the edited
   * call runs, once.
   */
  arguments?: Record<string, unknown>;
  /**
   * Who answers, when not the application itself: a server's token, an MCP client's, the
   * machine's user. A card routed to groups it is not in is refused (forbidden), the card left
   * pending. Left out, the application is the authority and `actor` its name.
   */
  who?: Answerer;
}

/** One card of a batch answer: answered (or found expired), or why not — the others went on. */
export interface BatchAnswer {
  id: string;
  /** `error`: the answer is recorded but the run could not go on (the message says how to carry it on). */
  outcome: 'answered' | 'expired' | 'conflict' | 'not_found' | 'refused' | 'error';
  approval?: ApprovalRecord;
  /** The run's continuation, to drive or queue. */
  leg?: Leg;
  error?: string;
}

/** A PauseResponder's answer to a card. */
export interface ApprovalAnswer {
  decision: ApprovalDecision;
  actor: string;
  reason?: string | null;
  consentWrites?: boolean;
  /** Approve the call with these arguments instead (see ApprovalOptions.arguments). */
  arguments?: Record<string, unknown>;
}

/** The options a run's continuations reuse within one Keel (see RunOptions). */
type Kept = Omit<ContinueOptions, 'signal' | 'onEvent'>;

/** Who answers a run's pauses for `answerPauses`: undefined leaves the run paused. */
export interface PauseResponder {
  /**
   * A question; with `confirm`, a confirmation of held writes whose answer must say yes or no.
   * `from`: a delegate asks it, for the run that started it (whose result waits for the answer).
   */
  answer(
    question: string,
    confirm?: Confirmation,
    from?: { delegate: string; run_id: string; parent_run: string },
  ): Promise<Answer | undefined>;
  /**
   * A card; for a plan or goal (`card.offers_write_consent`) the approver may also let its writes run.
   * Asked again with `refused` when the approver's edit of the arguments was refused: the card is still pending.
   */
  decide(approval: { id: string; card: ApprovalCard; refused?: string }): Promise<ApprovalAnswer | undefined>;
}

/**
 * A run whose model is `mcp:CLIENT` is a `keel mcp serve` session: its cards are carried out by the
 * MCP server that holds the waiting call, not by a leg of the run.
 */
export const MCP_MODEL_PREFIX = 'mcp:';

/** Whether a run is a `keel mcp serve` session (see MCP_MODEL_PREFIX). */
export function isMcpSession(run: { model: string } | undefined): boolean {
  return Boolean(run?.model.startsWith(MCP_MODEL_PREFIX));
}

/** Every leg listens to the interruption signal: a server drives hundreds at once. */
function listenable(c: AbortController): AbortController {
  setMaxListeners(0, c.signal);
  return c;
}

function positive(name: string, n: number): number {
  if (!Number.isFinite(n) || n <= 0) throw new KeelError('bad_input', `the ${name} option must be a positive number (got ${n})`);
  return n;
}

/** The options given, without those set to undefined (so they do not hide the ones a run started with). */
function definedOnly<O extends object>(o: O): O {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as O;
}

export function limitsFromEnv(env: Env): Partial<Limits> {
  const n = (k: string) => {
    const v = env[k];
    if (v === undefined || v === '') return undefined;
    const x = Number(v);
    if (!Number.isFinite(x) || x <= 0) throw new KeelError('config', `${k}=${v} is not a positive number`);
    return x;
  };
  const out: Partial<Limits> = {};
  const steps = n('KEEL_MAX_STEPS');
  const timeout = n('KEEL_TIMEOUT_MS');
  const ttl = n('KEEL_APPROVAL_TTL_MINUTES');
  const maxResult = n('KEEL_MAX_RESULT_CHARS');
  if (maxResult) out.maxResultChars = maxResult;
  if (steps) out.maxSteps = steps;
  if (timeout) out.timeoutMs = timeout;
  if (ttl) out.approvalTtlMs = ttl * 60_000;
  return out;
}

/**
 * The library API: everything the CLI does is a method here. One Keel per process is enough;
 * registries are mounted per plugin-folder set and kept.
 */
export class Keel {
  readonly home: string;
  readonly store: Store | null;
  private readonly opts: KeelOptions;
  private readonly env: Env;
  private readonly sessions: Sessions;
  private readonly registries: Registries;
  private loaded: { file: string | null; config: KeelConfig } | undefined;
  private operator: OperatorPolicy | undefined;
  /** the operator's Cedar policy file, opened on first use (re-read when it changes on disk). */
  private cedar: Promise<PolicyFile | undefined> | undefined;
  /** Aborted by interrupt(): every leg started since the last interrupt listens to it. */
  private interruption = listenable(new AbortController());
  private running = 0;
  /** The shortlist's index terms, kept between processes (made on first use). */
  private indexCache: FileCache | undefined;
  /** The default shortlist (KEEL_TOOL_CAP), one for every run: menus are shared by it (decision 0004). */
  private shortlist: Shortlist | undefined;
  /** A run's own app tools joined to the Keel's, by the run's list. */
  private readonly combined = new WeakMap<readonly AppTool[], readonly AppTool[]>();
  /** Each run's options while it is paused in this Keel: its continuations reuse them (RunOptions). */
  private readonly remembered = new Map<string, Kept>();
  /**
   * Where a leg this Keel does not drive for its caller goes — a delegate's run it started, a
   * parent woken by its delegate's end. Unset: driven here, in the background (SQLite, the library,
   * the CLI). `keel serve` sets its runner, `keel worker` the job queue: any worker may drive it.
   */
  legSink: ((leg: Leg) => void) | undefined;
  /** Legs driven here in the background, by run: a caller waiting for a delegate waits for these. */
  private readonly inflight = new Map<string, Promise<RunResult | undefined>>();
  /** A delegate's run that ended here woke its parent: the parent's next leg, driven here, by the delegate's run id. */
  private readonly woken = new Map<string, Promise<RunResult | undefined>>();
  /** Runs whose leg this Keel is driving now (of those followed, `followed`): never taken over from itself. */
  private readonly driving = new Set<string>();
  /** The onEvent a run's caller gave: a continuation of it driven here in the background (woken by its delegate) tells it too. */
  private readonly listeners = new Map<string, (e: LoopEvent) => void>();
  /** task_stop interrupts a delegate's leg driven here through these (by run). */
  private readonly childStops = new Map<string, AbortController>();
  /** Each delegate's pool, by the parent's registry (so a delegate's menus are shared as a run's are). */
  private readonly delegatePools = new WeakMap<Registry, Map<string, Registry>>();

  constructor(opts: KeelOptions = {}) {
    this.opts = opts;
    this.env = opts.env ?? process.env;
    this.home = opts.home ? resolve(opts.home) : keelHome(this.env);
    if (opts.degradedTools !== undefined && opts.degradedTools !== 'throw' && opts.degradedTools !== 'warn') {
      throw new KeelError('bad_input', `degradedTools: must be 'throw' or 'warn', got ${JSON.stringify(opts.degradedTools)}`);
    }
    // R32 (issue 40): a mistake in the application's own tools fails loudly, before anything is opened.
    if (opts.tools !== undefined && opts.degradedTools !== 'warn') refuseAppTools(checkAppTools(opts.tools).rows);
    this.store = opts.store === undefined ? openStore(this.home, this.env) : opts.store;
    this.sessions = new Sessions(this.store);
    this.registries = new Registries({
      home: this.home,
      env: this.env,
      memory: this.store,
      extraTools: opts.extraTools,
      currentMode: (ctx) => this.sessions.currentMode({ id: ctx.run_id, mode: ctx.mode }),
      makeSubagents: (registry) => this.makeSubagents(registry),
      policy: () => this.policy(),
    });
  }

  /** Where work a later process would redo is remembered: KEEL_HOME/cache/KIND. */
  private cacheDir(kind: 'scripts' | 'index'): string {
    return join(this.home, 'cache', kind);
  }

  /** Plugin folders for a run: the given ones, else KEEL_PLUGINS, else the `defaultPluginDirs` option (none). */
  pluginDirs(dirs?: readonly string[]): string[] {
    return resolvePluginDirs(dirs, this.env, this.opts.defaultPluginDirs ?? []);
  }

  /** Keel's config file (KEEL_CONFIG or KEEL_HOME/config.yaml), read once. */
  getConfig(): KeelConfig {
    this.loaded ??= loadConfig(this.home, this.env);
    return this.loaded.config;
  }

  /** The operator's policy (KEEL_CONFIRM_ONCE_TOOLS and the config's `policy:`), read once. */
  policy(): OperatorPolicy {
    this.getConfig();
    this.operator ??= OperatorPolicy.load(this.loaded?.file ?? null, this.env);
    return this.operator;
  }

  /** where the config's `policy_file` is (relative to the config file); undefined when none is named. */
  policyFilePath(): string | undefined {
    this.getConfig();
    return (this.loaded && policyFileOf(this.loaded)) ?? undefined;
  }

  /**
   * the operator's Cedar policy, opened once per Keel from the config's `policy_file` and
   * checked against the schema of `pool` (a mistake is a KeelError with file:line:col); undefined
   * without one. A file that changes on disk is read again; a bad edit keeps the last good policy.
   */
  operatorPolicy(pool: Iterable<ToolSpec>): Promise<{ current(): PolicyEvaluator } | undefined> {
    const file = this.policyFilePath();
    if (!file) return Promise.resolve(undefined);
    const told = this.opts.onPolicyReload ?? ((msg: string) => process.stderr.write(`keel: ${msg}\n`));
    this.cedar ??= PolicyFile.open(file, [...pool], told).catch((err: unknown) => {
      this.cedar = undefined; // not kept: a fixed file is read again next time
      throw err;
    });
    return this.cedar;
  }

  /** The plugins of these folders, mounted exactly as a run mounts them (status, tools, drift), with the Keel's own app tools. */
  registry(dirs?: readonly string[]): Promise<Registry> {
    return this.registries.mount(this.pluginDirs(dirs), this.opts.tools);
  }

  /** Mounts these plugin folders again, after their manifests changed (`keel mcp serve` watches them). */
  remount(dirs?: readonly string[]): Promise<Registry> {
    return this.registries.remount(this.pluginDirs(dirs), this.opts.tools);
  }

  /** The delegates of every mounted plugin-folder set. */
  get subagents(): Subagents[] {
    return this.registries.subagents();
  }

  /** `keel data reset`: each plugin that keeps data deletes and re-seeds it. */
  resetData(dirs?: readonly string[]): Promise<ResetRow[]> {
    return this.registries.resetData(this.pluginDirs(dirs));
  }

  private makeSubagents(_registry: () => Registry): Subagents | undefined {
    const cfg = this.getConfig().subagents;
    if (!cfg?.delegates.length) return undefined;
    return new Subagents(cfg, {
      hasStore: () => this.store !== null,
      loadRun: (id) => this.requireStore().loadRun(id),
      children: (id) => this.requireStore().listRuns({ parent_run: id, limit: 500 }),
      activeChildren: async () => {
        const store = this.requireStore();
        let n = 0;
        for (const status of ['running', 'paused'] as const) {
          for (const r of await store.listRuns({ status, limit: 1000 })) if (r.parent_run) n++;
        }
        return n;
      },
      startChild: (start) => this.startChild(start),
      stopChild: (parentRun, child) => this.stopChild(parentRun, child),
    });
  }

  /**
   * A delegate's run: stored at once (its id made from the parent and the task call, so a task
   * call met again starts no second run), in its parent's session (it reads the mode fresh),
   * with what its parent had read; then driven — here in the background, or by the legSink.
   */
  private async startChild(c: ChildStart): Promise<RunState> {
    const store = this.requireStore();
    const id = childRunId(c.parent.id, c.call_id);
    const known = await store.loadRun(id);
    if (known) return known;
    const parentKept = this.remembered.get(c.parent.id);
    // The delegate's model, else its parent's (an application's own ModelClient too); none of the parent's output, steps or instructions.
    const model = c.delegate.model ?? parentKept?.model ?? c.parent.model;
    const kept: Kept = { model, ...(parentKept?.tools ? { tools: parentKept.tools } : {}) };
    const parent = {
      run_id: c.parent.id,
      delegate: c.delegate.name,
      depth: (c.parent.parent?.depth ?? 0) + 1,
      task_id: c.task_id,
      request: c.parent.request,
    };
    const deps = await this.deps(kept, {
      id,
      model: typeof model === 'string' ? model : model.spec,
      plugin_dirs: c.parent.plugin_dirs,
      parent,
    });
    const leg = this.tracked(
      await startLeg(deps, {
        message: c.prompt,
        mode: this.sessions.currentMode(c.parent),
        pluginDirs: c.parent.plugin_dirs,
        notes: [...deps.notes, ...missingNote(c.delegate.name, c.delegate.tools, deps.registry.pool)],
        delegate: { parent, session_id: c.parent.session_id, untrusted: c.untrusted },
        id,
        // PC9: a delegate acts for whoever started its parent: the operator's policy sees the same principal.
        ...(c.parent.principal ? { principal: c.parent.principal } : {}),
      }),
    );
    if (typeof model === 'object' || kept.tools) this.remembered.set(leg.run_id, kept);
    this.spawn(leg);
    const run = await store.loadRun(leg.run_id);
    if (!run) throw new KeelError('not_found', `the delegate's run ${leg.run_id} is not in the store`);
    return run;
  }

  /** A leg driven away from its caller: by the legSink, else here in the background (its result kept in `inflight` while it runs). */
  private spawn(leg: Leg): Promise<RunResult | undefined> {
    if (this.legSink) {
      this.legSink(leg);
      return Promise.resolve(undefined);
    }
    // A leg that fails here leaves its run as any failed process does: recovered by the next resume (R18).
    const p: Promise<RunResult | undefined> = collect(leg.drive(), this.listeners.get(leg.run_id)).catch(() => undefined);
    this.inflight.set(leg.run_id, p);
    void p.then(() => {
      if (this.inflight.get(leg.run_id) === p) this.inflight.delete(leg.run_id);
    });
    return p;
  }

  /**
   * A leg has ended or paused. A delegate's run that ended wakes its parent if the parent waits
   * for it; a run that paused for a delegate that has already ended (it ended while this run
   * paused) wakes itself. The pause is claimed once: one waker carries the parent on.
   */
  private async afterLeg(leg: Leg, r: RunResult): Promise<void> {
    if (leg.parent_run && (r.status === 'done' || r.status === 'failed')) {
      this.childStops.delete(leg.run_id);
      await this.wakeParent(leg.parent_run, leg.run_id);
    } else if (r.status === 'paused' && r.reason === 'awaiting_task') {
      const child = await this.requireStore().loadRun(r.task.run_id);
      if (child && ended(child)) await this.wakeParent(leg.run_id, child.id);
    }
  }

  private async wakeParent(parentRun: string, childRun: string): Promise<void> {
    const p = await this.requireStore().loadRun(parentRun);
    if (p?.status !== 'paused' || p.pause?.kind !== 'task' || p.pause.child_run !== childRun) return;
    let leg: Leg;
    try {
      leg = await this.continueLeg(parentRun);
    } catch (err) {
      // Another process woke it first (or it is no longer waiting): it goes on there.
      if (err instanceof KeelError && (err.code === 'conflict' || err.code === 'not_paused')) return;
      throw err;
    }
    const next = this.spawn(leg);
    if (!this.legSink) this.woken.set(childRun, next);
  }

  /**
   * A result as the caller should see it once the delegates it waits for have moved: a run
   * that ended and woke its parent here gives the parent's result; a parent waiting for a delegate
   * driven here waits for it; a delegate waiting for a person is shown on the parent's result.
   */
  private async settle(r: RunResult): Promise<RunResult> {
    for (;;) {
      if (r.status !== 'paused') {
        const next = this.woken.get(r.run_id);
        if (!next) return r;
        this.woken.delete(r.run_id);
        const p = await next;
        if (!p) return r;
        r = p;
        continue;
      }
      if (r.reason !== 'awaiting_task') return r;
      const child = r.task.run_id;
      const self = this.woken.get(child);
      if (self) {
        this.woken.delete(child);
        const p = await self;
        if (!p) return r;
        r = p;
        continue;
      }
      const running = this.inflight.get(child) ?? (await this.carryOnLeft(child));
      if (!running) return this.withWaiting(r);
      await running;
    }
  }

  /**
   * A delegate its parent waits for, left running by a process that died: taken over and driven
   * here in the background (its calls in flight reported, never run again), as any run is.
   */
  private async carryOnLeft(runId: string): Promise<Promise<RunResult | undefined> | undefined> {
    const run = this.legSink || this.driving.has(runId) ? undefined : await this.store?.loadRun(runId);
    if (run?.status !== 'running') return undefined;
    try {
      return this.spawn(await this.continueLeg(runId));
    } catch (err) {
      // Its owner is alive (it goes on there), or another process took it first.
      if (err instanceof KeelError) return undefined;
      throw err;
    }
  }

  /** A run waiting for its delegate, with what the delegate itself waits for (a question, a card; or its own delegate's). */
  private async withWaiting(r: Extract<RunResult, { reason: 'awaiting_task' }>): Promise<RunResult> {
    const child = this.store ? await this.store.loadRun(r.task.run_id) : undefined;
    if (child?.status !== 'paused') return r;
    let waiting = toResult(child) as PausedResult;
    if (waiting.reason === 'awaiting_task') waiting = (await this.withWaiting(waiting)) as PausedResult;
    return { ...r, task: { ...r.task, waiting } };
  }

  /** For task_stop: a delegate's run ends for good (cancelled, audited); one driven here is interrupted first. */
  private async stopChild(parentRun: string, child: RunState): Promise<string> {
    const taskId = child.parent?.task_id ?? child.id;
    const running = this.inflight.get(child.id);
    if (running) {
      this.childStops.get(child.id)?.abort(new Error('stopped by task_stop'));
      await running;
    }
    try {
      await this.cancel(child.id, { actor: `run ${parentRun} (task_stop)`, reason: 'stopped by task_stop' });
      return SAY.taskStopped(taskId);
    } catch (err) {
      if (err instanceof KeelError) return SAY.taskNotStopped(taskId, err.message);
      throw err;
    }
  }

  /**
   * What a delegate's leg is given over its parent's: its delegate's tools out of the parent's
   * pool (ask_user always: it asks the same person; the task tools while it may nest), its
   * instructions, its step budget, and a stop of its own (task_stop).
   */
  private delegateDeps<D extends EngineDeps>(base: D, run: Pick<RunState, 'id' | 'parent'>): D {
    const p = run.parent;
    const cfg = this.getConfig().subagents;
    const d = p && cfg?.delegates.find((x) => x.name === p.delegate);
    if (!p || !cfg || !d) {
      throw new KeelError(
        'config',
        `run ${run.id} is the delegate ${p?.delegate}'s, which the config no longer names: add it back under subagents.delegates to carry the run on, or cancel it`,
        `keel runs cancel ${run.id}`,
      );
    }
    const registry = this.delegatePool(base.registry, d.name, d.tools, p.depth < cfg.max_depth);
    const steps = d.max_steps ?? cfg.max_steps;
    let stop = this.childStops.get(run.id);
    if (!stop) this.childStops.set(run.id, (stop = new AbortController()));
    const { output: _o, onModeChange: _m, ...rest } = base;
    return {
      ...rest,
      registry,
      instructions: d.instructions,
      limits: steps ? { ...base.limits, maxSteps: steps } : base.limits,
      signal: base.signal ? AbortSignal.any([base.signal, stop.signal]) : stop.signal,
    } as D;
  }

  private delegatePool(reg: Registry, name: string, tools: readonly string[], nests: boolean): Registry {
    let byName = this.delegatePools.get(reg);
    if (!byName) this.delegatePools.set(reg, (byName = new Map()));
    const key = `${name}\u0000${nests}`;
    let r = byName.get(key);
    if (!r) {
      const pool = reg.pool.filter((t) => (tools.includes(t.name) && (nests || !TASK_TOOLS.has(t.name))) || t.name === 'ask_user');
      r = { ...reg, pool, byName: new Map(pool.map((t) => [t.name, t])), close: async () => {} };
      byName.set(key, r);
    }
    return r;
  }

  private limits(): Partial<Limits> {
    return { ...limitsFromEnv(this.env), ...this.opts.limits };
  }

  /**
   * What a leg is given. `stored` is the run being carried on: its model spec and plugin folders
   * are used unless the options name others, and a spec no provider can rebuild (a ModelClient of
   * the application's) is refused in one sentence that names the option.
   */
  private async deps(
    o: Kept & Pick<RunOptions, 'signal'>,
    stored?: Pick<RunState, 'id' | 'model' | 'plugin_dirs' | 'parent'>,
  ): Promise<EngineDeps & { notes: string[] }> {
    const dirs = o.pluginDirs?.length ? this.pluginDirs(o.pluginDirs) : stored ? stored.plugin_dirs : this.pluginDirs();
    const { registry, notes } = await this.registries.forRun(dirs, this.appTools(o.tools));
    // R32 (issue 40): an app tool the mount refused (its names meet the pool here) fails the run loudly.
    if (this.opts.degradedTools !== 'warn') refuseAppTools(registry.plugins.find((p) => p.source === 'code')?.degraded ?? []);
    const client = typeof o.model === 'object' ? o.model : await this.modelFor(o.model ?? stored?.model, stored);
    const spec = client.spec;
    const output = o.output ? await outputCheck(o.output) : undefined;
    const instructions = [o.instructions?.trim(), output?.instruction].filter(Boolean).join('\n\n');
    const limits = { ...this.limits() };
    if (o.maxSteps !== undefined) limits.maxSteps = positive('maxSteps', o.maxSteps);
    if (o.timeoutMs !== undefined) limits.timeoutMs = positive('timeoutMs', o.timeoutMs);
    this.indexCache ??= fileCache(this.cacheDir('index'));
    const cedar = await this.operatorPolicy(registry.byName.values());
    const base: EngineDeps & { notes: string[] } = {
      ...(cedar ? { policy: () => cedar.current() } : {}),
      registry,
      notes,
      model: client,
      store: this.store,
      limits,
      shortlist:
        o.menuSize !== undefined
          ? bm25Shortlist(positive('menuSize', o.menuSize), this.indexCache)
          : (this.opts.shortlist ?? (this.shortlist ??= bm25Shortlist(toolCapFromEnv(this.env), this.indexCache))),
      ...(instructions ? { instructions } : {}),
      ...(output ? { output } : {}),
      // Counted for real models when ai-tokenizer is installed; for the scripted one (tests, demos) only when asked (KEEL_COUNT_TOKENS=1).
      countTokens: countsTokens(this.env, spec),
      currentMode: (run) => this.sessions.currentMode(run),
      onModeChange: (run) => this.sessions.changed(run),
      sessionWatch: this.sessions,
      signal: o.signal ? AbortSignal.any([this.interruption.signal, o.signal]) : this.interruption.signal,
    };
    // D1: a delegate's run, whichever leg and process: its delegate's tools, instructions and budget.
    return stored?.parent ? this.delegateDeps(base, stored) : base;
  }

  /** The Keel's own app tools, with a run's added (the same array for the same run's list: its menus are shared). */
  private appTools(extra: readonly AppTool[] | undefined): readonly AppTool[] | undefined {
    if (!extra?.length) return this.opts.tools;
    if (!this.opts.tools?.length) return extra;
    let both = this.combined.get(extra);
    if (!both) this.combined.set(extra, (both = [...this.opts.tools, ...extra]));
    return both;
  }

  /**
   * Every tool a run over these plugin folders (and app tools) could be offered, with its effect,
   * declared and effective gate, and where it comes from (`app` for tools declared in code).
   */
  async tools(o: Pick<RunOptions, 'pluginDirs' | 'tools'> = {}): Promise<(ToolRow & { plugin: string })[]> {
    const registry = await this.registries.mount(this.pluginDirs(o.pluginDirs), this.appTools(o.tools));
    return registry.plugins.flatMap((p) => p.tools.map((t) => ({ ...t, plugin: p.name })));
  }

  private async modelFor(spec: string | undefined, stored: Pick<RunState, 'id' | 'model'> | undefined): Promise<ModelClient> {
    try {
      return await createModel(spec, this.env, this.cacheDir('scripts'));
    } catch (err) {
      if (!stored || !(err instanceof KeelError || err instanceof ModelError)) throw err;
      // A ModelError: what continues the run after a card (continued) then says how (--model SPEC).
      throw new ModelError(
        `run ${stored.id} was started with the model "${stored.model}", which Keel cannot rebuild here (${err.message}): pass the model again (the \`model\` option; --model in the CLI)`,
      );
    }
  }

  /** The options a run's continuation is given: those given now over those its start was given here. */
  private kept(runId: string, o: ContinueOptions): Kept & Pick<RunOptions, 'signal'> {
    return { ...this.remembered.get(runId), ...definedOnly(o) };
  }

  /** Drives a leg to its end or pause, collecting its result (with `output` parsed); the run's options are forgotten once it ends. */
  private async finish<T>(leg: Leg, o: ContinueOptions<T>): Promise<RunResult<T>> {
    // D2: a continuation of this run that its delegate's end starts here tells the same listener.
    if (o.onEvent && this.getConfig().subagents?.delegates.length) this.listeners.set(leg.run_id, o.onEvent);
    const r = await collect(leg.drive(), o.onEvent);
    // D2: a run that waits for its delegate (or woke its parent) gives the result the wait came to.
    const settled = this.delegating(r) ? await this.settle(r) : r;
    return this.outcome(settled, this.kept(settled.run_id, o)) as Promise<RunResult<T>>;
  }

  /** Which delegate asks a question its parent's result shows (for the responder to say so). */
  private async askedBy(runId: string): Promise<{ delegate: string; run_id: string; parent_run: string } | undefined> {
    const p = (await this.store?.loadRun(runId))?.parent;
    return p && { delegate: p.delegate, run_id: runId, parent_run: p.run_id };
  }

  /** Whether a result may have delegates to wait for, or be followed by its parent's (a delegate's end woke it here). */
  private delegating(r: RunResult): boolean {
    return (r.status === 'paused' && r.reason === 'awaiting_task') || this.woken.size > 0;
  }

  private async outcome(r: RunResult, o: Kept): Promise<RunResult> {
    if (r.status !== 'paused') {
      this.remembered.delete(r.run_id);
      this.listeners.delete(r.run_id);
    }
    if (r.status !== 'done' || !o.output) return r;
    const verdict = (await outputCheck(o.output)).parse(r.answer);
    if (verdict.ok) return { ...r, output: verdict.value };
    // A tool that answered directly (R12) is not sent back: its answer stands, without `output`.
    return { ...r, warnings: [...r.warnings, `the answer does not match the output schema: ${verdict.problem}`] };
  }

  /** Remembers a run's options for its continuations in this Keel (see RunOptions). */
  private remember(runId: string, o: RunOptions): void {
    const { signal: _s, onEvent: _e, mode: _m, session: _session, principal: _p, createSession: _c, ...kept } = definedOnly(o);
    if (Object.keys(kept).length) this.remembered.set(runId, kept);
  }

  /**
   * Starts a run: it is stored at once (its id is known) and worked when its leg is driven — now
   * (`stream`, `run`) or when a server's queue gets to it.
   */
  async startRun(message: string, o: RunOptions = {}): Promise<Leg> {
    const deps = await this.deps(o);
    const session = o.session ? await this.sessions.open(o.session, deps.model.spec, o.createSession === true) : undefined;
    const input = {
      message,
      mode: o.mode ?? session?.mode,
      pluginDirs: this.pluginDirs(o.pluginDirs),
      session,
      notes: deps.notes,
      principal: o.principal ? checkedPrincipal(o.principal) : { kind: 'user' as const, name: osUser(this.env), groups: [] },
    };
    const leg = this.tracked(await startLeg(deps, input));
    this.remember(leg.run_id, o);
    return leg;
  }

  /** Runs a request, giving every event as it happens; the generator's return value is the result. */
  async *stream<T = unknown>(message: string, o: RunOptions<T> = {}): AsyncGenerator<LoopEvent, RunResult<T>> {
    const leg = await this.startRun(message, o);
    const r = yield* leg.drive();
    const settled = this.delegating(r) ? await this.settle(r) : r;
    return (await this.outcome(settled, this.kept(settled.run_id, o))) as RunResult<T>;
  }

  /** A leg as this Keel drives it: its session followed, counted while it runs (interrupt()). */
  private tracked(leg: Leg): Leg {
    // D1: a delegate's run is not its session's last run (the session's next run continues the parent's transcript).
    if (leg.parent_run) return { ...leg, drive: () => this.followed(leg, this.active(leg.drive())) };
    // D2: a run that may wait for delegates is followed to its end (no generator of its own otherwise).
    if (this.getConfig().subagents?.delegates.length && this.store) {
      return { ...leg, drive: () => this.followed(leg, this.sessions.track(this.active(leg.drive()))) };
    }
    return { ...leg, drive: () => this.sessions.track(this.active(leg.drive())) };
  }

  /** A leg's events as they come, then its delegates or parent told (afterLeg) before its result is given. */
  private async *followed(leg: Leg, gen: AsyncGenerator<LoopEvent, RunResult>): AsyncGenerator<LoopEvent, RunResult> {
    this.driving.add(leg.run_id);
    let r: RunResult;
    try {
      r = yield* gen;
    } finally {
      this.driving.delete(leg.run_id);
    }
    await this.afterLeg(leg, r);
    return r;
  }

  /** Runs a request until it ends or pauses. (A third argument, onEvent, is the old form of `o.onEvent`.) */
  async run<T = unknown>(message: string, o: RunOptions<T> = {}, onEvent?: (e: LoopEvent) => void): Promise<RunResult<T>> {
    const opts = onEvent ? { ...o, onEvent } : o;
    return this.finish(await this.startRun(message, opts), opts);
  }

  /**
   * Switches a session's mode (`/mode` in chat), during a run or between runs. Every handler's
   * fresh check sees it at once; a paused run continues in the new mode.
   */
  setMode(sessionId: string, mode: Mode): Promise<void> {
    return this.sessions.setMode(sessionId, mode);
  }

  private requireStore(): Store {
    if (!this.store) throw new KeelError('bad_input', 'this Keel has no store: runs cannot be resumed');
    return this.store;
  }

  async getRun(runId: string): Promise<RunState> {
    const run = await this.requireStore().loadRun(runId);
    if (!run) throw new KeelError('not_found', `no run ${runId} in the store`, 'keel runs list shows the runs');
    return run;
  }

  listRuns(query?: RunQuery): Promise<RunSummary[]> {
    return this.requireStore().listRuns(query);
  }

  /** The delegates' runs a run started, oldest first: each with its task id, delegate and status. */
  async children(runId: string): Promise<{ run_id: string; task_id: string; delegate: string; status: string; reason: string | null }[]> {
    const store = this.requireStore();
    const out = [];
    for (const c of (await store.listRuns({ parent_run: runId, limit: 500 })).reverse()) {
      const run = await store.loadRun(c.id);
      if (run?.parent)
        out.push({ run_id: run.id, task_id: run.parent.task_id, delegate: run.parent.delegate, status: run.status, reason: run.reason });
    }
    return out;
  }

  /** Approval cards (filtered by status or run); pending ones past their expiry are expired first, and their runs ended. */
  async listApprovals(filter: { status?: ApprovalStatus; run_id?: string } = {}): Promise<ApprovalRecord[]> {
    const store = this.requireStore();
    await this.expireApprovals();
    return store.listApprovals(filter);
  }

  /**
   * Marks every pending card past its expiry as expired and, in the same step, ends the run that
   * waited on it (nothing runs; the run fails with `approval_expired`) — whoever notices first: a
   * list, the inbox, an MCP poll, the server's sweep. Each run's ending leg is driven here, calling no
   * model, unless `drive` takes it (a server's runner or queue). `stranded` also ends runs still
   * paused on a card that expired earlier (a process that stopped between the two); `except` leaves
   * one run to its caller, which continues it itself. Returns the cards expired now.
   */
  async expireApprovals(
    o: { drive?: (leg: Leg) => void; onEvent?: (runId: string, e: LoopEvent) => void; stranded?: boolean; except?: string } = {},
  ): Promise<ApprovalRecord[]> {
    // A4: expiring a card and ending its run are one step, whoever notices.
    const store = this.requireStore();
    const expired = await expireApprovals(store);
    const ending = [...expired];
    if (o.stranded) {
      for (const r of await store.listRuns({ status: 'paused', limit: 500 })) {
        if (r.reason !== 'awaiting_approval') continue;
        const run = await store.loadRun(r.id);
        const card = run?.pause?.kind === 'approval' ? await store.getApproval(run.pause.approval_id) : undefined;
        if (card?.status === 'expired' && !ending.some((a) => a.id === card.id)) ending.push(card);
      }
    }
    for (const a of ending) {
      if (a.run_id === o.except) continue;
      const leg = await this.expiryLeg(a);
      if (!leg) continue;
      if (o.drive) o.drive(leg);
      else await collect(leg.drive(), o.onEvent && ((e) => o.onEvent?.(a.run_id, e)));
    }
    return expired;
  }

  /** The leg that ends a run whose card expired; undefined when nothing waits on it any more (ended or taken elsewhere). */
  private async expiryLeg(a: ApprovalRecord): Promise<Leg | undefined> {
    const run = await this.requireStore().loadRun(a.run_id);
    if (!run || run.status !== 'paused' || run.pause?.kind !== 'approval' || run.pause.approval_id !== a.id) return undefined;
    // An MCP session's card: the server holding its call answers the call (no leg of the run waits on it).
    if (isMcpSession(run)) return undefined;
    // No model is called to end a run: one whose model can no longer be built still ends.
    const model: ModelClient = {
      spec: run.model,
      stream: () => {
        throw new ModelError('a run ended by its expired card calls no model');
      },
    };
    try {
      return this.tracked(await approvalLeg(await this.deps({ model }, run), a));
    } catch (err) {
      // Another reader or process claimed it first: it ends there.
      if (err instanceof KeelError && (err.code === 'conflict' || err.code === 'not_paused')) return undefined;
      throw err;
    }
  }

  /**
   * Answers a paused run's question and carries the run on. Plain text answers a plain
   * question; a confirmation of held writes needs a decision (`confirm`, or `{ confirm, text }`).
   */
  async answer<T = unknown>(runId: string, answer: string | Answer, o: ContinueOptions<T> = {}): Promise<RunResult<T>> {
    return this.finish(await this.answerRun(runId, answer, o), o);
  }

  /** Answers a confirmation of held writes: yes lets them run, no leaves them unconsented. */
  confirm<T = unknown>(runId: string, yes: boolean, o: ContinueOptions<T> & { text?: string } = {}): Promise<RunResult<T>> {
    return this.answer(runId, { text: o.text ?? (yes ? 'yes' : 'no'), confirm: yes }, o);
  }

  /** Answers a paused run's question: the pause is claimed at once (a second answer is refused); the leg goes on when driven. */
  async answerRun(runId: string, answer: string | Answer, o: ContinueOptions = {}): Promise<Leg> {
    const run = await this.getRun(runId);
    const deps = await this.deps(this.kept(runId, o), run);
    return this.tracked(await answerLeg(deps, runId, typeof answer === 'string' ? { text: answer } : answer));
  }

  /**
   * Approves a card: exactly its calls run, once, and the run goes on. For a plan or goal,
   * `consentWrites` also lets its confirm-once writes run without asking. Audited with `actor`.
   */
  approve<T = unknown>(approvalId: string, o: ApprovalOptions<T> = {}): Promise<RunResult<T>> {
    return this.decide(approvalId, 'approve', o);
  }

  /** Rejects a card: nothing of it runs, and the run goes on so the model can say nothing changed. */
  reject<T = unknown>(approvalId: string, o: ApprovalOptions<T> = {}): Promise<RunResult<T>> {
    return this.decide(approvalId, 'reject', o);
  }

  private async decide<T>(id: string, decision: ApprovalDecision, o: ApprovalOptions<T>): Promise<RunResult<T>> {
    const store = this.requireStore();
    const card = await store.getApproval(id);
    if (card && isMcpSession(await store.loadRun(card.run_id))) {
      throw new KeelError(
        'bad_input',
        `approval ${id} belongs to an MCP session (run ${card.run_id}), whose server carries the call out: answer it with answerCard (or keel approvals approve|reject ${id})`,
      );
    }
    const answered = await this.answerCard(id, decision, o);
    // S2: a library call returns the run's result, so a run only its own model can continue is
    // refused in one sentence naming the option — the answer is kept (the CLI says so and exits 0).
    if (answered.appModel !== undefined) {
      throw new ModelError(
        `approval ${id} is recorded (${answered.approval.status}); run ${answered.approval.run_id} was started with the model "${answered.appModel}", which Keel cannot rebuild here: pass the model again (the \`model\` option) or resume the run with it`,
      );
    }
    return answered.result as RunResult<T>;
  }

  /**
   * Answers any card — a run's, or an MCP session's — and continues what waits on it: a run's leg
   * here (its result returned), or the MCP call its server holds (no result here). The CLI and
   * chat answer cards with it; an application uses approve and reject.
   */
  async answerCard(
    id: string,
    decision: ApprovalDecision,
    o: ApprovalOptions = {},
  ): Promise<{ approval: ApprovalRecord; result?: RunResult; appModel?: string }> {
    // A run an application drives with a model of its own (a ModelClient, not a spec Keel can
    // build): the answer is recorded, and the run continues when that application resumes it.
    const appModel = o.model === undefined ? await this.appModelOf(id) : undefined;
    if (appModel) return { approval: await this.recordAnswer(id, decision, o), appModel };
    const { approval, leg } = await this.answerApproval(id, decision, o);
    if (!leg) return { approval };
    return { approval, result: await this.continued(approval, () => this.finish(leg, o)) };
  }

  /**
   * Records the answer to an approval (audited) and claims its run's continuation, to be driven
   * now or when a server's queue gets to it. Unknown → not_found; already answered → conflict; past
   * its expiry → recorded as expired (the continuation ends the run, nothing runs).
   */
  async answerApproval(id: string, decision: ApprovalDecision, o: ApprovalOptions = {}): Promise<{ approval: ApprovalRecord; leg?: Leg }> {
    const approval = await this.recordAnswer(id, decision, o);
    // An MCP session's card: the server holding the call carries it out (no leg of the run waits on it).
    if (isMcpSession(await this.getRun(approval.run_id))) return { approval };
    const leg = await this.continued(approval, () => this.approvalLeg(approval, o));
    return { approval, leg };
  }

  /** Records the answer to a card (audited), its run left where it is. */
  private async recordAnswer(id: string, decision: ApprovalDecision, o: ApprovalOptions): Promise<ApprovalRecord> {
    const actor = o.actor ?? osUser(this.env);
    // A9: an edit is not looked at for a card the answerer may not answer: recordApprovalAnswer refuses it first.
    const routed = o.who ? await this.requireStore().getApproval(id) : undefined;
    const refused = routed !== undefined && o.who !== undefined && !mayAnswer(routed.card, o.who);
    return recordApprovalAnswer(this.requireStore(), id, decision, actor, o.reason ?? null, new Date(), {
      consentWrites: o.consentWrites,
      edit: o.arguments === undefined || refused ? undefined : await this.editOf(id, o),
      who: o.who,
    });
  }

  /** The model spec of a card's run when only its application can continue it (a ModelClient of its own). */
  private async appModelOf(id: string): Promise<string | undefined> {
    const card = await this.requireStore().getApproval(id);
    const run = card ? await this.requireStore().loadRun(card.run_id) : undefined;
    if (!run || isMcpSession(run) || this.remembered.get(run.id)?.model !== undefined) return undefined;
    return builtInSpec(run.model) ? undefined : run.model;
  }

  /**
   * Answers several cards in one action — each through `answerApproval`, on its own and once
   * (audited each), in the order given; a card answered meanwhile (or unknown, or refused) is
   * reported as such and the others proceed. `run` (and `runs`) adds every pending card of that run.
   * The batch as a whole is checked before any card is answered (issue 40): at most MAX_BATCH ids
   * and runs, every run known — else nothing is answered. The legs returned are the runs'
   * continuations, to be driven (or queued) by the caller.
   */
  async answerApprovals(
    ids: readonly string[],
    decision: ApprovalDecision,
    o: Omit<ApprovalOptions, 'arguments'> & { run?: string; runs?: readonly string[] } = {},
  ): Promise<BatchAnswer[]> {
    const { run, runs = [], ...opts } = o;
    const chosen = [...new Set([...(run === undefined ? [] : [run]), ...runs])];
    if (ids.length > MAX_BATCH || chosen.length > MAX_BATCH) {
      throw new KeelError(
        'bad_input',
        `a batch answers at most ${MAX_BATCH} cards and ${MAX_BATCH} runs at once (given ${ids.length} and ${chosen.length}); nothing was answered`,
      );
    }
    for (const r of chosen)
      if (!(await this.requireStore().loadRun(r))) throw new KeelError('not_found', `no run ${r}; nothing was answered`);
    const all = [...ids];
    for (const r of chosen) for (const a of await this.listApprovals({ status: 'pending', run_id: r })) all.push(a.id);
    // A9: a card of the batch routed to groups the answerer is not in refuses the whole batch, as its cap does.
    if (opts.who) {
      for (const id of new Set(all)) {
        const a = await this.requireStore().getApproval(id);
        if (a && !mayAnswer(a.card, opts.who)) {
          const refused = notYours(id, a.card, opts.who);
          throw new KeelError('forbidden', `${refused.message}; nothing was answered`, refused.cliHint);
        }
      }
    }
    const out: BatchAnswer[] = [];
    for (const id of new Set(all)) {
      try {
        const { approval, leg } = await this.answerApproval(id, decision, opts);
        out.push({ id, outcome: approval.status === 'expired' ? 'expired' : 'answered', approval, ...(leg ? { leg } : {}) });
      } catch (err) {
        if (!(err instanceof KeelError) || err.code === 'unavailable') throw err;
        const outcome =
          err.code === 'conflict' || err.code === 'not_found'
            ? err.code
            : err.code === 'bad_input' || err.code === 'forbidden'
              ? 'refused'
              : 'error';
        out.push({ id, outcome, error: err.message });
      }
    }
    return out;
  }

  /** An edit is checked against the tools of the card's run (its pool: plugins and app tools). */
  private async editOf(id: string, o: ApprovalOptions): Promise<ApprovalEdit | undefined> {
    const card = await this.requireStore().getApproval(id);
    if (!card) return undefined; // not_found, said by recordApprovalAnswer
    const run = await this.requireStore().loadRun(card.run_id);
    if (!run) throw new KeelError('not_found', `approval ${id}: its run ${card.run_id} is not in the store`);
    if (isMcpSession(run)) {
      throw new KeelError(
        'bad_input',
        `arguments: approval ${id} belongs to an MCP session, whose client made the call: its arguments cannot be changed here; approve or reject it as it is`,
      );
    }
    const dirs = o.pluginDirs?.length ? this.pluginDirs(o.pluginDirs) : run.plugin_dirs;
    const { registry } = await this.registries.forRun(dirs, this.appTools(this.kept(run.id, o).tools));
    // R13 (issue 40): the run's calls so far — its steps, then the paused reply's — for the repeat guard.
    const calls = [...run.steps, ...(run.pause?.kind === 'approval' ? run.pause.calls : [])];
    // PC10: an edit is asked about as the model's call was: the run's principal, the session's mode now, what it has read.
    const cedar = await this.operatorPolicy(registry.byName.values());
    const policy = cedar?.current();
    return {
      arguments: o.arguments as Record<string, unknown>,
      tool: (name) => registry.byName.get(name),
      validate: validateProblem,
      calls,
      ...(policy
        ? {
            policy: (tool: ToolSpec, args: Record<string, unknown>) =>
              policy.evaluate({
                tool,
                args,
                mode: this.sessions.currentMode(run),
                session: run.session_id,
                principal: run.principal ?? UNRECORDED_PRINCIPAL,
                untrusted: untrustedRead(run),
                at: new Date(),
              }),
          }
        : {}),
    };
  }

  /** The answer is stored whatever happens next: an error after it says so, and how to carry the run on. */
  private async continued<T>(approval: ApprovalRecord, next: () => Promise<T>): Promise<T> {
    try {
      return await next();
    } catch (err) {
      if (!(err instanceof KeelError || err instanceof ModelError)) throw err;
      throw new KeelError(
        err instanceof KeelError ? err.code : 'config',
        `approval ${approval.id} is recorded (${approval.status}), but run ${approval.run_id} could not continue: ${err.message}. Fix that, then continue the run`,
        `keel resume ${approval.run_id}${err instanceof ModelError ? ' --model SPEC' : ''}`,
      );
    }
  }

  private async approvalLeg(approval: ApprovalRecord, o: ContinueOptions = {}): Promise<Leg> {
    const run = await this.getRun(approval.run_id);
    const deps = await this.deps(this.kept(run.id, o), run);
    return this.tracked(await approvalLeg(deps, approval));
  }

  /**
   * Carries on a run that waits for no one: its card answered, interrupted (Ctrl-C, SIGTERM, an
   * abort signal), or left by a process that died (taken over: calls it had in flight are reported,
   * never run again). A run waiting on its card or question is refused, saying how to answer it.
   * (`resume(runId, answer)` is the old form of `answer`.)
   */
  resume<T = unknown>(runId: string, o?: ContinueOptions<T>): Promise<RunResult<T>>;
  /** @deprecated use `answer(runId, answer, options)`. */
  resume<T = unknown>(
    runId: string,
    answer: string | Answer,
    o?: ContinueOptions<T>,
    onEvent?: (e: LoopEvent) => void,
  ): Promise<RunResult<T>>;
  async resume<T = unknown>(
    runId: string,
    a?: string | Answer | ContinueOptions<T>,
    o: ContinueOptions<T> = {},
    onEvent?: (e: LoopEvent) => void,
  ): Promise<RunResult<T>> {
    if (typeof a === 'string' || (a && ('text' in a || 'confirm' in a))) {
      return this.answer(runId, a as string | Answer, onEvent ? { ...o, onEvent } : o);
    }
    const opts = (a ?? {}) as ContinueOptions<T>;
    return this.finish(await this.continueLeg(runId, opts), opts);
  }

  /** @deprecated use `resume(runId, { onEvent })`. */
  continueRun(runId: string, onEvent?: (e: LoopEvent) => void, o: ContinueOptions = {}): Promise<RunResult> {
    return this.resume(runId, { ...o, onEvent });
  }

  /** @deprecated use `approve(id, { actor, reason })` or `reject(id, { actor, reason })`; it returns the same `{ approval, result }` as before. */
  async respondToApproval(
    id: string,
    decision: ApprovalDecision,
    actor: string,
    reason: string | null = null,
    onEvent?: (e: LoopEvent) => void,
    options: { consentWrites?: boolean } = {},
  ): Promise<{ approval: ApprovalRecord; result: RunResult }> {
    const result = await this.decide(id, decision, { actor, reason, onEvent, consentWrites: options.consentWrites });
    const approval = await this.requireStore().getApproval(id);
    if (!approval) throw new KeelError('not_found', `approval ${id} is not in the store`);
    return { approval, result };
  }

  /**
   * A leg a worker takes from the queue (#15): the run was handed over with what to do (`job`), and
   * is taken here — by one worker only; another gets a conflict.
   */
  async queuedLeg(runId: string, job: LegJob, o: ContinueOptions = {}): Promise<Leg> {
    if (job.kind === 'continue') return this.continueLeg(runId, o);
    if (job.kind === 'approval') {
      const approval = await this.requireStore().getApproval(job.approval_id);
      if (!approval) throw new KeelError('not_found', `approval ${job.approval_id} is not in the store`);
      return this.approvalLeg(approval, o);
    }
    const run = await this.getRun(runId);
    const deps = await this.deps(this.kept(runId, o), run);
    return this.tracked(await queuedLeg(deps, runId, job));
  }

  /**
   * Claims a run to carry it on without an answer (see resume), to be driven now or when a
   * server's queue gets to it.
   */
  async continueLeg(runId: string, o: ContinueOptions = {}): Promise<Leg> {
    const run = await this.getRun(runId);
    const pause = run.pause;
    if (run.status === 'done' || run.status === 'failed') {
      throw new KeelError('not_paused', `run ${runId} is ${run.status} (${run.reason}) already: there is nothing to continue`);
    }
    if (pause?.kind === 'approval') {
      const store = this.requireStore();
      // A4: cards past their expiry end their runs; this run's, if expired, is ended by the leg below.
      await this.expireApprovals({ except: runId });
      const approval = await store.getApproval(pause.approval_id);
      if (!approval) throw new KeelError('not_found', `run ${runId} waits for approval ${pause.approval_id}, which is not in the store`);
      if (approval.status === 'pending') {
        throw new KeelError(
          'not_paused',
          `run ${runId} waits for approval ${approval.id}: answer the approval, and the run goes on`,
          `keel approvals approve|reject ${approval.id}`,
        );
      }
      return this.approvalLeg(approval, o);
    }
    if (pause?.kind === 'task') {
      // D2: carrying on a run that waits for its delegate carries the delegate on (left by a dead
      // process, or interrupted); the run itself goes on when the delegate ends.
      const child = await this.requireStore().loadRun(pause.child_run);
      const person = child?.status === 'paused' && (child.pause?.kind === 'ask_user' || child.pause?.kind === 'approval');
      if (child && !ended(child) && !person) {
        // A run's owner is this process while it drives it: a leg of its own is never taken over here (R18).
        if (this.driving.has(child.id) || this.inflight.has(child.id)) {
          throw new KeelError(
            'conflict',
            `run ${runId} waits for its delegate's run ${child.id}, which this process is driving: it goes on when that run ends`,
          );
        }
        return this.continueLeg(child.id, {});
      }
    }
    if (run.status === 'paused' && pause?.kind === 'ask_user') {
      throw pause.confirm
        ? new KeelError(
            'bad_input',
            `run ${runId} asks the user to confirm ${pause.confirm.tools.join(', ')}: resume it with a decision`,
            `keel resume ${runId} --yes or --no`,
          )
        : new KeelError('bad_input', `run ${runId} waits for an answer: resume it with one`, `keel resume ${runId} --answer TEXT`);
    }
    const deps = await this.deps(this.kept(runId, o), run);
    return this.tracked(await continueLeg(deps, runId));
  }

  /**
   * Ends a paused or stalled run for good (`keel runs cancel`), with a reason, audited. Its pending
   * card is answered as rejected; calls it had in flight are reported, never run again. A run a
   * live process is driving is refused (stop that process first).
   */
  async cancel(runId: string, o: { actor?: string; reason?: string | null; onEvent?: (e: LoopEvent) => void } = {}): Promise<RunResult> {
    const store = this.requireStore();
    const run = await this.getRun(runId);
    // Issue 27: who cancelled and why are made storable where they enter, as every text a run keeps.
    const actor = storableText(o.actor ?? osUser(this.env)).text;
    const reason = o.reason == null ? null : storableText(o.reason).text;
    const why = `cancelled by ${actor}${reason ? `: ${reason}` : ''}`;
    // No model is called to end a run: one whose model can no longer be reached can still be cancelled.
    const model: ModelClient = {
      spec: run.model,
      stream: () => {
        throw new ModelError('a cancelled run calls no model');
      },
    };
    const deps = await this.deps({ model }, run);
    const at = new Date().toISOString();
    // Issue 40: the run's pending cards are closed in the transaction that takes it (one winner
    // against an approve), then journalled and audited; a card answered first refuses the cancel.
    const { leg, closed } = await cancelLeg(deps, runId, why, { actor, reason: RUN_CANCELLED, at });
    // A run taken from a dead process (not paused) may still hold a card no pause waits on.
    for (const a of await store.listApprovals({ run_id: runId, status: 'pending' })) {
      if (await store.answerApproval(a.id, 'rejected', actor, RUN_CANCELLED, at)) closed.push(a.id);
    }
    await recordCardsClosed(store, runId, closed, actor, at);
    const result = await collect(leg.parent_run ? leg.drive() : this.sessions.track(leg.drive()), o.onEvent);
    this.remembered.delete(runId);
    this.childStops.delete(runId);
    // D2: the delegates a cancelled run started are cancelled with it (each audited); one a live process drives is left to it.
    for (const c of await store.listRuns({ parent_run: runId, limit: 500 })) {
      if (c.status !== 'running' && c.status !== 'paused') continue;
      const running = this.inflight.get(c.id);
      if (running) {
        this.childStops.get(c.id)?.abort(new Error(`its parent run ${runId} was cancelled`));
        await running;
      }
      await this.cancel(c.id, { actor, reason: `its parent run ${runId} was cancelled` }).catch((err) => {
        if (!(err instanceof KeelError)) throw err;
      });
    }
    if (leg.parent_run) {
      // D2: a delegate cancelled while its parent waits for it: the parent goes on (here, before the cancel returns).
      await this.afterLeg(leg, result);
      const next = this.woken.get(runId);
      this.woken.delete(runId);
      await next;
    }
    await store.audit({ at, actor, action: 'cancel_run', subject: runId, detail: JSON.stringify({ reason }) });
    return result;
  }

  /**
   * Interrupts every leg this Keel is driving (Ctrl-C, SIGTERM): each pauses at its next safe point,
   * to be continued with `keel resume RUN`. Returns how many legs were running.
   */
  interrupt(why = 'interrupted'): number {
    const n = this.running;
    this.interruption.abort(why);
    this.interruption = listenable(new AbortController());
    return n;
  }

  /** Counts a leg as running while it streams (interrupt() reports how many it stopped). */
  private async *active(gen: AsyncGenerator<LoopEvent, RunResult>): AsyncGenerator<LoopEvent, RunResult> {
    this.running++;
    try {
      return yield* gen;
    } finally {
      this.running--;
    }
  }

  /**
   * Answers a run's pauses one after another until it ends, or the responder leaves one open
   * (chat, the demo and embedders share this loop). Returns the last result and how many pauses it answered.
   */
  async answerPauses<T = unknown>(
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
        const from = p !== result && result.reason === 'awaiting_task' ? await this.askedBy(p.run_id) : undefined;
        const answer = await responder.answer(p.question, p.confirm, from);
        if (answer === undefined) break;
        pauses++;
        result = await this.answer(p.run_id, answer, opts);
      } else if (p.reason === 'awaiting_approval') {
        let refused: string | undefined;
        let next: RunResult<T> | undefined;
        while (!next) {
          const d = await responder.decide(refused === undefined ? p.approval : { ...p.approval, refused });
          if (!d) break;
          try {
            next = await this.decide(p.approval.id, d.decision, {
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

  /**
   * Stops what this Keel started — MCP servers and other plugin resources, the store — so the
   * process can exit. Call it when done, or hold the Keel with `await using`. Delegates it drives in
   * the background are waited for until each ends or pauses (interrupt() first pauses them sooner).
   */
  async close(): Promise<void> {
    // A delegate working while its parent waits for a person keeps working until it ends or pauses.
    while (this.inflight.size) await Promise.all([...this.inflight.values()]);
    await this.registries.close();
    await this.store?.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** A delegate's run id, made from its parent's and the task call's: the same task call never starts two runs. */
function childRunId(parentRun: string, callId: string): string {
  return `run_${createHash('sha256').update(`${parentRun}\u0000${callId}`).digest('hex').slice(0, 12)}`;
}

/** What a paused run waits for a person to answer: its own pause, or its delegate's (and theirs, down the chain). */
function waitedFor(r: PausedResult): PausedResult {
  return r.reason === 'awaiting_task' && r.task.waiting ? waitedFor(r.task.waiting) : r;
}
