/**
 * Web Push for the console (S7): a new card or question buzzes the phones and browsers of the people
 * who may answer it, without the console being open.
 *
 * Who: a subscription belongs to the token that made it (its id; the name is for people). Only an
 * approver or an admin may subscribe — they are who answer cards and questions; a viewer, who cannot
 * answer, is refused. A push goes to every subscription whose token is still active and still an
 * approver or admin when the card comes (a revoked token's subscriptions are dropped then). At most
 * MAX_SUBSCRIPTIONS_PER_OWNER per token.
 *
 * What is sent, encrypted for the browser (RFC 8291, aes128gcm) and signed with the server's VAPID
 * key (RFC 8292), as JSON `{title, body, url, tag}`:
 *   - a card: its title — the plugin's words for the call ("Move 3 email(s) to Trash"), Keel's
 *     "N actions need your approval" for several, the tool's name when the plugin has none — with
 *     every argument value it contains masked as "…", control and bidirectional-override characters
 *     dropped, cut at MAX_TITLE_CHARS; a fixed body; the link `/runs/RUN#card-ID`.
 *   - a question: Keel's fixed words only (the question is the model's text, never sent); the link
 *     `/runs/RUN`.
 * Never the arguments, the card's lines, the request, nor anything a model wrote.
 *
 * Where: an endpoint is an `https:` URL on port 443 whose host is a name, not an IP address nor
 * `localhost` (a push service; Keel POSTs to it). With KEEL_PUSH_TEST_ENDPOINTS=1 (tests), `http:`
 * or `https:` on 127.0.0.1, [::1] or localhost, any port, is allowed too.
 *
 * How: on only with KEEL_PUSH_SUBJECT (the `mailto:` or `https:` contact push services ask for) and
 * the optional package web-push installed (`keel serve` refuses to start without it then). The
 * VAPID key pair is made on first use and kept in the store, so every server sharing the store signs
 * with the same key. Pushes are queued (at most MAX_QUEUE cards waiting) and sent off the request
 * path, one card at a time, each send bounded by SEND_TIMEOUT_MS: they never block nor fail a run.
 * A push service's 404 or 410 (the browser unsubscribed) removes the subscription; each outcome is
 * audited (`push_sent`, `push_failed`, `push_subscription_removed`, actor `keel`).
 *
 * Pushes are sent by the process that runs the leg (`keel serve`, or `keel serve --work`), like
 * webhooks: legs a separate `keel worker` takes send none.
 */
import { randomBytes } from 'node:crypto';
import type * as WebPush from 'web-push';
import { z } from 'zod';
import type { LoopEvent, Pause, PushSubscriptionRecord, Store, VapidKeys } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { optionalImport } from '../util/optional.js';
import { storableText, truncate } from '../util/text.js';
import { allows, type Role, type Tokens } from './tokens.js';

/** Subscriptions one token may hold (a phone, a laptop, a few browsers). */
export const MAX_SUBSCRIPTIONS_PER_OWNER = 10;
export const MAX_ENDPOINT_CHARS = 2048;
export const MAX_LABEL_CHARS = 80;
/** The longest title a push carries (a lock screen shows about this much). */
export const MAX_TITLE_CHARS = 120;
/** Cards waiting to be pushed, beyond the one being sent; a card that finds the queue full is not pushed. */
export const MAX_QUEUE = 100;
/** One POST to a push service. */
export const SEND_TIMEOUT_MS = 10_000;
/** Sends to one card's subscriptions at once. */
const PARALLEL = 4;
/** How long a push service keeps an undelivered question's push (a card's lasts until the card expires). */
const QUESTION_TTL_S = 24 * 3600;

export const CARD_BODY = 'Waiting for your approval in Keel.';
export const QUESTION_TITLE = 'A run has a question for you';
export const CONFIRM_TITLE = 'A run waits for your yes or no';
export const QUESTION_BODY = 'Answer it in Keel.';

