/**
 * `keel mcp serve`: Keel's governed pool offered as an MCP server. Every plugin tool is listed with
 * its input schema and annotations from its declaration; every call goes through the one call
 * pipeline (the gate, hooks, the handler, the effect record), inside a session of its own per MCP
 * connection, kept as a run in the store (its calls, effects and cards, seen in the console):
 *
 * - a confirm-once write asks the user once per session and tool through MCP elicitation; a client
 *   without elicitation gets a card instead (the owner confirms it from the console or the CLI);
 * - a destructive call or a pinned write becomes an approval card; with elicitation the card is shown
 *   there; without, the call waits (with progress notifications) for the answer from the console or
 *   `keel approvals`, then runs exactly once (the side-effect ledger). A call that times out names its
 *   card; calling again with the same arguments gets the outcome, never a second execution;
 * - in Plan or Goal mode every tool stays listed, and a restricted one is refused with the mode's
 *   denial before anything of it runs.
 */
import { randomUUID } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { createServer, type Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { buildCard, renderCard } from '../approvals/card.js';
import { expireApprovals, recordApprovalAnswer } from '../approvals/respond.js';
import { type Keel, MCP_MODEL_PREFIX } from '../keel/keel.js';
import { admitReply, type ExecuteContext, executeCall, prepareApproval, prepareCall, whenAborted } from '../loop/pipeline.js';
import { RunWriter } from '../loop/run.js';
import { SAY } from '../loop/sentences.js';
import type { Registry } from '../plugin-host/host.js';
import { deriveGateState, type GateState } from '../policy/gate.js';
import type { ApprovalRecord, CallRecord, Mode, Store, ToolCall, ToolSpec } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { callKey } from '../util/json.js';
import { allows, type Tokens } from './tokens.js';

export interface McpServeOptions {
  keel: Keel;
  pluginDirs: string[];
  mode: Mode;
  /** How long a call waits for its card to be answered before it returns, naming the card. */
  waitMs: number;
  /** How often a waiting call looks at its card (and sends a progress notification). */
  pollMs?: number;
  version: string;
}

const text = (t: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(isError ? { isError: true } : {}),
});

/** The tools an MCP client sees: every plugin tool (the core's own — ask_user, memory — are the agent loop's). */
function listed(reg: Registry): ToolSpec[] {
  return reg.pool.filter((t) => t.plugin !== 'core');
}

