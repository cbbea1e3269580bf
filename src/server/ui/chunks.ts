/**
 * Issue 41: a run's journal as the AI SDK's UI message stream (protocol v1: server-sent events, each
 * a JSON chunk). Written here, without the `ai` package: Keel does not depend on it at run time.
 * The journal is the source: a live stream and a replay (a reload, a reconnect) are the same
 * mapping of the same rows, so a page that comes back sees what happened, in Keel's words.
 */
import { sourcesLine } from '../../approvals/card.js';
import { hostsNamed, outsideHosts } from '../../policy/answer-hosts.js';
import type { OwnWords } from '../../policy/own-words.js';
import type { ApprovalCard, CallRecord, Confirmation, OutsideValue, RunEvent, StoredEvent } from '../../types/index.js';

/** The chunks Keel sends (a subset of the AI SDK's UIMessageChunk). */
export type Chunk =
  | { type: 'start'; messageId?: string }
  | { type: 'finish'; finishReason?: 'stop' | 'tool-calls' | 'error' | 'other' }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: unknown; title?: string }
  | { type: 'tool-approval-request'; approvalId: string; toolCallId: string; approvalDescriptor: ApprovalDescriptor }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown; toolMetadata?: Record<string, string> }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string; toolMetadata?: Record<string, string> }
  | { type: 'tool-output-denied'; toolCallId: string }
  | { type: `data-keel-${string}`; id?: string; data: Record<string, unknown> };

/**
 * What an approval part carries besides its id (the part's `approval.descriptor`): the card's own
 * words — its title, this call's title, lines and undo, the exact call — so a page shows what
 * Keel's console and CLI show. A confirmation of held writes carries the held call's words.
 */
export interface ApprovalDescriptor {
  kind: 'card' | 'confirmation';
  run_id: string;
  title: string;
  /** `outside` (O2): the call's values that did not come from the user, for the page to mark as the console does. */
  item: { tool: string; title: string; lines: string[]; undo?: string; call?: string; outside?: OutsideValue[] };
  /** What the run read from outside the user, as one line (others' words: a page escapes it). */
  read?: string;
  /** The question a confirmation asks. */
  question?: string;
}

/** The approval id a confirmation of held writes gets in the chat: its run and its pause. */
export function confirmationId(runId: string, seq: number): string {
  return `confirm:${runId}:${seq}`;
}

export function parseConfirmationId(id: string): { runId: string; seq: number } | undefined {
  const m = /^confirm:(run_[A-Za-z0-9_-]+):(\d{1,9})$/.exec(id);
  return m ? { runId: m[1], seq: Number(m[2]) } : undefined;
}

/** The ids a page sees for a run's messages (GET …/messages and the streams agree on them). */
export const userMessageId = (runId: string, seq?: number) => (seq === undefined ? `${runId}-u` : `${runId}-q${seq}`);
export const assistantMessageId = (runId: string, seq?: number) => (seq === undefined ? `${runId}-a` : `${runId}-a${seq}`);

/** ask_user is the chat itself: its question is the assistant's text, its answer the user's next message. */
const ASK = 'ask_user';

function cardDescriptor(runId: string, card: ApprovalCard, n: number): ApprovalDescriptor {
  const i = card.items[n];
  const read = sourcesLine(card.untrusted ?? []);
  return {
    kind: 'card',
    run_id: runId,
    title: card.title,
    item: {
      tool: i.tool,
      title: i.title,
      lines: i.lines,
      undo: i.undo,
      call: i.call,
      ...(i.outside?.length ? { outside: i.outside.map((o) => ({ ...o })) } : {}),
    },
    ...(read ? { read } : {}),
  };
}

function confirmDescriptor(runId: string, question: string, confirm: Confirmation, n: number): ApprovalDescriptor {
  const i = confirm.items[n];
  const read = sourcesLine(confirm.untrusted ?? []);
  return {
    kind: 'confirmation',
    run_id: runId,
    title: `Confirm ${confirm.tools.join(', ')}`,
    item: { tool: i.tool, title: i.title ?? i.tool, lines: i.lines ?? [], call: `${i.tool}(${JSON.stringify(i.args ?? {})})` },
    question,
    ...(read ? { read } : {}),
  };
}

