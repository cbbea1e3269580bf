/**
 * An MCP session's cards and questions: a confirm-once tool asked about by elicitation (U3, U5);
 * a card made for a call that needs one (A1: the exact call, or a confirm-once tool's consent card
 * for a client that cannot be asked), shown by elicitation where the client may answer it (A9),
 * waited on within `--wait` with progress (or however long, for a task), and carried out once when
 * answered — the approved call through the ledger, or why it was not granted. Never runs a card's
 * call twice (every waiting call shares one outcome) and never runs one that was not approved.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { buildCard, describeCall, renderCardText, sourcesLine, undoSentence } from '../../approvals/card.js';
import { recordApprovalAnswer } from '../../approvals/respond.js';
import { mayAnswer } from '../../approvals/who.js';
import { isMcpSession } from '../../keel/keel.js';
import { prepareApproval } from '../../loop/pipeline.js';
import { SAY } from '../../loop/sentences.js';
import type { PolicyVerdict } from '../../policy/gate.js';
import type { ApprovalCard, ApprovalRecord, LoopEvent, OutsideValue, ToolCall, ToolSpec } from '../../types/index.js';
import { callKey, canonicalJson } from '../../util/json.js';
import { SessionCalls } from './calls.js';
import { answererOf, approvalTtlMs, text } from './options.js';
import { TASK_POLL_MS, type TaskWatch } from './tasks.js';

/** How often a plain call waiting on a card tells its client so (notifications/progress), by default. */
const PROGRESS_MS = 5_000;

/** A call that needed a card: identical calls of the session share it, its card and its one execution. */
export interface Flight {
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

/** Sends a waiting call's client a progress notification (nothing, when it gave no progress token). */
export type Progress = (progress: number, total: number, message: string) => Promise<void>;

/** A session's cards, made, shown, waited on and carried out: session.ts decides which card a call waits on. */
export abstract class SessionCards extends SessionCalls {
  /** Calls that waited on a card, by session-local call key (tool + canonical arguments). */
  protected readonly flights = new Map<string, Flight>();
  /** Confirm-once without elicitation: the one consent card of each tool, while it is pending. */
  protected readonly consentCards = new Map<string, string>();
  /** Confirm-once by elicitation: the question being asked, per tool (concurrent calls share it). */
  protected readonly asking = new Map<string, Promise<boolean>>();

  /**
   * --keep-cards: the card an earlier MCP session (a client gone, or another connection) left for
   * the same call — pending, or approved (then carried out here through the ledger: once, or its
   * recorded outcome). A client that connects for each call (the Inspector's CLI) gets the outcome.
   * A tool's consent card counts for the call it was made for (issue 40).
   */
  protected async keptCard(key: string): Promise<string | undefined> {
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
  protected async consentFromCard(name: string): Promise<void> {
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

  /** Confirm-once by elicitation: asked once per session and tool, however many calls come at once. */
  protected askOnce(tool: ToolSpec, call: ToolCall): Promise<boolean> {
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

  /**
   * A1: the card for a call — the exact call (approval), or the tool for the rest of the session
   * (consent) — stored with the manifest's undo and KEEL_APPROVAL_TTL_MINUTES' expiry; an
   * open-world call's card marks the values the gate found outside the user's words (O2). An
   * invalid call gets its result instead.
   */
  protected async makeCard(
    call: ToolCall,
    tool: ToolSpec,
    kind: Flight['kind'],
    verdict?: PolicyVerdict,
    outside?: readonly OutsideValue[],
  ): Promise<string | CallToolResult> {
    const ready = await prepareApproval(call.id, tool, call.args ?? {}, verdict, outside);
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
  protected async elicitCard(id: string, card: ApprovalCard): Promise<void> {
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
  protected async await(
    flight: Flight,
    fresh: boolean,
    signal: AbortSignal,
    progress: Progress,
    watch?: TaskWatch,
  ): Promise<CallToolResult> {
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
        return text(SAY.waitingForApproval(a.id, a.card.title, flight.call.name, asks(), this.o), true);
      }
      if (watch) {
        if (!told) await watch.waiting(a.id, SAY.waitingForApproval(a.id, a.card.title, flight.call.name, asks(), this.o));
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
  protected settle(flight: Flight, a: ApprovalRecord | undefined): Promise<CallToolResult> {
    flight.work ??= this.carryOut(flight, a);
    return flight.work;
  }

  protected async carryOut(flight: Flight, a: ApprovalRecord | undefined): Promise<CallToolResult> {
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
