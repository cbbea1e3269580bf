/**
 * The run module: the only code that changes and saves a run's state. A run is started, claimed
 * from a pause (answer, approval), taken over from a dead process, moved through its steps by the
 * engine, and ended — each through a method here, so the trace is written one way and only grows.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type {
  Answer,
  ApprovalRecord,
  CallRecord,
  Contract,
  EffectRecord,
  EndReason,
  LoopEvent,
  Message,
  Mode,
  Pause,
  PendingResult,
  RequestTrace,
  RunState,
  RunStatus,
  RunStore,
  ToolCall,
} from '../types/index.js';
import { crashPoint } from '../util/crash.js';
import { KeelError } from '../util/errors.js';
import { redact } from '../util/redact.js';
import { toRunEvent } from './journal.js';

/** A run as everyone but its writer sees it: read-only. */
export type RunView = { readonly [K in keyof RunState]: RunState[K] extends (infer U)[] ? readonly U[] : RunState[K] };

const OWNER = `${hostname()}:${process.pid}`;
/** This process, as recorded in a run it drives. */
export function processOwner(): string {
  return OWNER;
}

/**
 * Whether the process that owns a run may still be driving it. On this host we can ask the OS;
 * a run owned elsewhere is assumed alive until it has been silent for `staleMs`.
 */