/**
 * O5: what the run's own record says about the addresses its text names — whether it has read words
 * from outside the user (its own reads and what it inherited), and the user's own words — looked up
 * by the stream (chat.ts) before a row whose text names an address is mapped.
 */
export interface AnswerProvenance {
  readOutside: boolean;
  own: OwnWords;
}

/** The text a row completes in the chat: a reply's, a question's, or the run's answer. */
function rowText(e: RunEvent): string {
  if (e.type === 'assistant') return e.text;
  if (e.type === 'paused' && e.pause.kind === 'ask_user') return e.pause.question;
  if (e.type === 'run_finished') return e.result.answer ?? '';
  return '';
}

/** How much of a run's text the mapper keeps to name its outside hosts from. */
const SAID_MAX = 200_000;

/**
 * Maps one run's journal rows (and live text deltas) to chunks for one assistant message. `known`
 * are the tool calls the page's message already has: an outcome for a call the message does not
 * have is sent after the call's input, so the page's state never meets an unknown call.
 */
export class ChunkMapper {
  private readonly known: Set<string>;
  private text: { id: string; sent: string } | undefined;
  private texts = 0;
  private lastText = '';
  /** The calls a pause holds, by approval id (an expired card denies them). */
  private readonly pending = new Map<string, string[]>();
  /** Held writes awaiting a confirmation: call id → the run's question's seq. */
  private readonly held = new Map<string, CallRecord>();
  private heldAsked: string[] = [];
  /** O5: the run's text so far (what its outside hosts are named from), and whether this message's text names an address. */
  private said = '';
  private namesAddress = false;
  /** O5: the outside hosts last sent in this message (a data part with the same id replaces it). */
  private hostsSent = '';
  /** O5: set by the stream before a row whose text names an address (see needsProvenance). */
  provenance: AnswerProvenance | undefined;

  constructor(
    readonly runId: string,
    known: Iterable<string> = [],
  ) {
    this.known = new Set(known);
  }

  /** The page's message has exactly these calls (a new message has none of the run's earlier ones). */
  knowOnly(ids: Iterable<string>): void {
    this.known.clear();
    for (const id of ids) this.known.add(id);
    this.namesAddress = false;
    this.hostsSent = '';
  }

  /** O5: the row's text names an address: the stream looks up the run's provenance first. */
  needsProvenance(row: StoredEvent | { event: RunEvent }): boolean {
    const text = rowText(row.event);
    return text !== '' && hostsNamed(text).length > 0;
  }

  /**
   * O5: a text of the run is complete. Once the run has read words from outside the user and this
   * message's text names an address, the message gets a `data-keel-outside-hosts` part: the hosts
   * the run's text names that the user never wrote — what a page keeps inert (no image fetched, no
   * link followed by itself). Sent again, replacing it, when the list grows.
   */
  private completed(out: Chunk[], text: string): void {
    if (!text) return;
    if (this.said.length < SAID_MAX) this.said += `${text.slice(0, SAID_MAX - this.said.length)}\n`;
    if (!this.namesAddress) this.namesAddress = hostsNamed(text).length > 0;
    const p = this.provenance;
    if (!this.namesAddress || !p?.readOutside) return;
    const hosts = outsideHosts(this.said, p.own);
    const key = hosts.join(' ');
    if (!hosts.length || key === this.hostsSent) return;
    this.hostsSent = key;
    out.push({ type: 'data-keel-outside-hosts', id: `${this.runId}-hosts`, data: { run_id: this.runId, hosts } });
  }

  private openText(out: Chunk[]): { id: string; sent: string } {
    if (!this.text) {
      this.text = { id: `${this.runId}-t${++this.texts}`, sent: '' };
      out.push({ type: 'text-start', id: this.text.id });
    }
    return this.text;
  }

  private closeText(out: Chunk[]): void {
    if (this.text) out.push({ type: 'text-end', id: this.text.id });
    this.text = undefined;
  }

  private say(out: Chunk[], text: string): void {
    if (!text) return;
    this.closeText(out);
    const t = this.openText(out);
    out.push({ type: 'text-delta', id: t.id, delta: text });
    this.closeText(out);
    this.lastText = text;
    this.completed(out, text);
  }

  private introduce(out: Chunk[], call: { id: string; name: string; args?: unknown }): void {
    if (this.known.has(call.id)) return;
    this.known.add(call.id);
    out.push({ type: 'tool-input-available', toolCallId: call.id, toolName: call.name, input: call.args ?? {} });
  }

