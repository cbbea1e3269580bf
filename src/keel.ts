import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ApprovalDecision, expireApprovals, respondToApproval } from './approvals/respond.js';
import { type KeelConfig, loadConfig } from './config/config.js';
import { KeelError } from './errors.js';
import type { EngineDeps, Limits } from './loop/engine.js';
import { collect, streamApprovalContinuation, streamResume, streamRun } from './loop/run.js';
import type { LoopEvent, RunResult, RunState } from './loop/types.js';
import { createModel } from './models/index.js';
import type { ModelClient } from './models/types.js';
import { mountPlugins, type Registry } from './plugin-host/host.js';
import { guardHandler, ModeAuthority } from './policy/modes.js';
import type { Shortlist } from './prompt/menu.js';
import { bm25Shortlist, toolCapFromEnv } from './prompt/shortlist.js';
import { SqliteStore } from './store/sqlite.js';
import type { ApprovalRecord, Store } from './store/types.js';
import { Subagents } from './subagents/delegates.js';
import { askUser, memoryTools, reportGoal, submitGoal, submitPlan } from './tools/builtins.js';
import { loadSkills, skillsDir, skillsSignature } from './tools/skills.js';
import { confirmOnceOverride } from './tools/spec.js';
import type { Mode, ToolSpec } from './tools/types.js';

/** Keel's package folder, whether this runs from src/ (tsx) or dist/src/. */
export const PACKAGE_ROOT = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
})();

/** The reference plugins shipped with Keel (used when no plugin folder is given). */
export const BUNDLED_PLUGINS = join(PACKAGE_ROOT, 'plugins');

export interface KeelOptions {
  /** Keel's home: the store and plugin data live here. Default KEEL_HOME, else ~/.keel. */
  home?: string;
  /** A store to use instead of the SQLite file under home; null for a run with nowhere to pause (A5). */
  store?: Store | null;
  limits?: Partial<Limits>;
  shortlist?: Shortlist;
  env?: NodeJS.ProcessEnv;
  /** Extra built-in tools (tests, embedders). */
  extraTools?: ToolSpec[];
}

export interface RunOptions {
  model?: string | ModelClient;
  pluginDirs?: string[];
  /** The session's mode; default: the session's current mode, else agent. */
  mode?: Mode;
  /** Continue this session: the new run sees its transcript, mode and contract (C1). */
  session?: string;
}

export function keelHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.KEEL_HOME || join(homedir(), '.keel'));
}

export function limitsFromEnv(env: NodeJS.ProcessEnv): Partial<Limits> {
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
  if (steps) out.maxSteps = steps;
  if (timeout) out.timeoutMs = timeout;
  if (ttl) out.approvalTtlMs = ttl * 60_000;
  return out;
}

/**
 * The library API (S2): everything the CLI does is a method here. One Keel per process is enough;
 * registries are mounted per plugin-folder set and cached.
 */
export class Keel {
  readonly home: string;
  readonly store: Store | null;
  private readonly opts: KeelOptions;
  private readonly env: NodeJS.ProcessEnv;
  private readonly registries = new Map<string, Promise<Registry>>();
  /** The session modes every handler's fresh check reads (C5). */
  readonly modes = new ModeAuthority();
  /** Delegates per plugin-folder set (C8); undefined entries when none are configured. */
  readonly subagents = new Map<string, Subagents | undefined>();
  private config: KeelConfig | undefined;
  private readonly withSkills = new WeakMap<Registry, { signature: string; notes: string[]; registry: Registry }>();

  constructor(opts: KeelOptions = {}) {
    this.opts = opts;
    this.env = opts.env ?? process.env;
    this.home = opts.home ? resolve(opts.home) : keelHome(this.env);
    this.store = opts.store === undefined ? new SqliteStore(join(this.home, 'keel.db')) : opts.store;
  }

  /** Plugin folders for a run: the given ones, else KEEL_PLUGINS, else the bundled reference plugins. */
  pluginDirs(dirs?: string[]): string[] {
    if (dirs?.length) return dirs.map((d) => resolve(d));
    const fromEnv = this.env.KEEL_PLUGINS?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (fromEnv?.length) return fromEnv.map((d) => resolve(d));
    return existsSync(BUNDLED_PLUGINS) ? [BUNDLED_PLUGINS] : [];
  }

  /** Keel's config file (KEEL_CONFIG or KEEL_HOME/config.yaml), read once. */
  getConfig(): KeelConfig {
    this.config ??= loadConfig(this.home, this.env).config;
    return this.config;
  }

