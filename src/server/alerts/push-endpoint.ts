/**
 * Where a Web Push may go (S7), and the one POST that takes it there. An endpoint is an `https:` URL
 * on port 443 whose host is a name, not an IP address nor this machine (a push service; Keel POSTs
 * to it). The host is compared as a resolver sees it — lower case, percent-decoded and IDN in
 * punycode (the URL parser's work), trailing dots dropped — so `localhost.`, `foo.localhost.`,
 * `localhost%2e` and this machine's own name are all refused. A name proves nothing about where it
 * points (`metadata.google.internal`, `10.0.0.1.nip.io`): at send time the host is resolved, every
 * address it has must be a public unicast one (no loopback, private, link-local, CGNAT, unspecified,
 * multicast, reserved nor metadata address), and the connection goes to the address that was
 * checked — never resolved again, so a name that changes its answer between the check and the
 * connection (DNS rebinding) changes nothing — with the name kept for TLS (SNI, the certificate) and
 * the Host header. With KEEL_PUSH_TEST_ENDPOINTS=1 (tests), `http:` or `https:` on 127.0.0.1, [::1]
 * or localhost, any port, is allowed too, and a loopback address at send time; nothing else.
 * Never connects to an address it did not check, and never follows a redirect.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { hostname as machineName } from 'node:os';

export const MAX_ENDPOINT_CHARS = 2048;

/** A name's addresses, as dns.lookup with `all` gives them. */
export type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

export const systemLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

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
export function postTo(t: PushTarget, headers: Record<string, string>, body: Buffer | undefined, signal: AbortSignal): Promise<number> {
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
