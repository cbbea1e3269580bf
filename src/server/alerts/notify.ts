/**
 * Webhook notifications for `keel serve`: when an approval waits, a run pauses or a run fails, every
 * target in config.yaml's `notify:` that subscribes to the event gets a signed POST.
 *
 * The wire format (what a receiver sees):
 *
 *   POST <url>
 *   content-type: application/json
 *   user-agent: keel-webhook
 *   x-keel-event: <type>
 *   x-keel-delivery: <id>                  (dlv_…, the same on every attempt: receivers dedupe on it)
 *   x-keel-timestamp: <unix seconds>
 *   x-keel-signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>" keyed with the secret>
 *
 *   {"id":"dlv_…","type":"run_failed","at":"<ISO time>","run_id":"run_…","data":{…}}
 *
 * A URL with a user and password (https://user:pass@host/…) is sent without them, as
 * `authorization: Basic …` (fetch refuses credentials in a URL); the audit never shows them, nor
 * any query value.
 *
 * Every attempt sends the same body bytes (same id); the timestamp is taken afresh and the body
 * re-signed on each attempt, so a receiver that refuses stale timestamps (a replay window) still
 * accepts a late retry. `verifySignature` below is the receiver's check.
 *
 * A 2xx is delivered. Network errors, timeouts, 429 and 5xx are retried, up to the target's
 * `retries`, after `backoff_ms` doubling each time (capped at 60 s, plus up to 10% jitter; a
 * Retry-After from the receiver lengthens the wait, within the same cap). Any other status (3xx —
 * redirects are not followed — and other 4xx) fails at once. Each delivery's final outcome is
 * audited once: `webhook_delivered` or `webhook_failed`, actor `keel`, subject the delivery id.
 *
 * A target's secret comes from `secret` or from the environment variable named by `secret_env`,
 * read when a delivery is sent. If that variable is unset or empty nothing is sent (a delivery is
 * never unsigned): each such delivery is audited as `webhook_failed` with attempts 0, and stderr
 * gets one warning per target.
 *
 * Deliveries to one target run one at a time, in order, from a queue of at most MAX_QUEUE; a
 * notification that finds the queue full is dropped and audited as `webhook_failed`. So a slow or
 * dead receiver holds a bounded amount of memory and delays only its own notifications.
 *
 * A10: a target may name the approver groups it serves (`groups: [finance]`): it then gets the
 * cards routed to one of them (and the run_paused of such a card) and everything routed to no
 * group; a target without `groups` gets everything, as before. The card's `approvers` and `policy`
 * are in its data.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { NOTIFY_EVENTS, NOTIFY_MAX_BACKOFF_MS, type NotifyTarget } from '../../config/config.js';
import type { AuditRecord } from '../../types/store.js';
import { redact } from '../../util/redact.js';

export type NotifyEventType = 'approval_created' | 'run_paused' | 'run_failed';

export interface Notification {
  type: NotifyEventType;
  run_id: string;
  /** ISO time of the event. */
  at: string;
  /** Event details; may hold model or tool output, so it is bounded before it is sent. */
  data: Record<string, unknown>;
  /** A10: a card routed to these groups goes only to targets serving one of them, or serving every card (no `groups`). */
  approvers?: readonly string[];
}

/** A10: does a target get a notification? A target without `groups` gets all; one with groups, the unrouted and its own. */
export function serves(target: Pick<NotifyTarget, 'groups'>, approvers: readonly string[] | undefined): boolean {
  if (!target.groups || !approvers?.length) return true;
  return approvers.some((g) => target.groups?.includes(g));
}

export interface NotifierDeps {
  audit(row: AuditRecord): Promise<void>;
  env: NodeJS.ProcessEnv;
  fetch?: typeof fetch;
  now?: () => Date;
  /** Waits between attempts. Whatever it is, drain() does not wait for it past its bound. */
  sleep?: (ms: number) => Promise<void>;
  /** One line for the operator; default stderr. */
  warn?: (line: string) => void;
}

