/**
 * Web Push for the console (S7): a new card or question buzzes the phones and browsers of the people
 * who may answer it, without the console being open.
 *
 * Who: a subscription belongs to the token that made it (its id; the name is for people). Only an
 * approver or an admin may subscribe — they are who answer cards and questions; a viewer, who cannot
 * answer, is refused. A push goes to every subscription whose token is still active and still an
 * approver or admin when the card comes (a revoked token's subscriptions are dropped then). At most
 * MAX_SUBSCRIPTIONS_PER_OWNER per token. A card routed to groups (A10) goes only to the subscriptions
 * of tokens that may answer it (`mayAnswer`: a token in one of its groups).
 *
 * What is sent (push-message.ts): a card's title with the argument text in it masked, or a
 * question's fixed words, a fixed body and a link on the console — encrypted for the browser
 * (RFC 8291, aes128gcm) and signed with the server's VAPID key (RFC 8292). Never the arguments, the
 * card's lines, the request, nor anything a model wrote.
 *
 * Where (push-endpoint.ts): an `https:` endpoint on port 443 naming a push service on the internet,
 * its name resolved at each send and the push sent only to a public address that was checked.
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
import { mayAnswer } from '../../approvals/who.js';
import type { LoopEvent, PushSubscriptionRecord, Store, VapidKeys } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { optionalImport } from '../../util/optional.js';
import { truncate } from '../../util/text.js';
import { allows, type Role, type Tokens } from '../access/tokens.js';
import { endpointProblem, keysProblem, type Lookup, MAX_ENDPOINT_CHARS, postTo, publicAddress, systemLookup } from './push-endpoint.js';
import { type PushMessage, plainTitle, pushMessage } from './push-message.js';

export {
  addressProblem,
  endpointProblem,
  hostOf,
  keysProblem,
  type Lookup,
  MAX_ENDPOINT_CHARS,
  type PushTarget,
  publicAddress,
} from './push-endpoint.js';
export {
  CARD_BODY,
  CONFIRM_TITLE,
  MAX_TITLE_CHARS,
  maskArguments,
  type PushMessage,
  plainTitle,
  pushMessage,
  QUESTION_BODY,
  QUESTION_TITLE,
} from './push-message.js';

/** Subscriptions one token may hold (a phone, a laptop, a few browsers). */
export const MAX_SUBSCRIPTIONS_PER_OWNER = 10;
export const MAX_LABEL_CHARS = 80;
/** Cards waiting to be pushed, beyond the one being sent; a card that finds the queue full is not pushed. */
export const MAX_QUEUE = 100;
/** One POST to a push service. */
export const SEND_TIMEOUT_MS = 10_000;
/** Sends to one card's subscriptions at once. */
const PARALLEL = 4;
/** How long a push service keeps an undelivered question's push (a card's lasts until the card expires). */
const QUESTION_TTL_S = 24 * 3600;

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
  /** Every address a host name has (default: the system's resolver, dns.lookup with all). */
  lookup?: Lookup;
  now?: () => Date;
}

interface Job {
  /** The card's id, or the run's for a question: the audit rows' subject. */
  subject: string;
  message: PushMessage;
  /** A card's id: its push lives until the card expires (read from the store by the sender, off the run's path). */
  approvalId?: string;
  /** A10: the card's groups: only their tokens' subscriptions get it. */
  approvers?: readonly string[];
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
      const card = e.pause.kind === 'approval' ? e.pause.card : undefined;
      this.queue.push({
        subject,
        message,
        approvalId: e.pause.kind === 'approval' ? e.pause.approval_id : undefined,
        ...(card?.approvers?.length ? { approvers: [...card.approvers] } : {}),
      });
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

  /**
   * The subscriptions a push goes to: of active approver or admin tokens, one per endpoint — for a
   * card routed to groups, of the tokens that may answer it (A10). Revoked tokens' are dropped.
   */
  private async recipients(approvers: readonly string[] = []): Promise<PushSubscriptionRecord[]> {
    const tokens = this.deps.tokens.list().filter((t) => !t.revoked_at);
    const active = new Map(tokens.map((t) => [t.id, t.role] as const));
    // An unrouted card (no groups given): every approver's; a card with approvers: only theirs.
    const routed = approvers.length ? { approvers: [...approvers] } : {};
    const answers = new Set(
      tokens.filter((t) => mayAnswer(routed, { name: t.name, role: t.role, groups: t.groups, kind: 'token' })).map((t) => t.id),
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
      if (!allows(role, 'approver') || !answers.has(s.owner_id) || seen.has(s.endpoint)) continue;
      seen.add(s.endpoint);
      out.push(s);
    }
    return out;
  }

  private async deliver(job: Job): Promise<void> {
    if (this.stop.signal.aborted) return;
    const subs = await this.recipients(job.approvers);
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
      // S7: where the name points now, checked; the push goes to that address and no other.
      const vetted = await abortable(publicAddress(s.endpoint, this.deps.lookup ?? systemLookup, this.allowTestEndpoints), ac.signal);
      status =
        'problem' in vetted
          ? `not sent: ${vetted.problem}`
          : await postTo(vetted.target, headers, req.body ? Buffer.from(req.body) : undefined, ac.signal);
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

/** `p`, or a rejection when `signal` aborts first (a resolver cannot be stopped, only stopped waiting for). */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function errorText(err: unknown): string {
  const e = err as { message?: unknown; cause?: { code?: unknown } } | null;
  const text = typeof e?.cause?.code === 'string' ? e.cause.code : typeof e?.message === 'string' ? e.message : String(err);
  return truncate(text, 300);
}
