/**
 * `keel mcp serve`: Keel's governed pool offered as an MCP server. Every plugin tool is listed with
 * its input schema and annotations from its declaration; every call goes through the one call
 * pipeline (the gate, hooks, the handler, the effect record), inside a session of its own per MCP
 * connection, kept as a run in the store (its calls, effects and cards, seen in the console):
 *
 * - a confirm-once write asks the user once per session and tool through MCP elicitation; a client
 *   without elicitation gets one card per session and tool, whose approval consents the tool;
 * - a destructive call or a pinned write becomes an approval card; with elicitation the card is shown
 *   there; without, the call waits at most `waitMs` (inside a client's 60 s time-out, with progress
 *   notifications) and returns naming the card, where to answer it, and that calling again with the
 *   same arguments gets the outcome. Identical calls share one card and one execution (the side-effect
 *   ledger); the same call made after it ran gets its recorded outcome;
 * - a client that supports MCP tasks may make a write or destructive call a task: `input_required`
 *   while its card waits (however long), then `completed` or `failed`; `tasks/cancel` rejects the card;
 * - over HTTP the bearer token's name answers and audits, bodies are limited to KEEL_MAX_BODY_BYTES,
 *   and a session idle past the timeout has lost its client; a session whose client is gone closes
 *   its pending cards (`client_gone`), unless `keepCards` leaves them to the owner;
 * - in Plan or Goal mode every tool stays listed, and a restricted one is refused with the mode's
 *   denial before anything of it runs.
 */
import { randomUUID } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { createServer, type Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CreateTaskOptions, isTerminal, type TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestTaskStore } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  isTaskAugmentedRequestParams,
  ListToolsRequestSchema,
  McpError,
  type Result,
  type Task,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { buildCard, describeCall, renderCardText, sourcesLine, undoSentence } from '../../approvals/card.js';
import { CLIENT_GONE, recordApprovalAnswer } from '../../approvals/respond.js';
import { type Answerer, mayAnswer } from '../../approvals/who.js';
import { isMcpSession, type Keel, limitsFromEnv, MCP_MODEL_PREFIX } from '../../keel/keel.js';
import { DEFAULT_LIMITS } from '../../loop/deps.js';
import {
  admitReply,
  type CallPolicy,
  type ExecuteContext,
  executeCall,
  type Prepared,
  prepareApproval,
  prepareCall,
  whenAborted,
} from '../../loop/pipeline.js';
import { RunWriter } from '../../loop/run.js';
import { SAY } from '../../loop/sentences.js';
import type { Registry } from '../../plugin-host/host.js';
import { deriveGateState, type GateState, noteUntrusted, type PolicyEvaluator, type PolicyVerdict, readView } from '../../policy/gate.js';
import type { ApprovalCard, ApprovalRecord, CallRecord, LoopEvent, Mode, Principal, Store, ToolCall, ToolSpec } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { callKey, canonicalJson } from '../../util/json.js';
import { allows, type Tokens } from '../access/tokens.js';
import type { Alerts } from '../alerts/alerts.js';
import { dropRest } from '../http/bodies.js';

export interface McpServeOptions {
  keel: Keel;
  /** The webhooks and Web Push its cards set off (config.yaml's notify, KEEL_PUSH_SUBJECT). */
  alerts?: Alerts;
  pluginDirs: string[];
  mode: Mode;
  /**
   * How long a call waits for its card to be answered before it returns, naming the card: at most
   * MAX_WAIT_MS, inside the 60 s an MCP client waits for a result by default.
   */
  waitMs: number;
  /** How often a waiting call looks at its card in the store. */
  pollMs?: number;
  /** How often a waiting call sends a progress notification (when the client gave a progress token). */
  progressMs?: number;
  /** A card's expiry; default KEEL_APPROVAL_TTL_MINUTES, else 60 minutes. */
  approvalTtlMs?: number;
  /**
   * When a client goes, leave its pending cards for the owner instead of closing them: the same call
   * made again, from any session, waits on that card or gets its outcome (clients that connect for
   * each call, such as the Inspector's CLI).
   */
  keepCards?: boolean;
  /** The web console where cards are answered (a configured `keel serve`), named in a waiting call's result. */
  consoleUrl?: string;
  version: string;
}

/** The longest a call waits for its card: an MCP client times a request out after 60 s by default. */
export const MAX_WAIT_SECONDS = 50;
/** How long a call waits for its card by default before it returns naming it. */
export const DEFAULT_WAIT_SECONDS = 5;
const PROGRESS_MS = 5_000;

const text = (t: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(isError ? { isError: true } : {}),
});

/** The tools an MCP client sees: every plugin tool (the core's own — ask_user, memory — are the agent loop's). */
function listed(reg: Registry): ToolSpec[] {
  return reg.pool.filter((t) => t.plugin !== 'core');
}

/**
 * MCP annotations from the manifest's declaration, and whether the call may run as an MCP task
 * (S3): a write or a destructive call may wait on a card or a confirmation, so a client that
 * supports tasks may make it one (`optional`); a read never waits and is not one (`forbidden`).
 */
