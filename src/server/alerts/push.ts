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
 * this machine (a push service; Keel POSTs to it). The host is compared as a resolver sees it —
 * lower case, percent-decoded and IDN in punycode (the URL parser's work), trailing dots dropped —
 * so `localhost.`, `foo.localhost.`, `localhost%2e` and this machine's own name are all refused.
 * A name proves nothing about where it points (`metadata.google.internal`, `10.0.0.1.nip.io`): at
 * send time the host is resolved, every address it has must be a public unicast one (no loopback,
 * private, link-local, CGNAT, unspecified, multicast, reserved nor metadata address), and the
 * connection goes to the address that was checked — never resolved again, so a name that changes
 * its answer between the check and the connection (DNS rebinding) changes nothing — with the name
 * kept for TLS (SNI, the certificate) and the Host header. With KEEL_PUSH_TEST_ENDPOINTS=1 (tests),
 * `http:` or `https:` on 127.0.0.1, [::1] or localhost, any port, is allowed too, and a loopback
 * address at send time; nothing else.
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
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { hostname as machineName } from 'node:os';
import type * as WebPush from 'web-push';
import { z } from 'zod';
import { mayAnswer } from '../../approvals/who.js';
import type { LoopEvent, Pause, PushSubscriptionRecord, Store, VapidKeys } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { optionalImport } from '../../util/optional.js';
import { storableText, truncate } from '../../util/text.js';
import { allows, type Role, type Tokens } from '../access/tokens.js';

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
  /** Every address a host name has (default: the system's resolver, dns.lookup with all). */
  lookup?: Lookup;
  now?: () => Date;
}

/** A name's addresses, as dns.lookup with `all` gives them. */
export type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

const systemLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

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

/** Loopback hosts KEEL_PUSH_TEST_ENDPOINTS=1 allows, as hostOf gives them. */
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
/** Names for this machine or its own network, never a push service on the internet (RFC 6761, 6762, 8375; ICANN's .internal). */
const LOCAL_SUFFIXES = ['localhost', 'local', 'localdomain', 'internal', 'home.arpa'];

/**
 * The host of `u` as a resolver sees it: the URL parser has already lowered its case,
 * percent-decoded it and turned an IDN into punycode; the trailing dots of a fully qualified name
 * (`localhost.`) and an IPv6 address's brackets are dropped here.
 */
export function hostOf(u: URL): string {
  return u.hostname
    .toLowerCase()
    .replace(/\.+$/, '')
    .replace(/^\[(.*)\]$/, '$1');
}

/** This machine's own names (its host name, and the first label of it), as hostOf gives them. */
function ownNames(): Set<string> {
  const own = machineName().toLowerCase().replace(/\.+$/, '');
  return new Set([own, own.split('.')[0]].filter((x) => x !== ''));
}