/** The body of `POST /v1/push/subscriptions`: a browser's `PushSubscription.toJSON()`, and a label. */
export const PushSubscribeBody = z.strictObject({
  endpoint: z.string().min(1).max(MAX_ENDPOINT_CHARS),
  keys: z.strictObject({ p256dh: z.string().min(1).max(200), auth: z.string().min(1).max(100) }),
  /** Sent by browsers; not kept. */
  expirationTime: z.number().nullable().optional(),
  label: z.string().max(MAX_LABEL_CHARS).optional(),
});
export type PushSubscribeInput = z.infer<typeof PushSubscribeBody>;

/** A subscription as its owner sees it: never the whole endpoint (a capability URL), never the keys. */
export const PushSubscriptionSchema = z.object({
  id: z.string(),
  owner: z.string(),
  label: z.string().nullable(),
  /** The push service it goes through, e.g. https://fcm.googleapis.com. */
  service: z.string(),
  created_at: z.string(),
});
export type PushSubscriptionView = z.infer<typeof PushSubscriptionSchema>;

export const PushInfoSchema = z.object({
  enabled: z.boolean(),
  /** The VAPID public key a browser subscribes with (applicationServerKey), base64url; null when off. */
  public_key: z.string().nullable(),
  /** Why push is off, and how to turn it on. */
  why_off: z.string().optional(),
  max_subscriptions: z.number(),
});

export interface PushMessage {
  title: string;
  body: string;
  /** A path on the console's origin. */
  url: string;
  /** Notifications with the same tag replace each other. */
  tag: string;
}

interface Who {
  name: string;
  role: Role;
}

export interface PushDeps {
  store: Store;
  tokens: Tokens;
  env: NodeJS.ProcessEnv;
  /** One line for the operator; default stderr. */
  log?: (line: string) => void;
  fetch?: typeof fetch;
  now?: () => Date;
}

interface Job {
  /** The card's id, or the run's for a question: the audit rows' subject. */
  subject: string;
  message: PushMessage;
  /** A card's id: its push lives until the card expires (read from the store by the sender, off the run's path). */
  approvalId?: string;
}

type Lib = typeof WebPush;

