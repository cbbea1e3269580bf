import type { Registry } from '../plugin-host/host.js';
import { executableInMode } from '../policy/gate.js';
import type { Mode, ToolOutput, ToolSpec } from '../tools/types.js';

export interface Executed {
  content: string;
  is_error: boolean;
  /** True when the core wrote the result (a hook blocked it, the handler threw). */
  by_core: boolean;
}

export interface ExecuteInput {
  tool: ToolSpec;
  args: Record<string, unknown>;
  runId: string;
  callId: string;
  request: string;
  /** Read at call time, never captured (SPEC C5). */
  currentMode: () => Mode;
  registry: Pick<Registry, 'hooks' | 'chargeFailure'>;
  signal: AbortSignal;
}

function normalizeOutput(out: ToolOutput): { content: string; is_error: boolean } {
  if (typeof out === 'string') return { content: out, is_error: false };
  if (out && typeof out === 'object' && typeof out.content === 'string') {
    return { content: out.content, is_error: Boolean(out.is_error) };
  }
  return { content: out === undefined ? '' : JSON.stringify(out), is_error: false };
}

/**
 * Runs one allowed call: the fresh mode check, `onToolCall` hooks, the handler, `onToolResult` hooks.
 * Every failure becomes a result; nothing here throws.
 */
export async function executeCall(x: ExecuteInput): Promise<Executed> {
  const mode = x.currentMode();
  // C5: the handler's authority is the session's mode now, not when this call was decided.
  if (!executableInMode(x.tool, mode)) {
    return { content: `${x.tool.name} is unavailable in ${mode} mode: it was not run.`, is_error: true, by_core: true };
  }
  const event = { runId: x.runId, callId: x.callId, tool: x.tool.name, args: x.args, mode };
  for (const hook of x.registry.hooks.onToolCall) {
    try {
      const verdict = await hook(event);
      if (verdict && typeof verdict === 'object' && 'block' in verdict) {
        return { content: `${x.tool.name} was not run: ${verdict.block}`, is_error: true, by_core: true };
      }
    } catch (err) {
      return { content: `${x.tool.name} was not run: a tool-call hook failed (${(err as Error).message})`, is_error: true, by_core: true };
    }
  }
  let result: Executed;
  try {
    const out = await x.tool.execute(x.args, { runId: x.runId, callId: x.callId, mode, request: x.request, signal: x.signal });
    result = { ...normalizeOutput(out), by_core: false };
  } catch (err) {
    x.registry.chargeFailure(x.tool);
    result = {
      content: `${x.tool.name} is unavailable (${(err as Error)?.message ?? String(err)}); answer without it.`,
      is_error: true,
      by_core: true,
    };
  }
  for (const hook of x.registry.hooks.onToolResult) {
    try {
      const rewritten = await hook({ ...event, content: result.content, is_error: result.is_error });
      if (rewritten && typeof rewritten.content === 'string') {
        result = { ...result, content: rewritten.content, is_error: rewritten.is_error ?? result.is_error };
      }
    } catch {
      // A failing result hook leaves the result as the tool returned it.
    }
  }
  return result;
}

/** R24: the closest pool names to an unknown one (edit distance), for the error result. */
export function closestNames(name: string, names: Iterable<string>, n = 3): string[] {
  const scored: [string, number][] = [];
  for (const c of names) scored.push([c, distance(name, c)]);
  scored.sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]));
  return scored.slice(0, n).map((s) => s[0]);
}

function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0];
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j];
      prev[j] = Math.min(prev[j] + 1, prev[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length];
}
