/**
 * The run module: the only code that changes and saves a run's state. A run is started, claimed
 * from a pause (answer, approval), taken over from a dead process, moved through its steps by the
 * engine, and ended — each through a method here, so the trace is written one way and only grows.
 * The claims' rules are in claims.ts, who owns a run in owners.ts; RunWriter alone holds and saves
 * the state they claim. Never stores a run but through `save` (or the unstorable run's one write),
 * and never shows an event before the save that journals it.
 */
import { randomUUID } from 'node:crypto';
import { permanentStoreError } from '../store/errors.js';
import type {
  Answer,
  ApprovalRecord,
  CallRecord,
  Contract,
  EffectRecord,
  EndReason,
  JournalEntry,
  LoopEvent,
  Message,
  Mode,
  Pause,
  PendingResult,
  Principal,
  RequestTrace,
  RunEvent,
  RunLimit,
  RunState,
  RunStatus,
  RunStore,
  TaskParent,
  ToolCall,
  UntrustedSource,
} from '../types/index.js';
import { crashPoint } from '../util/crash.js';
import { KeelError } from '../util/errors.js';
import { redact } from '../util/redact.js';
import { storableValue } from '../util/text.js';
import type { ApprovalPause, QuestionPause } from './claims.js';
import * as claims from './claims.js';
import { journaledKept, noteJournaled, toRunEvent } from './journal.js';
import { legBegun, legOver, processOwner } from './owners.js';

export type { ApprovalPause, QuestionPause, TaskPauseOf } from './claims.js';
export { legHere, legOver, ownerAlive, ownerGone, ownerOf, processOwner } from './owners.js';

/** A run as everyone but its writer sees it: read-only. */
export type RunView = { readonly [K in keyof RunState]: RunState[K] extends (infer U)[] ? readonly U[] : RunState[K] };

/**
 * C5: told the session's mode as each save of a run read it from the store, so a switch made in
 * another process reaches the run from its next save (the sessions of the Keel driving it).
 */
export interface SessionWatch {
  /** Taken before a save: what this process has itself written of sessions' modes so far. */
  begin(): number;
  /** The session's mode as the save read it; ignored when this process changed a mode since `token`. */
  seen(sessionId: string, mode: Mode, token: number): void;
}

export interface NewRun {
  request: string;
  mode: Mode;
  model: string;
  plugin_dirs: string[];
  /** Continue a session: its id, its transcript so far, its approved contract and scripted position. */
  session?: {
    id: string;
    history: readonly Message[];
    contract: Contract | null;
    seq_base: number;
    untrusted?: readonly UntrustedSource[];
  };
  /** A delegate's run belongs to its parent's session (C8). */
  session_id?: string;
  /** U2: a delegate's: what its parent had read from outside the user when it started it. */
  inherited_untrusted?: readonly UntrustedSource[];
  notes?: readonly string[];
  /** PC9: who started the run, as the operator's policy sees it. */
  principal?: Principal;
  /** D1: a delegate's run: the run that started it. */
  parent?: TaskParent;
  /** R18: the names of the run's tools declared in code (only a process that has them carries it on). */
  app_tools?: readonly string[];
  /** The run's id, when its starter makes it (a delegate's, from its parent and task call); else a random one. */
  id?: string;
  /** D5: a delegate's run is stored only within this limit, checked by the store as it inserts (RunLimitReached otherwise). */
  limit?: RunLimit;
}

/** D5: the store refused a new delegate's run: the limit on delegates running at once in the store was reached. */
export class RunLimitReached extends KeelError {
  constructor(readonly limit: RunLimit) {
    super('conflict', `no run started: ${limit.activeDelegates} delegates are already running or paused in this store`);
  }
}

/** Holds one run's state and is the only thing that changes it; `save` is the only way it is stored. */
export class RunWriter {
  private constructor(
    private readonly s: RunState,
    private readonly store: RunStore | null,
    private readonly clock: () => Date,
  ) {}

