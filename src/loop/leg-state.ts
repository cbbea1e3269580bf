/**
 * A leg's own state and the plain (non-generator) parts the engine's legs share: its gate, menu,
 * limits, time limit and interruption, and what its calls run with. The generators that move the
 * run are in drive.ts, calls.ts, continuations.ts and ends.ts, which take this state directly.
 * Never changes the run itself but through its RunWriter, and never hands a call a context whose
 * gate state is not the leg's own (every rebuild goes through `gateOf`).
 */
import type { GateState } from '../policy/gate.js';
import { deriveGateState, readView, UNRECORDED_PRINCIPAL } from '../policy/gate.js';
import { type OwnWords, ownWordsOf, userTexts } from '../policy/own-words.js';
import type { Menu } from '../prompt/menu.js';
import { waitForCount } from '../prompt/tokens.js';
import type { CallRecord, LoopEvent, Mode, RequestTrace, ToolSpec } from '../types/index.js';
import { NO_SPAN, type Span } from '../util/telemetry.js';
import { DEFAULT_LIMITS, type EngineDeps, type Limits } from './deps.js';
import { pluginWarning } from './evaluator.js';
import { conversationTools, findToolsResult, foundBy } from './find-tools.js';
import { contractOf } from './goal.js';
import { type MenuEntry, MenuSource } from './menu-cache.js';
import { type ABORTED, type CallPolicy, type ExecuteContext, whenAborted } from './pipeline.js';
import type { RunView, RunWriter } from './run.js';

/** How many of the store's most used tools a leg reads for the menu's fill (R23). */
const MOST_USED = 50;

/**
 * The gate's state, rebuilt from the run's records (and what its context inherited, U2): the one
 * way a leg gets it, so no rebuild forgets what the run has read.
 */
export function gateOf(s: RunView, deps: EngineDeps): GateState {
  // O2: the user's own words, read from the run's record only when an open-world call needs them.
  let own: OwnWords | undefined;
  return deriveGateState(s.steps, deps.store !== null, s.inherited_untrusted, () => (own ??= ownWordsOf(userTexts(s))));
}

/**
 * The legs listening to each interruption signal, through one listener of the signal's own: a
 * server's legs share one signal, and an EventTarget searches its whole list of listeners on every
 * add and remove (hundreds of legs at once made that a cost of each leg).
 */
const listening = new WeakMap<AbortSignal, Set<LegState>>();

function listenTo(signal: AbortSignal, leg: LegState): void {
  let legs = listening.get(signal);
  if (!legs) {
    const all = new Set<LegState>();
    listening.set(signal, all);
    signal.addEventListener(
      'abort',
      () => {
        for (const l of [...all]) l.onInterrupt();
        all.clear();
      },
      { once: true },
    );
    legs = all;
  }
  legs.add(leg);
}

/** One leg's state (see RunLeg): made with the leg, read and changed only by the engine's own files. */
export class LegState {
  readonly deps: EngineDeps;
  readonly run: RunWriter;
  readonly limits: Limits;
  gate: GateState;
  readonly admitted = new Set<string>();
  readonly called = new Set<string>();
  /** R31: the tools find_tools added in this run (admitted too), read from its trace; `scanned`: records read so far. */
  readonly found = new Set<string>();
  scanned = 0;
  /** R23's second fill: the tools most used before (the store's counts), read once per leg. */
  mostUsed: readonly string[] | undefined;
  readonly menus: MenuSource;
  readonly started = Date.now();
  /** Aborted by the time limit or a stop: the model call and the tools in flight. */
  readonly abort = new AbortController();
  /**
   * The model call's: aborted with `abort`, and by an interruption too (a tool in flight finishes) —
   * `abort` itself when nothing can interrupt the leg (no signal given).
   */
  readonly modelAbort: AbortController;
  aborted: Promise<typeof ABORTED> | undefined;
  stopped: string | undefined;
  /** Set by Ctrl-C/SIGTERM (the deps' signal): the leg pauses at the next safe point, resumable. */
  interrupted: string | undefined;
  timer: NodeJS.Timeout | undefined;
  timedOut = false;
  readonly onInterrupt = () => this.interrupt(String(this.deps.signal?.reason ?? 'interrupted'));
  /** A completed step not saved yet: the next request's save writes it (issue 29). */
  stepUnsaved = false;
  /** The leg's invoke_agent span: the parent of its chat and execute_tool spans. */
  span: Span = NO_SPAN;

  constructor(deps: EngineDeps, run: RunWriter) {
    this.deps = deps;
    this.run = run;
    this.limits = { ...DEFAULT_LIMITS, ...deps.limits };
    this.modelAbort = deps.signal ? new AbortController() : this.abort;
    this.menus = new MenuSource(deps.registry, deps.shortlist, deps.instructions);
    this.gate = gateOf(run.state, deps);
    if (deps.sessionWatch) run.watchSession(deps.sessionWatch);
    for (const m of run.state.messages) if (m.role === 'assistant') for (const c of m.tool_calls) this.called.add(c.name);
    if (deps.signal) listenTo(deps.signal, this);
  }

  /** The session's mode now (C5): a switch made while the run works applies from the next decision on. */
  mode(): Mode {
    return this.deps.currentMode?.(this.run.state) ?? this.run.state.mode;
  }

  /** Ends the run at its next step boundary (a delegate's task_stop); the model call in flight is aborted. */
  stop(why: string): void {
    this.stopped = why;
    this.abortAll(new Error(why));
  }

