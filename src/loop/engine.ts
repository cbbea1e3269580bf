import { randomUUID } from 'node:crypto';
import { buildCard } from '../approvals/card.js';
import { type AssistantReply, ModelError } from '../models/types.js';
import { deriveGateState, type GateState, readView, recordCall, UNRECORDED_PRINCIPAL } from '../policy/gate.js';
import type { Menu } from '../prompt/menu.js';
import { countRequestTokens, encodingFor, waitForCount } from '../prompt/tokens.js';
import type {
  Answer,
  ApprovalItem,
  ApprovalRecord,
  CallRecord,
  Confirmation,
  EndReason,
  LoopEvent,
  Mode,
  PendingResult,
  RequestTrace,
  RunResult,
  ToolCall,
  ToolSpec,
} from '../types/index.js';
import { callKey, canonicalJson } from '../util/json.js';
import { redact } from '../util/redact.js';
import {
  endChatSpan,
  endLegSpan,
  endToolSpan,
  type LegKind,
  NO_SPAN,
  recordError,
  type Span,
  startChatSpan,
  startLegSpan,
  startToolSpan,
  toolSpan,
} from '../util/telemetry.js';
import { truncate } from '../util/text.js';
import { DEFAULT_LIMITS, type EngineDeps, type Limits } from './deps.js';
import { countTrailingFailures, describeFailures, heldConfirmation, lastUsable, pluginWarning } from './evaluator.js';
import { conversationTools, findToolsResult, foundBy, isFindTools } from './find-tools.js';
import { contractOf, goalProgress, goalReminder, MAX_GOAL_REMINDERS } from './goal.js';
import { type MenuEntry, MenuSource } from './menu-cache.js';
import {
  type ABORTED,
  admitReply,
  type CallPolicy,
  coreResult,
  type ExecuteContext,
  type Executed,
  executeCall,
  type Prepared,
  prepareApproval,
  prepareCall,
  type Ready,
  whenAborted,
} from './pipeline.js';
import { answerOpenCalls } from './recovery.js';
import { expiredAnswer, interruption, toResult } from './result.js';
import type { ApprovalPause, QuestionPause, RunView, RunWriter, TaskPauseOf } from './run.js';
import { SAY } from './sentences.js';
import { repliedCalls } from './seq.js';
import { storableReply, unstorableNote } from './storable.js';
import { type TaskWait, takeTaskWait, taskResult } from './tasks.js';

export { DEFAULT_LIMITS, type EngineDeps, type Limits };

type EndOn = { reason: EndReason; answer: string };
/** How a leg ends: what `end` takes. */
type Ending = [status: 'done' | 'failed', reason: EndReason, why?: string, answer?: string];

/** How many of the store's most used tools a leg reads for the menu's fill (R23). */
const MOST_USED = 50;
/** The note that marks the one retry an answer off its output schema gets. */
const OUTPUT_RETRY = 'output retry: ';
/** The note that marks the one retry an empty reply gets (issue 26). */
const EMPTY_RETRY = 'empty reply: asked the model again';

/**
 * One leg of a run: from its start, an answer or an approval to its next end or pause. The only
 * loop body (R14): the streaming and the blocking API both drive it, and every leg ends with
 * `run_finished`. It changes the run only through its RunWriter.
 */
export class RunLeg {
  private readonly deps: EngineDeps;
  private readonly run: RunWriter;
  private readonly limits: Limits;
  private gate: GateState;
  private readonly admitted = new Set<string>();
  private readonly called = new Set<string>();
  /** R31: the tools find_tools added in this run (admitted too), read from its trace; `scanned`: records read so far. */
  private readonly found = new Set<string>();
  private scanned = 0;
  /** R23's second fill: the tools most used before (the store's counts), read once per leg. */
  private mostUsed: readonly string[] | undefined;
  private readonly menus: MenuSource;
  private readonly started = Date.now();
  /** Aborted by the time limit or a stop: the model call and the tools in flight. */
  private readonly abort = new AbortController();
  /**
   * The model call's: aborted with `abort`, and by an interruption too (a tool in flight finishes) —
   * `abort` itself when nothing can interrupt the leg (no signal given).
   */
  private readonly modelAbort: AbortController;
  private aborted: Promise<typeof ABORTED> | undefined;
  private stopped: string | undefined;
  /** Set by Ctrl-C/SIGTERM (the deps' signal): the leg pauses at the next safe point, resumable. */
  private interrupted: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private timedOut = false;
  private readonly onInterrupt = () => this.interrupt(String(this.deps.signal?.reason ?? 'interrupted'));
  /** A completed step not saved yet: the next request's save writes it (issue 29). */
  private stepUnsaved = false;
  /** The leg's invoke_agent span: the parent of its chat and execute_tool spans. */
  private span: Span = NO_SPAN;