export function toMcpTool(t: ToolSpec): Tool {
  const effect = t.declaration.effect;
  return {
    name: t.name,
    description: t.description,
    inputSchema: t.parameters as Tool['inputSchema'],
    execution: { taskSupport: effect === 'read' ? 'forbidden' : 'optional' },
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

/** A call that needed a card: identical calls of the session share it, its card and its one execution. */
interface Flight {
  /** The card it waits on: its own (approval per call), or its tool's consent card (confirm-once without elicitation). */
  card: string;
  kind: 'approval' | 'consent';
  tool: ToolSpec;
  call: ToolCall;
  key: string;
  /** The card's answer carried out — run once, or said why not — shared by every call waiting on it. */
  work?: Promise<CallToolResult>;
  /** Approved and run: the same call made again in the session returns this outcome, never a second run. */
  outcome?: CallToolResult;
  /** Not granted (rejected, expired, gone): why, for the calls made as tasks (they end `failed`). */
  refusal?: string;
}

/**
 * A call made as an MCP task (S3): it waits for its card's answer however long (no `--wait`: the
 * client polls the task), and says where it stands.
 */
interface TaskWatch {
  /** The call now waits on the user: its card (the id), or a confirmation asked by elicitation. */
  waiting(card: string | undefined, message: string): Promise<void>;
  /** Set when the card or the user refused the call: why (the task ends `failed`). */
  refused?: string;
}

/** A call made as a task, while it waits or runs. */
interface TaskEntry {
  /** Ends its wait: cancelled, or the session closed. */
  stop: AbortController;
  /** The card it waits on, once it does. */
  card?: string;
  /** A tasks/cancel under way: true once the card is rejected (the task is then cancelled), false if refused. */
  cancelled?: Promise<boolean>;
}

/** How often a task's client is told to poll it (ms). */
const TASK_POLL_MS = 1_000;
/** The reason a card is rejected with when the client cancels its task (tasks/cancel). */
export const TASK_CANCELLED = 'cancelled by the MCP client (tasks/cancel)';

/** What a call does once the session has decided (one call at a time): see `decide`. */
type Step =
  | { kind: 'result'; result: CallToolResult }
  | { kind: 'execute'; tool: ToolSpec; args: Record<string, unknown>; mode: Mode }
  | { kind: 'ask'; tool: ToolSpec }
  | { kind: 'wait'; flight: Flight; fresh: boolean };

type Progress = (progress: number, total: number, message: string) => Promise<void>;

/** Who is at the other end: the actor of every answer and audit row, and the client's own name (a label only). */
export interface McpIdentity {
  /** Over HTTP the bearer token's name; over stdio `mcp:CLIENT`. */
  actor: string;
  client: string;
  /** PC9: who the session's calls are made for, as the operator's policy sees it: the token's name, role and groups (stdio: `mcp:CLIENT`). */
  principal: Principal;
  /** A9: over HTTP the token's groups (a card routed elsewhere is not its client's to answer); over stdio none: the machine's user. */
  groups?: readonly string[];
}

/** A9: who answers a card on an MCP connection: over HTTP its token (its groups apply), over stdio the machine's user. */
function answererOf(who: McpIdentity): Answerer {
  return who.groups === undefined ? { name: who.actor, groups: [], kind: 'user' } : { name: who.actor, groups: who.groups, kind: 'mcp' };
}

/** The reason a card is closed with when its session's client is gone (one word for every surface: respond.ts). */
export { CLIENT_GONE };

/** One MCP connection: a Keel session with its own run, gate state and cards. */
class McpSession {
  private readonly gate: GateState;
  private seq = 0;
  /** Calls that waited on a card, by session-local call key (tool + canonical arguments). */
  private readonly flights = new Map<string, Flight>();
  /** Confirm-once without elicitation: the one consent card of each tool, while it is pending. */
  private readonly consentCards = new Map<string, string>();
  /** Confirm-once by elicitation: the question being asked, per tool (concurrent calls share it). */
  private readonly asking = new Map<string, Promise<boolean>>();
  /** The calls made as MCP tasks, while they wait or run: what stops their wait, and the card they wait on. */
  private readonly tasks = new Map<string, TaskEntry>();
  /** Decisions (which card a call waits on, found or made) are taken one at a time, so two identical calls share one card. */
  private queue: Promise<unknown> = Promise.resolve();
  private closing = false;

  private constructor(
    private readonly o: McpServeOptions,
    private readonly store: Store,
    private readonly pool: PoolWatch,
    private readonly run: RunWriter,
    private readonly server: Server,
    private readonly who: McpIdentity,
    /** PC8: the operator's Cedar policy, when one is configured. */
    private readonly cedar: { current(): PolicyEvaluator } | undefined,
  ) {
    this.gate = deriveGateState([], true);
  }

  static async open(o: McpServeOptions, pool: PoolWatch, server: Server, who: McpIdentity): Promise<McpSession> {
    const store = o.keel.store;
    if (!store) throw new KeelError('config', 'keel mcp serve needs a store: cards and sessions are kept there');
    const label = who.actor === `${MCP_MODEL_PREFIX}${who.client}` ? who.client : `${who.client}, token ${who.actor}`;
    const cedar = await o.keel.operatorPolicy(pool.registry.byName.values());
    const run = await RunWriter.start(
      {
        request: `MCP session (${label})`,
        mode: o.mode,
        model: `${MCP_MODEL_PREFIX}${who.client}`,
        plugin_dirs: o.pluginDirs,
        principal: who.principal,
      },
      store,
    );
    const s = run.state;
    await store.saveSession({ id: s.session_id, mode: o.mode, last_run_id: s.id, contract: null, updated_at: s.created_at });
    await run.record({ type: 'run_started', run_id: s.id, session_id: s.session_id, mode: s.mode, request: s.request, resumed: false });
    return new McpSession(o, store, pool, run, server, who, cedar);
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

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => {});
    return next;
  }

  private prepare(call: ToolCall, mode: Mode): Prepared {
    const visible = new Set(listed(this.registry).map((t) => t.name));
    return prepareCall({
      call,
      pool: this.registry.byName,
      menu: { admissible: (n) => visible.has(n) },
      mode,
      gate: this.gate,
      pending: { question: false, approvals: false },
      ...(this.cedar ? { policy: this.policy(this.cedar.current(), mode) } : {}),
    });
  }

  /** PC8: the operator's policy for this session's calls: the token's principal, the mode, what the session has read. */
  private policy(cedar: PolicyEvaluator, mode: Mode): CallPolicy {
    const s = this.run.state;
    return (tool, args) =>
      cedar.evaluate({
        tool,
        args,
        mode,
        session: s.session_id,
        principal: this.who.principal,
        untrusted: this.gate.untrusted,
        at: new Date(),
      });
  }

  async call(name: string, args: unknown, signal: AbortSignal, progress: Progress, watch?: TaskWatch): Promise<CallToolResult> {
    const callId = `mcp_${++this.seq}`;
    const raw: ToolCall =
      args && typeof args === 'object' && !Array.isArray(args)
        ? { id: callId, name, args: args as Record<string, unknown> }
        : { id: callId, name, raw_args: JSON.stringify(args ?? null) };
    const admitted = admitReply([raw]);
    const call = 'calls' in admitted ? admitted.calls[0] : raw;
    const step = await this.serial(() => this.decide(call));
    switch (step.kind) {
      case 'result':
        return step.result;
      case 'execute':
        return this.execute(call, step.tool, step.args, step.mode, signal);
      case 'ask':
        await watch?.waiting(undefined, `Asking the user (by elicitation) to allow ${name} for the rest of this session: nothing has run.`);
        if (!(await this.askOnce(step.tool, call))) {
          if (watch) watch.refused = SAY.declinedByUser(name);
          return this.finish(call, step.tool, 'held_for_confirmation', SAY.declinedByUser(name), true, true);
        }
        // Consented: the call goes through the gate again (the session's mode may have changed meanwhile).
        return this.call(name, args, signal, progress, watch);
      case 'wait': {
        const result = await this.await(step.flight, step.fresh, signal, progress, watch);
        if (watch && step.flight.refusal) watch.refused = step.flight.refusal;
        return result;
      }
    }
  }

  /**
   * S3: a call made as an MCP task. The task is `working`, then `input_required` while its card (or
   * a confirmation) waits on the user — however long: the client polls — then `completed` with the
   * call's result (its own error included), or `failed` saying why when the card was rejected or
   * expired or the user declined. The card is the one the console and `keel approvals` answer;
   * `tasks/cancel` rejects it (`cancelTask`). A read never waits and is not a task (tools/list says so).
   */
  async startTask(name: string, args: unknown, params: CreateTaskOptions, tasks: RequestTaskStore, store: ConnectionTasks): Promise<Task> {
    const tool = this.registry.byName.get(name);
    if (tool?.declaration.effect === 'read') {
      throw new McpError(
        ErrorCode.MethodNotFound,
        `${name} only reads and never waits: call it without a task (tools/list: execution.taskSupport forbidden)`,
      );
    }
    // Kept while it waits (its card's expiry bounds that), and for as long again once it ended.
    const task = await tasks.createTask({ ttl: Math.max(params.ttl ?? 0, approvalTtlMs(this.o)), pollInterval: TASK_POLL_MS });
    const entry: TaskEntry = { stop: new AbortController() };
    this.tasks.set(task.taskId, entry);
    const watch: TaskWatch = {
      waiting: async (card, message) => {
        entry.card = card;
        await tasks.updateTaskStatus(task.taskId, 'input_required', message).catch(() => {});
      },
    };
    void (async () => {
      let result: CallToolResult;
      try {
        result = await this.call(name, args, entry.stop.signal, async () => {}, watch);
      } catch (err) {
        watch.refused = `keel mcp serve: the call failed: ${err instanceof Error ? err.message : String(err)}`;
        result = text(watch.refused, true);
      }
      // Cancelled (tasks/cancel ended it) or the session closed (its cards closed): nothing more to say.
      if ((entry.cancelled && (await entry.cancelled)) || entry.stop.signal.aborted) return;
      if (watch.refused) store.explain(task.taskId, watch.refused);
      await tasks.storeTaskResult(task.taskId, watch.refused ? 'failed' : 'completed', result);
    })()
      .catch(() => {})
      .finally(() => this.tasks.delete(task.taskId));
    return task;
  }

  /**
   * tasks/cancel: the task's card is rejected (audited, as the session's actor) and nothing runs.
   * A card approved already is running or ran: the cancel is refused, saying so. Returns what the
   * cancelled task says.
   */
  async cancelTask(id: string): Promise<string> {
    const entry = this.tasks.get(id);
    if (!entry) return 'Cancelled by the client.';
    const card = entry.card;
    const cancel = (async () => {
      // Not waiting on a card: asking by elicitation (nothing ran), or already running (told to stop).
      if (!card) return 'Cancelled by the client while it was not waiting on a card: a call already running was told to stop.';
      try {
        // A9: a client withdrawing its own call's card rejects it — nothing runs — whatever the card's groups.
        const a = await recordApprovalAnswer(this.store, card, 'reject', this.who.actor, TASK_CANCELLED);
        return a.status === 'expired'
          ? `Cancelled by the client; approval ${a.id} had expired. Nothing changed.`
          : `Cancelled by the client: approval ${a.id} rejected. Nothing changed.`;
      } catch (err) {
        if (err instanceof KeelError) throw new McpError(ErrorCode.InvalidRequest, `the task cannot be cancelled: ${err.message}`);
        throw err;
      }
    })();
    // The call's own end waits for this: a cancelled task is not then also completed or failed.
    entry.cancelled = cancel.then(
      () => true,
      () => false,
    );
    const said = await cancel;
    entry.stop.abort();
    return said;
  }

  /**
   * What a call does, decided one call at a time: an identical call that waited on a card shares that
   * card (and its outcome); otherwise the gate decides, and a card is made here, before the next call
   * is looked at — found or created atomically, per session, tool and canonical arguments.
   */
  private async decide(call: ToolCall): Promise<Step> {
    const key = call.args ? callKey(call.name, call.args) : '';
    const existing = key ? this.flights.get(key) : undefined;
    if (existing) return { kind: 'wait', flight: existing, fresh: false };
    const tool = this.registry.byName.get(call.name);
    await this.consentFromCard(call.name);
    const mode = await this.mode();
    const prepared = this.prepare(call, mode);
    switch (prepared.kind) {
      case 'answered':
        if (prepared.outcome === 'held_for_confirmation' && tool) {
          // --keep-cards: a consent card an earlier connection left for this very call answers it,
          // as a destructive call's card does — a client that connects per command can call again.
          const kept = key && this.o.keepCards ? await this.keptCard(key) : undefined;
          if (kept) return this.keptFlight(kept, tool, call, key);
          if (this.canElicit()) return { kind: 'ask', tool };
          // U3: once the session has read untrusted content, a card covers only its own call.
          if (this.gate.untrusted.length) return this.flight(call, key, tool, 'approval');
          // Nothing to ask the user with: one card per session and tool, whose approval consents the tool.
          return this.flight(call, key, tool, 'consent');
        }
        return { kind: 'result', result: await this.finish(call, tool, prepared.outcome, prepared.result, true, true) };
      case 'repeat':
      case 'repeat_of_card':
      case 'ask_user':
        // Not reachable: the session keeps no repeat ledger and ask_user is not listed.
        return { kind: 'result', result: await this.finish(call, tool, 'unknown_tool', SAY.notOffered(call.name), true, true) };
      case 'needs_card': {
        const kept = key && this.o.keepCards ? await this.keptCard(key) : undefined;
        if (kept) return this.keptFlight(kept, prepared.tool, call, key);
        return this.flight(call, key, prepared.tool, 'approval', prepared.verdict);
      }
      case 'execute':
        return { kind: 'execute', tool: prepared.tool, args: prepared.args, mode };
    }
  }

  /**
   * --keep-cards: the call waits on the card an earlier session left for it; approved, exactly the
   * card's call runs, through the ledger (once, whichever connection calls).
   */
  private keptFlight(card: string, tool: ToolSpec, call: ToolCall, key: string): Step {
    const flight: Flight = { card, kind: 'approval', tool, call, key };
    this.flights.set(key, flight);
    return { kind: 'wait', flight, fresh: false };
  }

  /**
   * --keep-cards: the card an earlier MCP session (a client gone, or another connection) left for
   * the same call — pending, or approved (then carried out here through the ledger: once, or its
   * recorded outcome). A client that connects for each call (the Inspector's CLI) gets the outcome.
   * A tool's consent card counts for the call it was made for (issue 40).
   */
  private async keptCard(key: string): Promise<string | undefined> {
    await this.o.keel.expireApprovals();
    for (const status of ['pending', 'approved'] as const) {
      for (const a of await this.store.listApprovals({ status })) {
        if (a.items.length !== 1 || callKey(a.items[0].tool, a.items[0].args) !== key) continue;
        if (isMcpSession(await this.store.loadRun(a.run_id))) return a.id;
      }
    }
    return undefined;
  }

  /** A tool's consent card answered (by whoever, wherever): approved, the tool is consented for the session; else it is gone. */
  private async consentFromCard(name: string): Promise<void> {
    const id = this.consentCards.get(name);
    if (!id) return;
    const a = await this.store.getApproval(id);
    if (a?.status === 'pending') return;
    this.consentCards.delete(name);
    if (a?.status === 'approved') {
      this.gate.consented.add(name);
      this.gate.declined.delete(name);
    }
  }

  /** The call waits on a card: its own (approval), or its tool's consent card, made now if the tool has none pending. */
  private async flight(call: ToolCall, key: string, tool: ToolSpec, kind: Flight['kind'], verdict?: PolicyVerdict): Promise<Step> {
    const pending = kind === 'consent' ? this.consentCards.get(tool.name) : undefined;
    let card = pending;
    if (!card) {
      const made = await this.makeCard(call, tool, kind, verdict);
      if (typeof made !== 'string') return { kind: 'result', result: made };
      card = made;
      if (kind === 'consent') this.consentCards.set(tool.name, card);
    }
    const flight: Flight = { card, kind, tool, call, key };
    if (key) this.flights.set(key, flight);
    return { kind: 'wait', flight, fresh: !pending };
  }

  private async execute(call: ToolCall, tool: ToolSpec, args: Record<string, unknown>, mode: Mode, signal: AbortSignal, approval?: string) {
    const ex = await executeCall(this.context(signal, mode, approval), tool, call.id, args);
    return this.finish({ ...call, args }, tool, ex.outcome, ex.content, ex.is_error, ex.outcome !== 'ran', ex.untrusted);
  }

  /** Confirm-once by elicitation: asked once per session and tool, however many calls come at once. */
  private askOnce(tool: ToolSpec, call: ToolCall): Promise<boolean> {
    let asked = this.asking.get(tool.name);
    if (!asked) {
      asked = (async () => {
        // U3: the call as the core renders it (the tool's describe), and what the session has read from outside.
        const shown = describeCall(tool, call.args ?? {});
        const read = sourcesLine(this.gate.untrusted);
        const scope = read ? 'this exact call only' : 'the rest of this session';
        const answer = await this.server.elicitInput({
          message: [
            `Allow ${tool.name} to make changes (${tool.declaration.effect}) — ${scope}?`,
            `${shown.title}${shown.lines.length ? `: ${shown.lines.join('; ')}` : ''}`,
            `Exact call: ${tool.name}(${canonicalJson(call.args ?? {})})`,
            ...(read ? [read] : []),
          ].join('\n'),
          requestedSchema: { type: 'object', properties: {} },
        });
        const yes = answer.action === 'accept';
        await this.audit(yes ? 'confirm_once_yes' : 'confirm_once_no', tool.name);
        const key = callKey(tool.name, call.args ?? {});
        if (yes) {
          this.gate.consented.add(tool.name);
          this.gate.declined.delete(tool.name);
          this.gate.consentedCalls.add(key);
        } else {
          this.gate.declined.add(tool.name);
          // U5: a no is remembered: this exact call is refused from now on without asking.
          this.gate.declinedCalls.add(key);
        }
        return yes;
      })().finally(() => this.asking.delete(tool.name));
      this.asking.set(tool.name, asked);
    }
    return asked;
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
      untrusted: () => readView(this.gate),
    };
  }

  /**
   * A1: the card for a call — the exact call (approval), or the tool for the rest of the session
   * (consent) — stored with the manifest's undo and KEEL_APPROVAL_TTL_MINUTES' expiry. An invalid
   * call gets its result instead.
   */
  private async makeCard(call: ToolCall, tool: ToolSpec, kind: Flight['kind'], verdict?: PolicyVerdict): Promise<string | CallToolResult> {
    const ready = await prepareApproval(call.id, tool, call.args ?? {}, verdict);
    if (ready.kind !== 'approval')
      return this.finish(call, tool, 'invalid_arguments', ready.kind === 'answered' ? ready.result : '', true, true);
    const now = new Date();
    const id = `apr_${randomUUID().slice(0, 8)}`;
    const built = buildCard([ready.item], this.registry.byName, this.run.state.request, this.gate.untrusted);
    const card: ApprovalCard = kind === 'approval' ? built : consentCard(built, tool);
    await this.store.createApproval({
      id,
      run_id: this.run.state.id,
      pause_seq: 0,
      items: [ready.item],
      card,
      status: 'pending',
      requested_at: now.toISOString(),
      expires_at: new Date(now.getTime() + approvalTtlMs(this.o)).toISOString(),
      answered_at: null,
      answered_by: null,
      reason: null,
      consent_writes: false,
    });
    const paused: LoopEvent = {
      type: 'paused',
      pause: { kind: 'approval', seq: 0, approval_id: id, card, step: this.seq, items: [ready.item], results: [], calls: [] },
    };
    await this.run.record(paused);
    // The owner hears of the card as of any other: the webhooks and Web Push of this process.
    this.o.alerts?.event(this.run.state.id, paused);
    return id;
  }

  /** With elicitation the card itself is shown to the client's user; the answer is recorded as the session's actor's. */
  private async elicitCard(id: string, card: ApprovalCard): Promise<void> {
    // A9: a card routed to groups this client's token is not in is not asked of it: the group answers it elsewhere.
    if (!mayAnswer(card, answererOf(this.who))) return;
    try {
      const answer = await this.server.elicitInput({
        message: `${renderCardText(card, id)}\n\nApprove this call?`,
        requestedSchema: { type: 'object', properties: { reason: { type: 'string', title: 'Reason (optional)' } } },
      });
      const reason = typeof answer.content?.reason === 'string' ? answer.content.reason : null;
      await recordApprovalAnswer(this.store, id, answer.action === 'accept' ? 'approve' : 'reject', this.who.actor, reason, new Date(), {
        who: answererOf(this.who),
      });
    } catch {
      // Answered elsewhere first (that answer stands), or the client could not be asked: the card waits.
    }
  }

  /**
   * Waits for a flight's card — shown by elicitation first where the client can — at most `waitMs`
   * (well inside a client's 60 s time-out), then carries out its answer once, or returns naming the
   * card: what it asks, where it is answered, and that the same call made again gets the outcome.
   */
  private async await(flight: Flight, fresh: boolean, signal: AbortSignal, progress: Progress, watch?: TaskWatch): Promise<CallToolResult> {
    if (flight.outcome) return flight.outcome;
    if (flight.work) return flight.work;
    if (fresh && flight.kind === 'approval' && this.canElicit()) {
      const a = await this.store.getApproval(flight.card);
      if (a) {
        await watch?.waiting(a.id, `Asking the user (by elicitation) to approve ${a.id} (${a.card.title}): nothing has run.`);
        await this.elicitCard(a.id, a.card);
      }
    }
    const started = Date.now();
    const poll = this.o.pollMs ?? 250;
    const every = this.o.progressMs ?? PROGRESS_MS;
    let nextProgress = 0;
    let told = false;
    while (true) {
      if (flight.work) return flight.work;
      // A4: a card past its expiry is expired and the run waiting on it (if any) ended, in one step.
      await this.o.keel.expireApprovals();
      const a = await this.store.getApproval(flight.card);
      if (a?.status !== 'pending') return this.settle(flight, a);
      const waited = Date.now() - started;
      // Each part a sentence of its own: a line may end with its own full stop ("…as a yes would.").
      const asks = () => a.card.items.map((i) => [i.title, ...i.lines, i.undo].map((p) => p.replace(/\.$/, '')).join('; '));
      // A task waits for the answer however long (its client polls); a plain call at most --wait.
      if ((!watch && waited >= this.o.waitMs) || signal.aborted || this.closing) {
        return text(SAY.waitingForApproval(a.id, a.card.title, flight.call.name, asks(), this.o.consoleUrl), true);
      }
      if (watch) {
        if (!told) await watch.waiting(a.id, SAY.waitingForApproval(a.id, a.card.title, flight.call.name, asks(), this.o.consoleUrl));
        told = true;
        // A task may wait as long as its card lives: looked at once a second, not at a plain call's pace.
        await new Promise((r) => setTimeout(r, Math.max(poll, TASK_POLL_MS)));
        continue;
      }
      if (waited >= nextProgress) {
        nextProgress = waited + every;
        await progress(waited, this.o.waitMs, `waiting for approval ${a.id} (${a.card.title}): keel approvals approve ${a.id}`).catch(
          () => {},
        );
      }
      await new Promise((r) => setTimeout(r, Math.min(poll, this.o.waitMs - waited)));
    }
  }

  /** The card is answered: its outcome is made once, whoever of the waiting calls gets here first. */
  private settle(flight: Flight, a: ApprovalRecord | undefined): Promise<CallToolResult> {
    flight.work ??= this.carryOut(flight, a);
    return flight.work;
  }

  private async carryOut(flight: Flight, a: ApprovalRecord | undefined): Promise<CallToolResult> {
    const { tool, call } = flight;
    if (a?.status !== 'approved') {
      // Not granted: these calls get the answer; the same call made later is a new request, with a new card.
      if (this.flights.get(flight.key) === flight) this.flights.delete(flight.key);
      if (this.consentCards.get(tool.name) === flight.card) this.consentCards.delete(tool.name);
      // U5: a rejected card is a no to its exact call: the same call made again is refused at once.
      if (a?.status === 'rejected' && flight.key) this.gate.declinedCalls.add(flight.key);
      if (!a) {
        flight.refusal = SAY.approvalGone(flight.card);
        return text(flight.refusal, true);
      }
      const why =
        a.status === 'expired'
          ? `expired at ${a.expires_at}`
          : `was rejected${a.answered_by ? ` by ${a.answered_by}` : ''}${a.reason ? `: ${a.reason}` : ''}`;
      flight.refusal = SAY.approvalNotGranted(a.id, why);
      // R27: a rejected card's call has its own outcome; an expired one is the core's error.
      return this.finish(call, tool, a.status === 'rejected' ? 'rejected' : 'error', SAY.approvalNotGranted(a.id, why), true, true);
    }
    // Once carried out, the same call made again returns this outcome: never a second execution.
    const neverAborted = new AbortController().signal;
    let result: CallToolResult;
    if (flight.kind === 'consent') {
      // The tool is consented for the session (as a yes would be); this call goes through the gate again.
      await this.consentFromCard(tool.name);
      this.gate.consented.add(tool.name);
      this.gate.declined.delete(tool.name);
      // U3: the card showed this exact call: it stays consented even once the session reads untrusted content.
      if (flight.key) this.gate.consentedCalls.add(flight.key);
      const mode = await this.mode();
      const p = this.prepare(call, mode);
      result =
        p.kind === 'execute'
          ? await this.execute(call, p.tool, p.args, mode, neverAborted)
          : p.kind === 'answered'
            ? await this.finish(call, tool, p.outcome, p.result, true, true)
            : await this.finish(call, tool, 'unknown_tool', SAY.notOffered(call.name), true, true);
    } else {
      // Exactly the approved call, with its pinned arguments; the ledger runs it at most once.
      // The session's mode at the time it runs: a session switched to Plan since refuses it.
      const item = a.items[0];
      result = await this.execute({ ...call, id: item.call_id }, tool, item.args, await this.mode(), neverAborted, a.id);
    }
    flight.outcome = result;
    return result;
  }

  /** The call joins the session's trace (a step, its journal event) and becomes the MCP result. */
  private async finish(
    call: ToolCall,
    tool: ToolSpec | undefined,
    outcome: CallRecord['outcome'],
    result: string,
    isError: boolean,
    byCore: boolean,
    untrusted?: string,
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
    // U2: the session's client has read words from outside the user: its consents narrow from here on.
    if (untrusted !== undefined) {
      record.untrusted = untrusted;
      noteUntrusted(this.gate, record);
    }
    if (!this.run.state.steps.some((r) => r.call_id === call.id) && this.run.state.status === 'running') {
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
      actor: this.who.actor,
      action,
      subject,
      detail: JSON.stringify({ run_id: this.run.state.id, client: this.who.client }),
    });
  }

  /**
   * The connection closed — the client is gone: the session's pending cards are closed (rejected as
   * client_gone, audited), so no inbox offers an approval whose call nobody would carry out; a card
   * approved but not carried out yet is carried out now (an approval never stands with nothing run);
   * then the session's run ends (its trace stays).
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    // Its tasks end with the connection (their store with it); their cards are closed or kept below.
    for (const t of this.tasks.values()) t.stop.abort();
    await this.queue;
    // --keep-cards: they stay pending for the owner, and the same call made again (by any session) gets the outcome.
    const pending = this.o.keepCards ? [] : await this.store.listApprovals({ status: 'pending', run_id: this.run.state.id });
    for (const a of pending) {
      try {
        await recordApprovalAnswer(this.store, a.id, 'reject', 'system', CLIENT_GONE);
      } catch (err) {
        if (!(err instanceof KeelError)) throw err; // answered just now: handled below
      }
    }
    for (const f of new Set(this.flights.values())) {
      if (f.work) continue;
      const a = await this.store.getApproval(f.card);
      if (a?.status === 'approved') await this.settle(f, a).catch(() => {});
    }
    await Promise.allSettled([...this.flights.values()].map((f) => f.work));
    if (this.run.state.status !== 'running') return;
    await this.run.end('done', 'session_closed', `MCP session closed after ${this.run.state.steps.length} call(s)`);
  }
}

const CONSENT_TITLE = 'Let ';

/** A confirm-once tool's card, for a client that cannot be asked: approving it consents the tool for the session. */
function consentCard(card: ApprovalCard, tool: ToolSpec): ApprovalCard {
  return {
    ...card,
    title: `${CONSENT_TITLE}${tool.name} make changes for the rest of this MCP session`,
    items: card.items.map((i) => ({
      ...i,
      title: `First call: ${i.title}`,
      lines: [...i.lines, `Approving lets every ${tool.name} call of this session run without asking, as a yes would.`],
      undo: tool.declaration.undo ? undoSentence(tool) : `the manifest declares no undo for ${tool.name}`,
    })),
  };
}

