/**
 * Issue 41: Keel behind the AI SDK's chat UIs (`useChat`). One module for both `keel serve`
 * (POST /v1/ui/chat) and the handler an application mounts in its own route (chatHandler): the
 * chat's `id` is a Keel session; a user message starts a run (or answers the run's question); the
 * page's approval responses answer Keel's cards through the one answer path (A3: role checked by the
 * caller, the actor audited, pinned, once); the stream is the run's journal as UI message chunks.
 * Nothing the page sends runs twice: a card answers once, a question's pause is claimed once, and a
 * user message that already started a run (kept in the audit log by its id) only replays it.
 */
import type { z } from 'zod';
import type { ContinueOptions, Keel, RunOptions } from '../../keel/keel.js';
import type { Leg } from '../../loop/legs.js';
import { untrustedRead } from '../../loop/result.js';
import { ownWordsOf, userTexts } from '../../policy/own-words.js';
import type { PauseSummary, Store, StoredEvent } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { allows, type Role } from '../access/tokens.js';
import { problemBody } from '../http/problems.js';
import type { UiChatBody } from '../http/schemas.js';
import type { Hub, LegRunner } from '../workers/runner.js';
import { applyChunks, assistantMessageId, type Chunk, ChunkMapper, parseConfirmationId, type UiMessage, userMessageId } from './chunks.js';

export type UiChatRequest = z.output<typeof UiChatBody>;

/** Who calls: a token's name and role (keel serve), or what the application's own authentication says. */
export interface ChatActor {
  name: string;
  role: Role;
  /** A9: the caller's groups (a card routed to others is not theirs to answer); PC9: the run's principal's. */
  groups?: readonly string[];
  /** `token` for keel serve's bearer tokens; `app` for an application's own signed-in user (chatHandler). */
  kind?: 'token' | 'app';
}

export interface UiChatDeps {
  keel: Keel;
  store: Store;
  hub: Hub;
  /** Drives (or queues) a leg: keel serve's runner, or the handler's own. */
  runner: Pick<LegRunner, 'submit'>;
  /** How often a stream looks at the journal without a wake-up (runs another process works). */
  pollMs: number;
  /** What a new run is started with (the model, checked by the caller; plugin folders; app tools). Throws to refuse. */
  startOptions(body: UiChatRequest): Promise<Pick<RunOptions, 'model' | 'pluginDirs' | 'tools'>>;
  /** What a run's continuation is given (an application's own model, which no stored spec rebuilds). */
  continueOptions?: Pick<ContinueOptions, 'model' | 'pluginDirs' | 'tools'>;
}

type InPart = { type: string; [k: string]: unknown };
type InMessage = UiChatRequest['messages'][number];

/** The UI message stream's headers (the AI SDK's `x-vercel-ai-ui-message-stream: v1`). */
export const UI_STREAM_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
};

const KEEP_ALIVE_MS = 15_000;

/** An RFC 9457 problem, as keel serve answers errors. */
export function problemResponse(status: number, detail: string, instance?: string): Response {
  return new Response(JSON.stringify(problemBody(status, detail, instance)), {
    status,
    headers: { 'content-type': 'application/problem+json' },
  });
}

/** A stream's chunks as server-sent events; `null` from the source is a keep-alive comment. */
export function uiStreamResponse(source: (signal: AbortSignal) => AsyncGenerator<Chunk | null>): Response {
  const enc = new TextEncoder();
  const ac = new AbortController();
  const it = source(ac.signal);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const n = await it.next();
        if (n.done) {
          controller.enqueue(enc.encode('data: [DONE]\n\n'));
          controller.close();
        } else controller.enqueue(enc.encode(n.value === null ? ': keep-alive\n\n' : `data: ${JSON.stringify(n.value)}\n\n`));
      } catch (err) {
        // The page is told in the protocol's own chunk, then the stream ends.
        const text = err instanceof Error ? err.message : String(err);
        controller.enqueue(enc.encode(`data: ${JSON.stringify({ type: 'error', errorText: text })}\n\ndata: [DONE]\n\n`));
        controller.close();
      }
    },
    async cancel() {
      ac.abort();
      await it.return(undefined);
    },
  });
  return new Response(body, { status: 200, headers: UI_STREAM_HEADERS });
}

/** What a request's stream follows: one run's journal, the rows up to `primeThrough` being what the page has already. */
interface Follow {
  runId: string;
  primeThrough: number;
  /** The tool calls the page's message has. */
  known: string[];
}