  private watch: SessionWatch | undefined;
  /**
   * The journal id of the run's latest event, while this writer knows that none of the run's events
   * came after it: 0 for a run it started (nothing is journaled before its first event), unknown for
   * a claimed run (others may have journaled its events: an answered card), after a pause (others
   * may journal from then on), while two of its writes overlap, and after a write that failed.
   */
  private lastEvent: number | undefined;
  /** Journal writes begun so far, and those not yet over (see `journaling`). */
  private journalWrites = 0;
  private journalInFlight = 0;
  /** Events held back for the next save, which journals them in its own write (see `defer`). */
  private deferred: { e: LoopEvent; onlyInMode?: Mode }[] = [];

  /** A leg of this process holds the run from now (see LEGS_HERE in owners.ts). */
  legBegins(): void {
    if (this.store) legBegun(this.s.id);
  }

  /** The leg that held the run is over (ended, paused, stopped or failed): see LEGS_HERE in owners.ts. */
  legEnds(): void {
    legOver(this.s.id);
  }

  get state(): RunView {
    return this.s;
  }

  /** C5: each save tells `w` the session's mode as stored. */
  watchSession(w: SessionWatch): void {
    this.watch = w;
  }

  /** A new run, stored at once (so a session can see it and change its mode while it works). */
  static async start(input: NewRun, store: RunStore | null, clock: () => Date = () => new Date()): Promise<RunWriter> {
    const request = input.request.trim();
    if (!request) throw new KeelError('bad_input', 'the message is empty: say what you want done');
    const id = input.id ?? `run_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const now = clock().toISOString();
    const s: RunState = {
      id,
      session_id: input.session?.id ?? input.session_id ?? `ses_${id.slice(4)}`,
      seq_base: input.session?.seq_base ?? 0,
      contract: input.session?.contract ?? null,
      status: 'running',
      reason: null,
      request,
      mode: input.mode,
      // Credentials in a model URL are not stored: a resumed run takes them from the environment or --model.
      model: redact(input.model),
      plugin_dirs: input.plugin_dirs,
      answer: null,
      pause: null,
      pause_seq: 0,
      model_calls: 0,
      effects: [],
      messages: [...(input.session?.history ?? []), { role: 'user', content: request }],
      steps: [],
      requests: [],
      notes: [...(input.notes ?? [])],
      warnings: [],
      owner: processOwner(),
      created_at: now,
      updated_at: now,
    };
    // U2: the run's context starts with what it inherits (the session's transcript, a delegate's prompt): so does what it has read.
    const inherited = input.inherited_untrusted ?? input.session?.untrusted;
    if (inherited?.length) s.inherited_untrusted = inherited.map((u) => ({ ...u }));
    if (input.principal) s.principal = { ...input.principal, groups: [...input.principal.groups] };
    if (input.parent) s.parent = { ...input.parent };
    if (input.app_tools?.length) s.app_tools = [...input.app_tools];
    // A store written before limits returns nothing: only an explicit false is a refusal.
    if (store && (await store.createRun(s, input.limit)) === false && input.limit) throw new RunLimitReached(input.limit);
    const w = new RunWriter(s, store, clock);
    w.lastEvent = 0;
    return w;
  }

  /**
   * R17/R18: takes a run out of its question, for the answer. Refused when the run does not wait
   * for an answer, or was already resumed from this question (here or in another process).
   */
  static async claimForAnswer(
    store: RunStore,
    runId: string,
    answer: Answer,
    clock?: () => Date,
  ): Promise<{ run: RunWriter; pause: QuestionPause }> {
    const { state, pause } = await claims.claimForAnswer(store, runId, answer);
    return { run: new RunWriter(state, store, clock ?? (() => new Date())), pause };
  }

  /**
   * A2: takes a run out of its approval pause once the approval is answered — or takes over a run
   * whose process died while carrying out its approved calls.
   */
  static async claimForApproval(
    store: RunStore,
    approval: ApprovalRecord,
    clock?: () => Date,
  ): Promise<{ run: RunWriter; pause: ApprovalPause }> {
    const { state, pause } = await claims.claimForApproval(store, approval);
    return { run: new RunWriter(state, store, clock ?? (() => new Date())), pause };
  }

  /**
   * Takes a run to carry it on or end it without an answer: a paused run (its pause claimed), or a
   * run whose process died mid-leg (taken over). See claims.ts.
   */
  static async claimStalled(store: RunStore, runId: string, clock?: () => Date, loaded?: RunState): Promise<RunWriter> {
    return new RunWriter(await claims.claimStalled(store, runId, loaded), store, clock ?? (() => new Date()));
  }

  /** Issue 40: takes a run to cancel it, its paused run's pending cards closed in the claim (see claims.ts). */
  static async claimToCancel(
    store: RunStore,
    runId: string,
    close: { actor: string; reason: string; at: string },
    clock?: () => Date,
  ): Promise<{ run: RunWriter; closed: string[] }> {
    const { state, closed } = await claims.claimToCancel(store, runId, close);
    return { run: new RunWriter(state, store, clock ?? (() => new Date())), closed };
  }

  /**
   * C1: a session's mode changed while its run was paused: the run records it and continues in the
   * new mode. The pause is claimed around the change, so a resume racing it is never overwritten;
   * a run already being continued picks the mode up from its session instead.
   */
  static async switchPausedMode(store: RunStore, runId: string, mode: Mode): Promise<void> {
    const s = await claims.claimForModeSwitch(store, runId, mode);
    if (!s) return;
    const w = new RunWriter(s, store, () => new Date());
    w.switchMode(mode, 'while paused');
    await w.save(); // still 'paused' at the same pause: the claim is released
  }

  /**
   * Saves the run, with the events `defer` held back journaled in the same write (issue 29, S5);
   * returns those events, each with its journal id (none without a store), to be shown now — after
   * the save, never before. A save that fails stores none of them, and no one has seen them. An
   * event held for one mode that the save found the session no longer in was not journaled and is
   * not returned (C5: it was built for a mode the run has left).
   */
  async save(card?: ApprovalRecord): Promise<LoopEvent[]> {
    this.counting.clear(); // R30: counts not in yet stay out of the requests this save stores
    const held = this.deferred;
    if (held.length) this.deferred = [];
    // No store: nothing is written, and the events go out as they are.
    if (!this.store) return held.map((h) => h.e);
    this.s.updated_at = this.clock().toISOString();
    const token = this.watch?.begin();
    let mode: Awaited<ReturnType<RunStore['saveRun']>> | undefined;
    let entries: JournalEntry[] | undefined;
    let j: ReturnType<RunWriter['journaling']> | undefined;
    // Issue 29's crash test: killed with a step's last result (and what else the save carries) not yet stored.
    crashPoint('before_save');
    try {
      if (held.length) {
        const at = this.s.updated_at;
        entries = held.map(({ e, onlyInMode }) => ({ event: toRunEvent(e) as RunEvent, at, ...(onlyInMode ? { onlyInMode } : {}) }));
      }
      j = entries ? this.journaling() : undefined;
      mode = await this.store.saveRun(this.s, entries, card);
      // Each event's row is kept for the live streams of a server that asked for them (keepJournaled).
      if (j && entries) {
        let prev = j.prev;
        for (let i = 0; i < entries.length; i++) {
          const id = entries[i].id;
          if (id === undefined) continue;
          noteJournaled(held[i].e, { id, run_id: this.s.id, at: entries[i].at, event: entries[i].event, prev });
          prev = id;
        }
        j.over(prev);
      }
    } catch (err) {
      j?.over(undefined);
      throw await this.unstorable(err);
    }
    if (mode && token !== undefined) this.watch?.seen(this.s.session_id, mode, token);
    crashPoint('save');
    if (!entries) return held.map((h) => h.e);
    const out: LoopEvent[] = [];
    for (let i = 0; i < held.length; i++) {
      const id = entries[i].id;
      // Each held event was made for this save (see defer, pause, end): it takes its id itself.
      if (id !== undefined) out.push(Object.assign(held[i].e, { id }));
      else if (!held[i].onlyInMode) throw new Error(`run ${this.s.id}: the save kept no journal id for its ${held[i].e.type} event`);
    }
    return out;
  }

  /**
   * Holds an event back for the run's next save, which keeps it in the journal in the same write
   * (issue 29: a step's last result, its save and the next request's event are one write). Only
   * for an event the journal keeps (not a text delta); the engine shows it when the save returns it.
   * `onlyInMode`: journaled only if the save finds the run's session in that mode (or has none on
   * record) — a request built for a mode another process has since switched away from is not kept.
   */
  defer(e: LoopEvent, onlyInMode?: Mode): void {
    this.deferred.push({ e, onlyInMode });
  }

  /**
   * Keeps an event in the run's journal (before anyone is shown it); returns its id, none without a
   * store. An event a save already journaled (it carries its id) is not kept again.
   */
  async record(e: LoopEvent): Promise<number | undefined> {
    if (e.id !== undefined) return e.id;
    const ev = this.store ? toRunEvent(e) : undefined;
    if (!ev || !this.store) return undefined;
    const at = this.clock().toISOString();
    const j = this.journaling();
    try {
      const id = await this.store.appendEvent(this.s.id, ev, at);
      if (j) {
        noteJournaled(e, { id, run_id: this.s.id, at, event: ev, prev: j.prev });
        j.over(id);
      }
      return id;
    } catch (err) {
      j?.over(undefined);
      throw await this.unstorable(err);
    }
  }

  /**
   * A journal write begins: the id of the run's event before its first (when known: no other of
   * this writer's is in flight), and `over`, told the id of its last event once it is written (the
   * run's latest event from then, unless another write began meanwhile).
   */
  private journaling(): { prev: number | undefined; over: (last: number | undefined) => void } | undefined {
    // Nobody in this process reads what events were journaled as (no server's streams): nothing is
    // kept, and the writer no longer claims to know the run's latest event (issue 49: a library's
    // durable step paid ~10% for it in bench/loop).
    if (!journaledKept()) {
      this.lastEvent = undefined;
      return undefined;
    }
    const prev = this.journalInFlight === 0 ? this.lastEvent : undefined;
    const n = ++this.journalWrites;
    this.journalInFlight++;
    this.lastEvent = undefined;
    return {
      prev,
      over: (last) => {
        this.journalInFlight--;
        if (n === this.journalWrites && this.journalInFlight === 0) this.lastEvent = last;
      },
    };
  }

  /**
   * Issue 27: a save the store refused for a reason that will not go away (text it cannot hold that
   * got past storableText, a value too large) ends the run `failed` with the reason, stored with
   * every text made storable, instead of leaving it running for a takeover that would ask the model
   * again and fail the same way. Returns the error the leg stops with (the original one when trying
   * again may work: an outage, a lost lease).
   */
  private async unstorable(err: unknown): Promise<unknown> {
    const why = permanentStoreError(err);
    if (!why || !this.store || this.s.reason === 'store_error') return err;
    // Every text made storable, and the state made plain JSON (what JSON cannot hold, a bigint, as text).
    const clean = JSON.parse(JSON.stringify(storableValue({ ...this.s }).value, (_k, v) => (typeof v === 'bigint' ? String(v) : v)));
    Object.assign(this.s, clean, { status: 'failed', reason: 'store_error', pause: null, answer: `The run stopped: ${why}.` });
    this.s.notes.push(`store error: ${why}`);
    this.s.updated_at = this.clock().toISOString();
    try {
      await this.store.saveRun(this.s);
    } catch {
      return err;
    }
    return new KeelError('bad_input', `run ${this.s.id} failed: the store refused to save it (${why})`);
  }

  /**
   * A leg continues a paused run: it is running again. The pause stays recorded until its step is
   * complete, so a process that dies while carrying out approved calls leaves a run another can take over.
   */
  resume(): void {
    this.s.status = 'running';
    this.s.reason = null;
  }

  /** An interrupted run goes on: its pause (which holds no calls) is over. */
  clearPause(): void {
    this.s.pause = null;
  }

  /**
   * A question whose answer died with its process (taken over mid-leg): the run waits for it again,
   * at the same pause, which stays answerable once.
   */
  async reopenQuestion(): Promise<void> {
    this.s.status = 'paused';
    this.s.reason = 'awaiting_user_input';
    this.s.notes.push('Keel stopped while continuing after the answer: the question is open again');
    await this.save();
  }

  note(text: string): void {
    this.s.notes.push(text);
  }

  /** Something the user should know that did not stop the run (each said once). */
  warn(text: string): void {
    if (!this.s.warnings.includes(text)) this.s.warnings.push(text);
  }

  /** The session's mode changed under the run (C1, C5): later steps decide in the new mode. */
  switchMode(mode: Mode, when: string): void {
    if (this.s.mode === mode) return;
    this.s.notes.push(`mode switched from ${this.s.mode} to ${mode} ${when}`);
    this.s.mode = mode;
  }

  /** C1: an approved proposal becomes the run's contract and switches the run to Agent mode. */
  adoptContract(contract: Contract): void {
    this.s.contract = contract;
    this.s.notes.push(`${contract.kind} approved: ${this.s.mode} mode → agent mode`);
    this.s.mode = 'agent';
  }

  addRequest(trace: RequestTrace): void {
    this.s.requests.push(trace);
  }

  /** R30: every model call is counted, failed or not; the request's token figures join its trace. */
  countModelCall(trace: RequestTrace, inputTokens: number | undefined, usage: RequestTrace['usage'] | undefined): void {
    this.s.model_calls++;
    if (inputTokens !== undefined && inputTokens >= 0) trace.input_tokens = inputTokens;
    if (usage) trace.usage = usage;
  }

  /** Requests whose token count is still being made (R30, best effort): each until the run's next save. */
  private readonly counting = new Set<RequestTrace>();

  /**
   * R30: a token count still being made when its request's reply came in joins the trace when it
   * comes in, if that is before the run's next save: the stores keep a request as first saved, so a
   * count made later is dropped rather than shown in the result and missing from the store.
   */
  countLater(trace: RequestTrace, count: Promise<number>): void {
    this.counting.add(trace);
    void count.then((n) => {
      if (this.counting.delete(trace) && n >= 0) trace.input_tokens = n;
    });
  }

  addAssistant(text: string, tool_calls: ToolCall[]): void {
    this.s.messages.push({ role: 'assistant', content: text, tool_calls });
  }

  /** A message of the core's own to the model (marked `[Keel]`), e.g. a goal reminder. */
  addCoreMessage(content: string): void {
    this.s.messages.push({ role: 'user', content });
  }

  /** R29: a non-read call that is about to start, stored before it runs (once per call). */
  async addEffect(e: EffectRecord): Promise<void> {
    if (this.s.effects.some((x) => x.call_id === e.call_id)) return;
    this.s.effects.push(e);
    await this.save();
  }

  /** A completed step: each result with its call id, in call order (R19, R22), and the calls' records. */
  completeStep(records: readonly CallRecord[], results: readonly PendingResult[]): void {
    this.s.pause = null;
    for (const r of results) {
      this.s.messages.push({ role: 'tool', call_id: r.call_id, name: r.name, content: r.content ?? '', is_error: r.is_error });
    }
    this.s.steps.push(...records);
  }

  /** The next pause's number: each pause is resumable once (R18). */
  nextPauseSeq(): number {
    return this.s.pause_seq + 1;
  }

  /**
   * The run stops here, waiting for an answer or an approval. `announce` makes the events that say
   * so from the paused run, journaled by the same save; returns what the save journaled (see save).
   * `card`: the approval card the pause waits on, stored by the same save (A1: never one without the other).
   */
  async pause(
    pause: Pause,
    reason: Extract<EndReason, 'awaiting_user_input' | 'awaiting_approval' | 'interrupted' | 'awaiting_task'>,
    announce?: (s: RunView) => LoopEvent[],
    card?: ApprovalRecord,
  ): Promise<LoopEvent[]> {
    this.s.pause_seq = pause.seq;
    this.s.pause = pause;
    this.s.status = 'paused';
    this.s.reason = reason;
    this.s.answer = null;
    if (announce) for (const e of announce(this.s)) this.deferred.push({ e });
    const out = await this.save(card);
    // Paused: whoever answers or ends the run journals its events from now (an answered card).
    this.lastEvent = undefined;
    return out;
  }

  /**
   * The run ends: done with an answer, or failed with a message saying why. `announce` makes the
   * event that says so from the ended run, journaled by the same save; returns what the save journaled.
   */
  async end(
    status: Exclude<RunStatus, 'running' | 'paused'>,
    reason: EndReason,
    answer: string,
    announce?: (s: RunView) => LoopEvent,
  ): Promise<LoopEvent[]> {
    this.s.status = status;
    this.s.reason = reason;
    this.s.pause = null;
    this.s.answer = answer;
    if (announce) this.deferred.push({ e: announce(this.s) });
    return this.save();
  }
}