const approvalTtlMs = (o: McpServeOptions) => o.approvalTtlMs ?? limitsFromEnv(process.env).approvalTtlMs ?? DEFAULT_LIMITS.approvalTtlMs;

/**
 * The MCP tasks of one connection (S3), in memory, like the session they belong to: a task lives
 * while its call waits (its card's expiry bounds that) and for its `ttl` once it ended. tasks/cancel
 * reaches `onCancel` first, which rejects the task's card — or refuses, and the task goes on; a
 * failed or cancelled task says why in its status message, and tasks/result gives the call's result.
 */
export class ConnectionTasks implements TaskStore {
  private readonly tasks = new Map<string, { task: Task; result?: Result; timer?: NodeJS.Timeout }>();
  onCancel?: (taskId: string) => Promise<string>;

  async createTask(params: CreateTaskOptions): Promise<Task> {
    const now = new Date().toISOString();
    const task: Task = {
      taskId: `task_${randomUUID()}`,
      status: 'working',
      ttl: params.ttl ?? null,
      createdAt: now,
      lastUpdatedAt: now,
      pollInterval: params.pollInterval ?? TASK_POLL_MS,
    };
    this.tasks.set(task.taskId, { task });
    return { ...task };
  }

  async getTask(taskId: string): Promise<Task | null> {
    const t = this.tasks.get(taskId);
    return t ? { ...t.task } : null;
  }

