/**
 * The fresh mode check around every handler (C5): a call refused by the session's mode when it
 * runs. Never lets a handler run in a mode that forbids it.
 */
import { MODES, type Mode, type ToolContext, type ToolSpec } from '../types/index.js';
import { denialOf, executableInMode } from './gate.js';

/** A handler refused by the fresh mode check: the call pipeline records it as denied_by_mode, never as a tool failure. */
export class ModeDenied extends Error {
  override name = 'ModeDenied';
  constructor(
    readonly tool: string,
    readonly mode: Mode,
  ) {
    super(`${tool} is unavailable in ${mode} mode: it was not run`);
  }
}

/**
 * C5: wraps a tool's handler with a fresh mode check. `modeOf` reads the mode now, from the
 * session that owns the call, never from when the handler object was made — so a handler kept
 * from before a mode switch (a delegate's tool list, a cached menu) cannot run with stale authority.
 * A tool no mode refuses (a read that no operator rule restricts: the spec is final once mounted)
 * is returned as it is — the check could never refuse it (issue 49: a copy and a closure per tool,
 * at 2,000 tools a cold start's garbage).
 */
export function guardHandler(tool: ToolSpec, modeOf: (ctx: ToolContext) => Mode): ToolSpec {
  let refusable = false;
  for (let i = 0; i < MODES.length && !refusable; i++) refusable = denialOf(tool, MODES[i]) !== undefined;
  if (!refusable) return tool;
  const inner = tool.execute;
  // Object.assign, not a spread: see makeToolSpec (a spread made a dictionary-mode copy).
  return Object.assign({}, tool, {
    execute: (args: Parameters<ToolSpec['execute']>[0], ctx: ToolContext) => {
      const mode = modeOf(ctx);
      if (!executableInMode(tool, mode)) throw new ModeDenied(tool.name, mode);
      return inner(args, ctx);
    },
  });
}
