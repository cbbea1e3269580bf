import type { Mode, ToolContext, ToolSpec } from '../tools/types.js';
import { executableInMode } from './gate.js';

/**
 * Where the session's current mode is read at call time (SPEC C5). Runs are bound to their
 * session; a mode switch is visible to every handler at once, however old the handler object.
 */
export class ModeAuthority {
  private readonly sessions = new Map<string, Mode>();
  private readonly runs = new Map<string, string>();

  bindRun(runId: string, sessionId: string, mode: Mode): void {
    this.runs.set(runId, sessionId);
    if (!this.sessions.has(sessionId)) this.sessions.set(sessionId, mode);
  }

  setSessionMode(sessionId: string, mode: Mode): void {
    this.sessions.set(sessionId, mode);
  }

  modeOfSession(sessionId: string): Mode | undefined {
    return this.sessions.get(sessionId);
  }

  modeOfRun(runId: string): Mode | undefined {
    const s = this.runs.get(runId);
    return s ? this.sessions.get(s) : undefined;
  }
}

/** A handler refused by the fresh mode check. */
export class ModeDenied extends Error {
  override name = 'ModeDenied';
}

/**
 * C5: wraps a tool's handler with a fresh mode check. `modeOf` reads the mode now, from the
 * session that owns the call, never from when the handler object was made.
 */
export function guardHandler(tool: ToolSpec, modeOf: (ctx: ToolContext | undefined) => Mode): ToolSpec {
  const inner = tool.execute;
  return {
    ...tool,
    execute: (args, ctx) => {
      const mode = modeOf(ctx);
      if (!executableInMode(tool, mode)) throw new ModeDenied(`${tool.name} is unavailable in ${mode} mode: it was not run`);
      return inner(args, ctx);
    },
  };
}
