/**
 * Untrusted text made storable where it enters a run (issue 27): a model's reply (its text, call
 * ids, names and arguments), a tool's output, the user's request and answers. Each NUL character
 * and each lone UTF-16 surrogate becomes U+FFFD (util/text.ts `storableText`), and the run notes
 * how many, so SQLite and PostgreSQL hold the same text, and a save never fails on it (a JSONB
 * column refuses a lone surrogate: the save would fail again at every takeover). The stores
 * themselves change nothing.
 */
import type { ToolCall } from '../types/index.js';
import { holdsUnstorable, isStorable, storableText, storableValue } from '../util/text.js';

/** The run's note for text made storable: what, how many, and with what. */
export function unstorableNote(what: string, replaced: number): string {
  return `${what}: ${replaced} character${replaced === 1 ? '' : 's'} no store can hold (NUL, or half of a UTF-16 surrogate pair) replaced with U+FFFD`;
}

/**
 * `xs` with `f` applied to each element, as `map` does — but `xs` itself when `f` gave back every
 * element as it was: a model's reply passes admission and storable checks each step, nearly always
 * unchanged, and an array made anew per check cost each step its allocation (and, holding another
 * kind of elements than the model's own, a deoptimised loop while the engine warmed up).
 */
export function mapSame<T>(xs: T[], f: (x: T) => T): T[] {
  let out: T[] | undefined;
  for (let i = 0; i < xs.length; i++) {
    const y = f(xs[i]);
    if (out) out.push(y);
    else if (y !== xs[i]) {
      out = xs.slice(0, i);
      out.push(y);
    }
  }
  return out ?? xs;
}

/** A model's reply: its text and each call's id, name, arguments (already bounded: admitReply) and raw argument text. */
export function storableReply(text: string, calls: ToolCall[]): { text: string; calls: ToolCall[]; replaced: number } {
  const t = storableText(text);
  let replaced = t.replaced;
  const out = mapSame(calls, (c) => {
    // Fast path, taken on nearly every call: nothing to replace, nothing made.
    if (isStorable(c.id) && isStorable(c.name) && (c.raw_args === undefined || isStorable(c.raw_args)) && !holdsUnstorable(c.args))
      return c;
    const id = storableText(c.id);
    const name = storableText(c.name);
    const args = c.args === undefined ? undefined : storableValue(c.args);
    const raw = c.raw_args === undefined ? undefined : storableText(c.raw_args);
    const n = id.replaced + name.replaced + (args?.replaced ?? 0) + (raw?.replaced ?? 0);
    if (!n) return c;
    replaced += n;
    return {
      id: id.text,
      name: name.text,
      ...(args ? { args: args.value } : {}),
      ...(raw ? { raw_args: raw.text } : {}),
    };
  });
  return { text: t.text, calls: out, replaced };
}