  private live(taskId: string) {
    const t = this.tasks.get(taskId);
    if (!t) throw new Error(`no task ${taskId}`);
    if (isTerminal(t.task.status)) throw new Error(`task ${taskId} has already ended (${t.task.status})`);
    return t;
  }

  private end(t: { task: Task; timer?: NodeJS.Timeout }, status: Task['status']): void {
    t.task.status = status;
    t.task.lastUpdatedAt = new Date().toISOString();
    if (t.task.ttl) {
      t.timer = setTimeout(() => this.tasks.delete(t.task.taskId), t.task.ttl);
      t.timer.unref();
    }
  }

  async storeTaskResult(taskId: string, status: 'completed' | 'failed', result: Result): Promise<void> {
    const t = this.live(taskId);
    t.result = result;
    this.end(t, status);
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const t = this.tasks.get(taskId);
    if (!t?.result) throw new Error(`task ${taskId} has no result${t ? ` (it is ${t.task.status})` : ''}`);
    return t.result;
  }

  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string): Promise<void> {
    this.live(taskId);
    if (status === 'cancelled' && this.onCancel) {
      statusMessage = await this.onCancel(taskId);
      const t = this.live(taskId);
      t.result = text(statusMessage, true);
    }
    const t = this.live(taskId);
    if (statusMessage) t.task.statusMessage = statusMessage;
    if (isTerminal(status)) this.end(t, status);
    else {
      t.task.status = status;
      t.task.lastUpdatedAt = new Date().toISOString();
    }
  }

  /** Why a task is about to fail: its status message. */
  explain(taskId: string, message: string): void {
    const t = this.tasks.get(taskId);
    if (t && !isTerminal(t.task.status)) t.task.statusMessage = message;
  }

  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    // One connection's tasks: one page.
    return { tasks: cursor ? [] : [...this.tasks.values()].map((t) => ({ ...t.task })) };
  }

  close(): void {
    for (const t of this.tasks.values()) clearTimeout(t.timer);
    this.tasks.clear();
  }
}

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

