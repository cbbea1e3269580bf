/** `s` cut to `n` characters (never inside a surrogate pair, see cutText), with an ellipsis when cut. */
export function truncate(s: string, n: number): string {
  return s.length > n ? `${cutText(s, n)}…` : s;
}

/** The closest names to an unknown one (edit distance), for an error that suggests what was meant (R24). */
export function closestNames(name: string, names: Iterable<string>, n = 3): string[] {
  const scored: [string, number][] = [];
  for (const c of names) scored.push([c, distance(name, c)]);
  scored.sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]));
  return scored.slice(0, n).map((s) => s[0]);
}

/** The one name close enough to be what was meant ("confrim" → "confirm"), if there is one. */
export function nearestName(name: string, names: Iterable<string>, maxDistance = 2): string | undefined {
  const [best] = closestNames(name, names, 1);
  return best !== undefined && distance(name, best) <= Math.min(maxDistance, Math.ceil(name.length / 3)) ? best : undefined;
}

function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0];
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j];
      prev[j] = Math.min(prev[j] + 1, prev[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length];
}

/**
 * What no store can hold: a NUL character (PostgreSQL's text and JSONB refuse it) and a UTF-16
 * surrogate without its pair (JSONB refuses it, and UTF-8 has no encoding for it: SQLite would
 * silently turn it into U+FFFD). Matched on code units, so a whole pair never matches.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what this looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Whether `s` holds nothing storableText would replace: no lone surrogate (String#isWellFormed, in
 * constant time on a string of one-byte characters) and no NUL.
 */
export function isStorable(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed() && !s.includes('\0');
}

/**
 * `s` as every store holds it the same way: each NUL and each lone surrogate replaced with U+FFFD
 * (the replacement character), and how many were replaced (0: `s` itself, unchanged).
 */
export function storableText(s: string): { text: string; replaced: number } {
  // Fast path: most text has no NUL and no lone surrogate.
  if (isStorable(s)) return { text: s, replaced: 0 };
  let replaced = 0;
  const text = s.replace(UNSTORABLE, () => {
    replaced++;
    return '\uFFFD';
  });
  return { text, replaced };
}

/**
 * A JSON-like value (tool arguments) with every string and key made storable (storableText): the
 * same value when nothing needed replacing, else a copy, frozen like the original. The caller
 * bounds the value's depth first (bounds.ts): this walks it recursively.
 */
export function storableValue<T>(value: T): { value: T; replaced: number } {
  // Fast path, taken on every model reply: a value with nothing to replace is returned as it is,
  // checked without copying anything.
  if (!holdsUnstorable(value)) return { value, replaced: 0 };
  let replaced = 0;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const r = storableText(v);
      replaced += r.replaced;
      return r.text;
    }
    if (v === null || typeof v !== 'object') return v;
    const before = replaced;
    if (Array.isArray(v)) {
      const out = v.map(walk);
      return replaced === before ? v : Object.isFrozen(v) ? Object.freeze(out) : out;
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const key = storableText(k);
      replaced += key.replaced;
      out[key.text] = walk(x);
    }
    return replaced === before ? v : Object.isFrozen(v) ? Object.freeze(out) : out;
  };
  const out = walk(value) as T;
  return { value: out, replaced };
}

/** Whether any string or key in a JSON-like value holds a NUL or a lone surrogate (isStorable). */
export function holdsUnstorable(v: unknown): boolean {
  if (typeof v === 'string') return !isStorable(v);
  if (v === null || typeof v !== 'object') return false;
  if (Array.isArray(v)) {
    for (const x of v) if (holdsUnstorable(x)) return true;
    return false;
  }
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    if (!isStorable(k) || holdsUnstorable((v as Record<string, unknown>)[k])) return true;
  }
  return false;
}

/**
 * `s` cut to at most `max` UTF-16 code units without cutting a character in two: a surrogate pair
 * (an emoji, say) that would straddle the cut is left out whole, so the cut never makes a lone
 * surrogate no store can hold.
 */
export function cutText(s: string, max: number): string {
  if (s.length <= max) return s;
  const end = max > 0 && isHighSurrogate(s.charCodeAt(max - 1)) && isLowSurrogate(s.charCodeAt(max)) ? max - 1 : max;
  return s.slice(0, Math.max(0, end));
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;
