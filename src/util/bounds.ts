/**
 * Bounds for what a model, a tool or a plugin hands the core: untrusted input is measured without
 * recursion (so a hostile value cannot overflow the stack) and kept within limits.
 */

/** How deep tool arguments may nest. */
export const MAX_ARGS_DEPTH = 64;
/** How long the JSON of one call's arguments may be. */
export const MAX_ARGS_CHARS = 1_000_000;

/** The nesting depth of a JSON-like value, counted without recursion; stops counting past `limit`. */
export function depthOf(value: unknown, limit = MAX_ARGS_DEPTH): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth]);
  }
  return max;
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

/** `text` cut to `max` characters, saying how much was cut (the model and the user see the note). */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[… cut by Keel: ${text.length - max} more characters not shown (limit ${max}, KEEL_MAX_RESULT_CHARS)]`;
}

/** A deep copy that cannot be changed (for hooks: they see a call's arguments, never edit them). */
export function frozenCopy<T>(value: T): T {
  const copy = structuredClone(value);
  const stack: unknown[] = [copy];
  while (stack.length) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object' || Object.isFrozen(v)) continue;
    Object.freeze(v);
    for (const child of Object.values(v)) stack.push(child);
  }
  return copy;
}