interface Plan {
  start: Chunk;
  notices: Chunk[];
  follow?: Follow;
}

/** A notice in the stream: a response Keel could not act on, and why (a data part a page shows). */
function notice(kind: string, message: string, about?: string): Chunk {
  return { type: 'data-keel-notice', data: { kind, message, ...(about ? { approval_id: about } : {}) } };
}

function textOf(m: InMessage): string {
  return (m.parts as InPart[])
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('\n')
    .trim();
}

const isToolPart = (p: InPart) => (p.type.startsWith('tool-') || p.type === 'dynamic-tool') && typeof p.toolCallId === 'string';

/** The page's answers in a message: tool parts in state approval-responded, one per approval id. */
function approvalResponses(m: InMessage): Map<string, { approved: boolean; reason?: string; calls: string[] }> {
  const out = new Map<string, { approved: boolean; reason?: string; calls: string[] }>();
  for (const p of m.parts as InPart[]) {
    if (!isToolPart(p) || p.state !== 'approval-responded') continue;
    const a = p.approval as { id?: unknown; approved?: unknown; reason?: unknown } | undefined;
    if (!a || typeof a.id !== 'string' || typeof a.approved !== 'boolean') continue;
    const seen = out.get(a.id);
    if (seen) seen.calls.push(p.toolCallId as string);
    else
      out.set(a.id, {
        approved: a.approved,
        ...(typeof a.reason === 'string' && a.reason ? { reason: a.reason.slice(0, 2000) } : {}),
        calls: [p.toolCallId as string],
      });
  }
  return out;
}

export class UiChat {
  /** One request of a chat acts at a time (in this process): a page's resend meets the first one's record. */
  private readonly busy = new Map<string, Promise<unknown>>();

  constructor(private readonly d: UiChatDeps) {}

  /** A leg to the runner, and the chat's streams woken to follow it. */
  private submit(leg: Leg): void {
    this.d.runner.submit(leg);
    this.d.hub.wake(leg.run_id);
  }

  private serial<T>(id: string, f: () => Promise<T>): Promise<T> {
    const prev = this.busy.get(id) ?? Promise.resolve();
    const next = prev.then(f, f);
    const kept = next.catch(() => undefined);
    this.busy.set(id, kept);
    void kept.then(() => {
      if (this.busy.get(id) === kept) this.busy.delete(id);
    });
    return next;
  }

  private audit(who: ChatActor, action: string, subject: string, detail: unknown): Promise<void> {
    return this.d.store.audit({ at: new Date().toISOString(), actor: who.name, action, subject, detail: JSON.stringify(detail) });
  }

  /** Every row of a run's journal after `after`, in order. */
  private async rows(runId: string, after = 0): Promise<StoredEvent[]> {
    const out: StoredEvent[] = [];
    for (;;) {
      const page = await this.d.store.listEvents({ run_id: runId, after, limit: 500 });
      out.push(...page);
      if (page.length < 500) return out;
      after = page[page.length - 1].id;
    }
  }

  /**
   * O5: before a row whose text names an address is mapped, what the run's own record says: whether
   * it read words from outside the user (inherited ones included), and the user's own words.
   */
  private async provenance(mapper: ChunkMapper, row: StoredEvent): Promise<void> {
    if (!mapper.needsProvenance(row)) return;
    const run = await this.d.store.loadRun(mapper.runId);
    mapper.provenance = run ? { readOutside: untrustedRead(run).length > 0, own: ownWordsOf(userTexts(run)) } : undefined;
  }

  /** The journal row where a run paused for this card or question. */
  private async pausedRow(runId: string, match: (p: PauseSummary) => boolean): Promise<number> {
    const rows = await this.rows(runId);
    const row = rows.find((r) => r.event.type === 'paused' && match(r.event.pause));
    return row?.id ?? 0;
  }

  /** POST: the page's request — answers, or a new message — acted on, then the run streamed into the chat. */
  async post(body: UiChatRequest, who: ChatActor): Promise<Response> {
    if (!allows(who.role, 'approver'))
      return problemResponse(403, `${who.name} is a ${who.role}: starting runs and answering cards needs an approver`);
    const plan = await this.serial(body.id, () => this.act(body, who));
    return uiStreamResponse((signal) => this.play(plan, signal));
  }