  registry(dirs: string[]): Promise<Registry> {
    const key = dirs.join('\u0000');
    let r = this.registries.get(key);
    if (!r) {
      let mounted: Registry | undefined;
      const sub = this.makeSubagents(() => mounted!);
      this.subagents.set(key, sub);
      const builtins = [
        askUser,
        ...(this.store ? memoryTools(this.store) : []),
        submitPlan,
        submitGoal,
        reportGoal,
        ...(sub?.tools() ?? []),
        ...(this.opts.extraTools ?? []),
      ];
      const guard = (t: ToolSpec) => guardHandler(t, (ctx) => (ctx ? (this.modes.modeOfRun(ctx.runId) ?? ctx.mode) : 'agent'));
      r = mountPlugins(dirs, { home: this.home, builtins, confirmOnce: confirmOnceOverride(this.env), guard }).then(
        (reg) => (mounted = reg),
      );
      this.registries.set(key, r);
      // A mount that failed (a folder that does not exist) is not cached: the next call retries.
      r.catch(() => this.registries.delete(key));
    }
    return r;
  }

  private makeSubagents(registry: () => Registry): Subagents | undefined {
    const cfg = this.getConfig().subagents;
    if (!cfg?.delegates.length) return undefined;
    return new Subagents(cfg, {
      registry,
      createModel: (spec) => createModel(spec, this.env),
      parent: async (runId) => {
        const run = await this.getRun(runId);
        return { model: run.model, session_id: run.session_id };
      },
      sessionMode: (sessionId) => this.modes.modeOfSession(sessionId) ?? 'agent',
      limits: { ...limitsFromEnv(this.env), ...this.opts.limits },
    });
  }

  /**
   * The run's pool: the registry plus the skills folder's tools (R25: a skill never shadows a
   * pool name). Rebuilt only when a skill file changes, so menus stay shared across runs.
   */
  private async runRegistry(dirs: string[]): Promise<{ registry: Registry; notes: string[] }> {
    const base = await this.registry(dirs);
    const dir = skillsDir(this.home, this.env);
    const sig = skillsSignature(dir);
    const cached = this.withSkills.get(base);
    if (cached?.signature === sig) return cached;
    const skills = loadSkills(dir, base.byName);
    const pool = skills.tools.length ? [...base.pool, ...skills.tools] : base.pool;
    const entry = {
      signature: sig,
      notes: skills.notes,
      registry: skills.tools.length ? { ...base, pool, byName: new Map(pool.map((t) => [t.name, t])) } : base,
    };
    this.withSkills.set(base, entry);
    return entry;
  }

  private async deps(model: string | ModelClient | undefined, dirs: string[]): Promise<EngineDeps & { notes: string[] }> {
    const { registry, notes } = await this.runRegistry(dirs);
    return {
      registry,
      notes,
      model: typeof model === 'object' ? model : await createModel(model, this.env),
      store: this.store,
      limits: { ...limitsFromEnv(this.env), ...this.opts.limits },
      shortlist: this.opts.shortlist ?? bm25Shortlist(toolCapFromEnv(this.env)),
      countTokens: this.env.KEEL_COUNT_TOKENS !== '0',
      onModeChange: (run) => this.recordSession(run),
    };
  }

  /** Keeps the session record and the mode authority in step with a run. */
  private async recordSession(run: RunState): Promise<void> {
    this.modes.bindRun(run.id, run.session_id, run.mode);
    this.modes.setSessionMode(run.session_id, run.mode);
    await this.store?.saveSession({
      id: run.session_id,
      mode: run.mode,
      last_run_id: run.id,
      contract: run.contract,
      updated_at: new Date().toISOString(),
    });
  }

  /** Binds each run to its session as it starts, and records the session when it stops. */
  private async *tracked(gen: AsyncGenerator<LoopEvent, RunResult>): AsyncGenerator<LoopEvent, RunResult> {
    let run: { id: string; session: string } | undefined;
    while (true) {
      const n = await gen.next();
      if (n.done) {
        if (run && this.store) {
          const state = await this.store.loadRun(run.id);
          if (state) await this.recordSession(state);
        }
        return n.value;
      }
      const e = n.value;
      if (e.type === 'run_started') {
        run = { id: e.run_id, session: e.session_id };
        this.modes.bindRun(e.run_id, e.session_id, e.mode);
        this.modes.setSessionMode(e.session_id, e.mode);
      }
      yield e;
    }
  }

