/**
 * Goal mode's progress: which criteria the model reported verified, and how often it is sent back.
 * Never marks a goal met that was not reported so.
 */
import type { CallRecord, Contract } from '../types/index.js';
import type { RunView } from './run.js';

/** How often the core sends the model back to an unfinished goal before it halts the run. */
export const MAX_GOAL_REMINDERS = 2;

export interface GoalProgress {
  /** Criterion numbers (1-based) not yet reported verified. */
  missing: number[];
  /** A boundary the model reported stopping at. */
  boundary?: string;
}

/**
 * C1: how far the run's approved goal has come, from its report_goal calls. Undefined when the
 * run works under no goal.
 */
export function goalProgress(s: RunView): GoalProgress | undefined {
  if (s.contract?.kind !== 'goal') return undefined;
  const verified = new Set<number>();
  let boundary: string | undefined;
  for (const r of s.steps) {
    if (r.tool !== 'report_goal' || r.outcome !== 'ran' || !r.args) continue;
    for (const n of Array.isArray(r.args.verified) ? r.args.verified : []) verified.add(Number(n));
    if (typeof r.args.boundary === 'string' && r.args.boundary.trim()) boundary = r.args.boundary.trim();
  }
  return { missing: s.contract.criteria.map((_, i) => i + 1).filter((n) => !verified.has(n)), boundary };
}

/** The core's reminder when the model answers before the goal is met (a user message, marked as Keel's). */
export function goalReminder(missing: number[]): string {
  return `[Keel] The approved goal is not finished: criteria ${missing.join(', ')} have not been reported verified. Keep working and report them with report_goal, or report the boundary that stops you.`;
}

/** C1: the contract an approved submit_plan or submit_goal call proposed, from its arguments. */
export function contractOf(r: CallRecord): Contract {
  const a = r.args ?? {};
  const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
  return r.tool === 'submit_plan'
    ? { kind: 'plan', summary: typeof a.summary === 'string' ? a.summary : undefined, steps: list(a.steps) }
    : { kind: 'goal', outcome: String(a.outcome ?? ''), criteria: list(a.criteria), boundaries: list(a.boundaries) };
}
