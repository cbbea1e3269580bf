/**
 * What the Keel's actions are given: the Keel itself (its public methods), and its private state and
 * steps that the action modules of src/keel share — the runs' remembered options, the legs it drives,
 * its sessions and registries. Built by the Keel for itself: never handed to code outside src/keel,
 * and never holds state of its own (every map here is the Keel's).
 */
import type { Registry } from '../plugin-host/host.js';
import type { Shortlist } from '../prompt/menu.js';
import type { Env } from '../types/env.js';
import type { AppTool, LoopEvent, RunResult, Store } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import type { Keel } from './keel.js';
import type { KeelOptions, Kept } from './options.js';
import type { Registries } from './registries.js';
import type { Sessions } from './sessions.js';

export interface KeelCore {
  /** The Keel whose state this is: its public actions (getRun, continueLeg, cancel, legSink, …). */
  readonly keel: Keel;
  readonly opts: KeelOptions;
  readonly env: Env;
  readonly store: Store | null;
  readonly sessions: Sessions;
  readonly registries: Registries;
  /** A run's own app tools joined to the Keel's, by the run's list. */
  readonly combined: WeakMap<readonly AppTool[], readonly AppTool[]>;
  /** Each run's options while it is paused in this Keel: its continuations reuse them (RunOptions). */
  readonly remembered: Map<string, Kept>;
  /** Legs driven here in the background, by run: a caller waiting for a delegate waits for these. */
  readonly inflight: Map<string, Promise<RunResult | undefined>>;
  /** A delegate's run that ended here woke its parent: the parent's next leg, driven here, by the delegate's run id. */
  readonly woken: Map<string, Promise<RunResult | undefined>>;
  /** Runs whose leg this Keel is driving now (of those followed): never taken over from itself. */
  readonly driving: Set<string>;
  /** The onEvent a run's caller gave: a continuation of it driven here in the background tells it too. */
  readonly listeners: Map<string, (e: LoopEvent) => void>;
  /** task_stop interrupts a delegate's leg driven here through these (by run). */
  readonly childStops: Map<string, AbortController>;
  /** Each delegate's pool, by the parent's registry (so a delegate's menus are shared as a run's are). */
  readonly delegatePools: WeakMap<Registry, Map<string, Registry>>;
  /** The interruption signal now: every leg started since the last interrupt() listens to it. */
  interruption(): AbortSignal;
  /** Counts a leg as running while it streams (interrupt() reports how many it stopped). */
  active(gen: AsyncGenerator<LoopEvent, RunResult>): AsyncGenerator<LoopEvent, RunResult>;
  /** A leg's shortlist: of its own menu size, else the Keel's one for every run. */
  shortlist(menuSize: number | undefined): Shortlist;
}

/** The Keel's store, or a KeelError when it has none (a run with nowhere to pause cannot be resumed). */
export function requireStore(core: { readonly store: Store | null }): Store {
  if (!core.store) throw new KeelError('bad_input', 'this Keel has no store: runs cannot be resumed');
  return core.store;
}