  async *stream(message: string, o: RunOptions = {}): AsyncGenerator<LoopEvent, RunResult> {
    const dirs = this.pluginDirs(o.pluginDirs);
    let session: { id: string; history: RunState['messages']; contract: RunState['contract']; seq_base: number } | undefined;
    let mode = o.mode;
    if (o.session) {
      const rec = await this.requireStore().getSession(o.session);
      if (!rec) throw new KeelError('not_found', `no session ${o.session} (keel runs list shows each run's session)`);
      const last = rec.last_run_id ? await this.getRun(rec.last_run_id) : undefined;
      if (last?.status === 'paused' || last?.status === 'running') {
        throw new KeelError('conflict', `session ${o.session} has a run that is ${last.status} (${last.id}): answer or finish it first`);
      }
      const spec = typeof o.model === 'object' ? o.model.spec : (o.model ?? this.env.KEEL_MODEL);
      const seq_base = last && last.model === spec ? last.seq_base + last.model_calls : 0;
      session = { id: rec.id, history: last?.messages ?? [], contract: rec.contract, seq_base };
      mode ??= rec.mode;
    }
    const deps = await this.deps(o.model, dirs);
    return yield* this.tracked(streamRun(deps, { message, mode, pluginDirs: dirs, session, notes: deps.notes }));
  }

  /**
   * Switches a session's mode (C1; `/mode` in chat). A paused run of the session continues in the
   * new mode; every handler's fresh check sees it at once (C5).
   */
  async setMode(sessionId: string, mode: Mode): Promise<void> {
    const store = this.requireStore();
    const rec = await store.getSession(sessionId);
    if (!rec) throw new KeelError('not_found', `no session ${sessionId}`);
    this.modes.setSessionMode(sessionId, mode);
    await store.saveSession({ ...rec, mode, updated_at: new Date().toISOString() });
    const last = rec.last_run_id ? await store.loadRun(rec.last_run_id) : undefined;
    if (last?.status === 'paused' && last.mode !== mode) {
      last.mode = mode;
      last.notes.push(`mode switched to ${mode} while paused`);
      await store.saveRun(last, { messages: [], steps: [], requests: [] });
    }
  }

  run(message: string, o: RunOptions = {}, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
    return collect(this.stream(message, o), onEvent);
  }

  private requireStore(): Store {
    if (!this.store) throw new KeelError('bad_input', 'this Keel has no store: runs cannot be resumed');
    return this.store;
  }

  async getRun(runId: string): Promise<RunState> {
    const run = await this.requireStore().loadRun(runId);
    if (!run) throw new KeelError('not_found', `no run ${runId} in the store (keel runs list shows the runs)`);
    return run;
  }

  /** Resumes with the run's own model spec and plugin folders unless told otherwise. */
  async *streamResume(runId: string, answer: string, o: RunOptions = {}): AsyncGenerator<LoopEvent, RunResult> {
    const run = await this.getRun(runId);
    const deps = await this.deps(o.model ?? run.model, o.pluginDirs?.length ? this.pluginDirs(o.pluginDirs) : run.plugin_dirs);
    return yield* this.tracked(streamResume(deps, runId, answer));
  }

  resume(runId: string, answer: string, o: RunOptions = {}, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
    return collect(this.streamResume(runId, answer, o), onEvent);
  }

  /** A3: answer an approval (the one function), then continue its run. */
  async respondToApproval(
    id: string,
    decision: ApprovalDecision,
    actor: string,
    reason: string | null = null,
    onEvent?: (e: LoopEvent) => void,
  ): Promise<{ approval: ApprovalRecord; result: RunResult }> {
    const approval = await respondToApproval(this.requireStore(), id, decision, actor, reason);
    const result = await this.continueApproval(approval, onEvent);
    return { approval, result };
  }

  /** Continues a run after its approval was answered, or after a crash left it mid-way (A2). */
  async continueApproval(approval: ApprovalRecord, onEvent?: (e: LoopEvent) => void, o: RunOptions = {}): Promise<RunResult> {
    const run = await this.getRun(approval.run_id);
    const deps = await this.deps(o.model ?? run.model, run.plugin_dirs);
    return collect(this.tracked(streamApprovalContinuation(deps, approval)), onEvent);
  }

  /** `keel resume RUN` without an answer: continue a run whose approval was answered (or recover one). */
  async continueRun(runId: string, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
    const run = await this.getRun(runId);
    if (run.pause?.kind !== 'approval') {
      throw new KeelError('bad_input', `run ${runId} is ${run.status}${run.pause ? ', waiting for an answer: pass --answer TEXT' : ''}`);
    }
    const store = this.requireStore();
    await expireApprovals(store);
    const approval = (await store.getApproval(run.pause.approval_id))!;
    if (approval.status === 'pending') {
      throw new KeelError('not_paused', `run ${runId} waits for approval ${approval.id}: keel approvals approve|reject ${approval.id}`);
    }
    return this.continueApproval(approval, onEvent);
  }

  async close(): Promise<void> {
    for (const r of this.registries.values()) await (await r.catch(() => undefined))?.close();
    await this.store?.close();
  }
}