/** KEEL_PUSH_SUBJECT, checked: a `mailto:` address or an `https:` URL; undefined when unset. */
export function pushSubject(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.KEEL_PUSH_SUBJECT?.trim();
  if (!raw) return undefined;
  let u: URL | undefined;
  try {
    u = new URL(raw);
  } catch {
    u = undefined;
  }
  if (!u || (u.protocol !== 'mailto:' && u.protocol !== 'https:') || raw.length > 500) {
    throw new KeelError(
      'config',
      `KEEL_PUSH_SUBJECT=${truncate(raw, 80)} is not a contact push services accept: write mailto:you@example.com or an https:// URL`,
    );
  }
  return raw;
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Why `endpoint` may not be a push endpoint, or undefined when it may: an `https:` URL on port 443
 * whose host is a name (not an IP address, not localhost), with no user or password; with
 * `allowTest`, also `http:` or `https:` on 127.0.0.1, [::1] or localhost, on any port.
 */
export function endpointProblem(endpoint: string, allowTest: boolean): string | undefined {
  if (endpoint.length > MAX_ENDPOINT_CHARS) return `longer than ${MAX_ENDPOINT_CHARS} characters`;
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch {
    return 'not a URL';
  }
  if (u.username || u.password) return 'a push endpoint carries no user or password';
  const host = u.hostname.toLowerCase();
  if (allowTest && LOOPBACK.has(host) && (u.protocol === 'http:' || u.protocol === 'https:')) return undefined;
  if (u.protocol !== 'https:') return 'a push endpoint is an https:// URL';
  if (u.port !== '' && u.port !== '443') return 'a push endpoint is on port 443';
  if (host === 'localhost' || host.endsWith('.localhost')) return 'a push endpoint is a push service, not this machine';
  if (/^\[.*\]$/.test(host) || /^[\d.]+$/.test(host) || /^0x/i.test(host))
    return 'a push endpoint names its host; an IP address is refused';
  if (!host.includes('.')) return 'a push endpoint names a host on the internet';
  return undefined;
}

function b64urlBytes(s: string): Buffer | undefined {
  return /^[A-Za-z0-9_-]+=*$/.test(s) ? Buffer.from(s.replace(/=+$/, ''), 'base64url') : undefined;
}

/** The subscription's keys, checked: p256dh an uncompressed P-256 point (65 bytes), auth 16 bytes. */
export function keysProblem(keys: { p256dh: string; auth: string }): string | undefined {
  const p = b64urlBytes(keys.p256dh);
  if (!p || p.length !== 65 || p[0] !== 4) return 'keys.p256dh is not a P-256 public key (65 bytes, base64url)';
  const a = b64urlBytes(keys.auth);
  if (!a || a.length !== 16) return 'keys.auth is not a 16-byte secret (base64url)';
  return undefined;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this removes
const UNSHOWN = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;

/** Text for a lock screen: storable, no control or direction-changing characters, spaces collapsed, bounded. */
export function plainTitle(s: string, max = MAX_TITLE_CHARS): string {
  const t = storableText(s).text.replace(UNSHOWN, ' ').replace(/\s+/g, ' ').trim();
  return truncate(t, max);
}

/** Every string (and number) in `args`, nested, at most `limit` of them. */
function leaves(v: unknown, out: string[], limit: number, depth = 0): void {
  if (out.length >= limit || depth > 10) return;
  if (typeof v === 'string') out.push(v);
  else if (typeof v === 'number' && Number.isFinite(v)) out.push(String(v));
  else if (Array.isArray(v)) for (const x of v) leaves(x, out, limit, depth + 1);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) leaves(x, out, limit, depth + 1);
}

/** Lower case, one code unit for one (a letter whose lower case is longer is kept): indexes stay the same. */
function fold(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const l = s[i].toLowerCase();
    out += l.length === 1 ? l : s[i];
  }
  return out;
}

/** How many characters of argument text a title is compared with, and how long a title may be. */
const MASK_HAYSTACK = 50_000;
const MASK_TITLE = 1_000;
/** A run of the title this long that also appears in an argument is masked; shorter values only as whole words. */
const MASK_RUN = 4;

/**
 * `title` with the argument text in it replaced by "…": a plugin's card title may quote the call
 * ("Send \"Q3 numbers\" to bob@example.com"), whole or cut or joined otherwise ("Send email to
 * a@x.com, b@y.com" from "a@x.com,b@y.com"), and a push never carries the arguments. Every run of
 * MASK_RUN or more characters that also appears inside an argument value (a string or a number,
 * nested, compared case-insensitively) is masked, and a shorter value of two or three characters
 * where it stands as a whole word. It may mask a word the plugin wrote that an argument happens to
 * hold too: a push says less rather than more.
 */
export function maskArguments(title: string, args: readonly unknown[]): string {
  const values: string[] = [];
  for (const a of args) leaves(a, values, 1000);
  const t = title.slice(0, MASK_TITLE);
  const low = fold(t);
  // NUL between values: no run spans two of them (a title made storable holds no NUL).
  const hay = fold(values.join('\u0000')).slice(0, MASK_HAYSTACK);
  const masked = new Uint8Array(t.length);
  for (let i = 0; i < t.length; ) {
    // The longest run from i found in the arguments (every prefix of a match matches too).
    let lo = 0;
    let hi = t.length - i;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (hay.includes(low.slice(i, i + mid))) lo = mid;
      else hi = mid - 1;
    }
    if (lo >= MASK_RUN) {
      // The spaces around a run stay: "to …", not "to…".
      let from = i;
      let to = i + lo;
      while (from < to && /\s/.test(t[from])) from++;
      while (to > from && /\s/.test(t[to - 1])) to--;
      masked.fill(1, from, to);
      i += lo;
    } else i++;
  }
  for (const v of new Set(values.map((x) => fold(x.trim())))) {
    if (v.length < 2 || v.length >= MASK_RUN) continue;
    for (let at = low.indexOf(v); at !== -1; at = low.indexOf(v, at + 1)) {
      const before = low[at - 1] ?? ' ';
      const after = low[at + v.length] ?? ' ';
      if (!/[\p{L}\p{N}]/u.test(before) && !/[\p{L}\p{N}]/u.test(after)) masked.fill(1, at, at + v.length);
    }
  }
  let out = '';
  for (let i = 0; i < t.length; i++) {
    if (!masked[i]) out += t[i];
    else if (!masked[i - 1] || i === 0) out += '…';
  }
  return out;
}

