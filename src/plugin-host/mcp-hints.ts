/**
 * O1: what an MCP server's tool annotations tell the mount beyond the manifest: whether a listed
 * tool talks to the outside (`openWorldHint`; MCP's default when a server says nothing: true).
 * Kept apart from mcp.ts so the mount reads it without loading the MCP SDK. Never lets a hint
 * loosen what a manifest declares: only a declaration that leaves `open_world` out takes it.
 */
import type { ToolDefinition } from '../types/index.js';

const openWorldHints = new WeakMap<ToolDefinition, boolean>();

/** Records a listed tool's `openWorldHint` (absent counts as true, as MCP says). */
export function noteOpenWorldHint(def: ToolDefinition, hint: boolean | undefined): void {
  openWorldHints.set(def, hint !== false);
}

/** The server's `openWorldHint` for a definition of a listed MCP tool (undefined for any other). */
export function mcpOpenWorld(def: ToolDefinition): boolean | undefined {
  return openWorldHints.get(def);
}
