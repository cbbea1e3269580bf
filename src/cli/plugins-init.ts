/**
 * `keel plugins init`: a new plugin folder, or one drafted from an MCP server's tool list. Never
 * declares a tool's effect weaker than the server's annotations say, and writes each tool's
 * `open_world` from its openWorldHint (O1; MCP's default when it says nothing: true).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { Document, isMap, isScalar } from 'yaml';
import { formatIssue, parseManifest } from '../manifest/load.js';
import type { Effect } from '../manifest/schema.js';
import { keelToolName, type McpSection, McpStartError, startMcpServer } from '../plugin-host/mcp.js';
import { KeelError } from '../util/errors.js';

export interface InitFromMcpOptions {
  /** The server's command line, e.g. `mcp-server-filesystem /srv/docs` (quotes group words). */
  commandLine: string;
  /** Plugin name (default: from the server's own name). */
  name?: string;
  /** Plugin folder to write plugin.yaml into; the server is started from it, as a mount would. */
  out?: string;
  /** Overwrite an existing plugin.yaml. */
  force?: boolean;
  /** Environment for the server, written to the manifest's `mcp.env`. */
  env?: Record<string, string>;
  home: string;
  timeoutMs?: number;
}

export interface McpDraft {
  yaml: string;
  /** Where it was written, when `out` was given. */
  file?: string;
  name: string;
  server: { name: string; version: string };
  tools: { name: string; mcp_name: string; effect: Effect }[];
}

/** Splits a command line into words: whitespace separates, quotes group, backslash escapes. */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < line.length) word += line[++i];
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word ??= '';
    } else if (c === '\\' && i + 1 < line.length) {
      word = (word ?? '') + line[++i];
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (quote) throw new KeelError('bad_input', `--from-mcp: unbalanced ${quote} in "${line}"`);
  if (word !== undefined) words.push(word);
  return words;
}

/**
 * The drafted effect. MCP's own defaults apply to a hint the server leaves out: destructiveHint
 * defaults to true, so an unannotated tool is drafted destructive (an approval card per call) —
 * the safe side; the user relaxes it after review.
 */
export function effectFromAnnotations(a: ToolAnnotations | undefined): Effect {
  if (a?.readOnlyHint === true) return 'read';
  return a?.destructiveHint === false ? 'write' : 'destructive';
}

function hint(a: ToolAnnotations | undefined, key: 'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint'): string {
  const v = a?.[key];
  return typeof v === 'boolean' ? `${key}: ${v}` : `${key} unset`;
}

/** The comment beside a drafted effect: why this effect, and the hints Keel does not act on. */
function effectNote(a: ToolAnnotations | undefined, effect: Effect): string {
  const why =
    effect === 'read'
      ? 'readOnlyHint: true'
      : effect === 'write'
        ? `${hint(a, 'readOnlyHint')}, destructiveHint: false`
        : a?.destructiveHint === true
          ? `${hint(a, 'readOnlyHint')}, destructiveHint: true`
          : `${hint(a, 'readOnlyHint')}, destructiveHint unset (MCP default: true)`;
  return ` ${why}; ${hint(a, 'idempotentHint')}`;
}

/** A plugin name from the server's own name: `secure-filesystem-server` → `secure-filesystem`. */
function pluginNameFrom(serverName: string): string {
  const n = serverName
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[^a-z0-9]+|[-_]+$/g, '')
    .replace(/^(mcp-server-|server-)|(-mcp-server|-server|-mcp)$/g, '');
  return /^[a-z0-9][a-z0-9_-]*$/.test(n) ? n : 'mcp';
}

