import { randomUUID } from 'node:crypto';
import { buildCard, describeCall } from '../approvals/card.js';
import { type AssistantReply, type ModelClient, ModelError } from '../models/types.js';
import type { Registry } from '../plugin-host/host.js';
import { callKey, decide, deriveGateState, type GateState, recordCall } from '../policy/gate.js';
import type { Menu, Shortlist } from '../prompt/menu.js';
import { countRequestTokens, encodingFor } from '../prompt/tokens.js';
import type { Store } from '../store/types.js';
import type { Mode, ToolSpec } from '../tools/types.js';
import { closestNames, executeCall } from './calls.js';
import { goalProgress, goalReminder, MAX_GOAL_REMINDERS } from './goal.js';
import { type MenuEntry, MenuSource } from './menu-cache.js';
import { interruption, toResult } from './result.js';
import type { ApprovalItem, CallRecord, EndReason, LoopEvent, PendingResult, RequestTrace, RunResult, RunState } from './types.js';

export interface Limits {
  /** R20 step cap: model calls per run. */
  maxSteps: number;
  /** R20: consecutive failed calls before the run halts. */
  maxConsecutiveFailures: number;
  /** R20 wall-clock limit for one leg of a run (start or resume), in ms. */
  timeoutMs: number;
  /** A4: how long an approval stays answerable. */
  approvalTtlMs: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxSteps: 20,
  maxConsecutiveFailures: 4,
  timeoutMs: 10 * 60_000,
  approvalTtlMs: 60 * 60_000,
};

export interface EngineDeps {
  registry: Registry;
  model: ModelClient;
  /** null: a run with nowhere to pause (A5): ask_user and approvals are refused. */
  store: Store | null;
  limits?: Partial<Limits>;
  shortlist?: Shortlist;
  /** Count each request's system prompt and declarations into the trace (ai-tokenizer). */
  countTokens?: boolean;
  /** A delegate's instructions, placed first in its system prompt (C8). */
  instructions?: string;
  /** The session's mode now (C5); defaults to the run's own. Delegates read their parent's. */
  sessionMode?: () => Mode;
  /** Told when a run's mode or contract changes (an approved submit_plan / submit_goal). */
  onModeChange?: (run: RunState) => void | Promise<void>;
  now?: () => Date;
}

/** One leg of a run: from its start or a resume to its next end or pause. The only loop body (R14). */
export class RunLeg {
  readonly state: RunState;
  private readonly deps: EngineDeps;
  private readonly limits: Limits;
  private gate!: GateState;
  private readonly admitted = new Set<string>();
  private readonly called = new Set<string>();
  private readonly menus: MenuSource;
  private saved: { messages: number; steps: number; requests: number };
  private readonly started = Date.now();
  private readonly abort = new AbortController();
  private stopped: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private timedOut = false;

  constructor(deps: EngineDeps, state: RunState, fresh: boolean) {
    this.deps = deps;
    this.state = state;
    this.limits = { ...DEFAULT_LIMITS, ...deps.limits };
    this.menus = new MenuSource(deps.registry, deps.shortlist, deps.instructions);
    this.saved = fresh
      ? { messages: 0, steps: 0, requests: 0 }
      : { messages: state.messages.length, steps: state.steps.length, requests: state.requests.length };
    this.refreshGate();
  }

  /** Rebuilds the gate state and the transcript's called names from the records (after a resume). */
  refreshGate(): void {
    this.gate = deriveGateState(this.state.steps, this.deps.store !== null);
    for (const m of this.state.messages) if (m.role === 'assistant') for (const c of m.tool_calls) this.called.add(c.name);
  }

  private now(): string {
    return (this.deps.now?.() ?? new Date()).toISOString();
  }