  /** A text delta of the reply being streamed (live only: the journal keeps the whole reply). */
  delta(text: string): Chunk[] {
    const out: Chunk[] = [];
    const t = this.openText(out);
    t.sent += text;
    out.push({ type: 'text-delta', id: t.id, delta: text });
    return out;
  }

  map(row: StoredEvent | { event: RunEvent }): Chunk[] {
    const e = row.event;
    const out: Chunk[] = [];
    switch (e.type) {
      case 'model_request':
        // No step parts: a page's "every call of the last step answered" check (sendAutomaticallyWhen)
        // must see a card's calls and a confirmation's held calls as one step, though Keel asks about
        // held calls from a later reply (the confirmation).
        this.closeText(out);
        break;
      case 'assistant': {
        // The reply's text, completing what its deltas sent (or all of it, on a replay).
        if (this.text && e.text.startsWith(this.text.sent)) {
          const rest = e.text.slice(this.text.sent.length);
          if (rest) out.push({ type: 'text-delta', id: this.text.id, delta: rest });
          this.closeText(out);
          this.lastText = e.text;
          this.completed(out, e.text);
        } else {
          this.closeText(out);
          this.say(out, e.text);
        }
        for (const c of e.tool_calls) if (c.name !== ASK) this.introduce(out, { id: c.id, name: c.name, args: c.args ?? c.raw_args });
        break;
      }
      case 'tool_result': {
        const r = e.record;
        if (r.tool === ASK) {
          // A confirmation answered: the held calls it covered are settled (the model makes them again, now consented).
          if (r.decision) {
            for (const id of this.heldAsked) {
              if (!this.known.has(id)) continue;
              out.push(
                r.decision === 'yes'
                  ? { type: 'tool-output-available', toolCallId: id, output: 'confirmed', toolMetadata: { keel_outcome: 'confirmed' } }
                  : { type: 'tool-output-denied', toolCallId: id },
              );
            }
            this.heldAsked = [];
          }
          break;
        }
        this.introduce(out, { id: r.call_id, name: r.tool, args: r.args ?? {} });
        const meta = { keel_outcome: r.outcome };
        if (r.outcome === 'held_for_confirmation') {
          // Not settled: the confirmation that follows asks about it (an approval part), or the run ends without asking.
          this.held.set(r.call_id, r);
        } else if (r.outcome === 'rejected') out.push({ type: 'tool-output-denied', toolCallId: r.call_id });
        else if (r.is_error) out.push({ type: 'tool-output-error', toolCallId: r.call_id, errorText: r.result, toolMetadata: meta });
        else out.push({ type: 'tool-output-available', toolCallId: r.call_id, output: r.result, toolMetadata: meta });
        break;
      }
      case 'paused': {
        this.closeText(out);
        const p = e.pause;
        if (p.kind === 'approval') {
          this.pending.set(
            p.approval_id,
            p.items.map((i) => i.call_id),
          );
          p.items.forEach((i, n) => {
            this.introduce(out, { id: i.call_id, name: i.tool, args: i.args });
            out.push({
              type: 'tool-approval-request',
              approvalId: p.approval_id,
              toolCallId: i.call_id,
              approvalDescriptor: cardDescriptor(this.runId, p.card, n),
            });
          });
        } else if (p.kind === 'ask_user') {
          this.say(out, p.question);
          if (p.confirm) {
            const id = confirmationId(this.runId, p.seq);
            this.heldAsked = [];
            p.confirm.items.forEach((i, n) => {
              this.introduce(out, { id: i.call_id, name: i.tool, args: i.args ?? {} });
              this.heldAsked.push(i.call_id);
              this.held.delete(i.call_id);
              out.push({
                type: 'tool-approval-request',
                approvalId: id,
                toolCallId: i.call_id,
                approvalDescriptor: confirmDescriptor(this.runId, p.question, p.confirm as Confirmation, n),
              });
            });
          }
          out.push({
            type: 'data-keel-question',
            id: `${this.runId}-q${p.seq}`,
            data: {
              run_id: this.runId,
              seq: p.seq,
              question: p.question,
              ...(p.confirm ? { confirm: { tools: p.confirm.tools, approval_id: confirmationId(this.runId, p.seq) } } : {}),
            },
          });
        }
        break;
      }
      case 'approval_answered': {
        out.push({
          type: 'data-keel-approval',
          id: e.approval_id,
          data: { approval_id: e.approval_id, status: e.status, answered_by: e.answered_by, reason: e.reason },
        });
        // An expired card: nothing of it runs.
        if (e.status === 'expired')
          for (const id of this.pending.get(e.approval_id) ?? [])
            if (this.known.has(id)) out.push({ type: 'tool-output-denied', toolCallId: id });
        break;
      }
      case 'run_finished': {
        const r = e.result;
        if (r.status === 'paused') {
          this.closeText(out);
          break;
        }
        // A held write the run ended without asking about: nothing of it ran.
        for (const [id, rec] of this.held)
          out.push({ type: 'tool-output-error', toolCallId: id, errorText: rec.result, toolMetadata: { keel_outcome: rec.outcome } });
        this.held.clear();
        if (r.answer && r.answer !== this.lastText) this.say(out, r.answer);
        this.closeText(out);
        out.push({
          type: 'data-keel-run',
          id: this.runId,
          data: { run_id: this.runId, status: r.status, reason: r.reason, ...(r.warnings.length ? { warnings: r.warnings } : {}) },
        });
        break;
      }
      default:
        break;
    }
    return out;
  }