  constructor(deps: EngineDeps, run: RunWriter) {
    this.deps = deps;
    this.run = run;
    this.limits = { ...DEFAULT_LIMITS, ...deps.limits };
    this.modelAbort = deps.signal ? new AbortController() : this.abort;
    this.menus = new MenuSource(deps.registry, deps.shortlist, deps.instructions);
    this.gate = RunLeg.gateOf(run.state, deps);
    if (deps.sessionWatch) run.watchSession(deps.sessionWatch);
    for (const m of run.state.messages) if (m.role === 'assistant') for (const c of m.tool_calls) this.called.add(c.name);
    deps.signal?.addEventListener('abort', this.onInterrupt, { once: true });
  }

  /**
   * The gate's state, rebuilt from the run's records (and what its context inherited, U2): the one
   * way a leg gets it, so no rebuild forgets what the run has read.
   */
  private static gateOf(s: RunView, deps: EngineDeps): GateState {
    return deriveGateState(s.steps, deps.store !== null, s.inherited_untrusted);
  }

  get state(): RunView {
    return this.run.state;
  }

  /** The session's mode now (C5): a switch made while the run works applies from the next decision on. */
  private mode(): Mode {
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
  private arm(): void {
    this.timer ??= setTimeout(
      () => {
        this.timedOut = true;
        this.abortAll(new Error('the run took too long'));
      },
      Math.max(0, this.limits.timeoutMs - (Date.now() - this.started)),
    );
    this.timer.unref?.();
  }

  private begin(resumed: boolean): LoopEvent {
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
   * A leg's body inside its invoke_agent span, ended exactly once however the leg stops: an end, a
   * pause, a thrown error, or a consumer that closes the generator early.
   */
  private async *traced(leg: LegKind, body: (this: RunLeg) => AsyncGenerator<LoopEvent, RunResult>): AsyncGenerator<LoopEvent, RunResult> {
    const span = (this.span = startLegSpan(leg, this.run.state, this.deps.model.spec));
    try {
      return yield* body.call(this);
    } catch (err) {
      recordError(span, err);
      throw err;
    } finally {
      endLegSpan(span, this.run.state);
      this.run.legEnds();
    }
  }

  /**
   * A new run: from the user's message to its first end or pause. The loop itself, with the leg's
   * span and first event (`traced` written into drive): every event of a new run passes no generator
   * of start's own on its way out.
   */
  start(): AsyncGenerator<LoopEvent, RunResult> {
    return this.drive(true);
  }

  /**
   * R17: the answer becomes the ask_user call's result (same call id) and the run goes on. For a
   * confirmation (R16) the result says yes or no in the core's words, and the record keeps the decision.
   */
  continueAfterAnswer(pause: QuestionPause, answer: Answer): AsyncGenerator<LoopEvent, RunResult> {
    return this.traced('answer', async function* () {
      this.run.resume();
      yield this.begin(true);
      const decision: CallRecord['decision'] = pause.confirm ? (answer.confirm ? 'yes' : 'no') : undefined;
      const content = pause.confirm ? (answer.confirm ? SAY.confirmed : SAY.declined)(pause.confirm.tools, answer.text) : answer.text;
      const records = pause.calls.map((c) =>
        c.call_id === pause.call_id ? { ...c, result: content, ...(decision ? { decision } : {}) } : c,
      );
      const results = pause.results.map((r) => (r.call_id === pause.call_id ? { ...r, content } : r));
      for (const record of records) if (record.call_id === pause.call_id) yield { type: 'tool_result', step: pause.step, record };
      return yield* this.continueStep(records, results);
    });
  }

  /**
   * A2: after the owner answered the card. Approved: exactly the pinned calls run, through the one
   * call pipeline, each at most once (the ledger). Rejected or expired: nothing runs, and each call's
   * result says so. Then the run goes on (expired: it stops, with a notice).
   */
  continueAfterApproval(pause: ApprovalPause, approval: ApprovalRecord): AsyncGenerator<LoopEvent, RunResult> {
    return this.traced('approval', async function* () {
      this.run.resume();
      yield this.begin(true);
      const records = pause.calls.map((c) => ({ ...c }));
      const results = pause.results.map((r) => ({ ...r }));
      const store = this.deps.store;
      const ctx = this.executeContext(approval.status === 'approved' && store ? { store, approval_id: approval.id } : undefined);
      for (const asked of pause.items) {
        // A7: the owner may have changed the arguments on the card: the approval is pinned to those.
        const pinned = approval.items.find((i) => i.call_id === asked.call_id);
        const edited = approval.status === 'approved' && pinned?.original_args ? pinned : undefined;
        const item = edited ?? asked;
        const tool = this.deps.registry.byName.get(item.tool);
        const span = startToolSpan(this.span, item.tool, item.call_id);
        let ex: Executed;
        try {
          if (approval.status === 'expired') ex = coreResult(SAY.approvalExpired(item.tool, approval.id));
          // R27: a rejection is the owner's decision, not an error: the call's own outcome, with the reason.
          else if (approval.status !== 'approved')
            ex = { outcome: 'rejected', content: SAY.rejected(item.tool, approval.reason), is_error: true };
          else ex = tool ? await executeCall(ctx, tool, item.call_id, item.args) : coreResult(SAY.noLongerAvailable(item.tool));
          if (edited) ex = { ...ex, content: `${SAY.editedByOwner(item.tool, truncate(canonicalJson(item.args), 2000))}\n${ex.content}` };
        } catch (err) {
          recordError(span, err);
          span.end();
          throw err;
        }
        endToolSpan(span, ex.outcome, ex.is_error, tool?.declaration.effect);
        const rec = records.find((c) => c.call_id === item.call_id);
        const res = results.find((r) => r.call_id === item.call_id);
        if (!rec || !res) continue;
        Object.assign(rec, { outcome: ex.outcome, result: ex.content, is_error: ex.is_error, by_core: ex.outcome !== 'ran' });
        if (ex.untrusted !== undefined) rec.untrusted = ex.untrusted;
        // A7: the trace keeps what ran and what the model asked for, and who changed it; the gate's
        // repeat guard then knows the edited call as the one that ran.
        if (edited) Object.assign(rec, { args: edited.args, edited_from: edited.original_args, edited_by: edited.edited_by });
        // R16: the approver let the plan's (or goal's) confirm-once writes run: the trace keeps it, so the gate does.
        if (approval.consent_writes && ex.outcome === 'ran') rec.consent_writes = true;
        Object.assign(res, { content: ex.content, is_error: ex.is_error });
        if (ex.unknown_outcome) {
          this.run.note(`unknown outcome: ${item.tool} (${item.call_id}) under approval ${approval.id}`);
        }
        if (ex.refused !== undefined) {
          this.run.note(`approved call refused: ${item.tool} (${item.call_id}) under approval ${approval.id}: ${ex.refused}`);
        }
        yield { type: 'tool_result', step: pause.step, record: rec };
      }
      // R13: a call identical to a carded one is answered with that call's result, marked as its repeat.
      for (const rec of records) {
        const res = results.find((r) => r.call_id === rec.call_id);
        if (rec.outcome !== 'repeat' || !res || res.content !== undefined) continue;
        const key = callKey(rec.tool, rec.args ?? {});
        const first = pause.items.find((i) => callKey(i.tool, i.args) === key);
        const done = first && records.find((c) => c.call_id === first.call_id);
        const content = done ? SAY.repeat(rec.tool, done.call_id, done.result) : SAY.stoppedBeforeApproval(rec.tool);
        Object.assign(rec, { result: content, is_error: done ? done.is_error : true });
        Object.assign(res, { content, is_error: rec.is_error });
        yield { type: 'tool_result', step: pause.step, record: rec };
      }
      if (approval.status === 'expired') {
        this.run.completeStep(records, results);
        this.run.note(`approval ${approval.id} expired`);
        return yield* this.end('failed', 'approval_expired', undefined, expiredAnswer(approval));
      }
      return yield* this.continueStep(records, results);
    });
  }

  /**
   * D2: the delegate's run this run waited for has ended: its report becomes the task_wait call's
   * result (same call id; U2: marked untrusted when the delegate had read others' words), and the
   * run goes on. A delegate that has not ended is refused before this leg is made (continueLeg).
   */
  continueAfterTask(pause: TaskPauseOf, child: RunView): AsyncGenerator<LoopEvent, RunResult> {
    return this.traced('task', async function* () {
      this.run.resume();
      yield this.begin(true);
      const out = taskResult(child, pause.task_id);
      const records = pause.calls.map((c) =>
        c.call_id === pause.call_id ? { ...c, result: out.content, ...(out.untrusted ? { untrusted: out.untrusted } : {}) } : c,
      );
      const results = pause.results.map((r) => (r.call_id === pause.call_id ? { ...r, content: out.content } : r));
      for (const record of records) if (record.call_id === pause.call_id) yield { type: 'tool_result', step: pause.step, record };
      return yield* this.continueStep(records, results);
    });
  }

  /** A run interrupted between steps goes on from where it stopped. */
  continueAfterInterruption(): AsyncGenerator<LoopEvent, RunResult> {
    return this.traced('interruption', async function* () {
      this.run.resume();
      this.run.clearPause();
      yield this.begin(true);
      return yield* this.drive();
    });
  }

  /**
   * A run whose process died mid-leg, taken over: every call of the last reply that has no result
   * gets one in the core's words — of unknown outcome when its effect was recorded as started, else
   * interrupted — and none is run again. Then the run goes on.
   */
  recover(): AsyncGenerator<LoopEvent, RunResult> {
    return this.traced('recover', async function* () {
      this.run.resume();
      this.run.note('taken over from a process that stopped');
      yield this.begin(true);
      yield* this.closeInFlight();
      return yield* this.drive();
    });
  }

  /** The answer to the run's question died with its process: the question is open again. */
  reopenQuestion(): AsyncGenerator<LoopEvent, RunResult> {
    return this.traced('reopen', async function* () {
      yield this.begin(true);
      this.release();
      await this.run.reopenQuestion();
      const pause = this.run.state.pause;
      if (pause) yield { type: 'paused', pause };
      const result = toResult(this.run.state);
      yield { type: 'run_finished', result };
      return result;
    });
  }

  /** Ends an unfinished run for good (`keel runs cancel`), answering any call left without a result. */
  cancel(why: string): AsyncGenerator<LoopEvent, RunResult> {
    return this.traced('cancel', async function* () {
      this.run.resume();
      yield this.begin(true);
      yield* this.closeInFlight();
      return yield* this.end('failed', 'cancelled', why);
    });
  }

  /** R19: the calls of the last reply that have no result yet get one, so the transcript stays paired. */
  private async *closeInFlight(): AsyncGenerator<LoopEvent, void> {
    const open = answerOpenCalls(this.run.state, (tool) => this.deps.registry.byName.get(tool)?.declaration.effect);
    if (!open) {
      this.run.clearPause();
      return;
    }
    for (const u of open.unknown) this.run.note(`unknown outcome: ${u}`);
    for (const record of open.records) {
      toolSpan(this.span, record);
      yield { type: 'tool_result', step: record.step, record };
    }
    this.run.completeStep(open.records, open.results);
    this.gate = RunLeg.gateOf(this.run.state, this.deps);
    yield* this.saved();
  }

  /** Completes the step a pause interrupted, then drives on. */
  private async *continueStep(records: CallRecord[], results: PendingResult[]): AsyncGenerator<LoopEvent, RunResult> {
    const priorToolCalls = this.run.state.steps.some((r) => r.tool !== 'ask_user');
    const ending = await this.finishStep(records, results, undefined, priorToolCalls);
    if (ending) return yield* this.end(...ending);
    this.gate = RunLeg.gateOf(this.run.state, this.deps);
    return yield* this.drive();
  }

  /**
   * The menu for the next request (see MenuSource: kept while valid, shared across runs). The tools
   * each find_tools search added are read from the run's records as they complete (R31), so a run
   * continued by another process admits them just the same.
   */
  private menu(): MenuEntry {
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
  private async loadMostUsed(): Promise<void> {
    if (this.mostUsed) return;
    const cap = this.deps.shortlist?.cap;
    const store = this.deps.store;
    this.mostUsed =
      store && cap !== undefined && this.deps.registry.pool.length > cap ? (await store.toolUsage(MOST_USED)).map((u) => u.tool) : [];
  }

  /** R31: find_tools, run through the one pipeline with the run's search as its handler. */
  private finder(tool: ToolSpec, menu: Menu): ToolSpec {
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
  private async counted(tokens: Promise<number> | undefined, trace: RequestTrace): Promise<number | undefined> {
    if (!tokens) return undefined;
    if (this.deps.countTokens === true) return waitForCount(tokens);
    // A promise already settled wins the race against the value after it (its reaction is queued first).
    const now = await Promise.race([tokens, undefined]);
    if (now === undefined) this.run.countLater(trace, tokens);
    return now;
  }

  /**
   * Drives the run until it ends or pauses, yielding every event on the way. `starting`: the leg
   * starts the run here — its span, and the run's start shown before the first request is made (its
   * own write: a consumer may switch the session's mode as the run starts, C1, and the first request
   * is then made in the new mode).
   */
  private async *drive(starting = false): AsyncGenerator<LoopEvent, RunResult> {
    const span = starting ? (this.span = startLegSpan('start', this.run.state, this.deps.model.spec)) : undefined;
    try {
      if (starting) yield this.begin(false);
      const s = this.run.state;
      await this.loadMostUsed();
      while (true) {
        if (this.interrupted) return yield* this.pauseInterrupted(s.model_calls + 1);
        if (this.stopped) return yield* this.end('failed', 'halted', this.stopped);
        if (s.model_calls >= this.limits.maxSteps) return yield* this.end('failed', 'max_steps');
        if (this.timedOut || Date.now() - this.started > this.limits.timeoutMs) return yield* this.end('failed', 'timeout');
        this.run.switchMode(this.mode(), 'during the run');
        const entry = this.menu();
        const { menu, system } = entry;
        const step = s.model_calls + 1;
        const found = this.found.size ? menu.tools.filter((t) => this.found.has(t.name)).map((t) => t.name) : [];
        const trace: RequestTrace = { step, system, tools: menu.declared, dropped: menu.dropped };
        if (found.length) trace.found = found;
        // R30: counted in a process of its own while the model works (the first count loads an encoding, ~1 s).
        const tokens = this.deps.countTokens
          ? (entry.tokens.count ??= countRequestTokens(system, menu.declared, encodingFor(this.deps.model.spec)).catch(() => -1))
          : undefined;
        // Issue 29: the step before's save (its last result held back for it) and this request's
        // event in one write; the request joins the trace after it (its usage is known at the next
        // save). A leg's first request has no step before it to save: its event is appended alone.
        const request: LoopEvent = { type: 'model_request', step, system, tools: menu.declared, dropped: menu.dropped };
        if (this.stepUnsaved) {
          this.stepUnsaved = false;
          // C2/C5: journaled only if the save finds the session still in the mode this request was
          // built in. A switch made in another process during the step leaves it out: the loop's top
          // then takes the new mode and builds the request again (appended alone), so no call of this
          // step is gated, nor the model told, by the mode the session has left.
          this.run.defer(request, s.mode);
          let kept = false;
          for (const e of await this.run.save()) {
            if (e.type === 'model_request') kept = true;
            yield e;
          }
          if (!kept) continue;
        } else yield request;
        this.run.addRequest(trace);
        let reply: AssistantReply | undefined;
        let failed = false;
        let error: unknown;
        // The model call's span ends as the call does, also when the consumer stops at a text delta.
        const chat = startChatSpan(this.span, this.deps.model.spec);
        try {
          for await (const ev of this.deps.model.stream({
            system,
            messages: s.messages,
            tools: menu.declared,
            seq: s.seq_base + repliedCalls(s),
            signal: this.modelAbort.signal,
          })) {
            if (ev.type === 'text_delta') yield { type: 'text_delta', text: ev.text };
            else if (ev.type === 'done') reply = ev.reply;
          }
          if (!reply) throw new ModelError('the model stream ended without a reply');
        } catch (err) {
          failed = true;
          error = err;
          recordError(chat, err);
        } finally {
          endChatSpan(chat, failed ? undefined : reply?.usage);
        }
        if (failed || !reply) {
          // P2/R18: a call the interruption cut short gave no reply: resuming asks again (replayed).
          if (this.interrupted) trace.unanswered = true;
          this.run.countModelCall(trace, await this.counted(tokens, trace), undefined);
          if (this.interrupted) return yield* this.pauseInterrupted(step);
          if (this.stopped) return yield* this.end('failed', 'halted', this.stopped);
          if (this.timedOut) return yield* this.end('failed', 'timeout');
          // A provider's error may echo a header or a key: it is stored and shown without them.
          const msg = redact(error instanceof Error ? error.message : String(error));
          this.run.note(`model error: ${msg}`);
          return yield* this.end('failed', 'model_error', msg);
        }
        this.run.countModelCall(trace, await this.counted(tokens, trace), reply.usage);
        const admitted = admitReply(reply.tool_calls);
        if ('problem' in admitted) {
          // Nothing of a reply whose calls cannot be told apart runs or joins the transcript (R19, R21).
          this.run.note(`model reply refused: ${admitted.problem}`);
          return yield* this.end('failed', 'model_error', admitted.problem);
        }
        // Issue 27: what the model wrote is made storable here, once, before anything keeps or shows it.
        const clean = storableReply(reply.text, admitted.calls);
        if (clean.replaced) {
          this.run.note(unstorableNote('model reply', clean.replaced));
          reply = { ...reply, text: clean.text };
        }
        const calls = clean.calls;
        if (calls.length === 0 && !reply.text.trim() && !reply.truncated) {
          // Issue 26: an empty reply (no text, no call) is asked again once; it never joins the transcript.
          if (s.notes.includes(EMPTY_RETRY)) return yield* this.end('failed', 'model_error', SAY.emptyReply(this.deps.model.spec));
          this.run.note(EMPTY_RETRY);
          yield* this.saved();
          continue;
        }
        this.run.addAssistant(reply.text, calls);
        // Issue 26: a first reply calling a tool the request did not declare, after a request with tools,
        // suggests the server never showed the model its tools (a chat template that cannot render them).
        if (step === 1 && menu.declared.length) {
          const outside: string[] = [];
          for (const c of calls) if (!entry.names.has(c.name)) outside.push(c.name);
          if (outside.length) this.run.warn(SAY.toolsNotSeen(this.deps.model.spec, outside));
        }
        for (const c of calls) this.called.add(c.name);
        yield { type: 'assistant', step, text: reply.text, tool_calls: calls };
        if (calls.length === 0) {
          // Issue 26: a text cut off at the output token limit is never the answer.
          if (reply.truncated) return yield* this.end('failed', 'truncated', SAY.outputLimit(reply.truncated));
          // C1: a goal runs until every criterion is reported verified (or a boundary stops it).
          const goal = goalProgress(s);
          if (goal?.missing.length) {
            const reminders = s.notes.filter((n) => n.startsWith('goal reminder')).length;
            if (reminders >= MAX_GOAL_REMINDERS) {
              return yield* this.end('failed', 'halted', `the goal's criteria ${goal.missing.join(', ')} were never reported verified`);
            }
            this.run.note(`goal reminder: criteria ${goal.missing.join(', ')} not yet verified`);
            this.run.addCoreMessage(goalReminder(goal.missing));
            yield* this.saved();
            continue;
          }
          if (this.deps.output) {
            const verdict = this.deps.output.parse(reply.text);
            if (!verdict.ok) {
              if (s.notes.some((n) => n.startsWith(OUTPUT_RETRY))) return yield* this.end('failed', 'invalid_output', verdict.problem);
              this.run.note(`${OUTPUT_RETRY}${verdict.problem}`);
              this.run.addCoreMessage(SAY.outputMismatch(verdict.problem));
              yield* this.saved();
              continue;
            }
          }
          return yield* this.end('done', 'final_answer', undefined, reply.text);
        }
        // Issue 26: in a reply cut off at the output token limit, the last call is the one cut short.
        const cutOff = reply.truncated ? { call_id: calls[calls.length - 1].id, limit: SAY.outputLimit(reply.truncated) } : undefined;
        const outcome = yield* this.runCalls(step, calls, menu, cutOff);
        if (outcome) return outcome;
      }
    } catch (err) {
      if (span) recordError(span, err);
      throw err;
    } finally {
      if (span) endLegSpan(span, this.run.state);
      this.run.legEnds();
    }
  }

  /** What the leg's calls run with (no ledger): made once per leg, its parts read when a call runs. */
  private callContext: ExecuteContext | undefined;

  private executeContext(ledger?: ExecuteContext['ledger']): ExecuteContext {
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
  private callPolicy(): CallPolicy | undefined {
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

  /** Each call of one reply through the pipeline, in order (R22); returns a result when the run stops here. */
  private async *runCalls(
    step: number,
    calls: readonly ToolCall[],
    menu: Menu,
    cutOff?: { call_id: string; limit: string },
  ): AsyncGenerator<LoopEvent, RunResult | undefined> {
    const s = this.run.state;
    const pool = this.deps.registry.byName;
    const records: CallRecord[] = [];
    const results: PendingResult[] = [];
    const approvals: ApprovalItem[] = [];
    let question: { call_id: string; question: string; confirm?: Confirmation } | undefined;
    /** D2: a task_wait of this reply that waits for a delegate still working (with a store: the run pauses for it). */
    let task: (TaskWait & { call_id: string }) | undefined;
    let endOn: EndOn | undefined;
    let last: LoopEvent | undefined;
    const priorToolCalls = s.steps.some((r) => r.tool !== 'ask_user');
    const ctx = (this.callContext ??= this.executeContext());

    for (const call of calls) {
      const tool = pool.get(call.name);
      // Every call gets its span, answered by the core or run; it ends before the call's result is yielded.
      const span = startToolSpan(this.span, call.name, call.id);
      let record: CallRecord;
      let pending = false;
      /** The call's repeat key, when prepare made it (the gate remembers the call by it). */
      let key: string | undefined;
      try {
        const first: Prepared =
          call.id === cutOff?.call_id
            ? { kind: 'answered', outcome: 'invalid_arguments', result: SAY.toolCallCutOff(call.name, cutOff.limit) }
            : prepareCall({
                call,
                pool,
                menu,
                mode: s.mode,
                gate: this.gate,
                pending: { question: question !== undefined, approvals: approvals.length > 0 },
                policy: this.callPolicy(),
              });
        const prepared: Ready = first.kind === 'needs_card' ? await prepareApproval(call.id, first.tool, first.args, first.verdict) : first;
        const rec = (outcome: CallRecord['outcome'], result: string, is_error: boolean, by_core: boolean): CallRecord => ({
          step,
          call_id: call.id,
          tool: call.name,
          args: call.args ?? null,
          outcome,
          result,
          is_error,
          effect: tool?.declaration.effect,
          by_core,
          // PC11: the trace names the policies that decided the call.
          ...(first.verdict ? { policy: [...first.verdict.policies] } : {}),
        });
        switch (prepared.kind) {
          case 'answered':
            record = rec(prepared.outcome, prepared.result, true, true);
            break;
          case 'repeat': {
            const e = prepared.earlier;
            record = rec('repeat', prepared.result, e.is_error, true);
            const usable = !e.is_error && e.content.trim() !== '';
            if (tool?.declaration.answers_directly && usable) endOn ??= { reason: 'answered_by_tool', answer: e.content };
            else if (prepared.nth >= 2) endOn ??= { reason: 'stalled', answer: lastUsable([...s.steps, ...records]) ?? '' };
            break;
          }
          case 'ask_user':
            // R16: asked while writes are held (earlier in the run, or earlier in this reply), it is a confirmation.
            question = {
              call_id: call.id,
              question: prepared.question,
              confirm: heldConfirmation([...s.steps, ...records], this.gate.heldAwaitingAnswer, pool, this.gate.untrusted),
            };
            record = rec('ran', '', false, false);
            pending = true;
            break;
          case 'approval':
            approvals.push(prepared.item);
            record = rec('awaiting_approval', '', false, true);
            pending = true;
            break;
          case 'repeat_of_card':
            // R13: answered with the carded call's result once the card is answered; never run itself.
            record = rec('repeat', '', false, true);
            pending = true;
            break;
          case 'execute': {
            this.admitted.add(prepared.tool.name);
            const runs = isFindTools(prepared.tool) ? this.finder(prepared.tool, menu) : prepared.tool;
            const ex = await executeCall(ctx, runs, call.id, prepared.args);
            const wait = takeTaskWait(s.id, call.id);
            if (wait && ex.outcome === 'ran' && this.deps.store && !task) {
              // D2: the run waits for the delegate (stored), not this process: its result comes when the delegate ends.
              task = { ...wait, call_id: call.id };
              record = rec('ran', '', false, false);
              pending = true;
              break;
            }
            record = rec(ex.outcome, ex.content, ex.is_error, ex.outcome !== 'ran');
            if (ex.untrusted !== undefined) record.untrusted = ex.untrusted;
            // U4: the trace says which operator rule let this write run after untrusted content.
            if (prepared.allowed_after_untrusted) record.allowed_after_untrusted = prepared.allowed_after_untrusted;
            key = prepared.key;
            break;
          }
        }
      } catch (err) {
        recordError(span, err);
        span.end();
        throw err;
      }
      endToolSpan(span, record.outcome, record.is_error, record.effect);
      records.push(record);
      results.push({ call_id: call.id, name: call.name, content: pending ? undefined : record.result, is_error: record.is_error });
      if (!pending) {
        recordCall(this.gate, record, key);
        // Issue 29: the reply's last result waits for the step's save, which journals it (below).
        if (call === calls[calls.length - 1]) last = { type: 'tool_result', step, record };
        else yield { type: 'tool_result', step, record };
      } else if (record.outcome === 'awaiting_approval') recordCall(this.gate, record);
    }

    const store = this.deps.store;
    if (task && (approvals.length || question)) {
      // D2: a run waits for one thing at a time: the person comes first, and the model asks for the task again.
      const rec = records.find((r) => r.call_id === task?.call_id);
      const res = results.find((r) => r.call_id === task?.call_id);
      if (rec && res) {
        rec.result = res.content = SAY.taskStillRunning(task.task_id);
        recordCall(this.gate, rec);
        yield { type: 'tool_result', step, record: rec };
      }
      task = undefined;
    }
    if (last) {
      if (store && (approvals.length || question || task)) yield last;
      else this.run.defer(last);
    }
    if (store && approvals.length) {
      const seq = this.run.nextPauseSeq();
      const id = `apr_${randomUUID().slice(0, 8)}`;
      const card = buildCard(approvals, pool, s.request, this.gate.untrusted);
      // D3: a delegate's card names the chain: which delegate, started by which run, for what request.
      if (s.parent) card.chain = { delegate: s.parent.delegate, parent_run: s.parent.run_id, request: s.parent.request };
      const now = this.deps.now?.() ?? new Date();
      // A1: the card is stored by the pause's own save — a process killed before it leaves
      // neither, and the step is done again; never a card no paused run waits on.
      const record: ApprovalRecord = {
        id,
        run_id: s.id,
        pause_seq: seq,
        items: approvals,
        card,
        status: 'pending',
        requested_at: now.toISOString(),
        expires_at: new Date(now.getTime() + this.limits.approvalTtlMs).toISOString(),
        answered_at: null,
        answered_by: null,
        reason: null,
        consent_writes: false,
      };
      return yield* this.pause({ kind: 'approval', seq, approval_id: id, card, step, items: approvals, results, calls: records }, record);
    }
    if (store && question) {
      const q = question;
      return yield* this.pause({
        kind: 'ask_user',
        seq: this.run.nextPauseSeq(),
        call_id: q.call_id,
        question: q.question,
        ...(q.confirm ? { confirm: q.confirm } : {}),
        step,
        results,
        calls: records,
      });
    }
    if (store && task) {
      return yield* this.pause({
        kind: 'task',
        seq: this.run.nextPauseSeq(),
        call_id: task.call_id,
        task_id: task.task_id,
        child_run: task.child_run,
        delegate: task.delegate,
        step,
        results,
        calls: records,
      });
    }
    const ending = await this.finishStep(records, results, endOn, priorToolCalls);
    return ending ? yield* this.end(...ending) : undefined;
  }

  /**
   * Appends a completed step's results (call order, R22) and applies the evaluator and R12: the end
   * they call for, if any (a plain function: a step that goes on passes no generator of its own).
   */
  private async finishStep(
    records: CallRecord[],
    results: PendingResult[],
    endOn: EndOn | undefined,
    priorToolCalls: boolean,
  ): Promise<Ending | undefined> {
    const s = this.run.state;
    this.run.completeStep(records, results);
    for (const r of records) {
      if (r.outcome === 'ran' && (r.tool === 'submit_plan' || r.tool === 'submit_goal')) await this.adoptContract(r);
    }
    const goal = goalProgress(s);
    if (goal?.boundary && records.some((r) => r.tool === 'report_goal' && r.outcome === 'ran')) {
      return ['failed', 'halted', `a boundary stops the goal: ${goal.boundary}`];
    }
    // R20: the evaluator has its say first.
    const failures = countTrailingFailures(s.steps);
    if (failures >= this.limits.maxConsecutiveFailures) {
      // R20: the message names what failed, and points at the plugins only when a tool itself failed.
      const what = describeFailures(s.steps, failures);
      const hint = what.plugin ? '; keel plugins check shows whether a plugin is failing' : '';
      return ['failed', 'halted', `${failures} tool calls failed in a row: ${what.text}${hint}`];
    }
    if (Date.now() - this.started > this.limits.timeoutMs) return ['failed', 'timeout'];
    if (endOn) {
      if (endOn.reason === 'answered_by_tool') return ['done', 'answered_by_tool', undefined, endOn.answer];
      if (endOn.answer) return ['done', 'stalled', undefined, endOn.answer];
      return ['failed', 'stalled', 'the model repeated the same call with nothing usable to show'];
    }
    // R12: an answers_directly tool that is the run's first tool ends the run on its output.
    const tools = priorToolCalls ? undefined : records.filter((r) => r.tool !== 'ask_user');
    if (tools?.length === 1) {
      const only = tools[0];
      const spec = this.deps.registry.byName.get(only.tool);
      if (spec?.declaration.answers_directly && only.outcome === 'ran' && !only.is_error && only.result.trim() !== '') {
        return ['done', 'answered_by_tool', undefined, only.result];
      }
    }
    // The step is saved with the next request's event (drive), or by the end or pause that comes first.
    this.stepUnsaved = true;
    return undefined;
  }

  /** Saves the run and shows the events that save journaled (issue 29: never before they are stored). */
  private async *saved(): AsyncGenerator<LoopEvent, void> {
    for (const e of await this.run.save()) yield e;
  }

  /** C1: an approved proposal switches the session to Agent mode; the work goes on under it. */
  private async adoptContract(r: CallRecord): Promise<void> {
    this.run.adoptContract(contractOf(r));
    await this.deps.onModeChange?.(this.run.state);
  }

  private async *pauseInterrupted(step: number): AsyncGenerator<LoopEvent, RunResult> {
    const why = this.interrupted ?? 'interrupted';
    this.run.note(`interrupted: ${why}`);
    return yield* this.pause({ kind: 'interrupted', seq: this.run.nextPauseSeq(), step, why });
  }

  private async *pause(pause: Parameters<RunWriter['pause']>[0], card?: ApprovalRecord): AsyncGenerator<LoopEvent, RunResult> {
    this.release();
    const reason =
      pause.kind === 'approval'
        ? 'awaiting_approval'
        : pause.kind === 'interrupted'
          ? 'interrupted'
          : pause.kind === 'task'
            ? 'awaiting_task'
            : 'awaiting_user_input';
    // The pause's own events are journaled by its save (issue 29), after the step's held-back ones.
    let result: RunResult | undefined;
    const announce = (v: RunView): LoopEvent[] => {
      result = toResult(v);
      return [
        { type: 'paused', pause },
        { type: 'run_finished', result },
      ];
    };
    for (const e of await this.run.pause(pause, reason, announce, card)) yield e;
    return result ?? toResult(this.run.state);
  }

  private abortAll(reason: Error): void {
    this.abort.abort(reason);
    this.modelAbort.abort(reason);
  }

  /** The leg is over: its timer and its interruption listener go. */
  private release(): void {
    clearTimeout(this.timer);
    this.deps.signal?.removeEventListener('abort', this.onInterrupt);
  }

  private async *end(...[status, reason, why, answer]: Ending): AsyncGenerator<LoopEvent, RunResult> {
    this.release();
    for (const tool of this.gate.heldAwaitingAnswer) this.run.warn(SAY.heldNeverAsked(tool));
    let result: RunResult | undefined;
    const announce = (v: RunView): LoopEvent => {
      result = toResult(v);
      return { type: 'run_finished', result };
    };
    // The end's event is journaled by its save (issue 29), after the step's held-back ones.
    for (const e of await this.run.end(status, reason, answer ?? interruption(this.run.state, reason, why, this.limits), announce)) yield e;
    return result ?? toResult(this.run.state);
  }
}