  /**
   * Stops the leg at its next safe point — the model call in flight is aborted, a tool in flight
   * finishes — and leaves the run paused, to be continued with `keel resume RUN`. Only a run that
   * can pause (a store) is interrupted; one that cannot is halted.
   */
  interrupt(why: string): void {
    if (!this.deps.store) {
      this.stop(why);
      return;
    }
    this.interrupted = why;
    this.modelAbort.abort(new Error(why));
  }

  /** R20: the time limit also cuts a model call or a tool that is still running. */
  arm(): void {
    this.timer ??= setTimeout(
      () => {
        this.timedOut = true;
        this.abortAll(new Error('the run took too long'));
      },
      Math.max(0, this.limits.timeoutMs - (Date.now() - this.started)),
    );
    this.timer.unref?.();
  }

  begin(resumed: boolean): LoopEvent {
    this.arm();
    // Nothing fails silently: a plugin that did not mount as declared is named in the run's result.
    for (const p of this.deps.registry.plugins) {
      if (p.status !== 'loaded') this.run.warn(pluginWarning(p));
    }
    for (const w of this.deps.registry.policy?.unmatched ?? []) this.run.warn(w);
    const s = this.run.state;
    return { type: 'run_started', run_id: s.id, session_id: s.session_id, mode: s.mode, request: s.request, resumed };
  }

  /**
   * The menu for the next request (see MenuSource: kept while valid, shared across runs). The tools
   * each find_tools search added are read from the run's records as they complete (R31), so a run
   * continued by another process admits them just the same.
   */
  menu(): MenuEntry {
    const s = this.run.state;
    for (; this.scanned < s.steps.length; this.scanned++) {
      for (const name of foundBy(s.steps[this.scanned])) {
        this.found.add(name);
        this.admitted.add(name);
      }
    }
    return this.menus.get(s, this.called, this.admitted, () => [...conversationTools(s.messages), ...(this.mostUsed ?? [])]);
  }

  /** R23: the store's most used tools, once per leg, when the pool outgrows the shortlist's cap. */
  async loadMostUsed(): Promise<void> {
    if (this.mostUsed) return;
    const cap = this.deps.shortlist?.cap;
    const store = this.deps.store;
    this.mostUsed =
      store && cap !== undefined && this.deps.registry.pool.length > cap ? (await store.toolUsage(MOST_USED)).map((u) => u.tool) : [];
  }

  /** R31: find_tools, run through the one pipeline with the run's search as its handler. */
  finder(tool: ToolSpec, menu: Menu): ToolSpec {
    const onMenu = new Set(menu.tools.map((t) => t.name));
    for (const n of menu.unavailable) onMenu.delete(n);
    const pool = this.menus.pool(this.run.state);
    return { ...tool, execute: (args, ctx) => findToolsResult(pool, ctx.mode, String(args.query ?? ''), onMenu) };
  }

  /**
   * R30: a request's token count as its reply is in. Counting every request (KEEL_COUNT_TOKENS=1)
   * waits for it; at best effort (the default) it is taken only if it is in already, and otherwise
   * joins the trace when it comes in, if that is before the run's next save (RunWriter.countLater).
   */
  async counted(tokens: Promise<number> | undefined, trace: RequestTrace): Promise<number | undefined> {
    if (!tokens) return undefined;
    if (this.deps.countTokens === true) return waitForCount(tokens);
    // A promise already settled wins the race against the value after it (its reaction is queued first).
    const now = await Promise.race([tokens, undefined]);
    if (now === undefined) this.run.countLater(trace, tokens);
    return now;
  }

  /** What the leg's calls run with (no ledger): made once per leg, its parts read when a call runs. */
  callContext: ExecuteContext | undefined;

  executeContext(ledger?: ExecuteContext['ledger']): ExecuteContext {
    const s = this.run.state;
    return {
      run_id: s.id,
      request: s.request,
      registry: this.deps.registry,
      currentMode: () => this.mode(),
      signal: this.abort.signal,
      aborted: (this.aborted ??= whenAborted(this.abort.signal)),
      recordEffect: (e) => this.run.addEffect(e),
      ledger,
      maxResultChars: this.limits.maxResultChars,
      untrusted: () => readView(this.gate),
    };
  }

  /**
   * PC8: the operator's policy for this run's calls: who started the run, its mode and session, what it
   * has read (U2) and the time of the call bound in. Undefined when no policy file is configured.
   */
  callPolicy(): CallPolicy | undefined {
    const policy = this.deps.policy?.();
    if (!policy) return undefined;
    const s = this.run.state;
    return (tool, args) =>
      policy.evaluate({
        tool,
        args,
        mode: s.mode,
        session: s.session_id,
        principal: s.principal ?? UNRECORDED_PRINCIPAL,
        untrusted: this.gate.untrusted,
        at: this.deps.now?.() ?? new Date(),
      });
  }

  /** C1: an approved proposal switches the session to Agent mode; the work goes on under it. */
  async adoptContract(r: CallRecord): Promise<void> {
    this.run.adoptContract(contractOf(r));
    await this.deps.onModeChange?.(this.run.state);
  }

  abortAll(reason: Error): void {
    this.abort.abort(reason);
    this.modelAbort.abort(reason);
  }

  /** The leg is over: its timer and its interruption listener go. */
  release(): void {
    clearTimeout(this.timer);
    if (this.deps.signal) listening.get(this.deps.signal)?.delete(this);
  }
}