  /** The end of this stream's part of the message. */
  end(): Chunk[] {
    const out: Chunk[] = [];
    this.closeText(out);
    return out;
  }
}

/** A UI message as a page keeps it (the AI SDK's UIMessage, the parts Keel sends). */
export interface UiMessage {
  id: string;
  role: 'user' | 'assistant';
  parts: Record<string, unknown>[];
}

/**
 * Applies chunks to an assistant message as the AI SDK's client does (for the parts Keel sends):
 * GET …/messages builds a session's messages with it from the same mapping the streams use.
 */
export function applyChunks(m: UiMessage, chunks: readonly Chunk[]): void {
  const texts = new Map<string, Record<string, unknown>>();
  const tool = (id: string) => m.parts.find((p) => p.toolCallId === id);
  for (const c of chunks) {
    switch (c.type) {
      case 'text-start': {
        const p = { type: 'text', text: '', state: 'streaming' };
        texts.set(c.id, p);
        m.parts.push(p);
        break;
      }
      case 'text-delta': {
        const p = texts.get(c.id);
        if (p) p.text = `${p.text}${c.delta}`;
        break;
      }
      case 'text-end': {
        const p = texts.get(c.id);
        if (p) p.state = 'done';
        break;
      }
      case 'tool-input-available':
        m.parts.push({ type: `tool-${c.toolName}`, toolCallId: c.toolCallId, state: 'input-available', input: c.input });
        break;
      case 'tool-approval-request': {
        const p = tool(c.toolCallId);
        if (p) Object.assign(p, { state: 'approval-requested', approval: { id: c.approvalId, descriptor: c.approvalDescriptor } });
        break;
      }
      case 'tool-output-available': {
        const p = tool(c.toolCallId);
        if (p)
          Object.assign(p, {
            state: 'output-available',
            output: c.output,
            ...(c.toolMetadata ? { toolMetadata: c.toolMetadata } : {}),
            ...(p.approval ? { approval: { ...(p.approval as object), approved: true } } : {}),
          });
        break;
      }
      case 'tool-output-error': {
        const p = tool(c.toolCallId);
        if (p)
          Object.assign(p, { state: 'output-error', errorText: c.errorText, ...(c.toolMetadata ? { toolMetadata: c.toolMetadata } : {}) });
        break;
      }
      case 'tool-output-denied': {
        const p = tool(c.toolCallId);
        if (p) {
          const approval = (p.approval as Record<string, unknown> | undefined) ?? { id: '' };
          Object.assign(p, { state: 'output-denied', approval: { ...approval, approved: false } });
        }
        break;
      }
      default:
        if (c.type.startsWith('data-')) {
          const d = c as { type: string; id?: string; data: unknown };
          const same = d.id !== undefined ? m.parts.find((p) => p.type === d.type && p.id === d.id) : undefined;
          if (same) same.data = d.data;
          else m.parts.push({ type: d.type, ...(d.id !== undefined ? { id: d.id } : {}), data: d.data });
        }
        break;
    }
  }
}
