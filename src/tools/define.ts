/**
 * Typed tools for plugin authors and applications: `defineTool` infers the handler's argument type
 * from its schema — a zod schema (converted to JSON Schema for the model, and parsed before the
 * handler runs), or a plain JSON Schema written `as const` — so a handler compiles under `strict`
 * with no casts. Given an `effect` (and any other declaration field of a manifest entry), it keeps
 * the declaration on the tool and the result is an app tool, for Keel's own tools list (R32).
 */
import type { z } from 'zod';
import type {
  AppTool,
  CallDescription,
  DeclarationFields,
  Effect,
  JsonSchema,
  ToolContext,
  ToolDefinition,
  ToolOutput,
} from '../types/index.js';

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type RequiredKeys<S> = S extends { required: readonly (infer R)[] } ? R : never;
type ObjectOf<S> = S extends { properties: infer P }
  ? Simplify<
      { -readonly [K in keyof P & RequiredKeys<S>]: FromSchema<P[K]> } & {
        -readonly [K in Exclude<keyof P, RequiredKeys<S>>]?: FromSchema<P[K]>;
      }
    >
  : Record<string, unknown>;

/** The TypeScript type of a JSON Schema written `as const` (the subset tools use). */
export type FromSchema<S> = S extends { enum: readonly (infer E)[] }
  ? E
  : S extends { const: infer C }
    ? C
    : S extends { type: 'string' }
      ? string
      : S extends { type: 'number' | 'integer' }
        ? number
        : S extends { type: 'boolean' }
          ? boolean
          : S extends { type: 'null' }
            ? null
            : S extends { type: 'array'; items: infer I }
              ? FromSchema<I>[]
              : S extends { type: 'object' }
                ? ObjectOf<S>
                : unknown;

/** A handler's arguments: what a zod schema parses them to, or what a JSON Schema written `as const` describes. */
export type ArgsOf<S> = S extends z.ZodObject ? z.output<S> : FromSchema<S>;

/** A JSON Schema for a tool's arguments: an object. */
export type ObjectSchema = {
  readonly type: 'object';
  readonly properties?: Readonly<Record<string, unknown>>;
  readonly required?: readonly string[];
};

interface Handlers<A> {
  name: string;
  description: string;
  execute: (args: A, ctx: ToolContext) => ToolOutput | Promise<ToolOutput>;
  /** The card's words for a call that needs approval: a title, and the lines under it (none when left out). */
  describe?: (args: A) => CallDescription;
  /** A problem with the arguments the schema cannot express (a card is never made for them). */
  validate?: (args: A) => string | undefined | Promise<string | undefined>;
}

/**
 * The declaration a tool may carry beside its definition: the fields of a plugin manifest's tool
 * entry. With `effect`, the tool is an app tool (the application's own, handed to Keel); the
 * other fields are optional, as in the manifest.
 */
type Declared<E> = { effect?: E } & Omit<Partial<DeclarationFields>, 'effect'>;
/** An app tool when an effect is given, else a plain definition (for a plugin, whose manifest declares it). */
export type DefinedTool<E> = [E] extends [Effect] ? AppTool : ToolDefinition;

/**
 * A zod schema, known by the mark zod 4 puts on each (what `instanceof z.ZodType` checks), so that
 * the library never loads zod itself: a plain JSON Schema app pays nothing for it (issue 49 — zod is
 * ~95 modules), and one written with zod has it loaded already, and converts through its own copy.
 */
function isZodSchema(p: unknown): p is z.ZodObject {
  const traits = (p as { _zod?: { traits?: unknown } } | null)?._zod?.traits;
  return traits instanceof Set && traits.has('ZodType');
}

/**
 * A tool definition with its handler typed by its schema. Pass a zod object or a JSON Schema
 * written inline. Add `effect` (and `confirm`, `approval`, `guidance`, `pinned`, `answers_directly`,
 * `undo`, `idempotent`, `editable`, `contract_modes` as needed) to declare it in code as an app tool; a
 * plugin's tool is declared in its manifest instead. One signature for both kinds of schema, not an
 * overload each: a compiler that finds no overload reports the last one's complaint (TypeScript 7
 * blamed a zod schema's `required` for a mistake in `describe`), where one signature is blamed on
 * the field at fault.
 */
export function defineTool<const S extends z.ZodObject | ObjectSchema, E extends Effect | undefined = undefined>(
  def: Handlers<ArgsOf<S>> & { parameters: S } & Declared<E>,
): DefinedTool<E>;
export function defineTool(def: Handlers<never> & { parameters: z.ZodObject | ObjectSchema }): ToolDefinition {
  const p = def.parameters;
  if (!isZodSchema(p)) return def as unknown as ToolDefinition;
  // The model sees JSON Schema; the handler gets what the zod schema makes of the arguments (defaults, coercions).
  const { $schema: _s, ...parameters } = p.toJSONSchema({ target: 'draft-7', io: 'input' }) as JsonSchema;
  const parse = (args: unknown) => p.parse(args) as never;
  // Everything else on the tool (its declaration, and any field the declaration check will refuse) is kept as given.
  const { name: _n, description: _d, parameters: _p, execute: _e, describe: _ds, validate: _v, ...rest } = def;
  return {
    ...rest,
    name: def.name,
    description: def.description,
    parameters,
    execute: (args, ctx) => def.execute(parse(args), ctx),
    ...(def.describe ? { describe: (args: Record<string, unknown>) => (def.describe as (a: never) => CallDescription)(parse(args)) } : {}),
    ...(def.validate
      ? { validate: (args: Record<string, unknown>) => (def.validate as (a: never) => string | undefined)(parse(args)) }
      : {}),
  };
}