  private async act(body: UiChatRequest, who: ChatActor): Promise<Plan> {
    const target = body.messageId ? body.messages.find((m) => m.id === body.messageId) : body.messages[body.messages.length - 1];
    if (body.trigger === 'regenerate-message')
      return {
        start: { type: 'start' },
        notices: [
          notice('refused', 'Keel does not run a turn again (its calls may have changed things): say what you want in a new message'),
        ],
      };
    if (target?.role === 'assistant') return this.answers(body.id, target, who);
    if (target?.role === 'user') return this.message(body, target, who);
    return { start: { type: 'start' }, notices: [notice('refused', 'the chat request has no user message to act on')] };
  }

  /** The page's approval responses in the message it continues, each answered once through the one answer path. */
  private async answers(chatId: string, m: InMessage, who: ChatActor): Promise<Plan> {
    const notices: Chunk[] = [];
    const known = (m.parts as InPart[]).filter(isToolPart).map((p) => p.toolCallId as string);
    let follow: Follow | undefined;
    const join = (runId: string, row: number) => {
      if (!row) return;
      if (!follow) follow = { runId, primeThrough: row, known };
      else if (follow.runId === runId) follow.primeThrough = Math.min(follow.primeThrough, row);
    };
    const settle = (calls: string[], why: string) => {
      for (const id of calls)
        notices.push({ type: 'tool-output-error', toolCallId: id, errorText: why, toolMetadata: { keel_outcome: 'not_answered' } });
    };
    for (const [id, r] of approvalResponses(m)) {
      const conf = parseConfirmationId(id);
      const runId = conf ? conf.runId : (await this.d.store.getApproval(id))?.run_id;
      const run = runId ? await this.d.store.loadRun(runId) : undefined;
      if (!run) {
        const why = `no approval ${id} in this Keel: nothing ran`;
        notices.push(notice('not_found', why, id));
        settle(r.calls, why);
        continue;
      }
      if (run.session_id !== chatId) {
        const why = `approval ${id} belongs to another session (${run.session_id}), not this chat: it is answered there; nothing ran`;
        notices.push(notice('other_session', why, id));
        settle(r.calls, why);
        continue;
      }
      try {
        if (conf) {
          const p = run.pause;
          if (run.status !== 'paused' || p?.kind !== 'ask_user' || p.seq !== conf.seq || !p.confirm)
            throw new KeelError('conflict', `the confirmation ${id} was answered already; it cannot be answered again`);
          const leg = await this.d.keel.answerRun(
            run.id,
            { text: r.approved ? 'yes' : (r.reason ?? 'no'), confirm: r.approved },
            this.d.continueOptions,
          );
          await this.audit(who, 'answer_question', run.id, { confirm: r.approved, via: 'ui_chat' });
          this.submit(leg);
        } else {
          const { approval, leg, app } = await this.d.keel.answerApproval(id, r.approved ? 'approve' : 'reject', {
            ...this.d.continueOptions,
            actor: who.name,
            reason: r.reason ?? null,
            // A9: the one answer path checks who may answer a routed card.
            // An application's signed-in user is held to the card's groups as a token is: not the app's own authority.
            who: { name: who.name, role: who.role, groups: [...(who.groups ?? [])], kind: who.kind === 'app' ? 'app_user' : 'token' },
          });
          if (leg) this.submit(leg);
          // R18: a run only its application can carry on (its model, its tools in code): recorded here; it goes on there.
          if (app)
            notices.push(
              notice(
                'waits_for_app',
                `approval ${id} is recorded; run ${run.id} continues when its application resumes it: nothing ran here`,
                id,
              ),
            );
          this.d.hub.wake(run.id);
          if (approval.status === 'expired')
            notices.push(notice('expired', `approval ${id} expired at ${approval.expires_at} before it was answered; nothing ran`, id));
        }
      } catch (err) {
        if (!(err instanceof KeelError) || err.code === 'unavailable') throw err;
        // Answered elsewhere (the console, the CLI, another page), or refused: said here; the run's truth follows.
        notices.push(notice(err.code === 'conflict' ? 'conflict' : 'refused', err.message, id));
        // Refused (A9: a card routed to groups the caller is not in): the card still waits for someone else, so
        // its calls are settled in this chat as not answered — a page that sends on every answered card stops here.
        if (err.code !== 'conflict') settle(r.calls, err.message);
      }
      join(
        run.id,
        await this.pausedRow(run.id, (p) =>
          conf ? p.kind === 'ask_user' && p.seq === conf.seq : p.kind === 'approval' && p.approval_id === id,
        ),
      );
    }
    if (!follow && !notices.length) notices.push(notice('refused', 'this message holds no answer to a card: nothing to do'));
    // The message the page continues keeps its id: no messageId in `start`.
    return { start: { type: 'start' }, notices, follow };
  }