/** Deliveries waiting for one target, beyond the one in flight. */
export const MAX_QUEUE = 100;
/** The longest string in `data`; longer ones are cut, saying so. */
export const MAX_STRING_CHARS = 4_000;
/** The most characters of text in `data`, all strings together; the body as a whole stays near this. */
export const MAX_DATA_CHARS = 64 * 1024;
/** How deep `data` may nest, and how many keys or items each object or array keeps. */
const MAX_DEPTH = 8;
const MAX_ITEMS = 100;
/** How many values of `data` are looked at in all (shared references count each time they are met). */
const MAX_NODES = 5_000;
/** How long a run id may be in the body. */
const MAX_ID_CHARS = 200;
/** drain(): after giving up, how long to wait for the cut-short deliveries' audit rows. */
const AUDIT_GRACE_MS = 1_000;

interface Delivery {
  id: string;
  type: NotifyEventType;
  run_id: string;
  body: string;
}

interface Lane {
  target: NotifyTarget;
  /** The target's URL without user and password, which go in `authorization` instead. */
  url: string;
  authorization?: string;
  queue: Delivery[];
  worker: Promise<void> | null;
  warnedSecret: boolean;
}

interface AttemptResult {
  ok: boolean;
  retry: boolean;
  /** The HTTP status, or what went wrong instead. */
  status: number | string;
  retryAfterMs?: number;
}

const SHUTDOWN = 'the notifier shut down';

export class Notifier {
  private readonly lanes: Lane[];
  private readonly deps: NotifierDeps;
  private readonly stop = new AbortController();
  /** Audit writes not awaited by a lane (dropped notifications): drain() waits for them too. */
  private readonly loose = new Set<Promise<void>>();
  private closed = false;
  private warnedClosed = false;

  constructor(targets: NotifyTarget[], deps: NotifierDeps) {
    this.lanes = targets.map((target) => ({ target, ...splitCredentials(target.url), queue: [], worker: null, warnedSecret: false }));
    this.deps = deps;
  }

  /** Queues `n` for every target subscribed to its type. Never throws and never waits. */
  publish(n: Notification): void {
    try {
      if (!(NOTIFY_EVENTS as readonly string[]).includes(n.type)) {
        this.warn(`keel: webhook: unknown event type ${JSON.stringify(String(n.type)).slice(0, 80)}, not sent`);
        return;
      }
      const lanes = this.lanes.filter((l) => l.target.events.includes(n.type) && serves(l.target, n.approvers));
      if (lanes.length === 0) return;
      if (this.closed) {
        if (!this.warnedClosed) this.warn(`keel: webhook: ${n.type} after shutdown, not sent`);
        this.warnedClosed = true;
        return;
      }
      const runId = capString(String(n.run_id), MAX_ID_CHARS);
      const at = typeof n.at === 'string' && n.at.length <= 64 ? n.at : this.now().toISOString();
      const data = boundedData(n.data);
      for (const lane of lanes) {
        const id = `dlv_${randomBytes(12).toString('hex')}`;
        const d: Delivery = { id, type: n.type, run_id: runId, body: JSON.stringify({ id, type: n.type, at, run_id: runId, data }) };
        if (lane.queue.length >= MAX_QUEUE) {
          const p = this.finish(lane, d, false, 0, `dropped: ${MAX_QUEUE} deliveries already wait for this target`);
          this.loose.add(p);
          void p.finally(() => this.loose.delete(p));
          continue;
        }
        lane.queue.push(d);
        this.kick(lane);
      }
    } catch (err) {
      this.warn(`keel: webhook: ${n?.type} not sent: ${errorText(err)}`);
    }
  }

  /**
   * For shutdown: waits up to `timeoutMs` for every queued and in-flight delivery to finish, then
   * gives up on the rest — an attempt in flight is aborted, a retry's wait is cut short, and what
   * still waits is not sent; each is audited as `webhook_failed` (drain waits up to another second
   * for those rows). From its first call the notifier accepts no new notifications.
   */
  async drain(timeoutMs: number): Promise<void> {
    this.closed = true;
    const finished = await within(this.idle(), timeoutMs);
    if (!finished) {
      this.stop.abort();
      await within(this.idle(), AUDIT_GRACE_MS);
    }
  }

