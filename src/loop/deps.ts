/**
 * What one leg of a run is given: the pool, the model, the store, the limits, the session's mode.
 * Holds no state of its own.
 */
import type { ModelClient } from '../models/types.js';
import type { Registry } from '../plugin-host/host.js';
import type { PolicyEvaluator } from '../policy/gate.js';
import type { Shortlist } from '../prompt/menu.js';
import type { ApprovalStore, Mode, RunStore } from '../types/index.js';
import type { OutputCheck } from './output.js';
import type { RunView, SessionWatch } from './run.js';

/** What one leg of a run is given: the pool, the model, the store, the limits, the session's mode. */
export interface Limits {
  /** The step cap: model calls per run. */
  maxSteps: number;
  /** Consecutive failed calls before the run halts. */
  maxConsecutiveFailures: number;
  /** The wall-clock limit for one leg of a run (start or resume), in ms. */
  timeoutMs: number;
  /** How long an approval stays answerable. */
  approvalTtlMs: number;
  /** How much of one tool result is kept and shown to the model (the rest is cut, with a note). */
  maxResultChars: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxSteps: 20,
  maxConsecutiveFailures: 4,
  timeoutMs: 10 * 60_000,
  approvalTtlMs: 60 * 60_000,
  maxResultChars: 100_000,
};

export interface EngineDeps {
  registry: Registry;
  model: ModelClient;
  /** null: a run with nowhere to pause (A5): ask_user and approvals are refused. */
  store: (RunStore & ApprovalStore) | null;
  limits?: Partial<Limits>;
  shortlist?: Shortlist;
  /**
   * Count each request's system prompt and declarations into the trace (ai-tokenizer, in a worker
   * thread): `true` counts every request and waits for each count; `'best-effort'` never waits (a
   * count joins the trace if it is in before the run's next save). R30.
   */
  countTokens?: boolean | 'best-effort';
  /** Instructions placed first in the system prompt: a delegate's (C8), or a run's own. */
  instructions?: string;
  /** The run's final answer must match this (the `output` option): checked, sent back once on a mismatch. */
  output?: OutputCheck;
  /** The session's mode now (C5); default: the run's own. */
  currentMode?: (run: RunView) => Mode;
  /** Told the session's mode as each of the run's saves read it from the store (C5, a switch made in another process). */
  sessionWatch?: SessionWatch;
  /** Told when a run's mode or contract changes (an approved submit_plan / submit_goal). */
  onModeChange?: (run: RunView) => void | Promise<void>;
  /** Aborted to interrupt the leg (Ctrl-C, SIGTERM): it pauses at the next safe point, resumable. */
  signal?: AbortSignal;
  now?: () => Date;
  /** PC8: the operator's Cedar policy as it is now (a file re-read when it changes), when one is configured. */
  policy?: () => PolicyEvaluator | undefined;
}