/** How long an HTTP session may be idle — no request open, none arriving — before its client counts as gone: 30 minutes. */
export const DEFAULT_IDLE_SECONDS = 30 * 60;

/**
 * The HTTP endpoint's limits from the environment (S3): `KEEL_MAX_BODY_BYTES` (as `keel serve`,
 * default 1,000,000) and `KEEL_MCP_IDLE_TIMEOUT_SECONDS` (default 30 minutes; `--idle-timeout` wins).
 */
export function mcpHttpLimits(env: NodeJS.ProcessEnv): { maxBodyBytes: number; idleMs: number } {
  const positive = (name: string, fallback: number, whole: boolean): number => {
    const v = env[name];
    if (v === undefined || v === '') return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0 || (whole && !Number.isInteger(n)))
      throw new KeelError('config', `${name}=${v} is not a positive ${whole ? 'whole ' : ''}number`);
    return n;
  };
  return {
    maxBodyBytes: positive('KEEL_MAX_BODY_BYTES', 1_000_000, true),
    idleMs: positive('KEEL_MCP_IDLE_TIMEOUT_SECONDS', DEFAULT_IDLE_SECONDS, false) * 1000,
  };
}

/** A request's body, read up to `max` bytes: undefined past it (the rest is left unread). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      resolve(undefined);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * Streamable HTTP on loopback: each MCP session its own Keel session; every request needs a token
 * (an approver's: calls run tools) as `Authorization: Bearer`. S3: a body past `maxBodyBytes` is
 * refused with 413 before it is read whole; a session with no request open and none arriving for
 * `idleMs` — a client that vanished without a DELETE — is closed as if its client had said goodbye
 * (its pending cards closed as `client_gone`, or kept with `keepCards`).
 */
