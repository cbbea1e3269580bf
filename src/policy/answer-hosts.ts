/**
 * O5: the outside hosts a model's text names — the hosts of the addresses in it that a browser or a
 * Markdown renderer could fetch or link to, which the user never wrote themselves. After a run read
 * words from outside the user, an app that renders the answer uses them to keep those addresses
 * inert (no remote image, no link that follows itself). Pure: no I/O, never fetches or resolves a
 * name; the user's words are the run's own record of them (own-words.ts), never the model's.
 */
import { domainToUnicode } from 'node:url';
import type { OwnWords } from './own-words.js';

/** Schemes whose addresses a browser fetches by host (a `mailto:` or `tel:` link fetches nothing). */
const FETCHED = new Set(['http:', 'https:', 'ws:', 'wss:', 'ftp:']);

/**
 * Where an address may start in text: a fetched scheme (`https:`, with or without slashes, forward or back:
 * browsers read `https:\\host` and `https:host` as `https://host`), a protocol-relative `//host`, a
 * `www.` name (GFM's autolinks), and a bare `name.tld/` or `name.tld?` (a linkifier's fuzzy links).
 * What follows runs to the next space, quote, angle bracket or backtick.
 */
const ADDRESS =
  /(?:\b(?:https?|wss?|ftp):[\\/]*|(?<![\w:/\\.-])[\\/]{2}|\bwww\.|(?<![\p{L}\p{N}._%+@/\\-])(?=(?:[\p{L}\p{N}-]+\.)+\p{L}{2,}(?::\d+)?[/?#]))[^\s<>"'`]+/giu;

/** Character references a Markdown renderer or an HTML attribute decodes (`&#58;`, `&#x2F;`, `&colon;`, `&sol;`, …). */
const REFERENCE = /&(?:#(\d{1,7})|#x([0-9a-f]{1,6})|(colon|sol|period|bsol|commat|amp|quot|lt|gt|num|quest|equals|percnt));?/gi;
const NAMED: Record<string, string> = {
  colon: ':',
  sol: '/',
  period: '.',
  bsol: '\\',
  commat: '@',
  amp: '&',
  quot: '"',
  lt: '<',
  gt: '>',
  num: '#',
  quest: '?',
  equals: '=',
  percnt: '%',
};

function decodeReferences(text: string): string {
  return text.replace(REFERENCE, (m, dec?: string, hex?: string, name?: string) => {
    const code = dec ? Number(dec) : hex ? Number.parseInt(hex, 16) : undefined;
    if (code !== undefined) return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
    return NAMED[(name ?? '').toLowerCase()] ?? m;
  });
}

/**
 * The host an address reaches as a browser's URL parser gives it (`URL.hostname`: lower case, an
 * international name in its `xn--` form, so a look-alike shows as what it is and an app compares
 * like with like), or undefined when it fetches none.
 */
function hostOf(candidate: string): string | undefined {
  // Trailing punctuation closes a sentence or a Markdown link, not the address.
  const raw = candidate.replace(/[).,;:!?\]}*_~]+$/u, '');
  const text = /^[a-z][a-z0-9+.-]*:/i.test(raw) ? raw : /^[\\/]{2}/.test(raw) ? `https:${raw}` : `https://${raw}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (!FETCHED.has(url.protocol) || !url.hostname) return undefined;
  return url.hostname.replace(/\.$/, '');
}

/** Whether the user wrote `name` as a whole, between characters that are not part of a name. */
function written(name: string, own: OwnWords): boolean {
  for (let at = own.text.indexOf(name); at >= 0; at = own.text.indexOf(name, at + 1)) {
    const before = own.text[at - 1] ?? '';
    const after = own.text[at + name.length] ?? '';
    if (!/[\p{L}\p{N}-]/u.test(before) && !/[\p{L}\p{N}-]/u.test(after)) return true;
  }
  return false;
}

/**
 * Whether the user wrote this host themselves, as it is or in Unicode (`www.` aside): as a whole
 * name, or as the end of one they wrote (`example.com` of their `docs.example.com`).
 */
function hostIsOwn(host: string, own: OwnWords): boolean {
  const ascii = host.replace(/^www\./, '');
  const unicode = domainToUnicode(ascii).normalize('NFKC').toLowerCase();
  return written(ascii, own) || (unicode !== '' && unicode !== ascii && written(unicode, own));
}

/** Every host the text's addresses reach, in order of first mention (the text as written and with its character references decoded). */
export function hostsNamed(text: string): string[] {
  const out: string[] = [];
  const decoded = decodeReferences(text);
  for (const t of decoded === text ? [text] : [text, decoded])
    for (const m of t.normalize('NFKC').matchAll(ADDRESS)) {
      const host = hostOf(m[0]);
      if (host && !out.includes(host)) out.push(host);
    }
  return out;
}

/**
 * O5: the hosts `text` names that are not the user's own words — a host the user wrote (`open
 * docs.example.com/pricing`) is theirs; any other, a subdomain of theirs included (a subdomain can
 * carry data), is listed. In order of first mention, at most `limit`.
 */
export function outsideHosts(text: string, own: OwnWords, limit = 50): string[] {
  return hostsNamed(text)
    .filter((h) => !hostIsOwn(h, own))
    .slice(0, limit);
}