function firstLine(text: string | undefined, max = 110): string | undefined {
  const line = text?.trim().split('\n')[0].trim();
  if (!line) return undefined;
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

const HEADER = (commandLine: string, server: string) =>
  [
    ` Drafted by \`keel plugins init --from-mcp "${commandLine}"\` from the tool annotations of ${server}.`,
    ' REVIEW EACH EFFECT BEFORE MOUNTING. Annotations are the server’s hints, not guarantees: the effect',
    ' declared here alone decides how each call is gated.',
    '   read         runs without asking',
    '   write        the user is asked once per run before the first write (confirm: once)',
    '   destructive  an approval card for every call',
    ' open_world (from openWorldHint) says whether the arguments reach a party other than the user: after',
    ' the run read untrusted content, such a call with values the user did not write waits on a card.',
    ' A tool the server offers but this file does not declare is refused when the plugin mounts.',
  ].join('\n');

/** Builds the manifest text from a server's tool list, and checks that it parses as a manifest. */
export function draftManifest(input: {
  name: string;
  commandLine: string;
  mcp: McpSection;
  server: { name: string; version: string };
  tools: readonly Tool[];
}): Omit<McpDraft, 'file'> {
  const serverLabel = `${input.server.name}${input.server.version ? ` ${input.server.version}` : ''}`;
  const drafted: McpDraft['tools'] = [];
  const skipped: string[] = [];
  const tools: Record<string, { effect: Effect; open_world: boolean }> = {};
  for (const t of input.tools) {
    const name = keelToolName(t.name);
    if (tools[name]) {
      skipped.push(` ${t.name} is not declared: its Keel name ${name} is taken by another of this server's tools.`);
      continue;
    }
    const effect = effectFromAnnotations(t.annotations);
    // O1: the server's openWorldHint, written out (MCP's default when it says nothing: true).
    tools[name] = { effect, open_world: t.annotations?.openWorldHint !== false };
    drafted.push({ name, mcp_name: t.name, effect });
  }
  const manifest = {
    name: input.name,
    version: '0.1.0',
    description: `Tools of the MCP server ${serverLabel}`,
    provides: ['tool'],
    mcp: input.mcp,
    tools,
  };
  const doc = new Document(manifest);
  doc.commentBefore = [HEADER(input.commandLine, serverLabel), ...skipped].join('\n');
  const toolMap = doc.get('tools', true);
  for (const d of drafted) {
    const t = input.tools.find((x) => x.name === d.mcp_name);
    if (!t) continue;
    const pair = isMap(toolMap) ? toolMap.items.find((p) => isScalar(p.key) && p.key.value === d.name) : undefined;
    const notes = [firstLine(t.description) ?? firstLine(t.title)].filter((x): x is string => !!x);
    if (d.name !== t.name) notes.push(`the server calls it ${t.name}`);
    if (pair && isScalar(pair.key) && notes.length) pair.key.commentBefore = notes.map((n) => ` ${n}`).join('\n');
    const effectNode = doc.getIn(['tools', d.name, 'effect'], true);
    if (isScalar(effectNode)) effectNode.comment = effectNote(t.annotations, d.effect);
    const worldNode = doc.getIn(['tools', d.name, 'open_world'], true);
    if (isScalar(worldNode))
      worldNode.comment = ` ${hint(t.annotations, 'openWorldHint')}${t.annotations?.openWorldHint === undefined ? ' (MCP default: true)' : ''}`;
  }
  const yaml = doc.toString({ lineWidth: 0 });
  const parsed = parseManifest(yaml, 'plugin.yaml (draft)', input.name);
  if (!parsed.ok) {
    throw new KeelError('bad_input', `the drafted manifest does not validate:\n${parsed.issues.map(formatIssue).join('\n')}`);
  }
  return { yaml, name: input.name, server: input.server, tools: drafted };
}

/** Starts the server, lists its tools and drafts its plugin.yaml; writes it when `out` is given. */
export async function initFromMcp(o: InitFromMcpOptions): Promise<McpDraft> {
  const words = splitCommandLine(o.commandLine);
  if (!words.length) throw new KeelError('bad_input', '--from-mcp needs a command, e.g. --from-mcp "mcp-server-memory"');
  if (o.name !== undefined && !/^[a-z0-9][a-z0-9_-]*$/.test(o.name)) {
    throw new KeelError('bad_input', `--name ${o.name}: a plugin name is lowercase letters, digits, - and _`);
  }
  const out = o.out ? resolve(o.out) : undefined;
  const file = out ? join(out, 'plugin.yaml') : undefined;
  if (file && existsSync(file) && !o.force) {
    throw new KeelError('conflict', `${file} already exists: pass --force to overwrite it`);
  }
  const mcp: McpSection = { command: words[0], ...(words.length > 1 ? { args: words.slice(1) } : {}) };
  if (o.env && Object.keys(o.env).length) mcp.env = o.env;
  // Started exactly as a mount of the written plugin would start it (same folder, same substitutions).
  if (out) mkdirSync(out, { recursive: true });
  let server: Awaited<ReturnType<typeof startMcpServer>>;
  try {
    server = await startMcpServer(mcp, { dir: out ?? process.cwd(), home: o.home, timeoutMs: o.timeoutMs });
  } catch (err) {
    if (err instanceof McpStartError) throw new KeelError('bad_input', err.message);
    throw err;
  }
  try {
    const draft = draftManifest({
      name: o.name ?? pluginNameFrom(server.serverName),
      commandLine: o.commandLine,
      mcp,
      server: { name: server.serverName, version: server.serverVersion },
      tools: server.tools,
    });
    if (file) writeFileSync(file, draft.yaml);
    return { ...draft, file };
  } finally {
    await server.close();
  }
}
