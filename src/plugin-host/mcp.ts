/**
 * An MCP server as a plugin: started, its tools listed and checked against the manifest's
 * declarations. Never takes a server's annotations over the manifest's declaration.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { type CallToolResult, type ContentBlock, ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Manifest } from '../manifest/schema.js';
import type { CardText, ToolDefinition, ToolOutput } from '../types/index.js';
import { noteOpenWorldHint } from './mcp-hints.js';
import type { PluginAPI } from './types.js';

export type McpSection = NonNullable<Manifest['mcp']>;

/** How long a server may take to start and list its tools before its plugin fails. */
export const MCP_START_TIMEOUT_MS = 10_000;
const STDERR_TAIL_CHARS = 1_500;

/** The server did not start, or did not list its tools: the plugin fails with this message. */
export class McpStartError extends Error {
  override name = 'McpStartError';
}

/** A running stdio MCP server and the tools it listed. */
export interface McpServer {
  /** What the server calls itself (serverInfo.name), for cards and drafts. */
  readonly serverName: string;
  readonly serverVersion: string;
  /** Every tool the server listed, all pages. */
  readonly tools: readonly Tool[];
  /** The command line as run, for messages. */
  readonly commandLine: string;
  call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolOutput>;
  stderrTail(): string;
  close(): Promise<void>;
}

export interface StartOptions {
  /** The plugin folder: the server's working directory, `${PLUGIN_DIR}`, and the first node_modules/.bin looked in. */
  dir: string;
  /** Keel's home: `${KEEL_HOME}`. */
  home: string;
  timeoutMs?: number;
  /** The project folder whose node_modules/.bin is looked in last (default the working directory). */
  cwd?: string;
}

const VARIABLE = /\$\{([^}]*)\}/g;

/** Replaces `${PLUGIN_DIR}` and `${KEEL_HOME}`; any other `${…}` is a typo, refused rather than passed on. */
export function substitute(value: string, vars: Readonly<Record<string, string>>, where: string): string {
  return value.replace(VARIABLE, (whole, name: string) => {
    if (Object.hasOwn(vars, name)) return vars[name];
    throw new McpStartError(
      `${where}: unknown substitution ${whole} (known: ${Object.keys(vars)
        .map((k) => `\${${k}}`)
        .join(', ')})`,
    );
  });
}

function isFile(p: string): boolean {
  return existsSync(p) && statSync(p).isFile();
}

/** Folders whose node_modules/.bin may hold a bare command: the plugin's, its ancestors' (its project's), the working directory's. */
function binDirs(dir: string, cwd: string): string[] {
  const out: string[] = [];
  for (let d = resolve(dir); ; d = dirname(d)) {
    out.push(join(d, 'node_modules', '.bin'));
    if (dirname(d) === d) break;
  }
  out.push(join(resolve(cwd), 'node_modules', '.bin'));
  return [...new Set(out)];
}

/**
 * What to spawn for `command`: a path (absolute, or relative to the plugin folder), else a bare name
 * found in a node_modules/.bin (see binDirs), else the bare name for PATH. `node` is this Node.
 */
export function resolveCommand(command: string, dir: string, cwd = process.cwd()): { file: string; searched: string[] } {
  if (command === 'node') return { file: process.execPath, searched: [] };
  if (isAbsolute(command)) return { file: command, searched: [] };
  if (command.includes('/') || command.includes('\\')) return { file: resolve(dir, command), searched: [] };
  const searched = binDirs(dir, cwd);
  const found = searched.map((b) => join(b, command)).find(isFile);
  return { file: found ?? command, searched };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new McpStartError(`${what} within ${ms / 1000} s`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Spawns the server, initializes it and lists its tools, all within the timeout; closes it on any failure. */
export async function startMcpServer(section: McpSection, opts: StartOptions): Promise<McpServer> {
  const vars = { PLUGIN_DIR: resolve(opts.dir), KEEL_HOME: resolve(opts.home) };
  const commandLine = [section.command, ...(section.args ?? [])].join(' ');
  const fail = (why: string, tail = ''): McpStartError =>
    new McpStartError(`MCP server \`${commandLine}\` ${why}${tail ? `; its stderr ended with: ${tail}` : ''}`);

  let command: string;
  let args: string[];
  let env: Record<string, string>;
  let searched: string[];
  try {
    const resolved = resolveCommand(substitute(section.command, vars, 'mcp.command'), opts.dir, opts.cwd);
    command = resolved.file;
    searched = resolved.searched;
    args = (section.args ?? []).map((a, i) => substitute(a, vars, `mcp.args[${i}]`));
    env = Object.fromEntries(Object.entries(section.env ?? {}).map(([k, v]) => [k, substitute(v, vars, `mcp.env.${k}`)]));
  } catch (err) {
    throw fail(`cannot be run: ${(err as Error).message}`);
  }

  // The SDK merges `env` over a short safe list (HOME, PATH, USER, …): the server does not see Keel's secrets.
  const transport = new StdioClientTransport({ command, args, env, cwd: opts.dir, stderr: 'pipe' });
  let tail = '';
  // Read stderr for the server's whole life: an unread pipe would fill and stall it.
  transport.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
  });
  const stderrTail = () => tail.trim().split('\n').slice(-8).join('\n');
  const client = new Client({ name: 'keel', version: '0.1.0' });
  const timeoutMs = opts.timeoutMs ?? MCP_START_TIMEOUT_MS;

  const listAll = async (): Promise<Tool[]> => {
    await client.connect(transport);
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  };

  let tools: Tool[];
  try {
    // One deadline for spawn + initialize + every tools/list page (the SDK's per-request timeouts are left at their default).
    tools = await withTimeout(listAll(), timeoutMs, 'did not start and list its tools');
  } catch (err) {
    // A server that failed to start gets no graceful stop: the SDK's close waits 2 s on unref'd
    // timers before it signals, so a process exiting meanwhile would leave the server running.
    const pid = transport.pid;
    if (pid) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await client.close().catch(() => {});
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') {
      const cwd = resolve(opts.cwd ?? process.cwd());
      const alsoCwd = `${resolve(opts.dir)}/`.startsWith(`${cwd}/`) ? '' : ` and of ${cwd}`;
      const where = searched.length ? `node_modules/.bin of ${resolve(opts.dir)}, its parent folders${alsoCwd}, then PATH` : command;
      throw fail(`did not start: command not found (looked in ${where})`);
    }
    // The stderr pipe may still hold the server's last words (a crash message) for a moment.
    await new Promise((r) => setTimeout(r, 50));
    const why =
      err instanceof McpStartError
        ? err.message
        : err instanceof McpError && err.code === ErrorCode.ConnectionClosed
          ? 'exited (or closed its output) before it listed its tools'
          : `did not start: ${e.message}`;
    throw fail(why, stderrTail());
  }

  const info = client.getServerVersion();
  return {
    serverName: info?.name ?? section.command,
    serverVersion: info?.version ?? '',
    tools,
    commandLine,
    async call(name, callArgs, signal) {
      const result = (await client.callTool({ name, arguments: callArgs }, undefined, { signal })) as CallToolResult;
      return mcpResultOutput(name, result);
    },
    stderrTail,
    close: () => client.close(),
  };
}

