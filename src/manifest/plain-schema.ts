/**
 * M6: a tool's parameter schema checked against draft-07's meta-schema without ajv, for the plain
 * schemas tools are made of (type, properties, required, items, enum, bounds, …).
 *
 * ajv's `validateSchema` first compiles the meta-schema into a validator — about 50 ms of code
 * generation in a cold process, most of what registering the first tool costs. This check says
 * true only when every keyword is one it knows and its value is what draft-07 allows, so that
 * `ajv.validateSchema` would say true too; false means "not known to be valid", and the caller
 * asks ajv. test/manifest/plain.test.ts checks the implication on generated schemas.
 */

const SIMPLE_TYPES = new Set(['array', 'boolean', 'integer', 'null', 'number', 'object', 'string']);
const STRINGS = new Set(['title', 'description', '$comment', 'format']);
const NUMBERS = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']);
const COUNTS = new Set(['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties']);
const ANY = new Set(['default', 'const']);
const SCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'allOf']);
const DRAFT_07 = /^http:\/\/json-schema\.org\/draft-07\/schema#?$/;
/** Deeper than this is left to ajv (and a hostile schema cannot exhaust the stack here). */
const MAX_DEPTH = 32;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Distinct strings, numbers, booleans and nulls only (ajv compares anything else deeply: left to it). */
function distinctScalars(xs: unknown[]): boolean {
  const seen = new Set<unknown>();
  for (const x of xs) {
    if (x !== null && typeof x !== 'string' && typeof x !== 'boolean' && !(typeof x === 'number' && Number.isFinite(x))) return false;
    if (seen.has(x)) return false;
    seen.add(x);
  }
  return true;
}

function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u'); // ajv's default (unicodeRegExp)
    return true;
  } catch {
    return false;
  }
}

/**
 * An enum or const value the arguments interpreter (tools/plain-args.ts) compares as ajv does: a
 * scalar ajv writes into its code (a finite number, a string, a boolean, null — it would write
 * Infinity as null), or an object or array it compares by reference to the schema's own value.
 */
function jsonish(v: unknown): boolean {
  return (
    v === null || typeof v === 'string' || typeof v === 'boolean' || typeof v === 'object' || (typeof v === 'number' && Number.isFinite(v))
  );
}

/**
 * True only when `s` is a valid draft-07 schema made of the keywords above. With `args` (issue 49),
 * also one whose arguments the interpreter in tools/plain-args.ts checks as ajv would: no `format`
 * (ajv warns on unknown formats), no field left undefined, and an enum's or a const's values such
 * that it compares them as ajv does (objects too, by deep equality — not only distinct scalars).
 */
export function plainSchemaValid(s: unknown, root = true, depth = 0, args = false): boolean {
  if (typeof s === 'boolean') return true;
  if (!isObject(s) || depth > MAX_DEPTH) return false;
  const d = depth + 1;
  // for-in over own keys, no closure (issue 49: a cold process's for-of made an iterator result per
  // key, and Object.keys and a closure per schema node were garbage at 2,000 tools).
  for (const k in s) {
    if (!Object.hasOwn(s, k)) continue;
    const v = s[k];
    if (args && v === undefined) return false;
    if (STRINGS.has(k)) {
      if (typeof v !== 'string' || (args && k === 'format')) return false;
    } else if (NUMBERS.has(k)) {
      if (typeof v !== 'number' || !Number.isFinite(v)) return false;
    } else if (COUNTS.has(k)) {
      if (!Number.isInteger(v) || (v as number) < 0) return false;
    } else if (ANY.has(k)) {
      // any JSON value
      if (args && k === 'const' && !jsonish(v)) return false;
    } else if (SCHEMA_LISTS.has(k)) {
      if (!Array.isArray(v) || v.length === 0) return false;
      for (let i = 0; i < v.length; i++) if (!plainSchemaValid(v[i], false, d, args)) return false;
    } else {
      switch (k) {
        case 'type':
          if (typeof v === 'string') {
            if (!SIMPLE_TYPES.has(v)) return false;
          } else if (!Array.isArray(v) || v.length === 0 || !v.every((t) => SIMPLE_TYPES.has(t)) || !distinctScalars(v)) return false;
          break;
        case 'properties':
          if (!isObject(v)) return false;
          for (const name in v) if (Object.hasOwn(v, name) && !plainSchemaValid(v[name], false, d, args)) return false;
          break;
        case 'items':
        case 'additionalProperties':
        case 'not':
          if (!plainSchemaValid(v, false, d, args)) return false;
          break;
        case 'required':
          if (!Array.isArray(v) || !v.every((x) => typeof x === 'string') || !distinctScalars(v)) return false;
          break;
        case 'enum':
          if (!Array.isArray(v) || v.length === 0 || !(args ? v.every(jsonish) : distinctScalars(v))) return false;
          break;
        case 'examples':
          if (!Array.isArray(v)) return false;
          break;
        case 'multipleOf':
          if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return false;
          break;
        case 'uniqueItems':
          if (typeof v !== 'boolean') return false;
          break;
        case 'pattern':
          if (typeof v !== 'string' || !compiles(v)) return false;
          break;
        case '$schema':
          if (!root || typeof v !== 'string' || !DRAFT_07.test(v)) return false;
          break;
        default:
          return false;
      }
    }
  }
  return true;
}
