/**
 * How the PostgreSQL store writes a value into a JSONB column and reads it back whole.
 * Never loses a character: a JSON text JSONB cannot hold (a NUL) is wrapped, not altered.
 */

/** Wraps a JSON text PostgreSQL's JSONB cannot hold (a NUL character), so it round-trips whole. */
const NUL_WRAP = 'keel:json-with-nul';

/** The JSON text to store for a value (see NUL_WRAP). Throws, like JSON.stringify, on what JSON cannot hold. */
export function jsonb(v: unknown): string {
  const text = JSON.stringify(v);
  if (text === undefined) throw new TypeError('a value JSON cannot hold');
  return text.includes('\\u0000') ? JSON.stringify({ [NUL_WRAP]: text }) : text;
}

/** A value read back from a JSONB column (already parsed by pg). */
export function unjsonb<T>(v: unknown): T {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && keys[0] === NUL_WRAP && typeof o[NUL_WRAP] === 'string') return JSON.parse(o[NUL_WRAP] as string) as T;
  }
  return v as T;
}

/** A JSON array of values, each as jsonb writes it. */
export const jsonArray = (xs: readonly unknown[]) => `[${xs.map(jsonb).join(',')}]`;