  /** Resolves when no lane has work and no audit write is outstanding. */
  private async idle(): Promise<void> {
    for (;;) {
      const busy = [...this.lanes.flatMap((l) => (l.worker ? [l.worker] : [])), ...this.loose];
      if (busy.length === 0) return;
      await Promise.all(busy);
    }
  }

  /** Starts the lane's worker if it has work and none runs. */
  private kick(lane: Lane): void {
    if (lane.worker || lane.queue.length === 0) return;
    lane.worker = this.work(lane).finally(() => {
      lane.worker = null;
      this.kick(lane);
    });
  }

  private async work(lane: Lane): Promise<void> {
    for (let d = lane.queue.shift(); d; d = lane.queue.shift()) {
      try {
        await this.deliver(lane, d);
      } catch (err) {
        this.warn(`keel: webhook ${d.id}: ${errorText(err)}`);
      }
    }
  }

  private async deliver(lane: Lane, d: Delivery): Promise<void> {
    const t = lane.target;
    if (this.stop.signal.aborted) return this.finish(lane, d, false, 0, `not sent: ${SHUTDOWN}`);
    const secret = this.secretOf(lane);
    if (secret === undefined)
      return this.finish(lane, d, false, 0, `not sent: the environment variable ${t.secret_env} (secret_env) is not set`);
    let attempts = 0;
    for (;;) {
      attempts++;
      const r = await this.attempt(lane, d, secret);
      if (r.ok) return this.finish(lane, d, true, attempts, r.status);
      if (!r.retry || attempts > t.retries || this.stop.signal.aborted) return this.finish(lane, d, false, attempts, r.status);
      const waited = await this.pause(backoff(t.backoff_ms, attempts, r.retryAfterMs));
      if (!waited) return this.finish(lane, d, false, attempts, `${r.status}; gave up: ${SHUTDOWN}`);
    }
  }