/** What a pause pushes, or undefined when it pushes nothing (an interruption). */
export function pushMessage(runId: string, pause: Pause): PushMessage | undefined {
  const run = encodeURIComponent(runId);
  if (pause.kind === 'approval') {
    const title = plainTitle(
      maskArguments(
        pause.card.title,
        pause.items.flatMap((i) => [i.args, i.original_args ?? null]),
      ),
    );
    return {
      // A title left with no word of its own (all of it was argument text) says only what it is.
      title: /[\p{L}\p{N}]/u.test(title) ? title : 'An action needs your approval',
      body: CARD_BODY,
      url: `/runs/${run}#card-${encodeURIComponent(pause.approval_id)}`,
      tag: pause.approval_id.slice(0, 100),
    };
  }
  if (pause.kind === 'ask_user') {
    return {
      title: pause.confirm ? CONFIRM_TITLE : QUESTION_TITLE,
      body: QUESTION_BODY,
      url: `/runs/${run}`,
      tag: `${runId}:${pause.seq}`.slice(0, 100),
    };
  }
  return undefined;
}

/** The push service an endpoint belongs to (its origin): what lists and the audit show. */
export function serviceOf(endpoint: string): string {
  try {
    return new URL(endpoint).origin;
  } catch {
    return '[an invalid URL]';
  }
}

export function viewOf(s: PushSubscriptionRecord): PushSubscriptionView {
  return { id: s.id, owner: s.owner, label: s.label, service: serviceOf(s.endpoint), created_at: s.created_at };
}

export class Push {
  readonly subject: string | undefined;
  readonly allowTestEndpoints: boolean;
  private readonly deps: PushDeps;
  private lib: Lib | undefined;
  private keys: VapidKeys | undefined;
  private readonly queue: Job[] = [];
  private worker: Promise<void> | null = null;
  private readonly stop = new AbortController();
  private closed = false;

  private constructor(deps: PushDeps, subject: string | undefined, lib: Lib | undefined) {
    this.deps = deps;
    this.subject = subject;
    this.lib = lib;
    this.allowTestEndpoints = deps.env.KEEL_PUSH_TEST_ENDPOINTS === '1';
  }

  /** Push turned off (a server made without it): its routes and page say how to turn it on. */
  static off(deps: PushDeps): Push {
    return new Push(deps, undefined, undefined);
  }

  /**
   * Push as the environment says: off without KEEL_PUSH_SUBJECT; with it, web-push is loaded now, so
   * a server that cannot push refuses to start (exit 2, naming the npm install) instead of staying silent.
   */
  static async start(deps: PushDeps): Promise<Push> {
    const subject = pushSubject(deps.env);
    let lib: Lib | undefined;
    if (subject) {
      const m = await optionalImport('web-push', 'Web Push (KEEL_PUSH_SUBJECT)', () => import('web-push'));
      lib = ((m as unknown as { default?: Lib }).default ?? m) as Lib;
    }
    return new Push(deps, subject, lib);
  }

  get enabled(): boolean {
    return this.lib !== undefined && this.subject !== undefined;
  }