  async save(fresh = false): Promise<void> {
    const s = this.state;
    s.updated_at = this.now();
    if (!this.deps.store) return;
    if (fresh) {
      await this.deps.store.createRun(s);
    } else {
      await this.deps.store.saveRun(s, {
        messages: s.messages.slice(this.saved.messages),
        steps: s.steps.slice(this.saved.steps),
        requests: s.requests.slice(this.saved.requests),
      });
    }
    this.saved = { messages: s.messages.length, steps: s.steps.length, requests: s.requests.length };
  }

  /** The menu for the next request (see MenuSource: kept while valid, shared across runs). */
  private menu(): MenuEntry {
    return this.menus.get(this.state, this.called, this.admitted);
  }

  /** Ends the run at its next step boundary (a delegate's task_stop); the model call in flight is aborted. */
  stop(why: string): void {
    this.stopped = why;
    this.abort.abort(new Error(why));
  }

  /** Drives the run until it ends or pauses, yielding every event on the way. */
  async *drive(): AsyncGenerator<LoopEvent, RunResult> {
    const s = this.state;
    // R20: the time limit also cuts a model call or a tool that is still running.
    this.timer ??= setTimeout(
      () => {
        this.timedOut = true;
        this.abort.abort(new Error('the run took too long'));
      },
      Math.max(0, this.limits.timeoutMs - (Date.now() - this.started)),
    );
    this.timer.unref?.();
    while (true) {
      if (this.stopped) return yield* this.end('failed', 'halted', this.stopped);
      if (s.model_calls >= this.limits.maxSteps) return yield* this.end('failed', 'max_steps');
      if (this.timedOut || Date.now() - this.started > this.limits.timeoutMs) return yield* this.end('failed', 'timeout');
      const entry = this.menu();
      const { menu, system } = entry;
      const step = s.model_calls + 1;
      const trace: RequestTrace = { step, system, tools: menu.declared, dropped: menu.dropped };
      // Counted while the model works: the first count loads an encoding (~1 s), never on the model's path.
      const tokens = this.deps.countTokens
        ? (entry.tokens.count ??= countRequestTokens(system, menu.declared, encodingFor(this.deps.model.spec)).catch(() => -1))
        : undefined;
      const counted = async () => {
        const n = await tokens;
        if (n !== undefined && n >= 0) trace.input_tokens = n;
      };
      s.requests.push(trace);
      yield { type: 'model_request', step, system, tools: menu.declared };
      let reply: AssistantReply | undefined;
      try {
        for await (const ev of this.deps.model.stream({
          system,
          messages: s.messages,
          tools: menu.declared,
          seq: s.seq_base + s.model_calls,
          signal: this.abort.signal,
        })) {
          if (ev.type === 'text_delta') yield { type: 'text_delta', text: ev.text };
          else if (ev.type === 'done') reply = ev.reply;
        }
        if (!reply) throw new ModelError('the model stream ended without a reply');
      } catch (err) {
        await counted();
        s.model_calls++;
        if (this.stopped) return yield* this.end('failed', 'halted', this.stopped);
        if (this.timedOut) return yield* this.end('failed', 'timeout');
        const msg = err instanceof Error ? err.message : String(err);
        s.notes.push(`model error: ${msg}`);
        return yield* this.end('failed', 'model_error', msg);
      }
      await counted();
      s.model_calls++;
      if (reply.usage) trace.usage = reply.usage;
      s.messages.push({ role: 'assistant', content: reply.text, tool_calls: reply.tool_calls });
      for (const c of reply.tool_calls) this.called.add(c.name);
      yield { type: 'assistant', step, text: reply.text, tool_calls: reply.tool_calls };
      if (reply.tool_calls.length === 0) {
        if (!reply.text.trim()) return yield* this.end('failed', 'model_error', 'the model returned an empty reply');
        // C1: a goal runs until every criterion is reported verified (or a boundary stops it).
        const goal = goalProgress(s);
        if (goal?.missing.length) {
          const reminders = s.notes.filter((n) => n.startsWith('goal reminder')).length;
          if (reminders >= MAX_GOAL_REMINDERS) {
            return yield* this.end('failed', 'halted', `the goal's criteria ${goal.missing.join(', ')} were never reported verified`);
          }
          s.notes.push(`goal reminder: criteria ${goal.missing.join(', ')} not yet verified`);
          s.messages.push({ role: 'user', content: goalReminder(goal.missing) });
          await this.save();
          continue;
        }
        return yield* this.end('done', 'final_answer', undefined, reply.text);
      }
      const outcome = yield* this.runCalls(step, reply, menu);
      if (outcome) return outcome;
    }
  }