  private async attempt(lane: Lane, d: Delivery, secret: string): Promise<AttemptResult> {
    const t = lane.target;
    const timestamp = String(Math.floor(this.now().getTime() / 1000));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'keel-webhook',
      'x-keel-event': d.type,
      'x-keel-delivery': d.id,
      'x-keel-timestamp': timestamp,
      'x-keel-signature': sign(secret, timestamp, d.body),
    };
    if (lane.authorization) headers.authorization = lane.authorization;
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, t.timeout_ms);
    const onStop = () => ac.abort();
    this.stop.signal.addEventListener('abort', onStop, { once: true });
    try {
      const res = await (this.deps.fetch ?? fetch)(lane.url, {
        method: 'POST',
        headers,
        body: d.body,
        signal: ac.signal,
        redirect: 'manual',
      });
      // The answer's body is not needed: release the connection without reading it.
      res.body?.cancel().catch(() => {});
      const s = res.status;
      if (s >= 200 && s < 300) return { ok: true, retry: false, status: s };
      const retry = s === 429 || s >= 500;
      return { ok: false, retry, status: s, retryAfterMs: retry ? retryAfter(res.headers.get('retry-after'), this.now()) : undefined };
    } catch (err) {
      if (timedOut) return { ok: false, retry: true, status: `timed out after ${t.timeout_ms} ms` };
      if (this.stop.signal.aborted) return { ok: false, retry: false, status: `aborted: ${SHUTDOWN}` };
      return { ok: false, retry: true, status: `network error: ${errorText(err)}` };
    } finally {
      clearTimeout(timer);
      this.stop.signal.removeEventListener('abort', onStop);
    }
  }

  /** Waits `ms`; false when the notifier was shut down first. */
  private pause(ms: number): Promise<boolean> {
    const signal = this.stop.signal;
    if (signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const onStop = () => {
        clearTimeout(timer);
        resolve(false);
      };
      signal.addEventListener('abort', onStop, { once: true });
      const done = () => {
        signal.removeEventListener('abort', onStop);
        resolve(!signal.aborted);
      };
      if (this.deps.sleep) this.deps.sleep(ms).then(done, done);
      else timer = setTimeout(done, ms);
    });
  }

  private secretOf(lane: Lane): string | undefined {
    const t = lane.target;
    if (t.secret) return t.secret;
    const name = t.secret_env;
    const value = name ? this.deps.env[name] : undefined;
    if (value) return value;
    if (!lane.warnedSecret)
      this.warn(
        `keel: webhook ${safeUrl(t.url)}: the environment variable ${name} (notify secret_env) is not set; its notifications are not sent`,
      );
    lane.warnedSecret = true;
    return undefined;
  }

  /** Audits a delivery's final outcome (once per delivery). Never throws. */
  private async finish(lane: Lane, d: Delivery, delivered: boolean, attempts: number, status: number | string): Promise<void> {
    const detail = {
      url: safeUrl(lane.target.url),
      type: d.type,
      run_id: d.run_id,
      attempts,
      status: typeof status === 'number' ? status : capString(redact(status), 300),
    };
    const row: AuditRecord = {
      at: this.now().toISOString(),
      actor: 'keel',
      action: delivered ? 'webhook_delivered' : 'webhook_failed',
      subject: d.id,
      detail: JSON.stringify(detail),
    };
    try {
      await this.deps.audit(row);
    } catch (err) {
      this.warn(`keel: webhook ${d.id}: could not audit ${row.action}: ${errorText(err)}`);
    }
  }

  private now(): Date {
    return this.deps.now ? this.deps.now() : new Date();
  }

  private warn(line: string): void {
    try {
      (this.deps.warn ?? ((s: string) => process.stderr.write(`${s}\n`)))(line);
    } catch {
      // Nowhere left to say it.
    }
  }
}

/** `sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`, the x-keel-signature header. */
export function sign(secret: string, timestamp: string, rawBody: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex')}`;
}

/**
 * A receiver's check of a delivery: `header` (x-keel-signature) is the HMAC of
 * "<timestamp>.<rawBody>" (x-keel-timestamp, and the body's bytes exactly as received) under
 * `secret`. Compared in constant time. With `toleranceSeconds`, a timestamp further than that from
 * `now` also fails (replay protection; 300 is usual).
 */
