/**
 * Tool specs: a definition checked and compiled (its parameters' JSON Schema), with its normalised
 * declaration. Never registers a tool whose schema does not compile.
 */
import { createRequire } from 'node:module';
import type { Ajv as AjvClass, ValidateFunction } from 'ajv';
import { plainSchemaValid } from '../manifest/plain-schema.js';
import { type Declaration, effectiveGate, type Gate, normalizeDeclaration } from '../manifest/schema.js';
import type { SchemaVerdicts, ToolDefinition, ToolSpec } from '../types/index.js';
import { compilePlainArgs, formatArgsError, inPlainArgsSubset, UNSURE } from './plain-args.js';

// One validator instance: compiled schemas are cached by it. Made on first use (loading ajv costs
// tens of milliseconds): a run whose manifests' verdicts are cached and that validates no call
// never loads it.
// addUsedSchema: false — tools are independent: two plugins may use the same `$id` in their
// parameters without one refusing the other (schemas are not registered globally by id).
let instance: AjvClass | undefined;
function ajv(): AjvClass {
  if (!instance) {
    const { Ajv } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
    instance = new Ajv({ allErrors: false, strict: false, coerceTypes: false, addUsedSchema: false });
  }
  return instance;
}
// For schemas already checked against the meta-schema at registration (plain ones, below): compiling
// them does not check them again. ajv's own check compiles draft-07's meta-schema into a validator
// first — 60-200 ms of code generation in a cold process, most of a first run's cost (issue 49).
let checkedInstance: AjvClass | undefined;
function ajvForChecked(): AjvClass {
  if (!checkedInstance) {
    const { Ajv } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
    checkedInstance = new Ajv({ allErrors: false, strict: false, coerceTypes: false, addUsedSchema: false, validateSchema: false });
  }
  return checkedInstance;
}

/**
 * Keywords for which ajv's meta-schema check (plus compiling each `pattern`) refuses exactly what
 * `ajv.compile` refuses. Anything else ($ref, $id, definitions, patternProperties, if/then, tuples,
 * nullable, unknown keywords, …) is compiled at registration, as before.
 */
export const PLAIN_KEYWORDS: ReadonlySet<string> = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'title',
  'description',
  'default',
  'examples',
  '$comment',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
]);
const DRAFT_07 = /^http:\/\/json-schema\.org\/draft-07\/schema#?$/;

function compilesAsRegExp(p: unknown): boolean {
  if (typeof p !== 'string') return false;
  try {
    new RegExp(p, 'u'); // ajv's default (unicodeRegExp)
    return true;
  } catch {
    return false;
  }
}

/** True when `s` uses only PLAIN_KEYWORDS (at every depth) and each `pattern` compiles. */
function isPlainSchema(s: unknown, root = false): boolean {
  if (typeof s === 'boolean') return true;
  if (!s || typeof s !== 'object' || Array.isArray(s)) return false;
  for (const [k, v] of Object.entries(s)) {
    if (k === '$schema' && root && typeof v === 'string' && DRAFT_07.test(v)) continue;
    if (!PLAIN_KEYWORDS.has(k)) return false;
    if (k === 'properties' && !(v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => isPlainSchema(x))))
      return false;
    if ((k === 'items' || k === 'additionalProperties' || k === 'not') && !isPlainSchema(v)) return false;
    if ((k === 'anyOf' || k === 'oneOf' || k === 'allOf') && !(Array.isArray(v) && v.every((x) => isPlainSchema(x)))) return false;
    if (k === 'pattern' && !compilesAsRegExp(v)) return false;
  }
  return true;
}

/** A check of a tool's arguments: undefined when they match, else the first problem in words. */
type ArgsCheck = (args: unknown) => string | undefined;

function ajvCheck(validateFn: ValidateFunction): ArgsCheck {
  return (args) => {
    if (validateFn(args)) return undefined;
    const first = validateFn.errors?.[0];
    return first ? formatArgsError(first) : 'the arguments do not match the parameters schema';
  };
}

/**
 * Compiles a schema checked at registration without checking it again; one its plugin changed since
 * (it no longer compiles) is compiled by the checking instance, whose error says what is wrong.
 */
function compileChecked(schema: Record<string, unknown>): ValidateFunction {
  try {
    return ajvForChecked().compile(schema);
  } catch {
    return ajv().compile(schema);
  }
}

/**
 * The check of a plain, valid schema, made on first use. Within plain-args.ts's subset (nearly
 * every tool's) it is an interpreter that answers what ajv answers without loading ajv (issue 49:
 * ~40-70 ms of module loading, then ~1-3 ms of code generation per schema); ajv is asked only when
 * the interpreter cannot promise its answer for a value (UNSURE). Other plain schemas (format, …)
 * are compiled by ajv, without checking them against the meta-schema a second time.
 */
