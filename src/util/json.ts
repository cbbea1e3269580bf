/**
 * Sorted-key JSON: two calls with the same arguments in any key order have one key. Built in one
 * pass per object (no filtered, mapped and joined arrays): the gate keys every call with it (R13).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      // A hole stays empty, as Array.prototype.join writes one.
      if (i in value) out += canonicalJson(value[i]);
    }
    return `${out}]`;
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  let out = '{';
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined) continue;
    if (out.length > 1) out += ',';
    out += `${JSON.stringify(k)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/** A call's identity for the repeat guard (R13): the tool name and its canonical arguments. */
export function callKey(tool: string, args: unknown): string {
  return `${tool}\u0000${canonicalJson(args ?? {})}`;
}