  /** Gates and runs one reply's calls in order (R22); returns a result when the run stops here. */
  private async *runCalls(step: number, reply: AssistantReply, menu: Menu): AsyncGenerator<LoopEvent, RunResult | undefined> {
    const s = this.state;
    const pool = this.deps.registry.byName;
    const records: CallRecord[] = [];
    const results: PendingResult[] = [];
    const approvals: ApprovalItem[] = [];
    let question: { call_id: string; question: string } | undefined;
    let endOn: { reason: EndReason; answer: string } | undefined;
    const priorToolCalls = s.steps.some((r) => r.tool !== 'ask_user');

    for (const call of reply.tool_calls) {
      const tool = pool.get(call.name);
      const args = call.args ?? {};
      const argsProblem =
        call.args === undefined
          ? `the arguments are not valid JSON (${truncate(call.raw_args ?? '', 120)})`
          : call.args === null || typeof call.args !== 'object' || Array.isArray(call.args)
            ? 'the arguments must be a JSON object'
            : tool?.checkArgs(call.args);
      const decision = decide({
        name: call.name,
        tool,
        admissible: menu.admissible(call.name),
        argsProblem,
        key: callKey(call.name, args),
        mode: s.mode,
        state: this.gate,
      });
      const rec = (outcome: CallRecord['outcome'], result: string, is_error: boolean, by_core: boolean): CallRecord => ({
        step,
        call_id: call.id,
        tool: call.name,
        args: call.args ?? null,
        outcome,
        result,
        is_error,
        effect: tool?.declaration.effect,
        by_core,
      });
      let record: CallRecord;
      let pending = false;
      switch (decision.kind) {
        case 'unknown_tool': {
          const names = [...pool.keys()].filter((n) => menu.admissible(n));
          record = rec(
            'unknown_tool',
            `Unknown tool '${call.name}': no such tool is available. Closest: ${closestNames(call.name, names).join(', ')}.`,
            true,
            true,
          );
          break;
        }
        case 'deny':
          record = rec('denied_by_mode', decision.reason, true, true);
          break;
        case 'invalid_arguments':
          record = rec(
            'invalid_arguments',
            `Invalid arguments for ${call.name}: ${decision.problem}. Fix them and call it again.`,
            true,
            true,
          );
          break;
        case 'ask_user': {
          const q = String(args.question ?? '');
          if (!this.deps.store) {
            record = rec('error', 'Cannot ask the user here: this run has no store to pause in. Answer with what you have.', true, true);
          } else if (question || approvals.length) {
            record = rec(
              'error',
              'Another question or approval is already pending in this reply: ask one thing at a time, after it is answered.',
              true,
              true,
            );
          } else {
            question = { call_id: call.id, question: q };
            record = rec('ran', '', false, false);
            pending = true;
          }
          break;
        }
        case 'repeat': {
          const e = decision.earlier;
          record = rec(
            'repeat',
            `${e.content}\n\n[Repeat: ${call.name} was already called with these arguments (call ${e.call_id}); this is that result. Do not call it again; use it.]`,
            e.is_error,
            true,
          );
          const usable = !e.is_error && e.content.trim() !== '';
          if (tool?.declaration.answers_directly && usable) endOn ??= { reason: 'answered_by_tool', answer: e.content };
          else if (decision.nth >= 2) endOn ??= { reason: 'stalled', answer: this.lastUsable(records) ?? '' };
          break;
        }
        case 'hold_for_confirmation':
          record = rec(
            'held_for_confirmation',
            `Not run: the user has not confirmed ${call.name} yet. Ask once with ask_user, listing every item you intend to create or change, then call ${call.name} once per item.`,
            true,
            true,
          );
          break;
        case 'refuse_approval':
          record = rec('error', `${call.name} not run: it needs the owner's approval, which cannot be taken here.`, true, true);
          break;
        case 'needs_approval': {
          const problem = question
            ? 'a question to the user is pending in this reply; call it again after the answer'
            : await safeValidate(tool!, args);
          if (problem) {
            record = rec('invalid_arguments', `${call.name} not run: ${problem}`, true, true);
          } else {
            approvals.push({ call_id: call.id, tool: call.name, args, card: describeCall(tool!, args) });
            record = rec('awaiting_approval', '', false, true);
            pending = true;
          }
          break;
        }
        case 'run': {
          const ex = yield* this.execute(tool!, call.id, args);
          record = rec(ex.by_core ? 'error' : 'ran', ex.content, ex.is_error, ex.by_core);
          break;
        }
      }
      records.push(record);
      results.push({ call_id: call.id, name: call.name, content: pending ? undefined : record.result, is_error: record.is_error });
      if (!pending) {
        recordCall(this.gate, record);
        yield { type: 'tool_result', step, record };
      }
    }

    if (question || approvals.length) {
      s.pause_seq++;
      if (approvals.length) {
        const id = `apr_${randomUUID().slice(0, 8)}`;
        const card = buildCard(approvals, this.deps.registry.byName, s.request);
        const now = this.deps.now?.() ?? new Date();
        await this.deps.store!.createApproval({
          id,
          run_id: s.id,
          pause_seq: s.pause_seq,
          items: approvals,
          card,
          status: 'pending',
          requested_at: now.toISOString(),
          expires_at: new Date(now.getTime() + this.limits.approvalTtlMs).toISOString(),
          answered_at: null,
          answered_by: null,
          reason: null,
        });
        s.pause = { kind: 'approval', seq: s.pause_seq, approval_id: id, card, step, items: approvals, results, calls: records };
        return yield* this.end('paused', 'awaiting_approval');
      }
      s.pause = {
        kind: 'ask_user',
        seq: s.pause_seq,
        call_id: question!.call_id,
        question: question!.question,
        step,
        results,
        calls: records,
      };
      return yield* this.end('paused', 'awaiting_user_input');
    }
    return yield* this.finishStep(records, results, endOn, priorToolCalls);
  }

