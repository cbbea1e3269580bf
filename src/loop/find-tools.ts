/**
 * R31: find_tools, the model's search of the tools the menu left out, and what it leaves in the
 * run: the tools it found join the menu for the rest of the run. Which ones is read back from the
 * run's own trace (each search's stored result names them on its last line), so a run resumed in
 * another process keeps them, as R24 keeps the tools the transcript calls.
 */
import { type FoundTool, findInPool } from '../prompt/menu.js';
import { FIND_TOOLS } from '../tools/builtins.js';
import type { CallRecord, Message, Mode, ToolSpec } from '../types/index.js';
import { truncate } from '../util/text.js';
import { ADDED_TOOLS, SAY } from './sentences.js';

/** How many tools one search returns. */
export const FOUND_LIMIT = 5;

/** Whether a tool is the core's find_tools (a plugin cannot take the name: it is reserved). */
export const isFindTools = (t: Pick<ToolSpec, 'name' | 'plugin'>): boolean => t.name === FIND_TOOLS && t.plugin === 'core';

function summary(t: ToolSpec): string {
  const first = t.description.trim().split('\n')[0] ?? '';
  return truncate(first, 160);
}

/**
 * The search itself: over `pool` as `mode` lets the model see it, skipping the tools it already has
 * on its menu (`onMenu`); the result lists what was found and, last, what joins the menu.
 */
export function findToolsResult(pool: readonly ToolSpec[], mode: Mode, query: string, onMenu: ReadonlySet<string>): string {
  // One line: the query is quoted in the result, whose lines the run reads back.
  const q = query.replace(/\s+/g, ' ').trim();
  const found: FoundTool[] = findInPool(pool, mode, q, FOUND_LIMIT, onMenu);
  if (found.length === 0) return SAY.noToolFound(q);
  return SAY.foundTools(
    q,
    found.map(({ tool, available }) => ({
      name: tool.name,
      summary: summary(tool),
      effect: SAY.foundEffect(tool.declaration.effect, tool.gate),
      available,
    })),
    mode,
  );
}

/** The names a find_tools result added to the menu (its last line), none when it found nothing. */
export function addedBy(result: string): string[] {
  const at = result.lastIndexOf(`\n${ADDED_TOOLS}`);
  if (at < 0) return [];
  const line = result.slice(at + 1 + ADDED_TOOLS.length).split('\n')[0];
  return line
    .replace(/\.$/, '')
    .split(', ')
    .map((n) => n.trim())
    .filter(Boolean);
}

/** The tools one call record added, when it is a find_tools search that ran. */
export function foundBy(r: CallRecord): string[] {
  return r.tool === FIND_TOOLS && r.outcome === 'ran' && !r.is_error ? addedBy(r.result) : [];
}

/**
 * R23's first fill: the tools the conversation (the session's transcript, earlier runs included)
 * has used — called, or found by a search — most recent first.
 */
export function conversationTools(messages: readonly Message[]): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (n: string) => {
    if (!seen.has(n)) {
      seen.add(n);
      out.push(n);
    }
  };
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'tool' && m.name === FIND_TOOLS && !m.is_error) for (const n of addedBy(m.content)) add(n);
    else if (m.role === 'assistant') for (let k = m.tool_calls.length - 1; k >= 0; k--) add(m.tool_calls[k].name);
  }
  return out;
}
