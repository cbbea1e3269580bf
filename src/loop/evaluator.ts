/** What the evaluator and the result read from a run's records, besides the gate. */
import { describeCall } from '../approvals/card.js';
import type { PluginReport } from '../plugin-host/types.js';
import type { CallRecord, Confirmation, ToolSpec, UntrustedSource } from '../types/index.js';

/** R20: how many calls at the end of the trace failed in a row. */
export function countTrailingFailures(steps: readonly CallRecord[]): number {
  let n = 0;
  for (let i = steps.length - 1; i >= 0; i--) {
    const r = steps[i];
    const failed =
      r.outcome === 'error' || r.outcome === 'invalid_arguments' || r.outcome === 'unknown_tool' || (r.outcome === 'ran' && r.is_error);
    if (!failed) break;
    n++;
  }
  return n;
}

const FAILURE_WORDS: Partial<Record<CallRecord['outcome'], string>> = {
  invalid_arguments: 'invalid arguments of',
  unknown_tool: 'a call of the unknown tool',
  error: 'an error from',
  ran: 'an error result from',
};
const TIMES = ['', 'once', 'twice', 'three times', 'four times', 'five times'];

/**
 * R20: what the trailing `n` failures were, in words, grouped by kind and tool in order of first
 * appearance: "invalid arguments of create_reminder, four times". `plugin`: whether any was a tool's
 * own failure (its handler threw or returned an error), which `keel plugins check` may explain.
 */
export function describeFailures(steps: readonly CallRecord[], n: number): { text: string; plugin: boolean } {
  const groups = new Map<string, number>();
  let plugin = false;
  for (const r of steps.slice(steps.length - n)) {
    if (r.outcome === 'error' || r.outcome === 'ran') plugin = true;
    const key = `${FAILURE_WORDS[r.outcome] ?? r.outcome} ${r.tool}`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  const text = [...groups].map(([k, c]) => `${k}, ${TIMES[c] ?? `${c} times`}`).join('; ');
  return { text, plugin };
}

/** The warning a run carries about a plugin that did not mount as declared. */
export function pluginWarning(p: PluginReport): string {
  const why = [...p.failures, ...p.degraded].map((r) => r.message).join('; ');
  const who = p.source === 'code' ? 'the tools declared in code (app) are' : `plugin ${p.name} is`;
  return `${who} ${p.status}${why ? `: ${why}` : ''}`;
}

/**
 * R16: the writes held since the user last answered (`held`, the gate's state as of the question),
 * with the calls waiting on them: a question asked now is a confirmation of them.
 */
export function heldConfirmation(
  records: readonly CallRecord[],
  held: ReadonlySet<string>,
  pool: ReadonlyMap<string, ToolSpec>,
  untrusted: readonly UntrustedSource[],
): Confirmation | undefined {
  if (!held.size) return undefined;
  const items: Confirmation['items'] = [];
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i];
    if (r.tool === 'ask_user' && r.outcome === 'ran') break;
    if (r.outcome !== 'held_for_confirmation' || !held.has(r.tool)) continue;
    // U3: the person is shown each held call in the core's words (the tool's describe), not only the model's question.
    const tool = pool.get(r.tool);
    const card = tool?.describe && r.args ? describeCall(tool, r.args) : undefined;
    items.unshift({ call_id: r.call_id, tool: r.tool, args: r.args, ...(card ? { title: card.title, lines: card.lines } : {}) });
  }
  return { tools: [...held], items, ...(untrusted.length ? { untrusted: untrusted.map((u) => ({ ...u })) } : {}) };
}

/** R20: the last usable result of the run (for a run that stalls on repeats). */
export function lastUsable(records: readonly CallRecord[]): string | undefined {
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i];
    if (r.outcome === 'ran' && !r.is_error && r.tool !== 'ask_user' && r.result.trim()) return r.result;
  }
  return undefined;
}
