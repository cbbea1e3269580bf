/**
 * The Cedar vocabulary of an operator's policy file (issue 37), generated from the pool: the schema
 * `keel policy schema` prints and `keel policy check` validates against, and the conversion of a
 * call's arguments into the values Cedar sees. See docs/decisions/0011-cedar-operator-policy.md.
 *
 * - `Keel::Tool::"NAME"` (parent `Keel::Plugin::"NAME"`): effect, gate (the declared gate), plugin, output.
 * - `Keel::User::"NAME"`: whoever started the run, whatever its kind (kind, role — "" when none —, groups).
 * - `Keel::Action::"call"`, with the context: args, mode, session, untrusted, read_from, time, hour, minute, weekday.
 *
 * Cedar types a context per action, and the vocabulary has one action: `context.args` differs per
 * tool. So the args record is typed per policy by the tools its scope can reach (PC3): one tool
 * (`resource == Keel::Tool::"pay"`) gives that tool's arguments exactly; several (a plugin, or any
 * tool) give the union of theirs, each optional (a policy must test `has` first), an argument two
 * tools type differently left out.
 */
import type { JsonSchema, ToolSpec } from '../types/index.js';

/** A Cedar type as the schema writes it, with how to turn a JSON value into one. */
export type CedarType =
  | { kind: 'String' | 'Long' | 'Bool' }
  | { kind: 'Set'; element: CedarType }
  | { kind: 'Record'; attrs: Map<string, { type: CedarType; required: boolean }> };

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Cedar's reserved words: an attribute of this name is quoted in the schema. */
const RESERVED = new Set(['true', 'false', 'if', 'then', 'else', 'in', 'is', 'like', 'has', '__cedar']);

/**
 * The Cedar type of a JSON Schema, or undefined when it has none Cedar can hold (a union, `null`, an
 * open object, a property whose name starts with `__`, which Cedar's JSON would read as an entity or
 * an extension value). What has no type is not passed to Cedar: a policy cannot read it.
 */
export function cedarTypeOf(schema: unknown, depth = 0): CedarType | undefined {
  if (!schema || typeof schema !== 'object' || depth > 16) return undefined;
  const s = schema as JsonSchema;
  let type = s.type;
  // ["string", "null"]: the value when it is one; absent when null.
  if (Array.isArray(type)) {
    const rest = type.filter((t) => t !== 'null');
    type = rest.length === 1 ? rest[0] : undefined;
  }
  if (type === undefined && Array.isArray(s.enum) && s.enum.length && s.enum.every((v) => typeof v === 'string')) type = 'string';
  switch (type) {
    case 'string':
      return { kind: 'String' };
    case 'integer':
    case 'number':
      return { kind: 'Long' };
    case 'boolean':
      return { kind: 'Bool' };
    case 'array': {
      const element = cedarTypeOf(s.items, depth + 1);
      return element ? { kind: 'Set', element } : undefined;
    }
    case 'object': {
      const props = s.properties;
      if (!props || typeof props !== 'object') return undefined;
      const required = new Set(Array.isArray(s.required) ? (s.required as unknown[]).filter((r) => typeof r === 'string') : []);
      const attrs = new Map<string, { type: CedarType; required: boolean }>();
      for (const [name, sub] of Object.entries(props as Record<string, unknown>)) {
        if (name.startsWith('__') || !printable(name)) continue;
        const t = cedarTypeOf(sub, depth + 1);
        if (t) attrs.set(name, { type: t, required: required.has(name) });
      }
      return { kind: 'Record', attrs };
    }
    default:
      return undefined;
  }
}