  /** A user message: replayed if it was acted on already, else the answer to the run's question, else a new run. */
  private async message(body: UiChatRequest, m: InMessage, who: ChatActor): Promise<Plan> {
    const { store, keel } = this.d;
    const chatId = body.id;
    const key = `ui_chat:${chatId}:${m.id}`;
    // Resent (a retry, a second tab): the run it started is replayed, nothing starts again.
    const seen = (await store.listAudit(key)).find((a) => a.action === 'ui_chat_message');
    const own = /^(run_[A-Za-z0-9_-]+)-u$/.exec(m.id);
    const done = seen ? (JSON.parse(seen.detail) as { run_id: string; seq?: number }) : own ? { run_id: own[1] } : undefined;
    if (done) {
      const run = await store.loadRun(done.run_id);
      if (run && run.session_id === chatId) return this.replayPlan(run.id, done.seq);
    }
    const text = textOf(m);
    if (!text) return { start: { type: 'start' }, notices: [notice('refused', 'the message has no text')] };
    const rec = await store.getSession(chatId);
    const last = rec?.last_run_id ? await store.loadRun(rec.last_run_id) : undefined;
    try {
      if (last?.status === 'paused' && last.pause?.kind === 'ask_user' && !last.pause.confirm) {
        // The run asked the user: this message is the answer (claimed once).
        const seq = last.pause.seq;
        const leg = await keel.answerRun(last.id, { text }, this.d.continueOptions);
        await this.audit(who, 'answer_question', last.id, { confirm: null, via: 'ui_chat' });
        await this.audit(who, 'ui_chat_message', key, { run_id: last.id, seq });
        this.submit(leg);
        return this.replayPlan(last.id, seq);
      }
      const opts = await this.d.startOptions(body);
      const leg = await keel.startRun(text, {
        ...opts,
        mode: body.mode,
        session: chatId,
        createSession: true,
        // PC9: the caller is the run's principal for the operator's policy.
        principal: { kind: who.kind ?? 'token', name: who.name, role: who.role, groups: [...(who.groups ?? [])] },
      });
      await this.audit(who, 'start_run', leg.run_id, { mode: body.mode ?? null, session: chatId, via: 'ui_chat' });
      await this.audit(who, 'ui_chat_message', key, { run_id: leg.run_id });
      this.submit(leg);
      return {
        start: { type: 'start', messageId: assistantMessageId(leg.run_id) },
        notices: [],
        follow: { runId: leg.run_id, primeThrough: 0, known: [] },
      };
    } catch (err) {
      // The session waits on a card or a question, or works: said in the chat, nothing started.
      if (err instanceof KeelError && (err.code === 'conflict' || err.code === 'not_paused'))
        return { start: { type: 'start' }, notices: [notice('conflict', err.message)] };
      throw err;
    }
  }

  /** The assistant message of a run's turn, from its start (or from the answer to question `seq`). */
  private async replayPlan(runId: string, seq?: number): Promise<Plan> {
    const prime = seq === undefined ? 0 : await this.pausedRow(runId, (p) => p.kind === 'ask_user' && p.seq === seq);
    return {
      start: { type: 'start', messageId: assistantMessageId(runId, seq) },
      notices: [],
      follow: { runId, primeThrough: prime, known: [] },
    };
  }

  private async *play(plan: Plan, signal: AbortSignal): AsyncGenerator<Chunk | null> {
    yield plan.start;
    yield* plan.notices;
    if (plan.follow) yield* this.follow(plan.follow, signal);
    yield { type: 'finish' };
  }

