/**
 * The library's facade: the Keel class, one method per action an application, the CLI and the
 * server take — run, answer, approve, reject, resume, cancel, interrupt, sessions and modes, the
 * operator's policy — holding the Keel's state (runs' options, the legs it drives). The actions'
 * bodies live beside it (legs, delegates, approvals, continuing, pauses; options in options.ts).
 * Never changes its public shape by accident: the built declarations and the README's examples
 * are checked against it.
 */
import { setMaxListeners } from 'node:events';
import { resolve } from 'node:path';
import type { ApprovalDecision } from '../approvals/respond.js';
import { type KeelConfig, loadConfig, policyFileOf } from '../config/config.js';
import { keelHome } from '../config/paths.js';
import { answerLeg, type Leg, type LegJob, startLeg } from '../loop/legs.js';
import { checkAppTools } from '../plugin-host/app-tools.js';
import type { ResetRow } from '../plugin-host/data.js';
import type { Registry } from '../plugin-host/host.js';
import type { ToolRow } from '../plugin-host/types.js';
import { PolicyFile } from '../policy/cedar.js';
import type { PolicyEvaluator } from '../policy/gate.js';
import { OperatorPolicy } from '../policy/operator.js';
import { checkedPrincipal } from '../policy/principal.js';
import type { Shortlist } from '../prompt/menu.js';
import { bm25Shortlist, toolCapFromEnv } from '../prompt/shortlist.js';
import { openStore } from '../store/open.js';
import type { Subagents } from '../subagents/delegates.js';
import type { Env } from '../types/env.js';
import type {
  Answer,
  ApprovalRecord,
  ApprovalStatus,
  AppTool,
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
import { osUser } from '../util/user.js';
import { answerApproval, answerApprovals, answerCard, decide, expireApprovals } from './approvals.js';
import { cancel, continueLeg, queuedLeg } from './continuing.js';
import { type KeelCore, requireStore } from './core.js';
import { children, makeSubagents, settle } from './delegates.js';
import { appToolNames, appTools, delegating, finish, kept, legDeps, outcome, refuseAppTools, remember, tracked } from './legs.js';
import {
  type AppNeeds,
  type ApprovalOptions,
  type BatchAnswer,
  type ContinueOptions,
  type KeelOptions,
  type Kept,
  type PauseResponder,
  positive,
  type RunOptions,
} from './options.js';
import { answerPauses } from './pauses.js';
import {
  checkPolicy,
  explainPolicy,
  type PolicyCheck,
  type PolicyCheckOptions,
  type PolicyExplainOptions,
  type PolicyExplanation,
} from './policy.js';
import { Registries, resolvePluginDirs } from './registries.js';
import { Sessions } from './sessions.js';

export { BUNDLED_PLUGINS, keelHome, PACKAGE_ROOT } from '../config/paths.js';
export {
  type AppNeeds,
  type ApprovalAnswer,
  type ApprovalOptions,
  type BatchAnswer,
  type ContinueOptions,
  isMcpSession,
  type KeelOptions,
  limitsFromEnv,
  MCP_MODEL_PREFIX,
  type PauseResponder,
  type RunOptions,
} from './options.js';
export type { GateAnswer, PolicyCheck, PolicyCheckOptions, PolicyExplainOptions, PolicyExplanation } from './policy.js';

/** Every leg listens to the interruption signal: a server drives hundreds at once. */
function listenable(c: AbortController): AbortController {
  setMaxListeners(0, c.signal);
  return c;
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
  /** What the action modules of src/keel are given: this Keel, its state and its shared steps (core.ts). */
  private readonly core: KeelCore;

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
      makeSubagents: (registry) => makeSubagents(this.core, registry),
      policy: () => this.policy(),
    });
    this.core = {
      keel: this,
      opts,
      env: this.env,
      store: this.store,
      sessions: this.sessions,
      registries: this.registries,
      combined: this.combined,
      remembered: this.remembered,
      inflight: this.inflight,
      woken: this.woken,
      driving: this.driving,
      listeners: this.listeners,
      childStops: this.childStops,
      delegatePools: this.delegatePools,
      interruption: () => this.interruption.signal,
      active: (gen) => this.active(gen),
      shortlist: (menuSize) => this.shortlistFor(menuSize),
    };
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

  /** The plugins of these folders, mounted exactly as a run mounts them (status, tools, drift), with the Keel's own app tools (and `tools`). */
  registry(dirs?: readonly string[], tools?: readonly AppTool[]): Promise<Registry> {
    return this.registries.mount(this.pluginDirs(dirs), appTools(this.core, tools));
  }

  /**
   * Checks the operator's Cedar policy file (default: the config's `policy_file`) against the tools a
   * run of this Keel would have — its plugins' and its own, declared in code: every error and warning
   * at its `file:line:col`, as `keel policy check` prints them.
   */
  checkPolicy(o: PolicyCheckOptions = {}): Promise<PolicyCheck> {
    return checkPolicy(this.core, o);
  }

  /**
   * Decides one call of a tool as a run of this Keel would — the policy file asked, then the run's own
   * gate — as whom, in which mode, after reading what: the decision, the policies that made it, and the
   * same in words (`text`), as `keel policy explain` prints it.
   */
  explainPolicy(tool: string, args: Record<string, unknown>, o: PolicyExplainOptions = {}): Promise<PolicyExplanation> {
    return explainPolicy(this.core, tool, args, o);
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

  /** A leg's shortlist: of its own menu size, else the Keel's (one for every run: menus are shared by it, decision 0004). */
  private shortlistFor(menuSize: number | undefined): Shortlist {
    return menuSize !== undefined
      ? bm25Shortlist(positive('menuSize', menuSize))
      : (this.opts.shortlist ?? (this.shortlist ??= bm25Shortlist(toolCapFromEnv(this.env))));
  }

  /**
   * Every tool a run over these plugin folders (and app tools) could be offered, with its effect,
   * declared and effective gate, and where it comes from (`app` for tools declared in code).
   */
  async tools(o: Pick<RunOptions, 'pluginDirs' | 'tools'> = {}): Promise<(ToolRow & { plugin: string })[]> {
    const registry = await this.registries.mount(this.pluginDirs(o.pluginDirs), appTools(this.core, o.tools));
    return registry.plugins.flatMap((p) => p.tools.map((t) => ({ ...t, plugin: p.name })));
  }

  /**
   * Starts a run: it is stored at once (its id is known) and worked when its leg is driven — now
   * (`stream`, `run`) or when a server's queue gets to it.
   */
  async startRun(message: string, o: RunOptions = {}): Promise<Leg> {
    const deps = await legDeps(this.core, o);
    const session = o.session ? await this.sessions.open(o.session, deps.model.spec, o.createSession === true) : undefined;
    const input = {
      message,
      mode: o.mode ?? session?.mode,
      pluginDirs: this.pluginDirs(o.pluginDirs),
      session,
      notes: deps.notes,
      principal: o.principal ? checkedPrincipal(o.principal) : { kind: 'user' as const, name: osUser(this.env), groups: [] },
      // R18 (issue 47): stored, so a process without these tools never carries the run on.
      appTools: appToolNames(deps.registry),
    };
    const leg = tracked(this.core, await startLeg(deps, input));
    remember(this.core, leg.run_id, o);
    return leg;
  }

  /** Runs a request, giving every event as it happens; the generator's return value is the result. */
  async *stream<T = unknown>(message: string, o: RunOptions<T> = {}): AsyncGenerator<LoopEvent, RunResult<T>> {
    const leg = await this.startRun(message, o);
    const r = yield* leg.drive();
    const settled = delegating(this.core, r) ? await settle(this.core, r) : r;
    return (await outcome(this.core, settled, kept(this.core, settled.run_id, o))) as RunResult<T>;
  }

  /** Runs a request until it ends or pauses. (A third argument, onEvent, is the old form of `o.onEvent`.) */
  async run<T = unknown>(message: string, o: RunOptions<T> = {}, onEvent?: (e: LoopEvent) => void): Promise<RunResult<T>> {
    const opts = onEvent ? { ...o, onEvent } : o;
    return finish(this.core, await this.startRun(message, opts), opts);
  }

  /**
   * Switches a session's mode (`/mode` in chat), during a run or between runs. Every handler's
   * fresh check sees it at once; a paused run continues in the new mode.
   */
  setMode(sessionId: string, mode: Mode): Promise<void> {
    return this.sessions.setMode(sessionId, mode);
  }

  async getRun(runId: string): Promise<RunState> {
    const run = await requireStore(this).loadRun(runId);
    if (!run) throw new KeelError('not_found', `no run ${runId} in the store`, 'keel runs list shows the runs');
    return run;
  }

  listRuns(query?: RunQuery): Promise<RunSummary[]> {
    return requireStore(this).listRuns(query);
  }

  /** The delegates' runs a run started, oldest first: each with its task id, delegate and status. */
  async children(runId: string): Promise<{ run_id: string; task_id: string; delegate: string; status: string; reason: string | null }[]> {
    return children(this.core, runId);
  }

  /** Approval cards (filtered by status or run); pending ones past their expiry are expired first, and their runs ended. */
  async listApprovals(filter: { status?: ApprovalStatus; run_id?: string } = {}): Promise<ApprovalRecord[]> {
    const store = requireStore(this);
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
    return expireApprovals(this.core, o);
  }

  /**
   * Answers a paused run's question and carries the run on. Plain text answers a plain
   * question; a confirmation of held writes needs a decision (`confirm`, or `{ confirm, text }`).
   */
  async answer<T = unknown>(runId: string, answer: string | Answer, o: ContinueOptions<T> = {}): Promise<RunResult<T>> {
    return finish(this.core, await this.answerRun(runId, answer, o), o);
  }

  /** Answers a confirmation of held writes: yes lets them run, no leaves them unconsented. */
  confirm<T = unknown>(runId: string, yes: boolean, o: ContinueOptions<T> & { text?: string } = {}): Promise<RunResult<T>> {
    return this.answer(runId, { text: o.text ?? (yes ? 'yes' : 'no'), confirm: yes }, o);
  }

  /** Answers a paused run's question: the pause is claimed at once (a second answer is refused); the leg goes on when driven. */
  async answerRun(runId: string, answer: string | Answer, o: ContinueOptions = {}): Promise<Leg> {
    const run = await this.getRun(runId);
    const deps = await legDeps(this.core, kept(this.core, runId, o), run);
    return tracked(this.core, await answerLeg(deps, runId, typeof answer === 'string' ? { text: answer } : answer));
  }

  /**
   * Approves a card: exactly its calls run, once, and the run goes on. For a plan or goal,
   * `consentWrites` also lets its confirm-once writes run without asking. Audited with `actor`.
   */
  approve<T = unknown>(approvalId: string, o: ApprovalOptions<T> = {}): Promise<RunResult<T>> {
    return decide(this.core, approvalId, 'approve', o);
  }

  /** Rejects a card: nothing of it runs, and the run goes on so the model can say nothing changed. */
  reject<T = unknown>(approvalId: string, o: ApprovalOptions<T> = {}): Promise<RunResult<T>> {
    return decide(this.core, approvalId, 'reject', o);
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
  ): Promise<{ approval: ApprovalRecord; result?: RunResult; app?: AppNeeds; appModel?: string }> {
    return answerCard(this.core, id, decision, o);
  }

  /**
   * Records the answer to an approval (audited) and claims its run's continuation, to be driven
   * now or when a server's queue gets to it. Unknown → not_found; already answered → conflict; past
   * its expiry → recorded as expired (the continuation ends the run, nothing runs).
   */
  async answerApproval(
    id: string,
    decision: ApprovalDecision,
    o: ApprovalOptions = {},
  ): Promise<{ approval: ApprovalRecord; leg?: Leg; app?: AppNeeds }> {
    return answerApproval(this.core, id, decision, o);
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
    return answerApprovals(this.core, ids, decision, o);
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
    return finish(this.core, await this.continueLeg(runId, opts), opts);
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
    const result = await decide(this.core, id, decision, { actor, reason, onEvent, consentWrites: options.consentWrites });
    const approval = await requireStore(this).getApproval(id);
    if (!approval) throw new KeelError('not_found', `approval ${id} is not in the store`);
    return { approval, result };
  }

  /**
   * A leg a worker takes from the queue (#15): the run was handed over with what to do (`job`), and
   * is taken here — by one worker only; another gets a conflict.
   */
  async queuedLeg(runId: string, job: LegJob, o: ContinueOptions = {}): Promise<Leg> {
    return queuedLeg(this.core, runId, job, o);
  }

  /**
   * Claims a run to carry it on without an answer (see resume), to be driven now or when a
   * server's queue gets to it.
   */
  async continueLeg(runId: string, o: ContinueOptions = {}): Promise<Leg> {
    return continueLeg(this.core, runId, o);
  }

  /**
   * Ends a paused or stalled run for good (`keel runs cancel`), with a reason, audited. Its pending
   * card is answered as rejected; calls it had in flight are reported, never run again. A run a
   * live process is driving is refused (stop that process first).
   */
  async cancel(runId: string, o: { actor?: string; reason?: string | null; onEvent?: (e: LoopEvent) => void } = {}): Promise<RunResult> {
    return cancel(this.core, runId, o);
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

  /**
   * Counts a leg as running while it streams (interrupt() reports how many it stopped): from its
   * first `next()` until it ends, fails or is returned. Not a generator of its own (issue 49: an async
   * generator's layer cost every event of every run several promise turns and ~5 KB a run).
   */
  private active(gen: AsyncGenerator<LoopEvent, RunResult>): AsyncGenerator<LoopEvent, RunResult> {
    let state: 'new' | 'running' | 'ended' = 'new';
    const end = () => {
      if (state === 'running') this.running--;
      state = 'ended';
    };
    const settle = (p: Promise<IteratorResult<LoopEvent, RunResult>>) =>
      p.then(
        (r) => {
          if (r.done) end();
          return r;
        },
        (err: unknown) => {
          end();
          throw err;
        },
      );
    const counted: AsyncGenerator<LoopEvent, RunResult> = {
      next: (...a) => {
        if (state === 'new') {
          state = 'running';
          this.running++;
        }
        return settle(gen.next(...a));
      },
      return: (v) => settle(gen.return(v)),
      throw: (e) => settle(gen.throw(e)),
      [Symbol.asyncIterator]: () => counted,
    };
    return counted;
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
    return answerPauses(this.core, first, responder, o);
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