function contentText(part: ContentBlock): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'image':
    case 'audio':
      return `[${part.type} ${part.mimeType}, ${Math.floor((part.data.length * 3) / 4)} bytes]`;
    case 'resource':
      return 'text' in part.resource ? part.resource.text : `[resource ${part.resource.uri}]`;
    case 'resource_link':
      return `[resource ${part.uri}${part.name ? ` (${part.name})` : ''}]`;
    default:
      return `[${(part as { type: string }).type} content]`;
  }
}

/** A tools/call result as Keel's tool output: the text parts joined; isError → is_error. */
export function mcpResultOutput(tool: string, result: CallToolResult | { toolResult: unknown }): ToolOutput {
  if (!('content' in result)) return { content: JSON.stringify(result.toolResult) ?? '', is_error: false };
  let content = (result.content ?? []).map(contentText).join('\n');
  if (!content && result.structuredContent !== undefined) content = JSON.stringify(result.structuredContent);
  const is_error = result.isError === true;
  if (!content && is_error) content = `MCP tool ${tool} reported an error without a message`;
  return result.structuredContent === undefined ? { content, is_error } : { content, is_error, details: result.structuredContent };
}

/**
 * The Keel name of an MCP tool: manifests allow lowercase letters, digits and _ only, so
 * `get-Weather` is declared as `get_weather` (calls still use the server's own name).
 */
export function keelToolName(mcpName: string): string {
  return mcpName.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

const MAX_VALUE_CHARS = 200;

function readable(v: unknown): string {
  let s: string;
  if (typeof v === 'string') s = v;
  else if (Array.isArray(v) && v.every((x) => x === null || typeof x !== 'object')) s = v.map((x) => String(x)).join(', ');
  else s = JSON.stringify(v) ?? String(v);
  const lines = s.split('\n');
  if (lines.length === 1 && s.length <= MAX_VALUE_CHARS) return s;
  const more = lines.length > 1 ? `${lines.length} lines, ${s.length} chars` : `${s.length} chars`;
  return `${lines[0].slice(0, MAX_VALUE_CHARS)} … (${more})`;
}

/** An approval card for an MCP call: the server's tool name, then each argument on its own line. */
export function describeMcpCall(mcpName: string, serverName: string, args: Record<string, unknown>): CardText {
  const entries = Object.entries(args ?? {});
  return {
    title: `${mcpName} on MCP server ${serverName}`,
    lines: entries.length ? entries.map(([k, v]) => `${k}: ${readable(v)}`) : ['(no arguments)'],
  };
}

/** One listed MCP tool as a Keel tool definition (its declaration comes from the manifest; only an absent `open_world` takes the server's hint, O1). */
export function mcpToolDefinition(server: McpServer, tool: Tool): ToolDefinition {
  // `$schema` is metadata: ajv here speaks draft-07 only, and some providers reject the keyword.
  const { $schema: _ignored, ...parameters } = tool.inputSchema as Record<string, unknown>;
  const def: ToolDefinition = {
    name: keelToolName(tool.name),
    description: tool.description?.trim() || `${tool.title ?? tool.name} (MCP server ${server.serverName})`,
    parameters,
    execute: (args, ctx) => server.call(tool.name, args, ctx.signal),
    describe: (args) => describeMcpCall(tool.name, server.serverName, args),
  };
  noteOpenWorldHint(def, tool.annotations?.openWorldHint);
  return def;
}

/**
 * Mounts a plugin's `mcp:` server: each listed tool goes through `api.registerTool`, so the
 * manifest's declaration decides whether it mounts and how it is gated, exactly as for code.
 * Throws McpStartError when the server does not start; the client closes with the registry.
 */
export async function mountMcpServer(section: McpSection, api: PluginAPI, timeoutMs = MCP_START_TIMEOUT_MS): Promise<void> {
  const server = await startMcpServer(section, { dir: api.dir, home: api.home, timeoutMs });
  api.onClose(() => server.close());
  for (const tool of server.tools) api.registerTool(mcpToolDefinition(server, tool));
}
