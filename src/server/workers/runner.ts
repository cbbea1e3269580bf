/**
 * How `keel serve` works its runs: legs wait in one queue, in order, and at most
 * KEEL_MAX_CONCURRENT_RUNS are driven at once. Every event a leg emits is announced on the hub,
 * where the live streams (SSE) and the webhooks pick it up; the journal in the store stays the
 * source of truth, so a stream that reads from it after a wake-up misses nothing (and one that was
 * told each event of the run in order, each the one after the last it sent, need not read it).
 */
import type { JournaledEvent } from '../../loop/journal.js';
import type { Leg } from '../../loop/legs.js';
import type { LoopEvent } from '../../types/index.js';

/**
 * A wake-up: the run's journal grew — by `event`, when this process journaled it (what a read of
 * the store would give for it, and the id of the run's event before it when known) — or a text delta.
 */
export type HubMessage = { run_id: string; delta?: string; event?: JournaledEvent };
type Listener = (m: HubMessage) => void;

/** The most events of one leg the hub keeps for streams opened while it works (a longer leg's rest is read from the store). */
const MAX_KEPT = 500;

/** Wake-ups for the live streams: a run's journal grew (or a text delta, which is never stored). */
export class Hub {
  private readonly byRun = new Map<string, Set<Listener>>();
  private readonly everyRun = new Set<Listener>();
  /** The events journaled so far by the legs this process drives (kept from a leg's start to its end). */
  private readonly legs = new Map<string, JournaledEvent[]>();

  /** Listens to one run, or to every run with '*'. Returns the function that stops listening. */
  subscribe(runId: string, fn: Listener): () => void {
    const set = runId === '*' ? this.everyRun : (this.byRun.get(runId) ?? new Set<Listener>());
    if (runId !== '*') this.byRun.set(runId, set);
    set.add(fn);
    return () => {
      set.delete(fn);
      if (runId !== '*' && set.size === 0) this.byRun.delete(runId);
    };
  }

  /** The run's journal has new rows: `event`, when it is the one this process journaled. */
  wake(runId: string, event?: JournaledEvent): void {
    if (event) {
      const kept = this.legs.get(runId);
      if (kept && kept.length < MAX_KEPT) kept.push(event);
    }
    this.emit(event ? { run_id: runId, event } : { run_id: runId });
  }

  /** A leg of the run is driven here from now: the events it journals are kept until it ends (`legEnds`). */
  legBegins(runId: string): void {
    this.legs.set(runId, []);
  }

  legEnds(runId: string): void {
    this.legs.delete(runId);
  }

  /**
   * The events the run's leg driven here has journaled so far, in order (its first ones, at most
   * MAX_KEPT): what a stream opened now reads from the store, when they follow on from where it
   * starts (see JournaledEvent's `prev`). A copy.
   */
  journaledSoFar(runId: string): JournaledEvent[] {
    return [...(this.legs.get(runId) ?? [])];
  }

  delta(runId: string, text: string): void {
    for (const fn of this.byRun.get(runId) ?? []) fn({ run_id: runId, delta: text });
  }

  private emit(m: HubMessage): void {
    for (const fn of this.byRun.get(m.run_id) ?? []) fn(m);
    for (const fn of this.everyRun) fn(m);
  }
}

export interface RunnerOptions {
  limit: number;
  /** Every event of every leg, as it is emitted (after it is stored). */
  onEvent: (runId: string, e: LoopEvent) => void;
  /** A leg is driven from now (`start`), or is over, whichever way (`end`). */
  onLeg?: (runId: string, phase: 'start' | 'end') => void;
  /** A leg that failed outside the engine's own handling (a store error): logged, never thrown. */
  onError: (runId: string, err: unknown) => void;
  /**
   * Hands each leg to a job queue instead of driving it here (keel serve on a PostgreSQL store: the
   * workers drive it). A failure is reported through onError.
   */
  dispatch?: (leg: Leg) => Promise<void>;
}

export class LegRunner {
  private readonly waiting: Leg[] = [];
  private readonly active = new Map<string, Promise<void>>();
  private accepting = true;
  private idle: (() => void)[] = [];

  constructor(private readonly o: RunnerOptions) {}

  get running(): number {
    return this.active.size;
  }

  get queued(): number {
    return this.waiting.length;
  }

  get limit(): number {
    return this.o.limit;
  }

  isActive(runId: string): boolean {
    return this.active.has(runId);
  }

  isQueued(runId: string): boolean {
    return this.waiting.some((l) => l.run_id === runId);
  }

  /** Takes a leg: driven at once when a slot is free, else queued in order. */
  submit(leg: Leg): 'running' | 'queued' {
    if (!this.accepting) throw new Error('the server is stopping: it takes no new work');
    if (this.o.dispatch) {
      this.o.dispatch(leg).catch((err) => this.o.onError(leg.run_id, err));
      return 'queued';
    }
    this.waiting.push(leg);
    this.pump();
    return this.active.has(leg.run_id) ? 'running' : 'queued';
  }

  private pump(): void {
    while (this.accepting && this.active.size < this.o.limit && this.waiting.length) {
      const leg = this.waiting.shift() as Leg;
      this.o.onLeg?.(leg.run_id, 'start');
      const work = this.drive(leg).finally(() => {
        this.o.onLeg?.(leg.run_id, 'end');
        this.active.delete(leg.run_id);
        this.pump();
        if (this.active.size === 0) for (const f of this.idle.splice(0)) f();
      });
      this.active.set(leg.run_id, work);
    }
  }

  private async drive(leg: Leg): Promise<void> {
    try {
      const gen = leg.drive();
      while (true) {
        const n = await gen.next();
        if (n.done) return;
        this.o.onEvent(leg.run_id, n.value);
      }
    } catch (err) {
      this.o.onError(leg.run_id, err);
    }
  }

  /**
   * Stops taking work. Legs still queued are left as they are (their runs are claimed by this
   * process: the next server start takes them over). Waits up to `ms` for the running legs to
   * reach a safe point; true when they all did.
   */
  async stop(ms: number): Promise<boolean> {
    this.accepting = false;
    this.waiting.length = 0;
    if (this.active.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      new Promise<boolean>((resolve) => this.idle.push(() => resolve(true))),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
    clearTimeout(timer);
    return done;
  }
}
