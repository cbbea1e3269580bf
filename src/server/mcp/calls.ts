/**
 * One MCP session's state and one call through the gate: the session's run, gate state and mode;
 * a call prepared by the one pipeline (the mode, the operator's policy — PC8 — with the token's
 * principal), executed, and recorded in the session's trace as its MCP result. Never makes, waits
 * on or answers a card (cards.ts) and never decides which card a call shares (session.ts).
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { type CallPolicy, type ExecuteContext, executeCall, type Prepared, prepareCall, whenAborted } from '../../loop/pipeline.js';
import type { RunWriter } from '../../loop/run.js';
import type { Registry } from '../../plugin-host/host.js';
import { deriveGateState, type GateState, noteUntrusted, type PolicyEvaluator, readView } from '../../policy/gate.js';
import { type OwnWords, ownWordsOf } from '../../policy/own-words.js';
import type { CallRecord, Mode, Store, ToolCall, ToolSpec } from '../../types/index.js';
import { type McpIdentity, type McpServeOptions, text } from './options.js';
import { listed, type PoolWatch, toMcpTool } from './pool.js';

/**
 * O2: the words an MCP session holds of its user's: none. The client's model makes every call and
 * the session never sees what its user typed, so after the session read untrusted content every
 * string and number of an open-world call counts as outside, and the call waits on a card.
 */
const NO_USER_WORDS: OwnWords = ownWordsOf([]);

/** What the gate said of a call it let run, for the session's trace (PC11, U4/O4). */
export interface RunNote {
  /** U4/O4: the operator rule or `@after_untrusted("allow")` permit that let it run after untrusted content. */
  allowed_after_untrusted?: string;
  /** PC11: the operator's policies that decided the call. */
  policy?: string[];
}

/** One MCP connection's Keel session, as far as a call through the gate needs it; cards.ts and session.ts build on it. */
export abstract class SessionCalls {
  protected readonly gate: GateState;
  protected seq = 0;
  protected closing = false;

  protected constructor(
    protected readonly o: McpServeOptions,
    protected readonly store: Store,
    protected readonly pool: PoolWatch,
    protected readonly run: RunWriter,
    protected readonly server: Server,
    protected readonly who: McpIdentity,
    /** PC8: the operator's Cedar policy, when one is configured. */
    protected readonly cedar: { current(): PolicyEvaluator } | undefined,
  ) {
    this.gate = deriveGateState([], true, [], () => NO_USER_WORDS);
  }

  protected get registry(): Registry {
    return this.pool.registry;
  }

  tools(): Tool[] {
    return listed(this.registry).map(toMcpTool);
  }

  /** The session's mode now: its record in the store (the console may switch it), else the one it started in. */
  protected async mode(): Promise<Mode> {
    return (await this.store.getSession(this.run.state.session_id))?.mode ?? this.o.mode;
  }

  protected canElicit(): boolean {
    return Boolean(this.server.getClientCapabilities()?.elicitation);
  }

  protected prepare(call: ToolCall, mode: Mode): Prepared {
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
  protected policy(cedar: PolicyEvaluator, mode: Mode): CallPolicy {
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

  protected async execute(
    call: ToolCall,
    tool: ToolSpec,
    args: Record<string, unknown>,
    mode: Mode,
    signal: AbortSignal,
    approval?: string,
    note?: RunNote,
  ) {
    const ex = await executeCall(this.context(signal, mode, approval), tool, call.id, args);
    return this.finish({ ...call, args }, tool, ex.outcome, ex.content, ex.is_error, ex.outcome !== 'ran', ex.untrusted, note);
  }

  protected context(signal: AbortSignal, mode: Mode, approval_id?: string): ExecuteContext {
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

  /** The call joins the session's trace (a step, its journal event) and becomes the MCP result. */
  protected async finish(
    call: ToolCall,
    tool: ToolSpec | undefined,
    outcome: CallRecord['outcome'],
    result: string,
    isError: boolean,
    byCore: boolean,
    untrusted?: string,
    note?: RunNote,
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
      // PC11: the policies that decided the call; U4/O4: the exception that let it run after untrusted content.
      ...(note?.policy?.length ? { policy: [...note.policy] } : {}),
      ...(note?.allowed_after_untrusted ? { allowed_after_untrusted: note.allowed_after_untrusted } : {}),
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

  protected async audit(action: string, subject: string): Promise<void> {
    await this.store.audit({
      at: new Date().toISOString(),
      actor: this.who.actor,
      action,
      subject,
      detail: JSON.stringify({ run_id: this.run.state.id, client: this.who.client }),
    });
  }
}
