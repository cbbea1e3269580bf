/**
 * One MCP connection's Keel session (S3): opened as a run in the store, it takes each call — made
 * plainly or as an MCP task — decides, one call at a time, whether it runs, is answered, is asked
 * by elicitation or waits on a card (identical calls share one card and one execution), cancels a
 * task by rejecting its card, and closes its pending cards when the client is gone. Never runs a
 * call outside the one pipeline, and never leaves an approved card with nothing run when it closes.
 */

import type { CreateTaskOptions } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestTaskStore } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { type CallToolResult, ErrorCode, McpError, type Task } from '@modelcontextprotocol/sdk/types.js';
import { CLIENT_GONE, recordApprovalAnswer } from '../../approvals/respond.js';
import { MCP_MODEL_PREFIX } from '../../keel/keel.js';
import { admitReply } from '../../loop/pipeline.js';
import { RunWriter } from '../../loop/run.js';
import { SAY } from '../../loop/sentences.js';
import type { PolicyVerdict } from '../../policy/gate.js';
import type { Mode, OutsideValue, ToolCall, ToolSpec } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { callKey } from '../../util/json.js';
import type { RunNote } from './calls.js';
import { type Flight, type Progress, SessionCards } from './cards.js';
import { approvalTtlMs, type McpIdentity, type McpServeOptions, text } from './options.js';
import { mayWait, type PoolWatch } from './pool.js';
import { type ConnectionTasks, TASK_CANCELLED, TASK_POLL_MS, type TaskEntry, type TaskWatch } from './tasks.js';

/** What a call does once the session has decided (one call at a time): see `decide`. */
type Step =
  | { kind: 'result'; result: CallToolResult }
  | { kind: 'execute'; tool: ToolSpec; args: Record<string, unknown>; mode: Mode; note: RunNote }
  | { kind: 'ask'; tool: ToolSpec }
  | { kind: 'wait'; flight: Flight; fresh: boolean };

/** One MCP connection: a Keel session with its own run, gate state and cards. */
export class McpSession extends SessionCards {
  /** The calls made as MCP tasks, while they wait or run: what stops their wait, and the card they wait on. */
  private readonly tasks = new Map<string, TaskEntry>();
  /** Decisions (which card a call waits on, found or made) are taken one at a time, so two identical calls share one card. */
  private queue: Promise<unknown> = Promise.resolve();

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

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => {});
    return next;
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
        return this.execute(call, step.tool, step.args, step.mode, signal, undefined, step.note);
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
   * `tasks/cancel` rejects it (`cancelTask`). A closed-world read never waits and is not a task
   * (tools/list says so); an open-world read may wait on a card (O2), so it may be one.
   */
  async startTask(name: string, args: unknown, params: CreateTaskOptions, tasks: RequestTaskStore, store: ConnectionTasks): Promise<Task> {
    const tool = this.registry.byName.get(name);
    if (tool && !mayWait(tool)) {
      throw new McpError(
        ErrorCode.MethodNotFound,
        `${name} only reads, sends nothing out (no open_world) and never waits: call it without a task (tools/list: execution.taskSupport forbidden)`,
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
        return {
          kind: 'result',
          result: await this.finish(call, tool, prepared.outcome, prepared.result, true, true, undefined, noteOf(prepared.verdict)),
        };
      case 'repeat':
      case 'repeat_of_card':
      case 'ask_user':
        // Not reachable: the session keeps no repeat ledger and ask_user is not listed.
        return { kind: 'result', result: await this.finish(call, tool, 'unknown_tool', SAY.notOffered(call.name), true, true) };
      case 'needs_card': {
        const kept = key && this.o.keepCards ? await this.keptCard(key) : undefined;
        if (kept) return this.keptFlight(kept, prepared.tool, call, key);
        // O2: an open-world call after untrusted content: its card marks the values that are not the user's.
        return this.flight(call, key, prepared.tool, 'approval', prepared.verdict, prepared.outside);
      }
      case 'execute': {
        // U4/O4: the exception that let it run after untrusted content is kept in its record, with the policies (PC11).
        const note = noteOf(prepared.verdict);
        if (prepared.allowed_after_untrusted) note.allowed_after_untrusted = prepared.allowed_after_untrusted;
        return { kind: 'execute', tool: prepared.tool, args: prepared.args, mode, note };
      }
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

  /** The call waits on a card: its own (approval), or its tool's consent card, made now if the tool has none pending. */
  private async flight(
    call: ToolCall,
    key: string,
    tool: ToolSpec,
    kind: Flight['kind'],
    verdict?: PolicyVerdict,
    outside?: readonly OutsideValue[],
  ): Promise<Step> {
    const pending = kind === 'consent' ? this.consentCards.get(tool.name) : undefined;
    let card = pending;
    if (!card) {
      const made = await this.makeCard(call, tool, kind, verdict, outside);
      if (typeof made !== 'string') return { kind: 'result', result: made };
      card = made;
      if (kind === 'consent') this.consentCards.set(tool.name, card);
    }
    const flight: Flight = { card, kind, tool, call, key };
    if (key) this.flights.set(key, flight);
    return { kind: 'wait', flight, fresh: !pending };
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

/** PC11: what the session's trace keeps of the operator's verdict on a call. */
function noteOf(verdict: PolicyVerdict | undefined): RunNote {
  return verdict?.policies.length ? { policy: [...verdict.policies] } : {};
}