  /** Why push is off, in one sentence that says how to turn it on. */
  whyOff(): string | undefined {
    if (this.enabled) return undefined;
    return 'Web Push is off on this server: start keel serve with KEEL_PUSH_SUBJECT=mailto:you@example.com (the contact push services ask for), with the package web-push installed';
  }

  /** The VAPID key pair: the one kept in the store, or one made now and kept (the first process's wins). */
  async vapidKeys(): Promise<VapidKeys> {
    if (this.keys) return this.keys;
    const lib = this.need();
    let kept = await this.deps.store.pushKeys();
    if (!kept) {
      const made = lib.generateVAPIDKeys();
      kept = await this.deps.store.pushKeys({
        public_key: made.publicKey,
        private_key: made.privateKey,
        created_at: this.now().toISOString(),
      });
    }
    if (!kept) throw new Error('the store kept no VAPID key pair');
    this.keys = kept;
    return kept;
  }

  async info(): Promise<z.infer<typeof PushInfoSchema>> {
    if (!this.enabled) return { enabled: false, public_key: null, why_off: this.whyOff(), max_subscriptions: MAX_SUBSCRIPTIONS_PER_OWNER };
    return { enabled: true, public_key: (await this.vapidKeys()).public_key, max_subscriptions: MAX_SUBSCRIPTIONS_PER_OWNER };
  }

  /** Keeps a browser's subscription for `who` (an approver or admin). Mistakes are KeelErrors naming the field. */
  async subscribe(who: Who, input: PushSubscribeInput): Promise<{ status: 'added' | 'updated'; subscription: PushSubscriptionView }> {
    this.need();
    if (!allows(who.role, 'approver'))
      throw new KeelError('bad_input', 'only an approver or an admin may subscribe: notifications are for who answers cards');
    const where = endpointProblem(input.endpoint, this.allowTestEndpoints);
    if (where) throw new KeelError('bad_input', `endpoint: ${where}`);
    const keys = keysProblem(input.keys);
    if (keys) throw new KeelError('bad_input', keys);
    const owner = this.ownerId(who);
    const label = input.label === undefined ? '' : plainTitle(input.label, MAX_LABEL_CHARS);
    const r = await this.deps.store.addPushSubscription(
      {
        id: `psub_${randomBytes(9).toString('base64url')}`,
        owner: who.name,
        owner_id: owner,
        endpoint: input.endpoint,
        p256dh: input.keys.p256dh.replace(/=+$/, ''),
        auth: input.keys.auth.replace(/=+$/, ''),
        label: label || null,
        created_at: this.now().toISOString(),
      },
      MAX_SUBSCRIPTIONS_PER_OWNER,
    );
    if (r.status === 'full' || !r.subscription) {
      throw new KeelError(
        'conflict',
        `${who.name} has ${MAX_SUBSCRIPTIONS_PER_OWNER} subscriptions already (the most one token may hold): revoke one first`,
      );
    }
    return { status: r.status, subscription: viewOf(r.subscription) };
  }

  /** `who`'s own subscriptions; with `all` (an admin only), everyone's. */
  async list(who: Who, all = false): Promise<PushSubscriptionView[]> {
    if (all && who.role === 'admin') return (await this.deps.store.listPushSubscriptions()).map(viewOf);
    const owner = this.maybeOwnerId(who);
    return owner ? (await this.deps.store.listPushSubscriptions(owner)).map(viewOf) : [];
  }

  /** Removes one of `who`'s subscriptions (an admin: anyone's). Another's is "not found", as an unknown id. */
  async revoke(who: Who, id: string): Promise<PushSubscriptionView> {
    const all = await this.deps.store.listPushSubscriptions();
    const owner = this.maybeOwnerId(who);
    const s = all.find((x) => x.id === id && (who.role === 'admin' || x.owner_id === owner));
    if (!s || !(await this.deps.store.removePushSubscription(s.id)))
      throw new KeelError('not_found', `no push subscription ${id} of yours`);
    return viewOf(s);
  }

