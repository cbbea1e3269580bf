/**
 * The tools an MCP client sees: the mounted pool, shared by every connection and mounted again when
 * a plugin folder changes, and each tool as MCP lists it (annotations and task support from its
 * declaration). Never lists the core's own tools (ask_user, memory) and never runs a call.
 */
import { type FSWatcher, watch } from 'node:fs';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Registry } from '../../plugin-host/host.js';
import type { ToolSpec } from '../../types/index.js';
import type { McpServeOptions } from './options.js';

/** The tools an MCP client sees: every plugin tool (the core's own — ask_user, memory — are the agent loop's). */
export function listed(reg: Registry): ToolSpec[] {
  return reg.pool.filter((t) => t.plugin !== 'core');
}

/**
 * Whether a call of the tool may wait on a card or a confirmation: a write or a destructive call,
 * and an open-world read (O2: after the session read untrusted content it may wait on a card).
 */
export function mayWait(t: ToolSpec): boolean {
  return t.declaration.effect !== 'read' || t.declaration.open_world === true;
}

/**
 * MCP annotations from the manifest's declaration, and whether the call may run as an MCP task
 * (S3): a call that may wait (mayWait) may be made one by a client that supports tasks
 * (`optional`); a closed-world read never waits and is not one (`forbidden`). `openWorldHint` is
 * the declared `open_world` (O1), never MCP's default: a tool that does not declare it is closed.
 */
export function toMcpTool(t: ToolSpec): Tool {
  const effect = t.declaration.effect;
  return {
    name: t.name,
    description: t.description,
    inputSchema: t.parameters as Tool['inputSchema'],
    execution: { taskSupport: mayWait(t) ? 'optional' : 'forbidden' },
    annotations: {
      title: t.name,
      readOnlyHint: effect === 'read',
      destructiveHint: effect === 'destructive',
      ...(t.declaration.idempotent !== undefined ? { idempotentHint: t.declaration.idempotent } : {}),
      openWorldHint: t.declaration.open_world === true,
    },
  };
}

/**
 * The mounted pool, shared by every connection of this server, mounted again when a plugin folder
 * changes; each connection is then told its tool list changed (notifications/tools/list_changed).
 */
export class PoolWatch {
  private readonly listeners = new Set<() => void>();
  private readonly watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly o: McpServeOptions,
    public registry: Registry,
  ) {}

  static async start(o: McpServeOptions): Promise<PoolWatch> {
    const pool = new PoolWatch(o, await o.keel.registry(o.pluginDirs));
    for (const dir of o.pluginDirs) {
      try {
        const w = watch(dir, { recursive: true }, () => pool.changed());
        w.on('error', () => {});
        pool.watchers.push(w);
      } catch {
        // A folder that cannot be watched: its changes show at the next start.
      }
    }
    return pool;
  }

  /** Listens for a new tool list; returns the function that stops listening. */
  on(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private changed(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), 300);
  }

  private async reload(): Promise<void> {
    const before = names(this.registry);
    try {
      this.registry = await this.o.keel.remount(this.o.pluginDirs);
    } catch (err) {
      process.stderr.write(`keel mcp serve: the plugins could not be mounted again: ${err instanceof Error ? err.message : String(err)}\n`);
      return;
    }
    if (names(this.registry) !== before) for (const fn of this.listeners) fn();
  }

  close(): void {
    clearTimeout(this.timer);
    for (const w of this.watchers) w.close();
  }
}

const names = (reg: Registry) =>
  listed(reg)
    .map((t) => `${t.name}:${t.declaration.effect}:${t.gate}:${t.declaration.open_world === true}`)
    .sort()
    .join(',');