export function ownerAlive(owner: string | null, updatedAt: string, staleMs = 10 * 60_000): boolean {
  if (!owner) return false;
  const [host, pid] = owner.split(':');
  if (owner === OWNER) return false;
  if (host === hostname()) {
    try {
      process.kill(Number(pid), 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  return Date.now() - Date.parse(updatedAt) < staleMs;
}

export interface NewRun {
  request: string;
  mode: Mode;
  model: string;
  plugin_dirs: string[];
  /** Continue a session: its id, its transcript so far, its approved contract and scripted position. */
  session?: { id: string; history: readonly Message[]; contract: Contract | null; seq_base: number };
  /** A delegate's run belongs to its parent's session (C8). */
  session_id?: string;
  notes?: readonly string[];
}

/** Holds one run's state and is the only thing that changes it; `save` is the only way it is stored. */
export class RunWriter {
  private constructor(
    private readonly s: RunState,
    private readonly store: RunStore | null,
    private readonly clock: () => Date,
  ) {}

  get state(): RunView {
    return this.s;
  }

  /** A new run, stored at once (so a session can see it and change its mode while it works). */
  static async start(input: NewRun, store: RunStore | null, clock: () => Date = () => new Date()): Promise<RunWriter> {
    const request = input.request.trim();
    if (!request) throw new KeelError('bad_input', 'the message is empty: say what you want done');
    const id = `run_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
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
    await store?.createRun(s);
    return new RunWriter(s, store, clock);
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
    const s = await loadOrThrow(store, runId);
    const pause = s.pause;
    if (s.status !== 'paused' || !pause) {
      throw new KeelError('not_paused', `run ${runId} is not waiting for an answer (status ${s.status}${s.reason ? `, ${s.reason}` : ''})`);
    }
    if (pause.kind === 'approval') {
      throw new KeelError(
        'not_paused',
        `run ${runId} is waiting for approval ${pause.approval_id}, not for an answer: answer the approval`,
        `keel approvals approve|reject ${pause.approval_id}`,
      );
    }
    if (pause.kind !== 'ask_user') {
      throw new KeelError(
        'not_paused',
        `run ${runId} was ${pause.why}, not asked a question: continue it without an answer`,
        `keel resume ${runId}`,
      );
    }
    // R16: a confirmation is a decision, not free text. Refused before the claim: the pause stays open.
    if (pause.confirm && answer.confirm === undefined) {
      throw new KeelError(
        'bad_input',
        `run ${runId} asks the user to confirm ${pause.confirm.tools.join(', ')}: answer with --yes or --no (and --answer TEXT if you like)`,
      );
    }
    if (!pause.confirm && !answer.text.trim()) {
      throw new KeelError('bad_input', `run ${runId} asks a question (${pause.question}): answer it with --answer TEXT`);
    }
    if (!(await store.claimPause(runId, pause.seq, processOwner()))) {
      throw new KeelError('conflict', `run ${runId} was already resumed from this question; it cannot be resumed twice`);
    }
    crashPoint('claim');
    s.owner = processOwner();
    return { run: new RunWriter(s, store, clock ?? (() => new Date())), pause };
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
    const s = await loadOrThrow(store, approval.run_id);
    const pause = s.pause;
    if (pause?.kind !== 'approval' || pause.approval_id !== approval.id) {
      throw new KeelError('not_paused', `run ${s.id} is not waiting for approval ${approval.id} (status ${s.status})`);
    }
    if (approval.status === 'pending') throw new KeelError('not_paused', `approval ${approval.id} has not been answered yet`);
    const claimed =
      s.status === 'paused'
        ? await store.claimPause(s.id, pause.seq, processOwner())
        : s.status === 'running' && !ownerAlive(s.owner, s.updated_at) && (await store.takeOver(s.id, pause.seq, s.owner, processOwner()));
    if (!claimed) {
      throw new KeelError(
        'conflict',
        `run ${s.id} is already being continued after approval ${approval.id} (by ${s.owner ?? 'another process'})`,
      );
    }
    crashPoint('claim');
    s.owner = processOwner();
    return { run: new RunWriter(s, store, clock ?? (() => new Date())), pause };
  }

  /**
   * Takes a run to carry it on or end it without an answer: a paused run (its pause claimed, as
   * once-only as an answer), or a run whose process died mid-leg (taken over from the dead owner).
   * A run still driven by a live process, or already finished, is refused.
   */
  static async claimStalled(store: RunStore, runId: string, clock?: () => Date): Promise<RunWriter> {
    const s = await loadOrThrow(store, runId);
    if (s.status === 'done' || s.status === 'failed') {
      throw new KeelError(
        'not_paused',
        `run ${runId} is ${s.status}${s.reason ? ` (${s.reason})` : ''} already: there is nothing to continue or cancel`,
      );
    }
    if (s.status === 'running' && ownerAlive(s.owner, s.updated_at)) {
      throw new KeelError(
        'conflict',
        `run ${runId} is running in process ${s.owner}: wait for it, or stop that process (Ctrl-C), then try again`,
      );
    }
    const claimed =
      s.status === 'paused'
        ? await store.claimPause(runId, s.pause_seq, processOwner())
        : await store.takeOver(runId, s.pause_seq, s.owner, processOwner());
    if (!claimed) throw new KeelError('conflict', `run ${runId} was just taken by another process`);
    crashPoint('claim');
    s.owner = processOwner();
    return new RunWriter(s, store, clock ?? (() => new Date()));
  }

  /**
   * C1: a session's mode changed while its run was paused: the run records it and continues in the
   * new mode. The pause is claimed around the change, so a resume racing it is never overwritten;
   * a run already being continued picks the mode up from its session instead.
   */
  static async switchPausedMode(store: RunStore, runId: string, mode: Mode): Promise<void> {
    const s = await store.loadRun(runId);
    if (s?.status !== 'paused' || !s.pause || s.mode === mode) return;
    if (!(await store.claimPause(runId, s.pause.seq, processOwner()))) return;
    const w = new RunWriter(s, store, () => new Date());
    w.switchMode(mode, 'while paused');
    await w.save(); // still 'paused' at the same pause: the claim is released
  }

  async save(): Promise<void> {
    this.s.updated_at = this.clock().toISOString();
    await this.store?.saveRun(this.s);
    crashPoint('save');
  }

  /** Keeps an event in the run's journal (before anyone is shown it); returns its id, none without a store. */
  async record(e: LoopEvent): Promise<number | undefined> {
    const ev = this.store ? toRunEvent(e) : undefined;
    return ev && this.store ? this.store.appendEvent(this.s.id, ev, this.clock().toISOString()) : undefined;
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

  /** The run stops here, waiting for an answer or an approval. */
  async pause(pause: Pause, reason: Extract<EndReason, 'awaiting_user_input' | 'awaiting_approval' | 'interrupted'>): Promise<void> {
    this.s.pause_seq = pause.seq;
    this.s.pause = pause;
    this.s.status = 'paused';
    this.s.reason = reason;
    this.s.answer = null;
    await this.save();
  }

  /** The run ends: done with an answer, or failed with a message saying why. */
  async end(status: Exclude<RunStatus, 'running' | 'paused'>, reason: EndReason, answer: string): Promise<void> {
    this.s.status = status;
    this.s.reason = reason;
    this.s.pause = null;
    this.s.answer = answer;
    await this.save();
  }
}

export type QuestionPause = Extract<Pause, { kind: 'ask_user' }>;
export type ApprovalPause = Extract<Pause, { kind: 'approval' }>;

async function loadOrThrow(store: RunStore, runId: string): Promise<RunState> {
  const s = await store.loadRun(runId);
  if (!s) throw new KeelError('not_found', `no run ${runId} in the store`, 'keel runs list shows the runs');
  return s;
}
