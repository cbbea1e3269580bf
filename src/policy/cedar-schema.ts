/**
 * The Cedar vocabulary of an operator's policy file (issue 37), generated from the pool: the schema
 * `keel policy schema` prints and `keel policy check` validates against, and the conversion of a
 * call's arguments into the values Cedar sees. See docs/decisions/0011-cedar-operator-policy.md.
 *
 * - `Keel::Tool::"NAME"` (parent `Keel::Plugin::"NAME"`): effect, gate (the declared gate), plugin, output, open_world (O1).
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
        // A property that may be null is optional to Cedar (a null is not sent): a policy must test `has` first.
        if (t) attrs.set(name, { type: t, required: required.has(name) && !nullable(sub) });
      }
      return { kind: 'Record', attrs };
    }
    default:
      return undefined;
  }
}

function nullable(schema: unknown): boolean {
  const t = (schema as JsonSchema).type;
  return (Array.isArray(t) && t.includes('null')) || (schema as JsonSchema).nullable === true;
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
  entity Tool in [Plugin] = { effect: String, gate: String, plugin: String, output: String, open_world: Bool };
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

/** A type in Cedar's JSON schema format. */
function typeJson(t: CedarType): Record<string, unknown> {
  switch (t.kind) {
    case 'Set':
      return { type: 'Set', element: typeJson(t.element) };
    case 'Record':
      return {
        type: 'Record',
        attributes: Object.fromEntries(
          [...t.attrs].map(([n, a]) => [n, { ...typeJson(a.type), ...(a.required ? {} : { required: false }) }]),
        ),
      };
    default:
      return { type: t.kind === 'Bool' ? 'Boolean' : t.kind };
  }
}

const str = { type: 'String' };
const long = { type: 'Long' };

/**
 * The same schema as `schemaFor`, in Cedar's JSON format: the validator reads it about four times
 * faster than the text (measured warm: ~1 ms against ~4 ms a validation), and a file is validated
 * once per distinct scope.
 */
export function schemaJsonFor(args: Extract<CedarType, { kind: 'Record' }>): Record<string, unknown> {
  const record = (attributes: Record<string, unknown>) => ({ type: 'Record', attributes });
  return {
    Keel: {
      entityTypes: {
        Plugin: {},
        Tool: {
          memberOfTypes: ['Plugin'],
          shape: record({ effect: str, gate: str, plugin: str, output: str, open_world: { type: 'Boolean' } }),
        },
        User: { shape: record({ kind: str, role: str, groups: { type: 'Set', element: str } }) },
      },
      actions: {
        call: {
          appliesTo: {
            principalTypes: ['User'],
            resourceTypes: ['Tool'],
            context: record({
              args: typeJson(args),
              mode: str,
              session: str,
              untrusted: { type: 'Boolean' },
              read_from: { type: 'Set', element: str },
              time: str,
              hour: long,
              minute: long,
              weekday: str,
            }),
          },
        },
      },
    },
  };
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

/** What `keel policy init` writes: every call permitted with its declared gate, and the examples commented out. */
export function starterPolicy(all: readonly ToolSpec[]): string {
  // The examples name the plugins' own tools when there are some (the core's submit_plan is no example of a write).
  const mounted = all.filter((t) => t.plugin !== 'core');
  const pool = mounted.length ? mounted : all;
  const destructive = pool.find((t) => t.declaration.effect === 'destructive')?.name ?? 'delete_file';
  // The threshold example names a tool with a whole-number argument when the pool has one (a required one first).
  const longs = pool.flatMap((t) =>
    [...argsTypeOf(t).attrs].filter(([, a]) => a.type.kind === 'Long').map(([n, a]) => ({ t, n, required: a.required })),
  );
  const num = longs.find((l) => l.required) ?? longs[0];
  const threshold = num ? `${num.required ? '' : `context.args has ${num.n} && `}context.args.${num.n} > 500` : 'context.args.amount > 500';
  const write = pool.find((t) => t.declaration.effect === 'write')?.name ?? 'send_email';
  const untrusted = pool.find((t) => t.declaration.output === 'untrusted');
  return `// Keel's operator policy, in Cedar (https://www.cedarpolicy.com). keel policy check validates it,
// keel policy schema prints what a policy can read, keel policy explain TOOL --args JSON tries it.
//
// A forbid wins; a call no permit matches is denied. A permit annotated @ask asks for an approval
// card pinned to the call's arguments; @approvers("GROUP") lets only that group's tokens answer it.
// A plain permit leaves the call to its declared gate, which a policy can never loosen.

@id("every-call")
permit (principal, action == Keel::Action::"call", resource);

// A card for a large amount; under it, the tool's declared gate.
// @id("big-amount")
// @ask
// @approvers("finance")
// permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"${num?.t.name ?? 'pay'}")
// when { ${threshold} };

// Only admins may run ${destructive}.
// @id("admins-only")
// forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"${destructive}")
// unless { principal.role == "admin" };

// Once the run has read outside content${untrusted ? ` (such as ${untrusted.name}'s results)` : ''}, no ${write}.
// @id("no-${write}-after-outside")
// forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"${write}")
// when { context.untrusted };

// Writes only in office hours (the process's local time), Monday to Friday.
// @id("office-hours")
// forbid (principal, action == Keel::Action::"call", resource)
// when { resource.effect != "read" && (context.hour < 9 || context.hour >= 18 || ["Sat", "Sun"].contains(context.weekday)) };
`;
}
