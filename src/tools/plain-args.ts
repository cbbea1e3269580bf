/**
 * M6: a tool's arguments checked against its plain parameter schema without ajv (issue 49: loading
 * ajv and generating a validator per schema is most of a cold first run).
 *
 * `compilePlainArgs` answers exactly what ajv 8 answers with spec.ts's options (allErrors: false,
 * strict: false → strictNumbers: false, no coercion, no defaults): undefined when ajv says valid,
 * else ajv's FIRST error formatted by `formatArgsError`. ajv stops at the first error in its own
 * order, reproduced here (node_modules/ajv/dist/compile/validate/index.js, rules.js):
 *   1. the type, up front — unless the schema has exactly one type and keywords of that type's
 *      group, in which case the type error is reported by that group (step 3), after steps 2-3's
 *      earlier groups: `{type:'string', minLength:1, minimum:5}` fails 3 with "must be >= 5";
 *   2. the untyped group: const, enum, not, anyOf, oneOf, allOf;
 *   3. the typed groups, each applied only when the value has the group's type: number (maximum,
 *      minimum, exclusiveMaximum, exclusiveMinimum, multipleOf), string (maxLength, minLength,
 *      pattern), array (maxItems, minItems, items, uniqueItems), object (maxProperties,
 *      minProperties, required, additionalProperties, properties).
 * Every expression below is the one ajv generates (`data[prop] !== undefined` sees inherited
 * members, `for…in`, `res !== parseInt(res)`, ucs2 lengths, fast-deep-equal, uniqueItems' two loops
 * and their index order…); test/tools/plain-args.test.ts compares both on generated schemas/values.
 *
 * `inPlainArgsSubset` says which schemas this covers (at every depth, bounded); anything else goes
 * to ajv. When a value goes where this cannot promise ajv's answer (a comparison deeper than
 * MAX_EQUAL_DEPTH, an object whose own `valueOf`/`toString` fast-deep-equal would call, an array
 * element ajv would compare with such an object), the check answers UNSURE and the caller asks ajv.
 */

import { plainSchemaValid } from '../manifest/plain-schema.js';

/** What the interpreter answers when only ajv can say (the caller then asks ajv). */
export const UNSURE: unique symbol = Symbol('plain-args: ask ajv');

export type PlainArgsCheck = (value: unknown) => string | undefined | typeof UNSURE;

/** The fields of an ajv error object that `formatArgsError` reads. */
export interface ArgsError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** A validation error in words (ajv's errors and the interpreter's alike). */
export function formatArgsError(e: ArgsError): string {
  const where = e.instancePath ? e.instancePath.slice(1).replaceAll('/', '.') : 'arguments';
  if (e.keyword === 'required') return `missing required argument '${(e.params as { missingProperty: string }).missingProperty}'`;
  if (e.keyword === 'additionalProperties') {
    return `unknown argument '${(e.params as { additionalProperty: string }).additionalProperty}'`;
  }
  return `${where} ${e.message ?? 'is invalid'}`;
}

// --- the subset -------------------------------------------------------------------------------

/** Deeper value comparisons (enum, const, uniqueItems) are left to ajv. */
const MAX_EQUAL_DEPTH = 64;
/** Keywords ajv has no rule for (they never make a schema fail, nor make it "not always valid"). */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * True when the interpreter answers for `s` what ajv answers: a valid plain schema (M6's own check,
 * manifest/plain-schema.ts, to a depth of 32) with no `format`, no undefined field, and enum and const
 * values it compares as ajv does. Not covered: format (ajv warns on unknown formats),
 * $ref/$id/definitions, patternProperties, tuples, if/then/else, dependencies, propertyNames,
 * contains, nullable, unknown keywords.
 */
export function inPlainArgsSubset(s: unknown): boolean {
  return plainSchemaValid(s, true, 0, true);
}

// --- ajv's runtime pieces ---------------------------------------------------------------------

/** Thrown where only ajv can say; caught by the compiled check, which answers UNSURE. */
class Unsure extends Error {}

/**
 * fast-deep-equal (ajv's `equal`), step for step, except that where it would call an own
 * `valueOf`/`toString` (or compare RegExps, or go deeper than MAX_EQUAL_DEPTH) this gives up.
 */