/** MCP annotations from the manifest's declaration. */
export function toMcpTool(t: ToolSpec): Tool {
  const effect = t.declaration.effect;
  return {
    name: t.name,
    description: t.description,
    inputSchema: t.parameters as Tool['inputSchema'],
    annotations: {
      title: t.name,
      readOnlyHint: effect === 'read',
      destructiveHint: effect === 'destructive',
      ...(t.declaration.idempotent !== undefined ? { idempotentHint: t.declaration.idempotent } : {}),
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
    .map((t) => `${t.name}:${t.declaration.effect}:${t.gate}`)
    .sort()
    .join(',');

/** One MCP connection: a Keel session with its own run, gate state and cards. */
class McpSession {
  private readonly gate: GateState;
  private seq = 0;
  /** Cards of this session by call (tool + arguments): a call made again gets its card's outcome. */
  private readonly cards = new Map<string, string>();
  /** Approved calls being carried out: a second call for the same card waits for the first. */
  private readonly running = new Map<string, Promise<CallToolResult>>();

  private constructor(
    private readonly o: McpServeOptions,
    private readonly store: Store,
    private readonly pool: PoolWatch,
    private readonly run: RunWriter,
    private readonly server: Server,
    private readonly client: string,
  ) {
    this.gate = deriveGateState([], true);
  }

  static async open(o: McpServeOptions, pool: PoolWatch, server: Server, client: string): Promise<McpSession> {
    const store = o.keel.store;
    if (!store) throw new KeelError('config', 'keel mcp serve needs a store: cards and sessions are kept there');
    const run = await RunWriter.start(
      { request: `MCP session (${client})`, mode: o.mode, model: `${MCP_MODEL_PREFIX}${client}`, plugin_dirs: o.pluginDirs },
      store,
    );
    const s = run.state;
    await store.saveSession({ id: s.session_id, mode: o.mode, last_run_id: s.id, contract: null, updated_at: s.created_at });
    await run.record({ type: 'run_started', run_id: s.id, session_id: s.session_id, mode: s.mode, request: s.request, resumed: false });
    return new McpSession(o, store, pool, run, server, client);
  }

  get runId(): string {
    return this.run.state.id;
  }

  private get registry(): Registry {
    return this.pool.registry;
  }

  tools(): Tool[] {
    return listed(this.registry).map(toMcpTool);
  }

  /** The session's mode now: its record in the store (the console may switch it), else the one it started in. */
  private async mode(): Promise<Mode> {
    return (await this.store.getSession(this.run.state.session_id))?.mode ?? this.o.mode;
  }

  private canElicit(): boolean {
    return Boolean(this.server.getClientCapabilities()?.elicitation);
  }

  async call(
    name: string,
    args: unknown,
    signal: AbortSignal,
    progress: (p: number, message: string) => Promise<void>,
  ): Promise<CallToolResult> {
    const callId = `mcp_${++this.seq}`;
    const raw: ToolCall =
      args && typeof args === 'object' && !Array.isArray(args)
        ? { id: callId, name, args: args as Record<string, unknown> }
        : { id: callId, name, raw_args: JSON.stringify(args ?? null) };
    const admitted = admitReply([raw]);
    const call = 'calls' in admitted ? admitted.calls[0] : raw;
    const tool = this.registry.byName.get(name);
    const visible = new Set(listed(this.registry).map((t) => t.name));
    const mode = await this.mode();
    const key = call.args ? callKey(name, call.args) : '';

    // A call made again after its card timed out: the card's outcome, never a second card or run.
    const earlierCard = key ? this.cards.get(key) : undefined;
    if (earlierCard && tool) return this.await(earlierCard, tool, call, signal, progress);

    const prepare = () =>
      prepareCall({
        call,
        pool: this.registry.byName,
        menu: { admissible: (n) => visible.has(n) },
        mode,
        gate: this.gate,
        pending: { question: false, approvals: false },
      });
    let prepared = prepare();
    if (prepared.kind === 'answered' && prepared.outcome === 'held_for_confirmation' && tool) {
      if (!this.canElicit()) {
        // Nothing to ask the user with: the owner confirms the write on a card instead.
        return this.card(tool, call, signal, progress);
      }
      const answer = await this.server.elicitInput({
        message: `Allow ${name} to make changes (${tool.declaration.effect}) for the rest of this session? First call: ${name}(${JSON.stringify(call.args ?? {})})`,
        requestedSchema: { type: 'object', properties: {} },
      });
      await this.audit(answer.action === 'accept' ? 'confirm_once_yes' : 'confirm_once_no', name);
      if (answer.action !== 'accept') {
        this.gate.declined.add(name);
        return this.finish(call, tool, 'held_for_confirmation', SAY.declinedByUser(name), true, true);
      }
      this.gate.consented.add(name);
      this.gate.declined.delete(name);
      prepared = prepare();
    }
    switch (prepared.kind) {
      case 'answered':
        return this.finish(call, tool, prepared.outcome, prepared.result, true, true);
      case 'repeat':
      case 'repeat_of_card':
      case 'ask_user':
        // Not reachable: the session keeps no repeat ledger and ask_user is not listed.
        return this.finish(call, tool, 'unknown_tool', SAY.notOffered(name), true, true);
      case 'needs_card':
        return this.card(prepared.tool, call, signal, progress);
      case 'execute': {
        const ex = await executeCall(this.context(signal, mode), prepared.tool, call.id, prepared.args);
        return this.finish(call, prepared.tool, ex.outcome, ex.content, ex.is_error, ex.outcome !== 'ran');
      }
    }
  }

  private context(signal: AbortSignal, mode: Mode, approval_id?: string): ExecuteContext {
    return {
      run_id: this.run.state.id,
      request: this.run.state.request,
      registry: this.registry,
      currentMode: () => mode,
      signal,
      aborted: whenAborted(signal),
      recordEffect: (e) => this.run.addEffect(e),
      ledger: approval_id ? { store: this.store, approval_id } : undefined,
      maxResultChars: 100_000,
    };
  }

  /** A1: the call needs the owner's card: made, shown by elicitation where the client can, then awaited. */
  private async card(
    tool: ToolSpec,
    call: ToolCall,
    signal: AbortSignal,
    progress: (p: number, m: string) => Promise<void>,
  ): Promise<CallToolResult> {
    const ready = await prepareApproval(call.id, tool, call.args ?? {});
    if (ready.kind !== 'approval')
      return this.finish(call, tool, 'invalid_arguments', ready.kind === 'answered' ? ready.result : '', true, true);
    const now = new Date();
    const id = `apr_${randomUUID().slice(0, 8)}`;
    const card = buildCard([ready.item], this.registry.byName, this.run.state.request);
    await this.store.createApproval({
      id,
      run_id: this.run.state.id,
      pause_seq: 0,
      items: [ready.item],
      card,
      status: 'pending',
      requested_at: now.toISOString(),
      expires_at: new Date(now.getTime() + 60 * 60_000).toISOString(),
      answered_at: null,
      answered_by: null,
      reason: null,
      consent_writes: false,
    });
    await this.run.record({
      type: 'paused',
      pause: { kind: 'approval', seq: 0, approval_id: id, card, step: this.seq, items: [ready.item], results: [], calls: [] },
    });
    this.cards.set(callKey(call.name, call.args ?? {}), id);
    if (this.canElicit()) {
      const answer = await this.server.elicitInput({
        message: `${renderCard(card, id)}\n\nApprove this call?`,
        requestedSchema: { type: 'object', properties: { reason: { type: 'string', title: 'Reason (optional)' } } },
      });
      const reason = typeof answer.content?.reason === 'string' ? answer.content.reason : null;
      try {
        await recordApprovalAnswer(
          this.store,
          id,
          answer.action === 'accept' ? 'approve' : 'reject',
          `${MCP_MODEL_PREFIX}${this.client}`,
          reason,
        );
      } catch (err) {
        if (!(err instanceof KeelError)) throw err; // answered elsewhere first: that answer stands
      }
    }
    return this.await(id, tool, call, signal, progress);
  }

  /** Waits for a card's answer (bounded), then carries the call out once, or says why not. */
  private async await(
    id: string,
    tool: ToolSpec,
    call: ToolCall,
    signal: AbortSignal,
    progress: (p: number, m: string) => Promise<void>,
  ): Promise<CallToolResult> {
    const started = Date.now();
    const poll = this.o.pollMs ?? 250;
    let a: ApprovalRecord | undefined;
    while (true) {
      await expireApprovals(this.store);
      a = await this.store.getApproval(id);
      if (!a || a.status !== 'pending') break;
      const waited = Date.now() - started;
      if (waited >= this.o.waitMs || signal.aborted) {
        return text(SAY.waitingForApproval(id, a.card.title, call.name), true);
      }
      await progress(waited, `waiting for approval ${id}`);
      await new Promise((r) => setTimeout(r, poll));
    }
    if (!a) return text(SAY.approvalGone(id), true);
    const key = callKey(call.name, call.args ?? {});
    if (a.status !== 'approved') {
      this.cards.delete(key); // a new call after a rejection makes a new card
      const why =
        a.status === 'expired'
          ? `expired at ${a.expires_at}`
          : `was rejected${a.answered_by ? ` by ${a.answered_by}` : ''}${a.reason ? `: ${a.reason}` : ''}`;
      return this.finish(call, tool, 'error', SAY.approvalNotGranted(id, why), true, true);
    }
    const item = a.items[0];
    let work = this.running.get(id);
    if (!work) {
      work = (async () => {
        // Exactly the approved call, with its pinned arguments; the ledger runs it at most once.
        // The session's mode at the time it runs: a session switched to Plan since refuses it.
        const ex = await executeCall(this.context(new AbortController().signal, await this.mode(), id), tool, item.call_id, item.args);
        return this.finish({ ...call, id: item.call_id, args: item.args }, tool, ex.outcome, ex.content, ex.is_error, ex.outcome !== 'ran');
      })();
      this.running.set(id, work);
      // Once carried out, the card is done: the same call made later is a new request, with a new card.
      void work.finally(() => this.cards.delete(key));
    }
    return work;
  }

  /** The call joins the session's trace (a step, its journal event) and becomes the MCP result. */
  private async finish(
    call: ToolCall,
    tool: ToolSpec | undefined,
    outcome: CallRecord['outcome'],
    result: string,
    isError: boolean,
    byCore: boolean,
  ): Promise<CallToolResult> {
    const record: CallRecord = {
      step: this.seq,
      call_id: call.id,
      tool: call.name,
      args: call.args ?? null,
      outcome,
      result,
      is_error: isError,
      effect: tool?.declaration.effect,
      by_core: byCore,
    };
    if (!this.run.state.steps.some((r) => r.call_id === call.id)) {
      this.run.addAssistant('', [{ id: call.id, name: call.name, args: call.args }]);
      this.run.completeStep([record], [{ call_id: call.id, name: call.name, content: result, is_error: isError }]);
      await this.run.save();
      await this.run.record({ type: 'tool_result', step: this.seq, record });
    }
    return text(result, isError);
  }

  private async audit(action: string, subject: string): Promise<void> {
    await this.store.audit({
      at: new Date().toISOString(),
      actor: `${MCP_MODEL_PREFIX}${this.client}`,
      action,
      subject,
      detail: this.run.state.id,
    });
  }

  /** The connection closed: the session's run ends (its trace stays). */
  async close(): Promise<void> {
    if (this.run.state.status !== 'running') return;
    await this.run.end('done', 'final_answer', `MCP session closed after ${this.run.state.steps.length} call(s)`);
  }
}

/** An MCP server over one transport (one connection): tools listed, calls through the session. */
export async function connectMcp(
  o: McpServeOptions,
  pool: PoolWatch,
  transport: Transport,
): Promise<{ server: Server; close(): Promise<void> }> {
  const server = new Server({ name: 'keel', version: o.version }, { capabilities: { tools: { listChanged: true } } });
  let session: McpSession | undefined;
  const open = async () => {
    session ??= await McpSession.open(o, pool, server, server.getClientVersion()?.name ?? 'client');
    return session;
  };
  const off = pool.on(() => void server.sendToolListChanged().catch(() => {}));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (await open()).tools() }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const s = await open();
    const token = req.params._meta?.progressToken;
    const progress = async (p: number, message: string) => {
      if (token === undefined) return;
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: p, message } });
    };
    return s.call(req.params.name, req.params.arguments ?? {}, extra.signal, progress);
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    off();
    await session?.close();
  };
  server.onclose = () => void close();
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