  /** Queues the push a loop event calls for (a new card or question). Never throws, never waits. */
  publish(runId: string, e: LoopEvent): void {
    try {
      if (!this.enabled || e.type !== 'paused') return;
      const message = pushMessage(runId, e.pause);
      if (!message) return;
      if (this.closed) return;
      const subject = e.pause.kind === 'approval' ? e.pause.approval_id : runId;
      if (this.queue.length >= MAX_QUEUE) {
        void this.audit('push_failed', subject, { status: `dropped: ${MAX_QUEUE} cards already wait to be pushed` });
        return;
      }
      this.queue.push({ subject, message, approvalId: e.pause.kind === 'approval' ? e.pause.approval_id : undefined });
      this.kick();
    } catch (err) {
      this.warn(`keel: push: not sent: ${errorText(err)}`);
    }
  }

  /** For shutdown: waits up to `timeoutMs` for queued pushes, then aborts what is in flight. Takes no more after. */
  async drain(timeoutMs: number): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((r) => {
      timer = setTimeout(r, Math.max(0, timeoutMs));
    });
    await Promise.race([this.idle(), late]);
    clearTimeout(timer);
    this.queue.length = 0;
    this.stop.abort();
    await this.worker?.catch(() => {});
  }

  private async idle(): Promise<void> {
    while (this.worker) await this.worker.catch(() => {});
  }

  private kick(): void {
    if (this.worker || this.queue.length === 0) return;
    this.worker = this.work().finally(() => {
      this.worker = null;
      this.kick();
    });
  }

  private async work(): Promise<void> {
    // Nothing of a push is done on the caller's turn (the run's): the store and token reads come after it.
    await new Promise((r) => setImmediate(r));
    for (let job = this.queue.shift(); job; job = this.queue.shift()) {
      try {
        await this.deliver(job);
      } catch (err) {
        this.warn(`keel: push for ${job.subject}: ${errorText(err)}`);
      }
    }
  }

  /** The subscriptions a push goes to: of active approver or admin tokens, one per endpoint. Others' are dropped. */
  private async recipients(): Promise<PushSubscriptionRecord[]> {
    const active = new Map(
      this.deps.tokens
        .list()
        .filter((t) => !t.revoked_at)
        .map((t) => [t.id, t.role] as const),
    );
    const out: PushSubscriptionRecord[] = [];
    const seen = new Set<string>();
    for (const s of await this.deps.store.listPushSubscriptions()) {
      const role = active.get(s.owner_id);
      if (!role) {
        // The token was revoked: its subscriptions go with it.
        if (await this.deps.store.removePushSubscription(s.id))
          await this.audit('push_subscription_removed', s.id, { service: serviceOf(s.endpoint), why: 'its token was revoked' });
        continue;
      }
      if (!allows(role, 'approver') || seen.has(s.endpoint)) continue;
      seen.add(s.endpoint);
      out.push(s);
    }
    return out;
  }

  private async deliver(job: Job): Promise<void> {
    if (this.stop.signal.aborted) return;
    const subs = await this.recipients();
    if (subs.length === 0) return;
    const keys = await this.vapidKeys();
    const ttl = await this.ttlOf(job);
    const payload = JSON.stringify(job.message);
    let next = 0;
    const lane = async () => {
      for (let i = next++; i < subs.length; i = next++) await this.send(subs[i], job, payload, ttl, keys);
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, subs.length) }, lane));
  }

  /** Seconds a push service keeps the push for a browser that is offline: a card's until it expires (none after). */
  private async ttlOf(job: Job): Promise<number> {
    if (!job.approvalId) return QUESTION_TTL_S;
    const a = await this.deps.store.getApproval(job.approvalId).catch(() => undefined);
    if (!a) return QUESTION_TTL_S;
    return Math.min(QUESTION_TTL_S * 28, Math.max(0, Math.floor((Date.parse(a.expires_at) - this.now().getTime()) / 1000)));
  }

  private async send(s: PushSubscriptionRecord, job: Job, payload: string, ttl: number, keys: VapidKeys): Promise<void> {
    const service = serviceOf(s.endpoint);
    if (this.stop.signal.aborted)
      return this.audit('push_failed', job.subject, { subscription: s.id, service, status: 'not sent: the server stopped' });
    const where = endpointProblem(s.endpoint, this.allowTestEndpoints);
    if (where) return this.audit('push_failed', job.subject, { subscription: s.id, service, status: `not sent: ${where}` });
    const lib = this.need();
    const req = lib.generateRequestDetails({ endpoint: s.endpoint, keys: { p256dh: s.p256dh, auth: s.auth } }, payload, {
      vapidDetails: { subject: this.subject as string, publicKey: keys.public_key, privateKey: keys.private_key },
      TTL: ttl,
      urgency: 'high',
      contentEncoding: 'aes128gcm',
    });
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (k.toLowerCase() !== 'content-length') headers[k] = String(v);
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), SEND_TIMEOUT_MS);
    const onStop = () => ac.abort();
    this.stop.signal.addEventListener('abort', onStop, { once: true });
    let status: number | string;
    try {
      const res = await (this.deps.fetch ?? fetch)(s.endpoint, {
        method: 'POST',
        headers,
        body: req.body ? new Uint8Array(req.body) : undefined,
        signal: ac.signal,
        redirect: 'manual',
      });
      res.body?.cancel().catch(() => {});
      status = res.status;
    } catch (err) {
      status = ac.signal.aborted
        ? this.stop.signal.aborted
          ? 'aborted: the server stopped'
          : `timed out after ${SEND_TIMEOUT_MS} ms`
        : `network error: ${errorText(err)}`;
    } finally {
      clearTimeout(timer);
      this.stop.signal.removeEventListener('abort', onStop);
    }
    if (typeof status === 'number' && status >= 200 && status < 300)
      return this.audit('push_sent', job.subject, { subscription: s.id, service, status });
    await this.audit('push_failed', job.subject, { subscription: s.id, service, status });
    if (status === 404 || status === 410) {
      // The browser unsubscribed (or the service forgot it): it will never be delivered again.
      if (await this.deps.store.removePushSubscription(s.id))
        await this.audit('push_subscription_removed', s.id, { service, why: `the push service answered ${status}` });
    }
  }

  /** The id of `who`'s token (the active one with that name). */
  private ownerId(who: Who): string {
    const id = this.maybeOwnerId(who);
    if (!id) throw new KeelError('not_found', `no active token ${who.name}`);
    return id;
  }

  private maybeOwnerId(who: Who): string | undefined {
    return this.deps.tokens.list().find((t) => !t.revoked_at && t.name === who.name)?.id;
  }

  private need(): Lib {
    if (!this.lib || !this.subject) throw new KeelError('config', this.whyOff() as string);
    return this.lib;
  }

  private async audit(action: string, subject: string, detail: Record<string, unknown>): Promise<void> {
    try {
      await this.deps.store.audit({ at: this.now().toISOString(), actor: 'keel', action, subject, detail: JSON.stringify(detail) });
    } catch (err) {
      this.warn(`keel: push: could not audit ${action}: ${errorText(err)}`);
    }
  }

  private now(): Date {
    return this.deps.now ? this.deps.now() : new Date();
  }

  private warn(line: string): void {
    try {
      (this.deps.log ?? ((s: string) => process.stderr.write(`${s}\n`)))(line);
    } catch {
      // Nowhere left to say it.
    }
  }
}

function errorText(err: unknown): string {
  const e = err as { message?: unknown; cause?: { code?: unknown } } | null;
  const text = typeof e?.cause?.code === 'string' ? e.cause.code : typeof e?.message === 'string' ? e.message : String(err);
  return truncate(text, 300);
}
