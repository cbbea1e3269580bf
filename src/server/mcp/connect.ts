/**
 * One MCP connection, whatever its transport: an MCP server (tools, list-changed notices, tasks)
 * whose tools/list and tools/call go to the connection's one session, opened at its first request
 * with who is at the other end (over HTTP the bearer token, PC9) — and stdio, the process's own one
 * connection. Never opens a second session for a connection, and never leaves a closed
 * connection's session open (its cards are closed or kept, its run ended).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, isTaskAugmentedRequestParams, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { MCP_MODEL_PREFIX } from '../../keel/keel.js';
import type { Principal } from '../../types/index.js';
import type { McpServeOptions } from './options.js';
import { PoolWatch } from './pool.js';
import { McpSession } from './session.js';
import { ConnectionTasks } from './tasks.js';

/** An MCP server over one transport (one connection): tools listed, calls through the session. */
export async function connectMcp(
  o: McpServeOptions,
  pool: PoolWatch,
  transport: Transport,
  /** Over HTTP, the bearer token: the actor of every answer and audit row, and the principal of every call (PC9). */
  token?: { name: string; role: string; groups?: readonly string[] },
): Promise<{ server: Server; close(): Promise<void> }> {
  // S3: MCP tasks — a write or destructive call may be made a task, polled, and cancelled (its card rejected).
  const tasks = new ConnectionTasks();
  const server = new Server(
    { name: 'keel', version: o.version },
    {
      capabilities: { tools: { listChanged: true }, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: tasks,
    },
  );
  let session: Promise<McpSession> | undefined;
  // One session per connection, however many requests arrive before it is open.
  const open = () => {
    const client = server.getClientVersion()?.name ?? 'client';
    const name = token?.name ?? `${MCP_MODEL_PREFIX}${client}`;
    const principal: Principal = token
      ? { kind: 'mcp', name: token.name, role: token.role, groups: [...(token.groups ?? [])] }
      : { kind: 'mcp', name, groups: [] };
    session ??= McpSession.open(o, pool, server, {
      actor: name,
      client,
      principal,
      ...(token ? { groups: [...(token.groups ?? [])] } : {}),
    });
    return session;
  };
  tasks.onCancel = async (id) => (await open()).cancelTask(id);
  const off = pool.on(() => void server.sendToolListChanged().catch(() => {}));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (await open()).tools() }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const s = await open();
    if (isTaskAugmentedRequestParams(req.params) && req.params.task && extra.taskStore) {
      return { task: await s.startTask(req.params.name, req.params.arguments ?? {}, req.params.task, extra.taskStore, tasks) };
    }
    const token = req.params._meta?.progressToken;
    const progress = async (p: number, total: number, message: string) => {
      if (token === undefined) return;
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: p, total, message } });
    };
    return s.call(req.params.name, req.params.arguments ?? {}, extra.signal, progress);
  });
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      off();
      await (await session?.catch(() => undefined))?.close();
      tasks.close();
    })();
    return closed;
  };
  server.onclose = () =>
    void close().catch((err) =>
      process.stderr.write(`keel mcp serve: closing a session failed: ${err instanceof Error ? err.message : String(err)}\n`),
    );
  await server.connect(transport);
  return { server, close };
}

/** stdio: one connection, the process's own. */
export async function serveMcpStdio(o: McpServeOptions): Promise<{ close(): Promise<void> }> {
  const pool = await PoolWatch.start(o);
  const c = await connectMcp(o, pool, new StdioServerTransport());
  return {
    close: async () => {
      pool.close();
      await c.close();
    },
  };
}