/**
 * Streamable HTTP on loopback: each MCP session its own Keel session; every request needs a token
 * (an approver's: calls run tools) as `Authorization: Bearer`.
 */
export async function serveMcpHttp(
  o: McpServeOptions & { tokens: Tokens; host?: string; port: number },
): Promise<{ url: string; close(): Promise<void> }> {
  const pool = await PoolWatch.start(o);
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; close(): Promise<void> }>();
  const refuse = (res: ServerResponse, status: number, message: string) => {
    res
      .writeHead(status, { 'content-type': 'application/json' })
      .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message }, id: null }));
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    const who = m ? o.tokens.verify(m[1]) : undefined;
    if (!who) return refuse(res, 401, 'send Authorization: Bearer TOKEN (keel tokens create makes one)');
    if (!allows(who.role, 'approver')) return refuse(res, 403, `token ${who.name} is a ${who.role}: calling tools needs an approver`);
    const id = req.headers['mcp-session-id'];
    const existing = typeof id === 'string' ? sessions.get(id) : undefined;
    if (existing) return existing.transport.handleRequest(req, res);
    if (req.method !== 'POST') return refuse(res, 400, 'no such MCP session: start one with an initialize request');
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => {
        sessions.set(sid, { transport, close: c.close });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    const c = await connectMcp(o, pool, transport);
    await transport.handleRequest(req, res);
  };
  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) refuse(res, 500, `keel mcp serve failed: ${err instanceof Error ? err.message : String(err)}`);
    });
  });
  await new Promise<void>((r, j) => {
    http.once('error', j);
    http.listen(o.port, o.host ?? '127.0.0.1', () => r());
  });
  const addr = http.address() as AddressInfo;
  return {
    url: `http://${addr.address}:${addr.port}/mcp`,
    close: async () => {
      pool.close();
      for (const s of sessions.values()) await s.close();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
