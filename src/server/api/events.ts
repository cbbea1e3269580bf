/**
 * The live streams: a run's events and the inbox's, as Server-Sent Events read from the journal,
 * resumable with Last-Event-ID. Never sends an event twice nor out of order, and never loses one
 * across a reconnect: what goes out is what the store holds, after the id the client last saw.
 */
import { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import type { JournaledEvent } from '../../loop/journal.js';
import type { RunEvent, StoredEvent } from '../../types/index.js';
import type { Api } from './context.js';
import { HttpProblem } from './route.js';

/** The inbox's events: cards and questions as they come and go, runs as they start and end. */
const INBOX_TYPES: RunEvent['type'][] = ['run_started', 'paused', 'run_finished', 'approval_answered'];

function inboxName(e: RunEvent): string {
  if (e.type === 'paused') return e.pause.kind === 'approval' ? 'approval_created' : 'run_paused';
  return e.type;
}

function isFinal(e: RunEvent): boolean {
  return e.type === 'run_finished' && (e.result.status === 'done' || e.result.status === 'failed');
}

/** Declares the two live streams: a run's events, then the inbox's. */
export function eventRoutes(api: Api): void {
  const { d, route } = api;
  const { keel, store, hub, runner } = d;

  route(
    {
      method: 'get',
      path: '/v1/runs/:id/events',
      summary:
        "A run's events as Server-Sent Events, each with an id: reconnect with Last-Event-ID to get what you missed, then the live stream",
      role: 'viewer',
      ok: { status: 200, description: 'text/event-stream', sse: true },
      errors: [400, 401, 404],
    },
    async (c) => {
      const runId = c.req.param('id') as string;
      const after = lastEventId(c) ?? 0;
      // A run this server is driving exists, and a stream from its start ends with its last event:
      // only another run is read first (a whole run state), to say 404, or 204 for one that ended.
      if (after > 0 || !runner.isActive(runId)) {
        const run = await keel.getRun(runId);
        if (run.status === 'done' || run.status === 'failed') {
          const rest = await store.listEvents({ run_id: runId, after, limit: 1 });
          // Nothing more will come: 204 tells an EventSource not to reconnect.
          if (!rest.length) return c.body(null, 204);
        }
      }
      return eventStream(c, (out) => follow(out, runId, after));
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/events',
      summary: 'Inbox events as Server-Sent Events: cards created and answered, questions, runs started and finished',
      role: 'viewer',
      ok: { status: 200, description: 'text/event-stream', sse: true },
      errors: [400, 401],
    },
    async (c) => {
      // Without Last-Event-ID the inbox starts now (the lists say what is pending already).
      const after = lastEventId(c) ?? (await store.latestEventId());
      return eventStream(c, (out) => follow(out, '*', after));
    },
  );

  /**
   * Streams journal rows after `after` — of one run, or the inbox's of every run ('*') — then
   * follows: each wake-up (or every pollMs, for runs another process works) reads what is new from
   * the store, so an event is sent once, in order, whatever the timing. Text deltas are live only.
   * A run's stream told of an event this process journaled, whose writer knows it comes right after
   * the last event the stream sent (`prev`, see JournaledEvent), sends it as the store would have
   * given it, without reading the store (issue 49); anything else — a wake-up without its event, the
   * poll, an event after one the stream has not seen — reads the store from the last id sent. A
   * stream opened on a run whose leg this server drives starts with what the leg journaled so far.
   */
  async function follow(stream: EventOut, runId: string, after: number): Promise<void> {
    let last = after;
    let closed = false;
    let wake: (() => void) | undefined;
    const deltas: string[] = [];
    /** The run's events as this process journaled them, in the order told, not yet sent. */
    const told: JournaledEvent[] = [];
    /** The store must be read: at the start, after a wake-up without its event, on the poll. */
    let read = true;
    let streaming = false;
    /** Set by a wake-up that came while the stream was busy: the next read must not wait. */
    let dirty = false;
    const poke = () => {
      dirty = true;
      wake?.();
      wake = undefined;
    };
    const unsubscribe = hub.subscribe(runId, (m) => {
      if (m.delta !== undefined) {
        if (deltas.length < 1000) deltas.push(m.delta);
      } else if (m.event && runId !== '*' && told.length < 1000) told.push(m.event);
      else read = true;
      poke();
    });
    // What the run's leg driven here journaled before the stream subscribed (told from then on):
    // a stream of a run it started reads nothing from the store.
    if (runId !== '*') {
      told.push(...hub.journaledSoFar(runId));
      read = told.length === 0;
    }
    stream.onAbort(() => {
      closed = true;
      poke();
    });
    const query = runId === '*' ? { types: INBOX_TYPES } : { run_id: runId };
    let idleSince = Date.now();
    try {
      while (!closed) {
        let rows: StoredEvent[] = [];
        let full = false;
        let skip = 0;
        while (skip < told.length && told[skip].id <= last) skip++;
        if (skip) told.splice(0, skip);
        if (!read && told.length && told[0].prev === last) {
          // Told in order, each right after the one before: what a read from `last` would give first.
          let n = 1;
          while (n < told.length && told[n].prev === told[n - 1].id && told[n].id > told[n - 1].id) n++;
          rows = told.splice(0, n);
        } else if (read || told.length) {
          read = false;
          // What was told before the read is in it (or was not kept: a group that rolled back).
          const known = told.length;
          rows = await store.listEvents({ ...query, after: last, limit: 200 });
          // A full page: the rest is read next, at once.
          full = rows.length === 200;
          if (full) read = true;
          told.splice(0, known);
        }
        // One write per wake-up: a step's events (and its deltas) go out together.
        let out = '';
        let final = false;
        for (const r of rows) {
          const name = runId === '*' ? inboxName(r.event) : r.event.type;
          out += `id: ${r.id}\nevent: ${name}\ndata: ${JSON.stringify({ id: r.id, run_id: r.run_id, at: r.at, ...r.event })}\n\n`;
          last = r.id;
          if (r.event.type === 'model_request') streaming = true;
          if (r.event.type === 'assistant' || r.event.type === 'run_finished') streaming = false;
          if (runId !== '*' && isFinal(r.event)) final = true;
        }
        // A delta belongs to the reply being streamed: one that comes after its reply is dropped.
        for (const text of deltas.splice(0)) {
          if (streaming && !final) out += `event: text_delta\ndata: ${JSON.stringify({ run_id: runId, text })}\n\n`;
        }
        if (out) {
          await stream.write(out);
          idleSince = Date.now();
        }
        if (final || closed) break;
        if (full || told.length) continue;
        if (Date.now() - idleSince > 15_000) {
          await stream.write(': keep-alive\n\n');
          idleSince = Date.now();
        }
        if (!dirty) {
          stream.idle();
          await new Promise<void>((res) => {
            const timer = setTimeout(() => {
              read = true;
              poke();
            }, d.pollMs);
            wake = () => {
              clearTimeout(timer);
              res();
            };
          });
        }
        dirty = false;
        // Let the rest of a burst land first: one read and one write for all of it.
        await new Promise((res) => setImmediate(res));
      }
    } finally {
      unsubscribe();
    }
  }
}

/** Where a live stream's text goes: written as it is given, in order; `onAbort` when the client goes away. */
interface EventOut {
  write(text: string): Promise<void>;
  /** Nothing to send for now: the response's headers go out alone, so the client knows the stream is open. */
  idle(): void;
  onAbort(f: () => void): void;
}

/** The headers of a live stream (what Hono's streamSSE sends). */
const SSE_HEADERS = {
  'transfer-encoding': 'chunked',
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

/**
 * A live stream's response. Elsewhere than on Node's own server its body is a ReadableStream of the
 * text `body` writes, each write one chunk, handed to the client as it comes. On Node's own response
 * (@hono/node-server) the body stays empty until `body` ends, and the text is written straight to
 * the response instead (issue 49: a stream, a reader and a promise per chunk, at every step of every
 * run, were the server's own cost) — once @hono/node-server has written the head with the app's
 * headers (CORS included), so what the client gets is the same. Hono's streamSSE costs a
 * TransformStream, a writer and a TextEncoder per write on top. A write waits while the socket is
 * not draining (backpressure); `body`'s end ends the response, and an error in it is logged.
 *
 * @hono/node-server sends a streamed response's headers on their own (flushHeaders), one more
 * write to the socket per stream; on Node's own response they are held instead until the stream
 * has something to send, and go with it (one write), or until it has nothing to send for now
 * (`idle`), when they go alone, as before.
 */
function eventStream(c: Context, body: (out: EventOut) => Promise<void>): Response {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  /** A chunk was given to the response: its headers went, or go, with it. */
  let wrote = false;
  let idle = false;
  let held: (() => void) | undefined;
  const res = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  const node = res instanceof ServerResponse ? res : undefined;
  /** Node: until @hono/node-server has written the head, what is written waits for it. */
  let headed: Promise<void> | undefined;
  if (node) {
    const flush = node.flushHeaders.bind(node);
    // After the chunks already given are written (they go within the tick): then, only if there were none.
    const later = () => setImmediate(() => wrote || closed || flush());
    node.flushHeaders = () => {
      if (idle) later();
      else held = later;
    };
    const own = node as unknown as { writeHead: (...a: unknown[]) => unknown };
    const writeHead = own.writeHead;
    headed = new Promise<void>((ready) => {
      own.writeHead = (...a: unknown[]) => {
        own.writeHead = writeHead;
        const out = writeHead.apply(node, a);
        ready();
        return out;
      };
    });
  }
  let ready: (() => void) | undefined;
  const aborts: (() => void)[] = [];
  const release = () => {
    ready?.();
    ready = undefined;
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      ctl = controller;
    },
    pull: release,
    cancel() {
      closed = true;
      release();
      for (const f of aborts.splice(0)) f();
    },
  });
  /** Node: resolves when the response drains (or the client went away). */
  const drained = (r: ServerResponse) =>
    new Promise<void>((res) => {
      const done = () => {
        r.off('drain', done);
        r.off('close', done);
        res();
      };
      r.on('drain', done);
      r.on('close', done);
    });
  const out: EventOut = {
    async write(text) {
      if (closed) return;
      wrote = true;
      if (node) {
        if (headed) {
          await headed;
          headed = undefined;
          if (closed) return;
        }
        if (!node.write(text)) await drained(node);
        return;
      }
      ctl.enqueue(Buffer.from(text));
      if ((ctl.desiredSize ?? 1) <= 0) await new Promise<void>((res) => (ready = res));
    },
    idle() {
      if (idle) return;
      idle = true;
      held?.();
      held = undefined;
    },
    onAbort: (f) => {
      aborts.push(f);
    },
  };
  body(out)
    .catch((err: unknown) => console.error(err))
    .finally(() => {
      if (closed) return;
      closed = true;
      ctl.close();
    });
  return c.body(stream, 200, SSE_HEADERS);
}

/** Last-Event-ID (or ?after=, for clients that cannot set headers): the id of the last event seen. */
function lastEventId(c: Context): number | undefined {
  const raw = c.req.header('last-event-id') ?? c.req.query('after');
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d{1,15}$/.test(raw)) {
    throw new HttpProblem(400, 'Last-Event-ID must be the id of an event this server sent', [
      { field: 'header.last-event-id', message: 'not an event id' },
    ]);
  }
  return Number(raw);
}