/** A name a Cedar string literal can hold as it is (no quote, backslash or control character). */
function printable(name: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses.
  return name.length > 0 && name.length <= 200 && !/["\\\u0000-\u001f\u007f]/.test(name);
}

/** The args record of one tool (an empty record for a tool whose parameters Cedar cannot type). */
export function argsTypeOf(tool: ToolSpec): Extract<CedarType, { kind: 'Record' }> {
  const t = cedarTypeOf(tool.parameters);
  return t?.kind === 'Record' ? t : { kind: 'Record', attrs: new Map() };
}

/** The schema's text of a type (`{ amount: Long, to?: String }`). */
export function typeText(t: CedarType): string {
  switch (t.kind) {
    case 'Set':
      return `Set<${typeText(t.element)}>`;
    case 'Record': {
      if (!t.attrs.size) return '{}';
      const fields = [...t.attrs].map(([n, a]) => `${attrName(n)}${a.required ? '' : '?'}: ${typeText(a.type)}`);
      return `{ ${fields.join(', ')} }`;
    }
    default:
      return t.kind === 'Bool' ? 'Bool' : t.kind;
  }
}

const attrName = (n: string) => (IDENT.test(n) && !RESERVED.has(n) ? n : JSON.stringify(n));

/**
 * The args record a policy reaching these tools sees: one tool's own; of several, every argument any
 * of them has, optional, unless two of them type it differently (then left out: such a policy must
 * narrow its scope to one tool to read it).
 */
export function unionArgs(tools: readonly ToolSpec[]): Extract<CedarType, { kind: 'Record' }> {
  if (tools.length === 1) return argsTypeOf(tools[0]);
  const seen = new Map<string, { type: CedarType; text: string } | null>();
  for (const tool of tools)
    for (const [n, a] of argsTypeOf(tool).attrs) {
      const text = typeText(a.type);
      const prev = seen.get(n);
      if (prev === undefined) seen.set(n, { type: a.type, text });
      else if (prev && prev.text !== text) seen.set(n, null);
    }
  const attrs = new Map<string, { type: CedarType; required: boolean }>();
  for (const [n, v] of seen) if (v) attrs.set(n, { type: v.type, required: false });
  return { kind: 'Record', attrs };
}

/** The schema, in Cedar's schema syntax, with `context.args` typed as given. */
export function schemaFor(args: Extract<CedarType, { kind: 'Record' }>): string {
  return `namespace Keel {
  entity Plugin;
  entity Tool in [Plugin] = { effect: String, gate: String, plugin: String, output: String };
  entity User = { kind: String, role: String, groups: Set<String> };
  action call appliesTo {
    principal: [User],
    resource: [Tool],
    context: {
      args: ${typeText(args)},
      mode: String,
      session: String,
      untrusted: Bool,
      read_from: Set<String>,
      time: String,
      hour: Long,
      minute: Long,
      weekday: String,
    },
  };
}
`;
}

/** What `keel policy schema` prints: the schema for a policy over every tool, then each tool's own args. */
export function schemaText(pool: readonly ToolSpec[]): string {
  const lines = [
    "// The Cedar schema of Keel's operator policy, generated from the mounted tools (keel policy schema).",
    '// context.args below is what a policy over several tools sees: every argument optional (test `has` first).',
    '// A policy scoped to one tool (resource == Keel::Tool::"NAME") sees that tool\'s own arguments:',
    ...pool.map((t) => `//   ${t.name} (${t.plugin}, ${t.declaration.effect}): ${typeText(argsTypeOf(t))}`),
    '',
  ];
  return `${lines.join('\n')}${schemaFor(unionArgs(pool))}`;
}

/** Why a value cannot go to Cedar: a number that is not a whole one (named by its path). */
export class NotWhole extends Error {}

/**
 * A JSON value as Cedar's JSON holds a value of this type: only what the type declares (a record's
 * undeclared or `__` properties dropped, so no argument can pose as an entity or an extension value);
 * a value of another type is left out (undefined). A number must be whole and within ±2^53: Cedar
 * has no fractions, and rounding could loosen a threshold either way, so it throws (PC4).
 */
export function toCedar(t: CedarType, v: unknown, path: string): unknown {
  switch (t.kind) {
    case 'String':
      return typeof v === 'string' ? v : undefined;
    case 'Bool':
      return typeof v === 'boolean' ? v : undefined;
    case 'Long':
      if (typeof v !== 'number') return undefined;
      if (!Number.isSafeInteger(v)) throw new NotWhole(`${path} is ${v}: a policy reads it, and Cedar compares whole numbers only`);
      return v;
    case 'Set': {
      if (!Array.isArray(v)) return undefined;
      const out: unknown[] = [];
      for (let i = 0; i < v.length; i++) {
        const e = toCedar(t.element, v[i], `${path}[${i}]`);
        if (e !== undefined) out.push(e);
      }
      return out;
    }
    case 'Record': {
      if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
      const out: Record<string, unknown> = {};
      for (const [n, a] of t.attrs) {
        if (!Object.hasOwn(v, n)) continue;
        const e = toCedar(a.type, (v as Record<string, unknown>)[n], `${path}.${n}`);
        if (e !== undefined) out[n] = e;
      }
      return out;
    }
  }
}