/**
 * Why `endpoint` may not be a push endpoint, or undefined when it may: an `https:` URL on port 443
 * whose host is a name on the internet (not an IP address, not localhost nor any name of this
 * machine or its local network, however spelled), with no user or password; with `allowTest`, also
 * `http:` or `https:` on 127.0.0.1, [::1] or localhost, on any port. Where the name points is
 * checked when a push is sent (publicAddress).
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
  const host = hostOf(u);
  if (allowTest && LOOPBACK.has(host) && (u.protocol === 'http:' || u.protocol === 'https:')) return undefined;
  if (u.protocol !== 'https:') return 'a push endpoint is an https:// URL';
  if (u.port !== '' && u.port !== '443') return 'a push endpoint is on port 443';
  if (host === '' || LOCAL_SUFFIXES.some((x) => host === x || host.endsWith(`.${x}`)) || ownNames().has(host))
    return 'a push endpoint is a push service, not this machine';
  if (isIP(host) || /^[\d.]+$/.test(host) || /^0x/i.test(host)) return 'a push endpoint names its host; an IP address is refused';
  if (!host.includes('.')) return 'a push endpoint names a host on the internet';
  return undefined;
}

/** IPv4 ranges no push service is on: [first address, prefix length, what it is]. */
const V4_REFUSED: [string, number, string][] = [
  ['0.0.0.0', 8, 'an unspecified address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a shared (CGNAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address (where cloud metadata services answer)'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'a reserved address'],
  ['192.0.2.0', 24, 'a reserved address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a reserved address'],
  ['198.51.100.0', 24, 'a reserved address'],
  ['203.0.113.0', 24, 'a reserved address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

function v4Number(ip: string): number {
  return ip.split('.').reduce((n, x) => n * 256 + Number(x), 0);
}

/** The 8 groups of an IPv6 address, as numbers (a dotted IPv4 tail counted as two). */
function v6Groups(ip: string): number[] {
  let s = ip.replace(/%.*$/, '');
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (tail) {
    const n = v4Number(tail[1]);
    s = `${s.slice(0, -tail[1].length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, rest] = s.split('::');
  const a = head ? head.split(':') : [];
  const b = rest === undefined ? [] : rest ? rest.split(':') : [];
  const fill = rest === undefined ? [] : Array(8 - a.length - b.length).fill('0');
  return [...a, ...fill, ...b].map((g) => Number.parseInt(g, 16));
}

/**
 * Why a push may not go to `ip`, or undefined when it may (a public unicast address). `loopback`
 * (KEEL_PUSH_TEST_ENDPOINTS=1) lets 127.0.0.0/8 and ::1 through, nothing else. An IPv6 address
 * that carries an IPv4 one (::ffff:10.0.0.1, 64:ff9b::a00:1) is judged by the IPv4 one.
 */
export function addressProblem(ip: string, loopback = false): string | undefined {
  const kind = isIP(ip);
  if (kind === 4) {
    const n = v4Number(ip);
    for (const [first, bits, what] of V4_REFUSED) {
      const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
      if ((n & mask) >>> 0 === v4Number(first)) return loopback && what === 'a loopback address' ? undefined : what;
    }
    return undefined;
  }
  if (kind !== 6) return 'not an IP address';
  const g = v6Groups(ip);
  const zeros = (k: number) => g.slice(0, k).every((x) => x === 0);
  // IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96, deprecated) and NAT64 (64:ff9b::/96).
  if ((zeros(5) && (g[5] === 0xffff || g[5] === 0)) || (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0))) {
    if (zeros(7) && g[7] === 0) return 'an unspecified address';
    if (zeros(7) && g[7] === 1) return loopback ? undefined : 'a loopback address';
    return addressProblem(`${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`, loopback);
  }
  if ((g[0] & 0xfe00) === 0xfc00) return 'a private address (where cloud metadata services answer too)';
  if ((g[0] & 0xffc0) === 0xfe80) return 'a link-local address';
  if ((g[0] & 0xffc0) === 0xfec0) return 'a private address';
  if ((g[0] & 0xff00) === 0xff00) return 'a multicast address';
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'a reserved address';
  if (g[0] === 0x0100 && g.slice(1, 4).every((x) => x === 0)) return 'a reserved address';
  return undefined;
}

/** Where a push connects: the name (for TLS and Host) and the one address it was checked to have. */
export interface PushTarget {
  url: URL;
  host: string;
  address: string;
  family: 4 | 6;
}

/**
 * Resolves `endpoint`'s host and checks every address it has (an IP address is its own): the first
 * one, when all are public, is where the push goes; otherwise a sentence saying why not. A name
 * with one private address among public ones is refused: which one a connection takes is not ours
 * to choose.
 */
export async function publicAddress(
  endpoint: string,
  lookup: Lookup,
  loopback: boolean,
): Promise<{ target: PushTarget } | { problem: string }> {
  const url = new URL(endpoint);
  const host = hostOf(url);
  const found = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host);
  if (found.length === 0) return { problem: `${host} has no address` };
  for (const a of found) {
    const why = addressProblem(a.address, loopback);
    if (why) return { problem: `${host} resolves to ${a.address}, ${why}` };
  }
  const first = found[0];
  return { target: { url, host, address: first.address, family: isIP(first.address) === 6 ? 6 : 4 } };
}

/** A lookup for one connection that answers only the address already checked: no second resolution. */
function pinned(t: PushTarget): LookupFunction {
  return ((_host: string, options: { all?: boolean }, cb: (...a: unknown[]) => void) => {
    if (options?.all) cb(null, [{ address: t.address, family: t.family }]);
    else cb(null, t.address, t.family);
  }) as unknown as LookupFunction;
}

/** POSTs to `t` (node:http or node:https, no agent, no redirect followed) and gives the status. */
function postTo(t: PushTarget, headers: Record<string, string>, body: Buffer | undefined, signal: AbortSignal): Promise<number> {
  const https = t.url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      {
        method: 'POST',
        hostname: t.host,
        port: t.url.port || undefined,
        path: `${t.url.pathname}${t.url.search}`,
        headers: { ...headers, 'content-length': String(body?.length ?? 0) },
        lookup: pinned(t),
        // TLS checks the certificate against the name, and says the name (SNI), not the address.
        ...(https && !isIP(t.host) ? { servername: t.host } : {}),
        agent: false,
        signal,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
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