function equal(a: unknown, b: unknown, depth = 0): boolean {
  if (a === b) return true;
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    if (depth > MAX_EQUAL_DEPTH) throw new Unsure();
    const x = a as Record<string, unknown>;
    const y = b as Record<string, unknown>;
    if (x.constructor !== y.constructor) return false;
    if (Array.isArray(x)) {
      const length = x.length;
      if (length !== (y as unknown as unknown[]).length) return false;
      for (let i = length; i-- !== 0; ) if (!equal(x[i], (y as unknown as unknown[])[i], depth + 1)) return false;
      return true;
    }
    if (x.constructor === RegExp) throw new Unsure();
    if (x.valueOf !== Object.prototype.valueOf) throw new Unsure();
    if (x.toString !== Object.prototype.toString) throw new Unsure();
    const keys = Object.keys(x);
    const length = keys.length;
    if (length !== Object.keys(y).length) return false;
    for (let i = length; i-- !== 0; ) if (!Object.hasOwn(y, keys[i] as string)) return false;
    for (let i = length; i-- !== 0; ) {
      const key = keys[i] as string;
      if (!equal(x[key], y[key], depth + 1)) return false;
    }
    return true;
  }
  // biome-ignore lint/suspicious/noSelfCompare: fast-deep-equal's NaN test
  return a !== a && b !== b;
}

/**
 * A string two values share exactly when `equal` says they are equal, for values made of JSON
 * (plain objects and arrays, strings, finite numbers, booleans, null); gives up on anything else,
 * including objects for which `equal` would not be plain structural equality (an own
 * `constructor`, `valueOf` or `toString`).
 */
function canonicalKey(v: unknown, depth = 0): string {
  if (v === null || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Unsure();
    return String(v); // -0 → "0", as -0 === 0
  }
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v !== 'object' || depth > MAX_EQUAL_DEPTH) throw new Unsure();
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype) throw new Unsure();
    let s = '[';
    for (let i = 0; i < v.length; i++) s += `${i ? ',' : ''}${canonicalKey(v[i], depth + 1)}`;
    return `${s}]`;
  }
  if (Object.getPrototypeOf(v) !== Object.prototype) throw new Unsure();
  const o = v as Record<string, unknown>;
  const hasOwn = Object.prototype.hasOwnProperty;
  if (hasOwn.call(o, 'constructor') || hasOwn.call(o, 'valueOf') || hasOwn.call(o, 'toString')) throw new Unsure();
  const keys = Object.keys(o).sort();
  let s = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    s += `${i ? ',' : ''}${JSON.stringify(k)}:${canonicalKey(o[k], depth + 1)}`;
  }
  return `${s}}`;
}

/** ajv's ucs2length: a string's length in code points (an unpaired surrogate counts as one). */
function ucs2length(str: string): number {
  const len = str.length;
  let length = 0;
  let pos = 0;
  while (pos < len) {
    length++;
    const value = str.charCodeAt(pos++);
    if (value >= 0xd800 && value <= 0xdbff && pos < len && (str.charCodeAt(pos) & 0xfc00) === 0xdc00) pos++;
  }
  return length;
}

/** ajv's checkDataType (strictNumbers: false). */
function hasType(t: string, data: unknown): boolean {
  switch (t) {
    case 'null':
      return data === null;
    case 'array':
      return Array.isArray(data);
    case 'object':
      return !!data && typeof data === 'object' && !Array.isArray(data);
    case 'integer':
      return typeof data === 'number' && !((data as number) % 1) && !Number.isNaN(data);
    case 'number':
      return typeof data === 'number';
    default:
      return typeof data === t;
  }
}

