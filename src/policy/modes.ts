/**
 * The fresh mode check around every handler (C5): a call refused by the session's mode when it
 * runs. Never lets a handler run in a mode that forbids it.
 */
import type { Mode, ToolContext, ToolSpec } from '../types/index.js';
import { executableInMode } from './gate.js';

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
 */
export function guardHandler(tool: ToolSpec, modeOf: (ctx: ToolContext) => Mode): ToolSpec {
  const inner = tool.execute;
  return {
    ...tool,
    execute: (args, ctx) => {
      const mode = modeOf(ctx);
      if (!executableInMode(tool, mode)) throw new ModeDenied(tool.name, mode);
      return inner(args, ctx);
    },
  };
}