  /** Appends a completed step's results (call order, R22) and applies the evaluator and R12. */
  async *finishStep(
    records: CallRecord[],
    results: PendingResult[],
    endOn: { reason: EndReason; answer: string } | undefined,
    priorToolCalls: boolean,
  ): AsyncGenerator<LoopEvent, RunResult | undefined> {
    const s = this.state;
    for (const r of results) {
      s.messages.push({ role: 'tool', call_id: r.call_id, name: r.name, content: r.content ?? '', is_error: r.is_error });
    }
    s.steps.push(...records);
    for (const r of records) {
      if (r.outcome === 'ran' && (r.tool === 'submit_plan' || r.tool === 'submit_goal')) await this.adoptContract(r);
    }
    const goal = goalProgress(s);
    if (goal?.boundary && records.some((r) => r.tool === 'report_goal' && r.outcome === 'ran')) {
      return yield* this.end('failed', 'halted', `a boundary stops the goal: ${goal.boundary}`);
    }
    // R20: the evaluator has its say first.
    const failures = countTrailingFailures(s.steps);
    if (failures >= this.limits.maxConsecutiveFailures)
      return yield* this.end('failed', 'halted', `${failures} tool calls failed in a row`);
    if (Date.now() - this.started > this.limits.timeoutMs) return yield* this.end('failed', 'timeout');
    if (endOn) {
      if (endOn.reason === 'answered_by_tool') return yield* this.end('done', 'answered_by_tool', undefined, endOn.answer);
      if (endOn.answer) return yield* this.end('done', 'stalled', undefined, endOn.answer);
      return yield* this.end('failed', 'stalled', 'the model repeated the same call with nothing usable to show');
    }
    // R12: an answers_directly tool that is the run's first tool ends the run on its output.
    const tools = records.filter((r) => r.tool !== 'ask_user');
    if (!priorToolCalls && tools.length === 1) {
      const only = tools[0];
      const spec = this.deps.registry.byName.get(only.tool);
      if (spec?.declaration.answers_directly && only.outcome === 'ran' && !only.is_error && only.result.trim() !== '') {
        return yield* this.end('done', 'answered_by_tool', undefined, only.result);
      }
    }
    await this.save();
    return undefined;
  }