export function verifySignature(
  secret: string,
  timestamp: string,
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  opts: { toleranceSeconds?: number; now?: Date } = {},
): boolean {
  if (typeof header !== 'string' || !/^\d{1,12}$/.test(timestamp)) return false;
  if (opts.toleranceSeconds !== undefined) {
    const now = Math.floor((opts.now ?? new Date()).getTime() / 1000);
    if (Math.abs(now - Number(timestamp)) > opts.toleranceSeconds) return false;
  }
  const expected = Buffer.from(sign(secret, timestamp, rawBody));
  const given = Buffer.from(header.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The wait before attempt `attempt + 1`: the base doubling, jitter, a Retry-After, all within the cap. */
function backoff(baseMs: number, attempt: number, retryAfterMs: number | undefined): number {
  const exp = Math.min(baseMs * 2 ** (attempt - 1), NOTIFY_MAX_BACKOFF_MS);
  const jittered = exp + Math.floor(Math.random() * exp * 0.1);
  return Math.min(Math.max(jittered, retryAfterMs ?? 0), NOTIFY_MAX_BACKOFF_MS);
}

/** A Retry-After header (seconds or an HTTP date) in ms, or undefined. */
function retryAfter(value: string | null, now: Date): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const when = Date.parse(value);
  return Number.isNaN(when) ? undefined : Math.max(0, when - now.getTime());
}

/** The URL for the audit and stderr: no user or password, no query values, no fragment. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    const auth = u.username || u.password ? '[redacted]@' : '';
    const keys = [...u.searchParams.keys()];
    const query = keys.length ? `?${keys.map((k) => `${encodeURIComponent(k)}=[redacted]`).join('&')}` : '';
    return redact(`${u.protocol}//${auth}${u.host}${u.pathname}${query}`);
  } catch {
    return '[an invalid URL]';
  }
}

/** A URL's user and password moved into a Basic authorization header. */
function splitCredentials(url: string): { url: string; authorization?: string } {
  try {
    const u = new URL(url);
    if (!u.username && !u.password) return { url };
    const authorization = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
    u.username = '';
    u.password = '';
    return { url: u.toString(), authorization };
  } catch {
    return { url };
  }
}

function capString(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}… [${s.length - max} more characters cut by Keel]` : s;
}

function errorText(err: unknown): string {
  const e = err as { message?: unknown; cause?: { code?: unknown; message?: unknown } } | null;
  const cause = e?.cause;
  const text =
    typeof cause?.code === 'string'
      ? cause.code
      : typeof cause?.message === 'string'
        ? cause.message
        : typeof e?.message === 'string'
          ? e.message
          : String(err);
  return capString(redact(text), 300);
}

/**
 * `data` as a JSON-safe copy within bounds: strings cut at MAX_STRING_CHARS and all text together at
 * MAX_DATA_CHARS, nesting at MAX_DEPTH, objects and arrays at MAX_ITEMS entries, MAX_NODES values
 * in all; values JSON cannot hold (functions, symbols, bigints, cycles, throwing getters) become
 * text or are left out. Never throws; never changes `data`.
 */
export function boundedData(data: unknown): Record<string, unknown> {
  const budget = { nodes: MAX_NODES, chars: MAX_DATA_CHARS };
  const out = bound(data, 0, budget, true);
  return out !== null && typeof out === 'object' && !Array.isArray(out) ? (out as Record<string, unknown>) : { value: out ?? null };
}

const CUT = '[… cut by Keel]';

function bound(v: unknown, depth: number, budget: { nodes: number; chars: number }, callToJson: boolean): unknown {
  if (budget.nodes-- <= 0) return CUT;
  try {
    if (v === null || typeof v === 'boolean') return v;
    if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
    if (typeof v === 'string') return text(v, budget);
    if (typeof v === 'bigint') return text(String(v), budget);
    if (typeof v !== 'object') return undefined; // undefined, function, symbol: JSON leaves them out
    const toJSON = (v as { toJSON?: unknown }).toJSON;
    if (callToJson && typeof toJSON === 'function') return bound(toJSON.call(v), depth, budget, false);
    if (depth >= MAX_DEPTH) return '[… nested too deep, cut by Keel]';
    if (Array.isArray(v)) {
      const items = v.slice(0, MAX_ITEMS).map((x) => bound(x, depth + 1, budget, true) ?? null);
      if (v.length > MAX_ITEMS) items.push(`[… ${v.length - MAX_ITEMS} more items cut by Keel]`);
      return items;
    }
    const out: Record<string, unknown> = {};
    const keys = Object.keys(v);
    for (const k of keys.slice(0, MAX_ITEMS)) {
      let child: unknown;
      try {
        child = (v as Record<string, unknown>)[k];
      } catch {
        child = '[unreadable value]';
      }
      const value = bound(child, depth + 1, budget, true);
      if (value !== undefined) out[capString(k, MAX_ID_CHARS)] = value;
    }
    if (keys.length > MAX_ITEMS) out['…'] = `[${keys.length - MAX_ITEMS} more keys cut by Keel]`;
    return out;
  } catch {
    return '[unreadable value]';
  }
}

function text(s: string, budget: { chars: number }): string {
  if (budget.chars <= 0) return CUT;
  const capped = capString(s, Math.min(MAX_STRING_CHARS, budget.chars));
  budget.chars -= Math.min(s.length, MAX_STRING_CHARS);
  return capped;
}

/** Whether `p` settled within `ms`. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  try {
    return await Promise.race([p.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