function plainArgsCheck(schema: Record<string, unknown>): ArgsCheck {
  if (!inPlainArgsSubset(schema)) return ajvCheck(compileChecked(schema));
  const plain = compilePlainArgs(schema);
  let viaAjv: ArgsCheck | undefined;
  return (args) => {
    const answer = plain(args);
    if (answer !== UNSURE) return answer;
    try {
      viaAjv ??= ajvCheck(compileChecked(schema));
    } catch (err) {
      // Only if the plugin changed its schema object after its first call.
      return `the tool's parameters schema no longer compiles: ${(err as Error).message}`;
    }
    return viaAjv(args);
  };
}

/**
 * The check of a tool's parameters. Refusal stays a registration error: a plain schema that passes
 * ajv's meta-schema check cannot fail to compile, so its check is made on first use (ajv's code
 * generation costs ~1-2 ms a schema, seconds for a few thousand tools); every other schema is
 * compiled now, and ajv's own error is the refusal.
 */
function parametersValidator(schema: Record<string, unknown>, checked?: SchemaVerdicts): () => ArgsCheck {
  // M6's plain check settles nearly every schema in one walk (its keywords are PLAIN_KEYWORDS);
  // another schema of plain keywords is asked of the cache, else of ajv's meta-schema.
  if (
    plainSchemaValid(schema) ||
    (isPlainSchema(schema, true) &&
      (checked ? checked.valid(schema, () => ajv().validateSchema(schema) as boolean) : ajv().validateSchema(schema)))
  ) {
    let made: ArgsCheck | undefined;
    return () => {
      made ??= plainArgsCheck(schema);
      return made;
    };
  }
  const compiled = ajvCheck(ajv().compile(schema));
  return () => compiled;
}

/** A declaration for a tool nobody declared: read, gate none (R5, last sentence). */
export const DEFAULT_DECLARATION: Declaration = normalizeDeclaration({ effect: 'read' });

/** Why a definition cannot become a tool, or undefined when it can. */
export function definitionProblem(def: Partial<ToolDefinition> | undefined): string | undefined {
  if (!def || typeof def !== 'object') return 'the tool definition is not an object';
  if (typeof def.name !== 'string' || def.name === '') return "'name' must be a non-empty string";
  if (typeof def.description !== 'string') return `tool ${def.name}: 'description' must be a string`;
  if (typeof def.execute !== 'function') return `tool ${def.name}: 'execute' must be a function`;
  const p = def.parameters;
  if (!p || typeof p !== 'object' || Array.isArray(p)) {
    return `tool ${def.name}: 'parameters' must be a JSON Schema object`;
  }
  if (p.type !== undefined && p.type !== 'object') {
    return `tool ${def.name}: 'parameters' must describe an object (type: object), got type ${JSON.stringify(p.type)}`;
  }
  return undefined;
}

/**
 * Builds the core's view of a tool. Throws when `parameters` does not compile as JSON Schema
 * (a registration error, never a run-time surprise).
 */
export function makeToolSpec(
  def: ToolDefinition,
  plugin: string,
  declaration: Declaration = DEFAULT_DECLARATION,
  checked?: SchemaVerdicts,
): ToolSpec {
  let validator: () => ArgsCheck;
  try {
    // Checked as `type: object` whether or not it says so; a schema that says so is used as it is
    // (the one the model is shown), not copied (issue 49: a copy per tool in a cold start).
    const params = def.parameters;
    validator = parametersValidator(params?.type === 'object' ? params : { type: 'object', ...params }, checked);
  } catch (err) {
    throw new Error(`tool ${def.name}: 'parameters' is not a valid JSON Schema: ${(err as Error).message}`);
  }
  // The declared gate; an operator's policy (src/policy/operator.ts) may change it where tools are mounted.
  const gate: Gate = effectiveGate(declaration);
  // The definition's fields named, not spread (issue 49: a spread followed by more fields made a
  // dictionary-mode object of ~1.9 KB per tool in a cold process; this one is ~0.5 KB). A field of
  // its own that a plugin's definition adds is kept, after these, as the spread kept it.
  const spec: ToolSpec = {
    name: def.name,
    description: def.description,
    parameters: def.parameters,
    execute: def.execute,
    plugin,
    declaration,
    gate,
    checkArgs: (args) => {
      let check: ArgsCheck;
      try {
        check = validator();
      } catch (err) {
        // Only if the plugin changed its schema object after registration.
        return `the tool's parameters schema no longer compiles: ${(err as Error).message}`;
      }
      return check(args);
    },
  };
  for (const k in def) {
    if (Object.hasOwn(def, k) && !Object.hasOwn(spec, k))
      (spec as unknown as Record<string, unknown>)[k] = (def as unknown as Record<string, unknown>)[k];
  }
  return spec;
}

/**
 * A check of any value against a JSON Schema (the `output` option of a run): undefined when it
 * matches, else the first problem in words. Compiled once, on the first call.
 */
export function schemaCheck(schema: object): (value: unknown) => string | undefined {
  let validateFn: ValidateFunction | undefined;
  return (value) => {
    validateFn ??= ajv().compile(schema);
    if (validateFn(value)) return undefined;
    const first = validateFn.errors?.[0];
    return first ? formatArgsError(first) : 'the value does not match the schema';
  };
}
