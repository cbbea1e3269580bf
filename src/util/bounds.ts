/**
 * Bounds for what a model, a tool or a plugin hands the core: untrusted input is measured without
 * recursion (so a hostile value cannot overflow the stack) and kept within limits.
 */
import { cutText } from './text.js';

/** How deep tool arguments may nest. */
export const MAX_ARGS_DEPTH = 64;
/** How long the JSON of one call's arguments may be. */
export const MAX_ARGS_CHARS = 1_000_000;

/**
 * Checks a JSON-like value against the bounds in one walk, without recursion, and freezes it on the
 * way (so no hook or handler can change a call's arguments after the core has seen them). Returns
 * what is over its bound, or undefined.
 */
export function boundAndFreeze(
  value: unknown,
  maxDepth = MAX_ARGS_DEPTH,
  maxChars = MAX_ARGS_CHARS,
): { over: 'depth' | 'size'; size: number } | undefined {
  return walkBounds(value, maxDepth, maxChars, true);
}

/**
 * The same bounds as boundAndFreeze, measured without freezing: for a value the core does not keep
 * as it is (an owner's edit, A7, is checked here before anything recursive touches it, then copied).
 */
export function overBounds(value: unknown): { over: 'depth' | 'size'; size: number } | undefined {
  return walkBounds(value, MAX_ARGS_DEPTH, MAX_ARGS_CHARS, false);
}

function walkBounds(
  value: unknown,
  maxDepth: number,
  maxChars: number,
  freeze: boolean,
): { over: 'depth' | 'size'; size: number } | undefined {
  let size = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop() as [unknown, number];
    if (typeof v === 'string') size += v.length + 2;
    else if (v !== null && typeof v === 'object') {
      if (d + 1 > maxDepth) return { over: 'depth', size };
      if (Array.isArray(v)) for (const child of v) stack.push([child, d + 1]);
      else
        for (const k of Object.keys(v)) {
          size += k.length + 3;
          stack.push([(v as Record<string, unknown>)[k], d + 1]);
        }
      if (freeze) Object.freeze(v);
    } else size += 8;
    if (size > maxChars) return { over: 'size', size };
  }
  return undefined;
}

/**
 * A tool's output as the text the model sees. Anything that is not text — a function, a symbol, a
 * bigint, an object whose toJSON returns nothing or throws, a cycle — becomes readable text; nothing
 * here throws.
 */
export function outputText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  try {
    const json = JSON.stringify(value);
    if (typeof json === 'string') return json;
  } catch {
    // A cycle, a bigint, a throwing toJSON: described below instead.
  }
  try {
    return String(value);
  } catch {
    return `[${typeof value}]`;
  }
}

/**
 * `text` cut to `max` characters, saying how much was cut (the model and the user see the note).
 * The cut falls between characters, never inside a surrogate pair: an emoji at the limit is left
 * out whole rather than halved into a lone surrogate that PostgreSQL's JSONB refuses (issue 27).
 */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const kept = cutText(text, max);
  return `${kept}\n[… cut by Keel: ${text.length - kept.length} more characters not shown (limit ${max}, KEEL_MAX_RESULT_CHARS)]`;
}
