/** Sorted-key JSON: two calls with the same arguments in any key order have one key. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

/** A call's identity for the repeat guard (R13): the tool name and its canonical arguments. */
export function callKey(tool: string, args: unknown): string {
  return `${tool}\u0000${canonicalJson(args ?? {})}`;
}
