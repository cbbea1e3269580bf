/**
 * The MCP clients the `keel mcp serve` tests drive: the SDK's own client over stdio (the server a
 * child process it starts) or over Streamable HTTP (a `keel mcp serve --http 0` child process and
 * an approver token), and what the tests read back through the real CLI (cards) and the fixtures'
 * call logs (what ran).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { calls, ensureBuilt, json, KEEL_BIN, keel, ROOT } from '../support/helpers.js';

export function mcpEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  const e: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && k !== 'KEEL_PLUGINS' && k !== 'KEEL_CONFIRM_ONCE_TOOLS') e[k] = v;
  return { ...e, KEEL_HOME: home, PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}`, ...extra };
}

type Elicit = (message: string) => 'accept' | 'decline';

function newClient(name: string, elicit?: Elicit): Client {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: elicit ? { elicitation: {} } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => ({ action: elicit(String(req.params.message)), content: {} }));
  return client;
}

/** The SDK client over stdio, `keel mcp serve ARGS` its child; without `elicit` it cannot be asked. */
export async function stdioClient(home: string, args: string[], elicit?: Elicit): Promise<Client> {
  ensureBuilt();
  const client = newClient('test-client', elicit);
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [KEEL_BIN, 'mcp', 'serve', ...args],
      env: mcpEnv(home),
      cwd: ROOT,
      stderr: 'pipe',
    }),
  );
  return client;
}

export interface HttpServe {
  url: string;
  token: string;
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  /** A new SDK client session over Streamable HTTP with the token. */
  connect(elicit?: Elicit): Promise<{ client: Client; transport: StreamableHTTPClientTransport }>;
  close(): void;
}

/** `keel mcp serve --http 0 ARGS` as a child process, with an approver token named `ide`. */
export async function httpServe(home: string, args: string[], env: Record<string, string> = {}): Promise<HttpServe> {
  ensureBuilt();
  const made = await keel(['tokens', 'create', '--name', 'ide', '--role', 'approver', '--json'], { KEEL_HOME: home });
  const token = JSON.parse(made.stdout).token as string;
  const child = spawn(process.execPath, [KEEL_BIN, 'mcp', 'serve', '--http', '0', ...args], { env: mcpEnv(home, env), cwd: ROOT });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const url = await new Promise<string>((res, rej) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) res(m[1]);
    });
    child.on('exit', (code) => rej(new Error(`keel mcp serve exited ${code}: ${err}`)));
  });
  return {
    url,
    token,
    child,
    stderr: () => err,
    connect: async (elicit) => {
      const client = newClient('http-client', elicit);
      const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
      await client.connect(transport);
      return { client, transport };
    },
    close: () => child.kill('SIGKILL'),
  };
}

export const textOf = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;
export const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

export interface Card {
  id: string;
  run_id: string;
  status: string;
  reason: string | null;
  answered_by: string | null;
  requested_at: string;
  expires_at: string;
  items: { args: Record<string, unknown> }[];
  card: { title: string; items: { undo: string; lines: string[] }[] };
}

/** The cards as `keel approvals list --json` shows them. */
export const cards = async (home: string, status?: string) =>
  json<Card[]>(await keel(['approvals', 'list', ...(status ? ['--status', status] : []), '--json'], { KEEL_HOME: home }));

/** Waits until `check` holds (a few seconds at most), returning its last value. */
export async function until<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean, tries = 600, everyMs = 50): Promise<T> {
  let v = await read();
  for (let i = 0; i < tries && !check(v); i++) {
    await new Promise((r) => setTimeout(r, everyMs));
    v = await read();
  }
  if (!check(v)) throw new Error(`${what}: not after ${tries} tries; last ${JSON.stringify(v)}`);
  return v;
}