  /** C1: an approved proposal switches the session to Agent mode; the work goes on under it. */
  private async adoptContract(r: CallRecord): Promise<void> {
    const s = this.state;
    const a = r.args ?? {};
    const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
    s.contract =
      r.tool === 'submit_plan'
        ? { kind: 'plan', summary: typeof a.summary === 'string' ? a.summary : undefined, steps: list(a.steps) }
        : { kind: 'goal', outcome: String(a.outcome ?? ''), criteria: list(a.criteria), boundaries: list(a.boundaries) };
    s.notes.push(`${s.contract.kind} approved: ${s.mode} mode → agent mode`);
    s.mode = 'agent';
    await this.deps.onModeChange?.(s);
  }

  private lastUsable(current: CallRecord[]): string | undefined {
    const all = [...this.state.steps, ...current];
    for (let i = all.length - 1; i >= 0; i--) {
      const r = all[i];
      if (r.outcome === 'ran' && !r.is_error && r.tool !== 'ask_user' && r.result.trim()) return r.result;
    }
    return undefined;
  }

  /** Runs an allowed call; R29: a non-read effect is stored before the handler starts. */
  async *execute(
    tool: ToolSpec,
    callId: string,
    args: Record<string, unknown>,
  ): AsyncGenerator<LoopEvent, ReturnType<typeof executeCall> extends Promise<infer T> ? T : never> {
    const s = this.state;
    if (tool.declaration.effect !== 'read') {
      s.effects.push({ call_id: callId, tool: tool.name, effect: tool.declaration.effect, args });
      await this.save();
    }
    this.admitted.add(tool.name);
    return executeCall({
      tool,
      args,
      runId: s.id,
      callId,
      request: s.request,
      currentMode: this.deps.sessionMode ?? (() => this.state.mode),
      registry: this.deps.registry,
      signal: this.abort.signal,
    });
  }

  async *end(status: RunState['status'], reason: EndReason, why?: string, answer?: string): AsyncGenerator<LoopEvent, RunResult> {
    const s = this.state;
    clearTimeout(this.timer);
    s.status = status;
    s.reason = reason;
    if (status === 'paused') {
      s.answer = null;
      await this.save();
      yield { type: 'paused', pause: s.pause! };
    } else {
      s.pause = null;
      s.answer = answer ?? interruption(s, reason, why, this.limits);
      await this.save();
    }
    const result = toResult(s);
    yield { type: 'run_finished', result };
    return result;
  }
}

async function safeValidate(tool: ToolSpec, args: Record<string, unknown>): Promise<string | undefined> {
  if (!tool.validate) return undefined;
  try {
    const p = await tool.validate(args);
    return typeof p === 'string' && p.trim() ? p : undefined;
  } catch (err) {
    return `its arguments could not be checked (${(err as Error).message})`;
  }
}

function countTrailingFailures(steps: readonly CallRecord[]): number {
  let n = 0;
  for (let i = steps.length - 1; i >= 0; i--) {
    const r = steps[i];
    const failed =
      r.outcome === 'error' || r.outcome === 'invalid_arguments' || r.outcome === 'unknown_tool' || (r.outcome === 'ran' && r.is_error);
    if (!failed) break;
    n++;
  }
  return n;
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
