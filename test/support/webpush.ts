/**
 * A browser's side of Web Push, for tests, written from the RFCs with node:crypto only (not web-push's
 * code): a subscription's keys (RFC 8291 §2: an ECDH P-256 key pair and a 16-byte auth secret), the
 * decryption of an `aes128gcm` push message (RFC 8188 records, RFC 8291 §3.3–3.4 key derivation),
 * the check of a VAPID `Authorization` header (RFC 8292: an ES256 JWT and the key it names), and a
 * local push service: an HTTP server on 127.0.0.1 that records what it is sent.
 */
import { createDecipheriv, createECDH, createPublicKey, type ECDH, hkdfSync, randomBytes, verify } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BrowserKeys {
  ecdh: ECDH;
  /** What the browser's PushSubscription.toJSON().keys holds. */
  keys: { p256dh: string; auth: string };
}

/** A new subscription's keys, as a browser makes them. */
export function browserKeys(): BrowserKeys {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = randomBytes(16);
  return { ecdh, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') } };
}

const hkdf = (salt: Buffer, ikm: Buffer, info: Buffer, length: number) => Buffer.from(hkdfSync('sha256', ikm, salt, info, length));

/**
 * Decrypts an `aes128gcm` Web Push body (RFC 8291 §4 with RFC 8188): the header is salt (16) ‖ rs (4)
 * ‖ idlen (1) ‖ keyid (the application server's ephemeral public key); each record of rs bytes
 * ends with a 16-byte tag and its plaintext with a delimiter (2 on the last record, 1 before), then
 * zero padding. Throws when anything does not authenticate.
 */
export function decryptPush(body: Buffer, browser: BrowserKeys): string {
  if (body.length < 21) throw new Error('too short for an aes128gcm header');
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20];
  const asPublic = body.subarray(21, 21 + idlen);
  if (idlen !== 65 || asPublic[0] !== 4) throw new Error(`keyid is not an uncompressed P-256 key (idlen ${idlen})`);
  if (rs < 18) throw new Error(`record size ${rs} is too small`);
  const uaPublic = browser.ecdh.getPublicKey();
  const authSecret = Buffer.from(browser.keys.auth, 'base64url');
  // RFC 8291 §3.3: the ECDH secret, mixed with the auth secret, bound to both public keys.
  const ecdhSecret = browser.ecdh.computeSecret(asPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0', 'latin1'), uaPublic, asPublic]);
  const ikm = hkdf(authSecret, ecdhSecret, keyInfo, 32);
  // RFC 8188 §2.2–2.3: the content encryption key and the nonce base.
  const cek = hkdf(salt, ikm, Buffer.from('Content-Encoding: aes128gcm\0', 'latin1'), 16);
  const nonceBase = hkdf(salt, ikm, Buffer.from('Content-Encoding: nonce\0', 'latin1'), 12);
  const records = body.subarray(21 + idlen);
  const out: Buffer[] = [];
  for (let seq = 0, at = 0; at < records.length; seq++, at += rs) {
    const record = records.subarray(at, Math.min(at + rs, records.length));
    const last = at + rs >= records.length;
    const nonce = Buffer.from(nonceBase);
    // The record's sequence number, XORed into the nonce's low end (seq stays far below 2^32 here).
    nonce.writeUInt32BE((nonce.readUInt32BE(8) ^ seq) >>> 0, 8);
    const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
    decipher.setAuthTag(record.subarray(record.length - 16));
    const plain = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
    let end = plain.length - 1;
    while (end >= 0 && plain[end] === 0) end--;
    if (end < 0 || plain[end] !== (last ? 2 : 1)) throw new Error(`record ${seq}: no padding delimiter`);
    out.push(plain.subarray(0, end));
  }
  return Buffer.concat(out).toString('utf8');
}

/**
 * Checks a VAPID Authorization header (`vapid t=JWT, k=KEY`, RFC 8292 §3): the JWT is ES256, signed
 * by KEY, for `audience` (the endpoint's origin), not expired. Returns KEY and the JWT's claims.
 */
export function checkVapid(header: string | undefined, audience: string): { key: string; claims: Record<string, unknown> } {
  const m = /^vapid\s+t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header ?? '');
  if (!m) throw new Error(`not a VAPID Authorization header: ${header}`);
  const [, jwt, key] = m;
  const [h, p, sig] = jwt.split('.');
  const head = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
  if (head.alg !== 'ES256') throw new Error(`alg ${head.alg}`);
  const raw = Buffer.from(key, 'base64url');
  const publicKey = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33, 65).toString('base64url') },
    format: 'jwk',
  });
  const ok = verify('sha256', Buffer.from(`${h}.${p}`), { key: publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(sig, 'base64url'));
  if (!ok) throw new Error('the VAPID JWT signature does not verify with its k');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
  if (claims.aud !== audience) throw new Error(`aud ${claims.aud}, expected ${audience}`);
  if (typeof claims.exp !== 'number' || claims.exp * 1000 < Date.now()) throw new Error('expired');
  return { key, claims };
}

export interface Delivered {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * A push service on 127.0.0.1 (or another loopback address, `host`): each request is recorded by
 * path; `answer(path)` is the status (201 by default, as push services answer), or 'hang' to never answer.
 */
export async function pushService(
  answer: (path: string) => number | 'hang' = () => 201,
  host = '127.0.0.1',
): Promise<{
  url: string;
  got: Delivered[];
  to(path: string): Delivered[];
  close(): Promise<void>;
}> {
  const got: Delivered[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      got.push({ path, headers: req.headers, body: Buffer.concat(chunks) });
      const a = answer(path);
      if (a !== 'hang') res.writeHead(a).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    got,
    to: (path) => got.filter((g) => g.path === path),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