export async function serveMcpHttp(
  o: McpServeOptions & { tokens: Tokens; host?: string; port: number; maxBodyBytes?: number; idleMs?: number },
): Promise<{ url: string; close(): Promise<void> }> {
  const limits = mcpHttpLimits(process.env);
  const maxBody = o.maxBodyBytes ?? limits.maxBodyBytes;
  const idleMs = o.idleMs ?? limits.idleMs;
  const pool = await PoolWatch.start(o);
  interface HttpSession {
    transport: StreamableHTTPServerTransport;
    close(): Promise<void>;
    /** Requests of the session open now (a call being answered, a GET stream held). */
    open: number;
    /** When its last request ended. */
    idleSince: number;
  }
  const sessions = new Map<string, HttpSession>();
  const refuse = (res: ServerResponse, status: number, message: string, code = -32001, headers: Record<string, string> = {}) => {
    res
      .writeHead(status, { 'content-type': 'application/json', ...headers })
      .end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
  };
  /** A request of the session: it is busy while the request is open, and idle from when the last one ends. */
  const track = (s: HttpSession, res: ServerResponse) => {
    s.open++;
    res.once('close', () => {
      s.open--;
      s.idleSince = Date.now();
    });
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
    // S3: the body limit first, before any other check, as `keel serve` (app.ts): a declared length
    // past it is refused unread, a chunked body as soon as it passes it.
    let body: unknown;
    if (req.method === 'POST') {
      const raw = await readBody(req, maxBody);
      if (!raw) {
        // What the client still sends is read and dropped, so it reads the 413 instead of a reset.
        dropRest(req);
        return refuse(res, 413, `the request body is larger than ${maxBody} bytes (KEEL_MAX_BODY_BYTES)`, -32600);
      }
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return refuse(res, 400, 'the request body is not JSON', -32700);
      }
    }
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    const who = m ? o.tokens.verify(m[1]) : undefined;
    if (!who) return refuse(res, 401, 'send Authorization: Bearer TOKEN (keel tokens create makes one)');
    if (!allows(who.role, 'approver')) return refuse(res, 403, `token ${who.name} is a ${who.role}: calling tools needs an approver`);
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const existing = sessions.get(id);
      // Closed (a DELETE, or idle past the timeout): the client starts a new session.
      if (!existing) return refuse(res, 404, `no MCP session ${id} (closed, or idle too long): start one with an initialize request`);
      track(existing, res);
      return existing.transport.handleRequest(req, res, body);
    }
    if (req.method !== 'POST') return refuse(res, 400, 'no MCP session: start one with an initialize request');
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => {
        const s: HttpSession = { transport, close: c.close, open: 0, idleSince: Date.now() };
        sessions.set(sid, s);
        track(s, res);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    // The token's name is the actor of every answer and audit row; the client's own name is a label.
    const c = await connectMcp(o, pool, transport, who);
    await transport.handleRequest(req, res, body);
    // Not an initialize request: no session was made, and its connection is let go.
    if (!transport.sessionId) await Promise.all([c.close(), transport.close()]);
  };
  // S3: a client that vanished without a DELETE is gone once its session has been idle for idleMs.
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [sid, s] of sessions) {
        if (s.open > 0 || now - s.idleSince < idleMs) continue;
        sessions.delete(sid);
        process.stderr.write(`keel mcp serve: session ${sid} idle for ${Math.round((now - s.idleSince) / 1000)} s: its client is gone\n`);
        void Promise.all([s.close(), s.transport.close()]).catch((err) =>
          process.stderr.write(`keel mcp serve: closing a session failed: ${err instanceof Error ? err.message : String(err)}\n`),
        );
      }
    },
    Math.max(50, Math.min(idleMs / 4, 30_000)),
  );
  sweep.unref();
  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) refuse(res, 500, `keel mcp serve failed: ${err instanceof Error ? err.message : String(err)}`);
    });
  });
  // A connection whose peer vanished without closing it (a held GET stream) is found by TCP keep-alive.
  http.on('connection', (socket) => socket.setKeepAlive(true, 60_000));
  await new Promise<void>((r, j) => {
    http.once('error', j);
    http.listen(o.port, o.host ?? '127.0.0.1', () => r());
  });
  const addr = http.address() as AddressInfo;
  return {
    url: `http://${addr.address}:${addr.port}/mcp`,
    close: async () => {
      clearInterval(sweep);
      pool.close();
      for (const s of sessions.values()) await s.close();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
