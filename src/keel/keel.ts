import { setMaxListeners } from 'node:events';
import { join, resolve } from 'node:path';
import { type ApprovalDecision, expireApprovals, recordApprovalAnswer } from '../approvals/respond.js';
import { type KeelConfig, loadConfig } from '../config/config.js';
import type { EngineDeps, Limits } from '../loop/engine.js';
import { answerLeg, approvalLeg, collect, continueLeg, type Leg, type LegJob, queuedLeg, startLeg, streamCancel } from '../loop/legs.js';
import { createModel } from '../models/index.js';
import { type ModelClient, ModelError } from '../models/types.js';
import type { ResetRow } from '../plugin-host/data.js';
import type { Registry } from '../plugin-host/host.js';
import { OperatorPolicy } from '../policy/operator.js';
import type { Shortlist } from '../prompt/menu.js';
import { bm25Shortlist, toolCapFromEnv } from '../prompt/shortlist.js';
import { openStore } from '../store/open.js';
import { Subagents } from '../subagents/delegates.js';
import type {
  Answer,
  ApprovalCard,
  ApprovalRecord,
  ApprovalStatus,
  Confirmation,
  LoopEvent,
  Mode,
  RunQuery,
  RunResult,
  RunState,
  RunSummary,
  Store,
  ToolSpec,
} from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { type FileCache, fileCache } from '../util/file-cache.js';
import { Registries, resolvePluginDirs } from './registries.js';

export { BUNDLED_PLUGINS, keelHome, PACKAGE_ROOT } from '../config/paths.js';

import { keelHome } from '../config/paths.js';
import { Sessions } from './sessions.js';

export interface KeelOptions {
  /** Keel's home: the store and plugin data live here. Default KEEL_HOME, else ~/.keel. */
  home?: string;
  /** A store to use instead of the SQLite file under home; null for a run with nowhere to pause. */
  store?: Store | null;
  limits?: Partial<Limits>;
  shortlist?: Shortlist;
  env?: NodeJS.ProcessEnv;
  /** Extra built-in tools (tests, embedders). */
  extraTools?: ToolSpec[];
  /**
   * Plugin folders for a run that names none and no KEEL_PLUGINS is set. Default none: a library
   * user gets exactly the plugins they ask for. The CLI passes the bundled reference plugins.
   */
  defaultPluginDirs?: string[];
}

export interface RunOptions {
  model?: string | ModelClient;
  pluginDirs?: string[];
  /** The session's mode; default: the session's current mode, else agent. */
  mode?: Mode;
  /** Continue this session: the new run sees its transcript, mode and contract. */
  session?: string;
}

export interface ApprovalAnswer {
  decision: ApprovalDecision;
  actor: string;
  reason?: string | null;
  consentWrites?: boolean;
}

/** Who answers a run's pauses for `answerPauses`: undefined leaves the run paused. */
export interface PauseResponder {
  /** A question; with `confirm`, a confirmation of held writes whose answer must say yes or no. */
  answer(question: string, confirm?: Confirmation): Promise<Answer | undefined>;
  /** A card; for a plan or goal (`card.offers_write_consent`) the approver may also let its writes run. */
  decide(approval: { id: string; card: ApprovalCard }): Promise<ApprovalAnswer | undefined>;
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
  private readonly env: NodeJS.ProcessEnv;
  private readonly sessions: Sessions;
  private readonly registries: Registries;
  private loaded: { file: string | null; config: KeelConfig } | undefined;
  private operator: OperatorPolicy | undefined;
  /** Aborted by interrupt(): every leg started since the last interrupt listens to it. */
  private interruption = listenable(new AbortController());
  private running = 0;
  /** The shortlist's index terms, kept between processes (made on first use). */
  private indexCache: FileCache | undefined;