  /**
   * A run's journal as chunks: the rows the page has (through `primeThrough`) read silently, then
   * each new row as it comes — a wake-up, or every pollMs for runs another process works — with the
   * reply's text deltas live, until the run pauses or ends.
   */
  private async *follow(f: Follow, signal: AbortSignal): AsyncGenerator<Chunk | null> {
    const { store, hub, pollMs } = this.d;
    const mapper = new ChunkMapper(f.runId);
    let last = 0;
    let primed = f.primeThrough === 0;
    if (primed) mapper.knowOnly(f.known);
    const deltas: string[] = [];
    let streaming = false;
    let dirty = false;
    let wake: (() => void) | undefined;
    const poke = () => {
      dirty = true;
      wake?.();
      wake = undefined;
    };
    const unsubscribe = hub.subscribe(f.runId, (m) => {
      if (m.delta !== undefined && deltas.length < 1000) deltas.push(m.delta);
      poke();
    });
    const onAbort = () => poke();
    signal.addEventListener('abort', onAbort);
    let idleSince = Date.now();
    try {
      while (!signal.aborted) {
        const rows = await store.listEvents({ run_id: f.runId, after: last, limit: 200 });
        let ended = false;
        for (const r of rows) {
          last = r.id;
          if (!primed) {
            mapper.map(r);
            if (r.id >= f.primeThrough) {
              primed = true;
              mapper.knowOnly(f.known);
            }
            continue;
          }
          if (r.event.type === 'model_request') streaming = true;
          if (r.event.type === 'assistant' || r.event.type === 'run_finished') streaming = false;
          ended = r.event.type === 'run_finished';
          await this.provenance(mapper, r);
          const out = mapper.map(r);
          if (out.length) idleSince = Date.now();
          yield* out;
        }
        // A delta belongs to the reply being streamed: one that comes after its reply is dropped.
        for (const text of deltas.splice(0)) if (streaming && primed) yield* mapper.delta(text);
        if (ended && rows.length < 200) break;
        if (rows.length === 200) continue;
        if (Date.now() - idleSince > KEEP_ALIVE_MS) {
          yield null;
          idleSince = Date.now();
        }
        if (!dirty) {
          await new Promise<void>((res) => {
            const timer = setTimeout(poke, pollMs);
            wake = () => {
              clearTimeout(timer);
              res();
            };
          });
        }
        dirty = false;
      }
      yield* mapper.end();
    } finally {
      unsubscribe();
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** GET …/messages: the session as UI messages, built from its runs' journals by the streams' own mapping. */
  async messages(chatId: string): Promise<{ id: string; messages: UiMessage[] }> {
    const runs = (await this.d.store.listRuns({ session_id: chatId, limit: 200 })).reverse();
    const messages: UiMessage[] = [];
    for (const run of runs) {
      messages.push({ id: userMessageId(run.id), role: 'user', parts: [{ type: 'text', text: run.request }] });
      let msg: UiMessage = { id: assistantMessageId(run.id), role: 'assistant', parts: [] };
      const mapper = new ChunkMapper(run.id);
      let asked: number | undefined;
      for (const r of await this.rows(run.id)) {
        const e = r.event;
        if (e.type === 'paused' && e.pause.kind === 'ask_user' && !e.pause.confirm) asked = e.pause.seq;
        if (e.type === 'tool_result' && e.record.tool === 'ask_user' && !e.record.decision && asked !== undefined) {
          // The question's answer is the user's next message; the run goes on in a new assistant message.
          applyChunks(msg, mapper.end());
          messages.push(msg);
          messages.push({ id: userMessageId(run.id, asked), role: 'user', parts: [{ type: 'text', text: e.record.result }] });
          msg = { id: assistantMessageId(run.id, asked), role: 'assistant', parts: [] };
          mapper.knowOnly([]);
          asked = undefined;
          continue;
        }
        await this.provenance(mapper, r);
        applyChunks(msg, mapper.map(r));
      }
      applyChunks(msg, mapper.end());
      messages.push(msg);
    }
    return { id: chatId, messages };
  }

  /**
   * GET …/stream (the AI SDK's stream resumption): the session's current assistant message replayed
   * from the journal, then followed live until its run pauses or ends. 204 when the chat has no run.
   */
  async stream(chatId: string): Promise<Response> {
    const [latest] = await this.d.store.listRuns({ session_id: chatId, limit: 1 });
    if (!latest) return new Response(null, { status: 204 });
    let seq: number | undefined;
    let asked: number | undefined;
    for (const r of await this.rows(latest.id)) {
      const e = r.event;
      if (e.type === 'paused' && e.pause.kind === 'ask_user' && !e.pause.confirm) asked = e.pause.seq;
      if (e.type === 'tool_result' && e.record.tool === 'ask_user' && !e.record.decision && asked !== undefined) seq = asked;
    }
    const plan = await this.replayPlan(latest.id, seq);
    return uiStreamResponse((signal) => this.play(plan, signal));
  }
}
