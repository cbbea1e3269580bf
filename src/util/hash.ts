/**
 * The one way Keel hashes a text: `crypto.hash` (Node 20.12+) where there is one, else createHash.
 * The one-shot form builds no Hash object — a createHash's first use in a process loads and compiles
 * node's stream classes behind it (~1 ms of a cold first run, issue 49), and each later one costs
 * about three times the one-shot's for a small text.
 */
import * as crypto from 'node:crypto';

type Algorithm = 'sha1' | 'sha256';

export const hashHex: (algorithm: Algorithm, text: string) => string =
  typeof crypto.hash === 'function'
    ? (algorithm, text) => crypto.hash(algorithm, text, 'hex')
    : (algorithm, text) => crypto.createHash(algorithm).update(text).digest('hex');

/** sha1 of a text, hex: for cache keys and short fingerprints (not for secrets). */
export const sha1Hex = (text: string): string => hashHex('sha1', text);