/** ajv's checkDataTypes(types, data, DataType.Wrong). */
function wrongType(types: readonly string[], data: unknown): boolean {
  if (types.length === 1) return !hasType(types[0] as string, data);
  const rest = new Set(types);
  let wrong = true;
  if (rest.has('array') && rest.has('object')) {
    wrong = rest.has('null') ? typeof data !== 'object' : !data || typeof data !== 'object';
    rest.delete('null');
    rest.delete('array');
    rest.delete('object');
  }
  if (rest.has('number')) rest.delete('integer');
  for (const t of rest) wrong &&= !hasType(t, data);
  return wrong;
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** ajv's alwaysValidSchema for the subset: true, {}, or annotations only (no code is generated). */
function alwaysValid(s: unknown): boolean {
  if (typeof s === 'boolean') return s;
  return Object.keys(s as object).every((k) => ANNOTATIONS.has(k));
}

// --- the interpreter --------------------------------------------------------------------------

type Check = (data: unknown, path: string) => ArgsError | undefined;
type Rule = Check;

const fail = (path: string, keyword: string, message: string, params: Record<string, unknown> = {}): ArgsError => ({
  instancePath: path,
  keyword,
  params,
  message,
});

/** ajv's compiled subschema, as a closure (schema values are read once, as ajv's code does). */
function compile(schema: unknown, composite: boolean): Check {
  if (schema === true) return () => undefined;
  if (schema === false) return (_d, path) => fail(path, 'false schema', 'boolean schema is false');
  const s = schema as Record<string, unknown>;
  const has = (k: string) => s[k] !== undefined;
  const types: string[] = s.type === undefined ? [] : Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
  const typeMessage = `must be ${String(s.type)}`;

  const untyped = untypedRules(s, composite);
  const groups: Array<{ type: string; rules: Rule[] }> = [
    { type: 'number', rules: numberRules(s) },
    { type: 'string', rules: stringRules(s) },
    { type: 'array', rules: arrayRules(s, composite) },
    { type: 'object', rules: objectRules(s, composite) },
  ];
  const groupUsed: Record<string, boolean> = {
    number: ['maximum', 'minimum', 'exclusiveMaximum', 'exclusiveMinimum', 'multipleOf'].some(has),
    string: ['maxLength', 'minLength', 'pattern'].some(has),
    array: ['maxItems', 'minItems', 'items', 'uniqueItems'].some(has),
    object: ['maxProperties', 'minProperties', 'required', 'additionalProperties', 'properties'].some(has),
  };
  // coerceAndCheckDataType: one type whose group has keywords is checked by that group instead.
  const upfront = types.length > 0 && !(types.length === 1 && groupUsed[types[0] as string] === true);
  const usedGroups = groups.filter((g) => groupUsed[g.type]);
  const untypedUsed = ['$comment', 'type', 'const', 'enum', 'not', 'anyOf', 'oneOf', 'allOf'].some(has);
  if (types.length === 0 && !untypedUsed && usedGroups.length === 0) return () => undefined;

  return (data, path) => {
    if (upfront && wrongType(types, data)) {
      // Inside not/anyOf/oneOf ajv records this error and goes on with the untyped group: its
      // first error stays first, but a comparison there may throw (then only ajv can say).
      if (composite) for (const r of untyped) if (r(data, path)) break;
      return fail(path, 'type', typeMessage, { type: s.type });
    }
    if (untypedUsed)
      for (const r of untyped) {
        const e = r(data, path);
        if (e) return e;
      }
    for (const g of usedGroups) {
      if (hasType(g.type, data)) {
        for (const r of g.rules) {
          const e = r(data, path);
          if (e) return e;
        }
      } else if (!upfront && types.length === 1 && types[0] === g.type) {
        return fail(path, 'type', typeMessage, { type: s.type });
      }
    }
    return undefined;
  };
}

function untypedRules(s: Record<string, unknown>, composite: boolean): Rule[] {
  const rules: Rule[] = [];
  if (s.const !== undefined) {
    const c = s.const;
    const deep = typeof c === 'object' && c !== null;
    rules.push((d, path) => ((deep ? !equal(d, c) : c !== d) ? fail(path, 'const', 'must be equal to constant') : undefined));
  }
  if (s.enum !== undefined) {
    const values = [...(s.enum as unknown[])];
    const loop = values.length >= 200; // ajv's loopEnum: every value through `equal`
    const deep = values.map((v) => loop || (typeof v === 'object' && v !== null));
    rules.push((d, path) => {
      for (let i = 0; i < values.length; i++) if (deep[i] ? equal(d, values[i]) : d === values[i]) return undefined;
      return fail(path, 'enum', 'must be equal to one of the allowed values');
    });
  }
  if (s.not !== undefined) {
    const sub = alwaysValid(s.not) ? undefined : compile(s.not, true);
    rules.push((d, path) => (!sub?.(d, path) ? fail(path, 'not', 'must NOT be valid') : undefined));
  }
  if (s.anyOf !== undefined) {
    const list = s.anyOf as unknown[];
    const subs = list.some(alwaysValid) ? [] : list.map((x) => compile(x, true));
    // Every branch fails: ajv's errors are the branches' in order, then anyOf's own.
    rules.push((d, path) => {
      let first: ArgsError | undefined;
      for (const sub of subs) {
        const e = sub(d, path);
        if (!e) return undefined;
        first ??= e;
      }
      return first;
    });
  }
  if (s.oneOf !== undefined) {
    const subs = (s.oneOf as unknown[]).map((x) => (alwaysValid(x) ? undefined : compile(x, true)));
    // Branches run in order until a second one passes; the failing ones' errors come first.
    rules.push((d, path) => {
      let first: ArgsError | undefined;
      let passing = 0;
      for (const sub of subs) {
        const e = sub ? sub(d, path) : undefined;
        if (e) first ??= e;
        else if (++passing === 2) break;
      }
      if (passing === 1) return undefined;
      return first ?? fail(path, 'oneOf', 'must match exactly one schema in oneOf');
    });
  }
  if (s.allOf !== undefined) {
    const subs = (s.allOf as unknown[]).filter((x) => !alwaysValid(x)).map((x) => compile(x, composite));
    rules.push((d, path) => {
      for (const sub of subs) {
        const e = sub(d, path);
        if (e) return e;
      }
      return undefined;
    });
  }
  return rules;
}

function numberRules(s: Record<string, unknown>): Rule[] {
  const rules: Rule[] = [];
  const bound = (k: string, op: string, bad: (d: number, x: number) => boolean) => {
    if (s[k] === undefined) return;
    const x = s[k] as number;
    const message = `must be ${op} ${x}`;
    rules.push((d, path) => (bad(d as number, x) || Number.isNaN(d) ? fail(path, k, message, { comparison: op, limit: x }) : undefined));
  };
  bound('maximum', '<=', (d, x) => d > x);
  bound('minimum', '>=', (d, x) => d < x);
  bound('exclusiveMaximum', '<', (d, x) => d >= x);
  bound('exclusiveMinimum', '>', (d, x) => d <= x);
  if (s.multipleOf !== undefined) {
    const m = s.multipleOf as number;
    const message = `must be multiple of ${m}`;
    rules.push((d, path) => {
      const res = (d as number) / m;
      // ajv's test, parseInt of the quotient's string form included (1e21 → 1; radix 10 changes nothing: no number prints as 0x…)
      return m === 0 || res !== Number.parseInt(res as unknown as string, 10)
        ? fail(path, 'multipleOf', message, { multipleOf: m })
        : undefined;
    });
  }
  return rules;
}

function stringRules(s: Record<string, unknown>): Rule[] {
  const rules: Rule[] = [];
  if (s.maxLength !== undefined) {
    const n = s.maxLength as number;
    rules.push((d, path) => (ucs2length(d as string) > n ? fail(path, 'maxLength', `must NOT have more than ${n} characters`) : undefined));
  }
  if (s.minLength !== undefined) {
    const n = s.minLength as number;
    rules.push((d, path) =>
      ucs2length(d as string) < n ? fail(path, 'minLength', `must NOT have fewer than ${n} characters`) : undefined,
    );
  }
  if (s.pattern !== undefined) {
    const p = s.pattern as string;
    const rx = new RegExp(p, 'u');
    rules.push((d, path) => (!rx.test(d as string) ? fail(path, 'pattern', `must match pattern "${p}"`) : undefined));
  }
  return rules;
}

function arrayRules(s: Record<string, unknown>, composite: boolean): Rule[] {
  const rules: Rule[] = [];
  if (s.maxItems !== undefined) {
    const n = s.maxItems as number;
    rules.push((d, path) => ((d as unknown[]).length > n ? fail(path, 'maxItems', `must NOT have more than ${n} items`) : undefined));
  }
  if (s.minItems !== undefined) {
    const n = s.minItems as number;
    rules.push((d, path) => ((d as unknown[]).length < n ? fail(path, 'minItems', `must NOT have fewer than ${n} items`) : undefined));
  }
  if (s.items !== undefined && !alwaysValid(s.items)) {
    const sub = compile(s.items, composite);
    rules.push((d, path) => {
      const a = d as unknown[];
      const len = a.length;
      for (let i = 0; i < len; i++) {
        const e = sub(a[i], `${path}/${i}`);
        if (e) return e;
      }
      return undefined;
    });
  }
  if (s.uniqueItems === true) {
    const items = s.items;
    const itemTypes: string[] = isObject(items) && items.type !== undefined ? (Array.isArray(items.type) ? items.type : [items.type]) : [];
    const optimized = itemTypes.length > 0 && !itemTypes.some((t) => t === 'object' || t === 'array');
    const dup = (path: string, i: number, j: number) =>
      fail(path, 'uniqueItems', `must NOT have duplicate items (items ## ${j} and ${i} are identical)`, { i, j });
    rules.push((d, path) => {
      const a = d as unknown[];
      if (a.length <= 1) return undefined;
      if (optimized) {
        // ajv's loopN: from the end, items of the items' types keyed in a plain object
        const indices: Record<string, unknown> = {};
        for (let i = a.length; i--; ) {
          let item = a[i];
          if (wrongType(itemTypes, item)) continue;
          if (itemTypes.length > 1 && typeof item === 'string') item += '_';
          const key = item as string;
          if (typeof indices[key] === 'number') return dup(path, i, indices[key] as number);
          indices[key] = i;
        }
        return undefined;
      }
      // ajv's loopN2: the last item equal to an earlier one, and the last such earlier one —
      // found in linear time through canonical keys instead of comparing every pair.
      const last = new Map<string, number>();
      let found: [number, number] | undefined;
      for (let i = 0; i < a.length; i++) {
        const key = canonicalKey(a[i]);
        const j = last.get(key);
        if (j !== undefined) found = [j, i];
        last.set(key, i);
      }
      return found ? dup(path, found[1], found[0]) : undefined;
    });
  }
  return rules;
}

function objectRules(s: Record<string, unknown>, composite: boolean): Rule[] {
  const rules: Rule[] = [];
  const count = (k: string, bad: (n: number, x: number) => boolean, word: string) => {
    if (s[k] === undefined) return;
    const x = s[k] as number;
    const message = `must NOT have ${word} than ${x} properties`;
    rules.push((d, path) => (bad(Object.keys(d as object).length, x) ? fail(path, k, message, { limit: x }) : undefined));
  };
  count('maxProperties', (n, x) => n > x, 'more');
  count('minProperties', (n, x) => n < x, 'fewer');
  if (s.required !== undefined && (s.required as string[]).length > 0) {
    const required = [...(s.required as string[])];
    rules.push((d, path) => {
      const o = d as Record<string, unknown>;
      for (const p of required)
        if (o[p] === undefined) return fail(path, 'required', `must have required property '${p}'`, { missingProperty: p });
      return undefined;
    });
  }
  const propsSchema = isObject(s.properties) ? s.properties : undefined;
  const props = propsSchema ? Object.keys(propsSchema).filter((p) => p !== '__proto__') : [];
  if (s.additionalProperties !== undefined && !alwaysValid(s.additionalProperties)) {
    const extra = s.additionalProperties;
    const sub = extra === false ? undefined : compile(extra, composite);
    const many = props.length > 8;
    const known = new Set(props);
    rules.push((d, path) => {
      const o = d as Record<string, unknown>;
      for (const key in o) {
        const additional = many ? !Object.hasOwn(propsSchema as object, key) : !known.has(key);
        if (!additional) continue;
        if (!sub) return fail(path, 'additionalProperties', 'must NOT have additional properties', { additionalProperty: key });
        const e = sub(o[key], `${path}/${escapePointer(key)}`);
        if (e) return e;
      }
      return undefined;
    });
  }
  if (propsSchema) {
    const checks = props
      .filter((p) => !alwaysValid(propsSchema[p]))
      .map((p) => ({ p, sub: compile(propsSchema[p], composite), at: `/${escapePointer(p)}` }));
    if (checks.length > 0) {
      rules.push((d, path) => {
        const o = d as Record<string, unknown>;
        for (const { p, sub, at } of checks) {
          const v = o[p];
          if (v === undefined) continue;
          const e = sub(v, path + at);
          if (e) return e;
        }
        return undefined;
      });
    }
  }
  return rules;
}

/**
 * The check for a schema within the subset (the caller makes sure: `inPlainArgsSubset`): undefined
 * when ajv would say valid, else ajv's first error in words, or UNSURE when only ajv can say.
 */
export function compilePlainArgs(schema: Record<string, unknown>): PlainArgsCheck {
  const check = compile(schema, false);
  return (value) => {
    try {
      const e = check(value, '');
      return e ? formatArgsError(e) : undefined;
    } catch (err) {
      if (err instanceof Unsure) return UNSURE;
      throw err;
    }
  };
}
