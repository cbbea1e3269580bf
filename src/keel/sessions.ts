/**
 * Sessions: a run belongs to a session, which carries its mode, its approved contract and its
 * transcript from one run to the next (C1). This module owns the session records, the mode every
 * handler's fresh check reads (C5), and mode changes — and is the one place that answers "which
 * mode is this run in now".
 */
import { mapEvents } from '../loop/journal.js';
import { untrustedRead } from '../loop/result.js';
import { type RunView, RunWriter, type SessionWatch } from '../loop/run.js';
import { repliedCalls } from '../loop/seq.js';
import type { Contract, LoopEvent, Message, Mode, RunResult, RunStore, SessionRecord, UntrustedSource } from '../types/index.js';
import { KeelError } from '../util/errors.js';

/** What a new run in an existing session starts from. */
export interface SessionStart {
  id: string;
  history: readonly Message[];
  contract: Contract | null;
  /** Model calls the session's earlier runs made with the same model spec (a scripted model's position). */
  seq_base: number;
  mode: Mode;
  /** U2: what the session's transcript so far has read from outside the user: the new run's context carries it. */
  untrusted: UntrustedSource[];
}

export class Sessions implements SessionWatch {
  /** Session id → its mode now. */
  private readonly modes = new Map<string, Mode>();
  /** Run id → its session. */
  private readonly runs = new Map<string, string>();
  /** Mode writes this process began and ended (each counts twice), and those under way. */
  private writes = 0;
  private writing = 0;

  constructor(private readonly store: RunStore | null) {}

  /**
   * C5: a run's save read its session's mode as stored, and that is the mode from now on — a
   * switch made in another process (a server, a CLI, the console) reaches a run this process
   * drives at its next save. A read that may predate a mode this process wrote itself (one written
   * since `token`, or under way) is not taken: the process's own write is newer.
   */
  begin(): number {
    return this.writing ? -1 : this.writes;
  }

  seen(sessionId: string, mode: Mode, token: number): void {
    if (token < 0 || token !== this.writes || this.writing) return;
    this.modes.set(sessionId, mode);
  }

  /** A mode write of this process's own: saves' reads that overlap it are not taken (`seen`). */
  private async own<T>(f: () => Promise<T>): Promise<T> {
    this.writes++;
    this.writing++;
    try {
      return await f();
    } finally {
      this.writing--;
      this.writes++;
    }
  }

  /** The session's mode now, else the run's own (C5): the only answer to "which mode is this run in". */
  currentMode(run: { id: string; session_id?: string; mode: Mode }): Mode {
    const session = run.session_id ?? this.runs.get(run.id);
    return (session !== undefined ? this.modes.get(session) : undefined) ?? run.mode;
  }

  private requireStore(): RunStore {
    if (!this.store) throw new KeelError('bad_input', 'this Keel has no store: sessions are not kept');
    return this.store;
  }

  /** Continues a session: refused while one of its runs is paused or still running. `create`: a new session of that id when there is none. */
  async open(sessionId: string, modelSpec: string | undefined, create = false): Promise<SessionStart> {
    const store = this.requireStore();
    const rec = await store.getSession(sessionId);
    // Issue 41: a chat page names its conversation itself; its first run starts the session of that name.
    if (!rec && create) return { id: sessionId, history: [], contract: null, seq_base: 0, mode: 'agent', untrusted: [] };
    if (!rec) throw new KeelError('not_found', `no session ${sessionId}`, "keel runs list shows each run's session");
    const last = rec.last_run_id ? await store.loadRun(rec.last_run_id) : undefined;
    if (last?.status === 'paused' || last?.status === 'running') {
      throw new KeelError('conflict', `session ${sessionId} has a run that is ${last.status} (${last.id}): answer or finish it first`);
    }
    const seq_base = last && last.model === modelSpec ? last.seq_base + repliedCalls(last) : 0;
    return {
      id: rec.id,
      history: last?.messages ?? [],
      contract: rec.contract,
      seq_base,
      mode: rec.mode,
      untrusted: last ? untrustedRead(last) : [],
    };
  }

  /**
   * Follows a leg: as its run starts, binds the run to its session and stores the session record
   * (so the session's mode can change while its first run works).
   */
  track(gen: AsyncGenerator<LoopEvent, RunResult>): AsyncGenerator<LoopEvent, RunResult> {
    return mapEvents(gen, (e) => (e.type === 'run_started' ? this.follow(e) : e));
  }

  /** As a run starts, binds it to its session and stores the session record. */
  private async follow(e: Extract<LoopEvent, { type: 'run_started' }>): Promise<LoopEvent> {
    await this.own(async () => {
      // A new run starts in the mode it was given; a continued one in its session's mode now,
      // which another process may have changed while the run waited.
      const rec = await this.store?.getSession(e.session_id);
      const mode = (e.resumed ? rec?.mode : undefined) ?? e.mode;
      this.runs.set(e.run_id, e.session_id);
      this.modes.set(e.session_id, mode);
      await this.save(e.session_id, { mode, last_run_id: e.run_id }, rec);
    });
    return e;
  }

  /**
   * Switches a session's mode (C1; `/mode` in chat). Every handler's fresh check in this process
   * sees it at once (C5), a run another process drives from its next save; a running run decides
   * in it from its next step, a paused one when it continues.
   */
  async setMode(sessionId: string, mode: Mode): Promise<void> {
    const store = this.requireStore();
    const rec = await store.getSession(sessionId);
    if (!rec) throw new KeelError('not_found', `no session ${sessionId}`);
    await this.own(async () => {
      this.modes.set(sessionId, mode);
      await this.save(sessionId, { mode });
    });
    if (rec.last_run_id) await RunWriter.switchPausedMode(store, rec.last_run_id, mode);
  }

  /** An approved plan or goal changed the run's mode and contract: the session follows (C1). */
  async changed(run: RunView): Promise<void> {
    await this.own(async () => {
      this.modes.set(run.session_id, run.mode);
      await this.save(run.session_id, { mode: run.mode, contract: run.contract, last_run_id: run.id });
    });
  }

  /** Writes the session record: `patch` over the stored one (`known`, when the caller just read it). */
  private async save(id: string, patch: Partial<Omit<SessionRecord, 'id' | 'updated_at'>>, known?: SessionRecord): Promise<void> {
    if (!this.store) return;
    const rec = known ?? (await this.store.getSession(id));
    await this.store.saveSession({
      id,
      mode: patch.mode ?? rec?.mode ?? 'agent',
      last_run_id: patch.last_run_id ?? rec?.last_run_id ?? null,
      contract: patch.contract !== undefined ? patch.contract : (rec?.contract ?? null),
      updated_at: new Date().toISOString(),
    });
  }
}