  constructor(opts: KeelOptions = {}) {
    this.opts = opts;
    this.env = opts.env ?? process.env;
    this.home = opts.home ? resolve(opts.home) : keelHome(this.env);
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

  /** The plugins of these folders, mounted exactly as a run mounts them (status, tools, drift). */
  registry(dirs?: readonly string[]): Promise<Registry> {
    return this.registries.mount(this.pluginDirs(dirs));
  }

  /** Mounts these plugin folders again, after their manifests changed (`keel mcp serve` watches them). */
  remount(dirs?: readonly string[]): Promise<Registry> {
    return this.registries.remount(this.pluginDirs(dirs));
  }

  /** The delegates of every mounted plugin-folder set. */
  get subagents(): Subagents[] {
    return this.registries.subagents();
  }

  /** `keel data reset`: each plugin that keeps data deletes and re-seeds it. */
  resetData(dirs?: readonly string[]): Promise<ResetRow[]> {
    return this.registries.resetData(this.pluginDirs(dirs));
  }

  private makeSubagents(registry: () => Registry): Subagents | undefined {
    const cfg = this.getConfig().subagents;
    if (!cfg?.delegates.length) return undefined;
    return new Subagents(cfg, {
      registry,
      createModel: (spec) => createModel(spec, this.env, this.cacheDir('scripts')),
      parent: async (runId) => {
        const run = await this.getRun(runId);
        return { model: run.model, session_id: run.session_id };
      },
      currentMode: (run) => this.sessions.currentMode(run),
      limits: this.limits(),
    });
  }

  private limits(): Partial<Limits> {
    return { ...limitsFromEnv(this.env), ...this.opts.limits };
  }

  private async deps(model: string | ModelClient | undefined, dirs: readonly string[]): Promise<EngineDeps & { notes: string[] }> {
    const { registry, notes } = await this.registries.forRun(dirs);
    const client = typeof model === 'object' ? model : await createModel(model, this.env, this.cacheDir('scripts'));
    const spec = client.spec;
    return {
      registry,
      notes,
      model: client,
      store: this.store,
      limits: this.limits(),
      shortlist: this.opts.shortlist ?? bm25Shortlist(toolCapFromEnv(this.env), (this.indexCache ??= fileCache(this.cacheDir('index')))),
      // Counted for real models; for the scripted one (tests, demos) only when asked (KEEL_COUNT_TOKENS=1).
      countTokens: this.env.KEEL_COUNT_TOKENS === '1' || (this.env.KEEL_COUNT_TOKENS !== '0' && !spec.startsWith('script:')),
      currentMode: (run) => this.sessions.currentMode(run),
      onModeChange: (run) => this.sessions.changed(run),
      signal: this.interruption.signal,
    };
  }

  /**
   * Starts a run: it is stored at once (its id is known) and worked when its leg is driven — now
   * (`stream`, `run`) or when a server's queue gets to it.
   */
  async startRun(message: string, o: RunOptions = {}): Promise<Leg> {
    const dirs = this.pluginDirs(o.pluginDirs);
    const deps = await this.deps(o.model, dirs);
    const session = o.session ? await this.sessions.open(o.session, deps.model.spec) : undefined;
    const input = { message, mode: o.mode ?? session?.mode, pluginDirs: dirs, session, notes: deps.notes };
    return this.tracked(await startLeg(deps, input));
  }

  async *stream(message: string, o: RunOptions = {}): AsyncGenerator<LoopEvent, RunResult> {
    return yield* (await this.startRun(message, o)).drive();
  }

  /** A leg as this Keel drives it: its session followed, counted while it runs (interrupt()). */
  private tracked(leg: Leg): Leg {
    return { ...leg, drive: () => this.sessions.track(this.active(leg.drive())) };
  }

  run(message: string, o: RunOptions = {}, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
    return collect(this.stream(message, o), onEvent);
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

  /** Approval cards (filtered by status or run); pending ones past their expiry are marked expired first. */
  async listApprovals(filter: { status?: ApprovalStatus; run_id?: string } = {}): Promise<ApprovalRecord[]> {
    const store = this.requireStore();
    await expireApprovals(store);
    return store.listApprovals(filter);
  }

  /**
   * Answers a paused run's question and continues it, with the run's own model spec and plugin
   * folders unless told otherwise. A confirmation (of held writes) needs `{ confirm: true|false }`;
   * plain text answers a plain question.
   */
  async *streamResume(runId: string, answer: string | Answer, o: RunOptions = {}): AsyncGenerator<LoopEvent, RunResult> {
    return yield* (await this.answerRun(runId, answer, o)).drive();
  }

  /** Answers a paused run's question: the pause is claimed at once (a second answer is refused); the leg goes on when driven. */
  async answerRun(runId: string, answer: string | Answer, o: RunOptions = {}): Promise<Leg> {
    const run = await this.getRun(runId);
    const deps = await this.deps(o.model ?? run.model, o.pluginDirs?.length ? this.pluginDirs(o.pluginDirs) : run.plugin_dirs);
    return this.tracked(await answerLeg(deps, runId, typeof answer === 'string' ? { text: answer } : answer));
  }

  resume(runId: string, answer: string | Answer, o: RunOptions = {}, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
    return collect(this.streamResume(runId, answer, o), onEvent);
  }

  /**
   * Answers an approval (the one function every surface uses), then continues its run. For a
   * plan or goal card, `consentWrites` also lets its confirm-once writes run without asking.
   * An MCP session's card is refused here (see answerCard).
   */
  async respondToApproval(
    id: string,
    decision: ApprovalDecision,
    actor: string,
    reason: string | null = null,
    onEvent?: (e: LoopEvent) => void,
    options: { consentWrites?: boolean } = {},
  ): Promise<{ approval: ApprovalRecord; result: RunResult }> {
    const store = this.requireStore();
    const card = await store.getApproval(id);
    if (card && isMcpSession(await store.loadRun(card.run_id))) {
      throw new KeelError(
        'bad_input',
        `approval ${id} belongs to an MCP session (run ${card.run_id}), whose server carries the call out: answer it with answerCard (or keel approvals approve|reject ${id})`,
      );
    }
    const { approval, result } = await this.answerCard(id, decision, actor, reason, onEvent, options);
    return { approval, result: result as RunResult };
  }

  /**
   * Answers any card — a run's, or an MCP session's — and continues what waits on it: a run's leg
   * here (its result returned), or the MCP call its server holds (no result here).
   */
  async answerCard(
    id: string,
    decision: ApprovalDecision,
    actor: string,
    reason: string | null = null,
    onEvent?: (e: LoopEvent) => void,
    options: { consentWrites?: boolean } = {},
  ): Promise<{ approval: ApprovalRecord; result?: RunResult }> {
    const { approval, leg } = await this.answerApproval(id, decision, actor, reason, options);
    if (!leg) return { approval };
    return { approval, result: await this.continued(approval, () => collect(leg.drive(), onEvent)) };
  }

  /**
   * Records the answer to an approval (audited) and claims its run's continuation, to be driven
   * now or when a server's queue gets to it. Unknown → not_found; already answered → conflict; past
   * its expiry → recorded as expired (the continuation ends the run, nothing runs).
   */
  async answerApproval(
    id: string,
    decision: ApprovalDecision,
    actor: string,
    reason: string | null = null,
    options: { consentWrites?: boolean } = {},
  ): Promise<{ approval: ApprovalRecord; leg?: Leg }> {
    const approval = await recordApprovalAnswer(this.requireStore(), id, decision, actor, reason, new Date(), options);
    // An MCP session's card: the server holding the call carries it out (no leg of the run waits on it).
    if (isMcpSession(await this.getRun(approval.run_id))) return { approval };
    const leg = await this.continued(approval, () => this.approvalLeg(approval));
    return { approval, leg };
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

  private async approvalLeg(approval: ApprovalRecord, o: RunOptions = {}): Promise<Leg> {
    const run = await this.getRun(approval.run_id);
    const deps = await this.deps(o.model ?? run.model, run.plugin_dirs);
    return this.tracked(await approvalLeg(deps, approval));
  }

  /** Continues a run after its approval was answered, or after a crash left it mid-way. */
  async continueApproval(approval: ApprovalRecord, onEvent?: (e: LoopEvent) => void, o: RunOptions = {}): Promise<RunResult> {
    return collect((await this.approvalLeg(approval, o)).drive(), onEvent);
  }

  /**
   * `keel resume RUN` without an answer: continue a run whose approval was answered, one that was
   * interrupted (Ctrl-C, SIGTERM), or one whose process died (taken over: calls it had in flight are
   * reported, never run again).
   */
  async continueRun(runId: string, onEvent?: (e: LoopEvent) => void, o: RunOptions = {}): Promise<RunResult> {
    return collect((await this.continueLeg(runId, o)).drive(), onEvent);
  }

  /**
   * A leg a worker takes from the queue (#15): the run was handed over with what to do (`job`), and
   * is taken here — by one worker only; another gets a conflict.
   */
  async queuedLeg(runId: string, job: LegJob): Promise<Leg> {
    if (job.kind === 'continue') return this.continueLeg(runId);
    if (job.kind === 'approval') {
      const approval = await this.requireStore().getApproval(job.approval_id);
      if (!approval) throw new KeelError('not_found', `approval ${job.approval_id} is not in the store`);
      return this.approvalLeg(approval);
    }
    const run = await this.getRun(runId);
    const deps = await this.deps(run.model, run.plugin_dirs);
    return this.tracked(await queuedLeg(deps, runId, job));
  }

  /**
   * Claims a run to carry it on without an answer — its card answered, interrupted, or left mid-leg
   * by a process that died — to be driven now or when a server's queue gets to it. A run waiting on
   * its card or its question is refused, saying how to answer it.
   */
  async continueLeg(runId: string, o: RunOptions = {}): Promise<Leg> {
    const run = await this.getRun(runId);
    const pause = run.pause;
    if (run.status === 'done' || run.status === 'failed') {
      throw new KeelError('not_paused', `run ${runId} is ${run.status} (${run.reason}) already: there is nothing to continue`);
    }
    if (pause?.kind === 'approval') {
      const store = this.requireStore();
      await expireApprovals(store);
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
    if (run.status === 'paused' && pause?.kind === 'ask_user') {
      throw pause.confirm
        ? new KeelError(
            'bad_input',
            `run ${runId} asks the user to confirm ${pause.confirm.tools.join(', ')}: resume it with a decision`,
            `keel resume ${runId} --yes or --no`,
          )
        : new KeelError('bad_input', `run ${runId} waits for an answer: resume it with one`, `keel resume ${runId} --answer TEXT`);
    }
    const deps = await this.deps(o.model ?? run.model, run.plugin_dirs);
    return this.tracked(await continueLeg(deps, runId));
  }

  /**
   * `keel runs cancel`: ends a paused or stalled run for good, with a reason, audited. Its pending
   * card is answered as rejected; calls it had in flight are reported, never run again. A run a live
   * process is driving is refused (stop that process first).
   */
  async cancelRun(runId: string, actor: string, reason: string | null = null, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
    const store = this.requireStore();
    const run = await this.getRun(runId);
    const why = `cancelled by ${actor}${reason ? `: ${reason}` : ''}`;
    // No model is called to end a run: one whose model can no longer be reached can still be cancelled.
    const model: ModelClient = {
      spec: run.model,
      stream: () => {
        throw new ModelError('a cancelled run calls no model');
      },
    };
    const deps = await this.deps(model, run.plugin_dirs);
    const result = await collect(this.sessions.track(streamCancel(deps, runId, why)), onEvent);
    const at = new Date().toISOString();
    for (const a of await store.listApprovals({ run_id: runId, status: 'pending' })) {
      await store.answerApproval(a.id, 'rejected', actor, 'the run was cancelled', at);
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
  async answerPauses(
    first: RunResult,
    responder: PauseResponder,
    onEvent?: (e: LoopEvent) => void,
  ): Promise<{ result: RunResult; pauses: number }> {
    let result = first;
    let pauses = 0;
    while (result.status === 'paused') {
      if (result.question !== undefined) {
        const answer = await responder.answer(result.question, result.confirm);
        if (answer === undefined) break;
        pauses++;
        result = await this.resume(result.run_id, answer, {}, onEvent);
      } else if (result.approval) {
        const d = await responder.decide(result.approval);
        if (!d) break;
        pauses++;
        result = (
          await this.respondToApproval(result.approval.id, d.decision, d.actor, d.reason ?? null, onEvent, {
            consentWrites: d.consentWrites,
          })
        ).result;
      } else break;
    }
    return { result, pauses };
  }

  /**
   * Stops what this Keel started — MCP servers and other plugin resources, the store — so the
   * process can exit. Call it when done, or hold the Keel with `await using`.
   */
  async close(): Promise<void> {
    await this.registries.close();
    await this.store?.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
