/**
 * M6: the plain arguments check (src/tools/plain-args.ts) answers what ajv answers. Seeded random
 * plain schemas (every supported keyword, nested, several types, mixed enums) and values near them
 * (matching, and off in one or several places so that ajv's error ORDER decides) go through both:
 * the interpreter's string equals ajv's first error as spec.ts formats it, case by case. Plus one
 * hand-written case per message and per ajv quirk, and a fresh process whose first tool call
 * through a plain schema does not load ajv.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { plainSchemaValid } from '../../src/manifest/plain-schema.js';
import { compilePlainArgs, formatArgsError, inPlainArgsSubset, UNSURE } from '../../src/tools/plain-args.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { JsonSchema } from '../../src/types/index.js';

const want_log = process.env.PLAIN_ARGS_TALLY === '1';
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

// spec.ts's options (validateSchema is checked separately below)
const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false, addUsedSchema: false });

const THROWS = 'ajv threw';

/** ajv's answer, formatted as spec.ts formats it (THROWS when its fast-deep-equal calls a non-function own valueOf/toString). */
function ajvAnswer(schema: unknown, value: unknown): string | undefined {
  const v = ajv.compile(schema as object);
  try {
    if (v(value)) return undefined;
  } catch (err) {
    if (err instanceof TypeError) return THROWS;
    throw err;
  }
  const first = v.errors?.[0];
  return first ? formatArgsError(first) : 'no error object';
}

function plainAnswer(schema: unknown, value: unknown) {
  assert.ok(inPlainArgsSubset(schema), `not in the subset: ${JSON.stringify(schema)}`);
  return compilePlainArgs(schema as Record<string, unknown>)(value);
}

// --- a seeded generator -----------------------------------------------------------------------

function mulberry32(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  constructor(readonly rnd: () => number) {}
  chance = (p: number) => this.rnd() < p;
  int = (lo: number, hi: number) => lo + Math.floor(this.rnd() * (hi - lo + 1));
  pick = <T>(xs: readonly T[]): T => xs[Math.floor(this.rnd() * xs.length)] as T;
  some = <T>(xs: readonly T[], max = xs.length): T[] => {
    const out = xs.filter(() => this.chance(0.4));
    return out.slice(0, max);
  };
}

const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'array', 'object'] as const;
const NUMBERS = [-3, -1, -0.5, 0, 0.5, 1, 2, 2.5, 3, 5, 7, 10, 100, 1e21, 0.1, 0.30000000000000004];
const STEPS = [0.5, 1, 2, 3, 0.1, 0.01, 2.5, 1e-7];
const PATTERNS = ['^a', 'b$', '^[a-z]+$', '\\d', '^.{2}$', 'x"y', '\\\\', '^\\p{Lu}', '😀', '^$', '[~/]'];
const KEYS = ['a', 'b', 'c', 'id', 'd/e', 'f~g', 'toString', 'x y', 'é'];
const STRINGS = ['', 'a', 'ab', 'abc', 'B', 'x"y', 'ba', '12', '😀', '😀😀', '\ud83d', 'ÉTÉ', 'a/b', 'toString'];

function scalar(g: Gen): unknown {
  return g.pick([() => g.pick(STRINGS), () => g.pick(NUMBERS), () => g.int(-5, 12), () => g.chance(0.5), () => null])();
}

function jsonValue(g: Gen, depth: number): unknown {
  if (depth <= 0 || g.chance(0.6)) return scalar(g);
  if (g.chance(0.5)) return Array.from({ length: g.int(0, 3) }, () => jsonValue(g, depth - 1));
  const o: Record<string, unknown> = {};
  for (const k of g.some(
    KEYS.filter((k) => k !== 'toString'),
    3,
  ))
    o[k] = jsonValue(g, depth - 1);
  return o;
}

function distinct(xs: unknown[]): unknown[] {
  const seen = new Set<string>();
  return xs.filter((x) => {
    const k = JSON.stringify(x);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function schema(g: Gen, depth: number): unknown {
  if (depth > 0 && g.chance(0.05)) return g.chance(0.7);
  const s: Record<string, unknown> = {};
  if (g.chance(0.75)) {
    const ts = distinct(Array.from({ length: g.chance(0.75) ? 1 : g.int(2, 3) }, () => g.pick(TYPES)));
    s.type = ts.length === 1 && g.chance(0.8) ? ts[0] : ts;
  }
  const types = s.type === undefined ? [] : ([] as string[]).concat(s.type as string);
  const likely = (t: string) => (types.includes(t) || (t === 'number' && types.includes('integer')) ? 0.45 : 0.06);
  for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'])
    if (g.chance(likely('number') / 2)) s[k] = g.pick(NUMBERS);
  if (g.chance(likely('number') / 3)) s.multipleOf = g.pick(STEPS);
  if (g.chance(likely('string') / 2)) s.minLength = g.int(0, 3);
  if (g.chance(likely('string') / 2)) s.maxLength = g.int(0, 4);
  if (g.chance(likely('string') / 2)) s.pattern = g.pick(PATTERNS);
  if (g.chance(likely('array') / 2)) s.minItems = g.int(0, 3);
  if (g.chance(likely('array') / 2)) s.maxItems = g.int(0, 4);
  if (depth < 4 && g.chance(likely('array'))) s.items = schema(g, depth + 1);
  if (g.chance(likely('array') / 2)) s.uniqueItems = g.chance(0.8);
  if (depth < 4 && g.chance(likely('object'))) {
    const props: Record<string, unknown> = {};
    const keys = g.chance(0.1) ? [...KEYS, 'k1', 'k2', 'k3'] : g.some(KEYS, 5); // > 8: ajv's other lookup
    for (const k of keys) props[k] = schema(g, depth + 1);
    s.properties = props;
  }
  if (g.chance(likely('object') / 1.5)) s.required = distinct(g.some([...KEYS, 'zz'], 4));
  if (g.chance(likely('object') / 1.5)) s.additionalProperties = depth < 4 && g.chance(0.4) ? schema(g, depth + 1) : !g.chance(0.8);
  if (g.chance(likely('object') / 3)) s.minProperties = g.int(0, 3);
  if (g.chance(likely('object') / 3)) s.maxProperties = g.int(0, 4);
  if (g.chance(0.12)) s.enum = distinct(Array.from({ length: g.int(1, 5) }, () => jsonValue(g, 2)));
  if (g.chance(0.05)) s.const = jsonValue(g, 2);
  if (depth < 3) {
    if (g.chance(0.05)) s.not = schema(g, depth + 1);
    for (const k of ['anyOf', 'oneOf', 'allOf']) if (g.chance(0.05)) s[k] = Array.from({ length: g.int(1, 3) }, () => schema(g, depth + 1));
  }
  if (g.chance(0.1)) s.title = 'T';
  if (g.chance(0.05)) s.description = 'D';
  if (g.chance(0.05)) s.default = jsonValue(g, 1);
  if (g.chance(0.03)) s.examples = [jsonValue(g, 1)];
  if (g.chance(0.03)) s.$comment = 'c';
  return s;
}

/** A value near what `s` describes: mostly matching, now and then off (type, bounds, keys, items). */
function value(g: Gen, s: unknown, depth: number): unknown {
  if (depth > 6 || typeof s === 'boolean' || g.chance(0.06)) return jsonValue(g, 2);
  const o = s as Record<string, unknown>;
  if (o.enum && g.chance(0.7)) return g.pick(o.enum as unknown[]);
  if (o.const !== undefined && g.chance(0.7)) return o.const;
  const t: string = o.type === undefined ? g.pick(TYPES) : g.pick(([] as string[]).concat(o.type as string));
  const near = (x: unknown) => (typeof x === 'number' ? g.pick([x, x - 1, x + 1, x + 0.5, x * 2, -x]) : g.pick(NUMBERS));
  switch (t) {
    case 'integer':
      return g.chance(0.8) ? Math.round(Number(near(g.pick([o.minimum, o.maximum, o.multipleOf, 3])))) : g.pick([1.5, 2, -0, 1e21, 3]);
    case 'number':
      return near(g.pick([o.minimum, o.maximum, o.exclusiveMinimum, o.exclusiveMaximum, o.multipleOf, 2]));
    case 'string':
      return g.pick(STRINGS);
    case 'boolean':
      return g.chance(0.5);
    case 'null':
      return null;
    case 'array': {
      const n = g.int(0, 5);
      const out = Array.from({ length: n }, () => value(g, o.items ?? {}, depth + 1));
      if (n > 1 && g.chance(0.3)) out[g.int(0, n - 1)] = out[g.int(0, n - 1)]; // a duplicate
      return out;
    }
    default: {
      const out: Record<string, unknown> = {};
      const props = (o.properties ?? {}) as Record<string, unknown>;
      for (const k of Object.keys(props)) if (g.chance(0.75)) out[k] = value(g, props[k], depth + 1);
      for (const k of (o.required ?? []) as string[]) if (out[k] === undefined && g.chance(0.6)) out[k] = scalar(g);
      if (g.chance(0.25)) out[g.pick(['extra', ...KEYS])] = value(g, o.additionalProperties ?? {}, depth + 1);
      return out;
    }
  }
}

// --- the differential run ---------------------------------------------------------------------

test('M6: the plain arguments check answers what ajv answers, on 60,000 generated schema/value pairs', () => {
  const g = new Gen(mulberry32(49));
  const tally = { cases: 0, valid: 0, invalid: 0, throws: 0, unsure: 0, schemas: 0, keywords: new Map<string, number>() };
  for (let i = 0; i < 3000; i++) {
    const s = schema(g, 0);
    assert.equal(ajv.validateSchema(s as object), true, `the generator made an invalid schema: ${JSON.stringify(s)}`);
    tally.schemas++;
    const check = compilePlainArgs(s as Record<string, unknown>);
    assert.ok(inPlainArgsSubset(s), JSON.stringify(s));
    for (let j = 0; j < 20; j++) {
      const v = JSON.parse(JSON.stringify(value(g, s, 0) ?? null)) as unknown; // what arguments are: JSON
      const want = ajvAnswer(s, v);
      const got = check(v);
      tally.cases++;
      if (want === THROWS) tally.throws++;
      if (got === UNSURE) {
        // left to ajv: only where ajv's comparison meets an own valueOf/toString (the generator's key 'toString')
        tally.unsure++;
        assert.ok(JSON.stringify(v).includes('"toString":'), `UNSURE for ${JSON.stringify(v)}`);
        continue;
      }
      assert.notEqual(want, THROWS, `ajv threw, the interpreter answered: schema ${JSON.stringify(s)}\nvalue ${JSON.stringify(v)}`);
      assert.equal(got, want, `schema ${JSON.stringify(s)}\nvalue ${JSON.stringify(v)}`);
      if (want === undefined) tally.valid++;
      else {
        tally.invalid++;
        const kw = want
          .split(' ')
          .slice(1)
          .join(' ')
          .replace(/-?\b\d[\d.e+-]*|"[^"]*"|'[^']*'/g, '#');
        tally.keywords.set(kw, (tally.keywords.get(kw) ?? 0) + 1);
      }
    }
  }
  if (want_log) console.log(JSON.stringify({ ...tally, keywords: Object.fromEntries(tally.keywords) }, null, 1));
  assert.ok(tally.unsure < tally.cases / 100, JSON.stringify({ ...tally, keywords: undefined }));
  // Both sides of the line are well represented, and so is every kind of error.
  assert.ok(tally.valid > tally.cases / 5 && tally.invalid > tally.cases / 5, JSON.stringify({ ...tally, keywords: undefined }));
  const kinds = [...tally.keywords.keys()].join('\n');
  for (const m of [
    'must be >= #',
    'must be string',
    'must be integer,',
    'must NOT have fewer than # characters',
    'must match pattern #',
    'must be equal to one of the allowed values',
  ]) {
    assert.ok(kinds.includes(m), `no case ended with "${m}"`);
  }
  for (const m of ['duplicate items', 'must NOT be valid', 'more than # properties', 'boolean schema is false', 'multiple of']) {
    assert.ok(kinds.includes(m), `no case ended with "${m}"`);
  }
});

test('M6: through makeToolSpec, a generated object schema is checked as ajv checks it', () => {
  const g = new Gen(mulberry32(4949));
  let n = 0;
  while (n < 400) {
    const s = schema(g, 0) as Record<string, unknown>;
    if (typeof s !== 'object' || (s.type !== undefined && s.type !== 'object')) continue;
    const params = { ...s, type: 'object' };
    if (!plainSchemaValid(params)) continue; // spec.ts then asks ajv's meta-schema check, loading ajv
    const spec = makeToolSpec({ name: `t${n}`, description: '', parameters: params as JsonSchema, execute: () => 'ok' }, 'test');
    for (let j = 0; j < 10; j++) {
      const v = JSON.parse(JSON.stringify(value(g, params, 0) ?? null)) as unknown;
      const want = ajvAnswer(params, v);
      if (want === THROWS) assert.throws(() => spec.checkArgs(v), TypeError);
      else assert.equal(spec.checkArgs(v), want, `schema ${JSON.stringify(params)}\nvalue ${JSON.stringify(v)}`);
    }
    n++;
  }
});

// --- one case per message, and ajv's quirks ---------------------------------------------------

const CASES: Array<[string, unknown, unknown, string | undefined]> = [
  ['type', { type: 'string' }, 5, 'arguments must be string'],
  ['types', { type: ['string', 'integer'] }, true, 'arguments must be string,integer'],
  ['a one-type list', { type: ['string'] }, 5, 'arguments must be string'],
  ['integer: 1.5', { type: 'integer' }, 1.5, 'arguments must be integer'],
  ['integer: 1.0 (JSON) is 1', { type: 'integer' }, JSON.parse('1.0'), undefined],
  ['integer: 1e21', { type: 'integer' }, 1e21, undefined],
  ['number covers integer', { type: ['number', 'integer'] }, 2.5, undefined],
  ['array and object', { type: ['array', 'object'] }, null, 'arguments must be array,object'],
  ['array, object and null', { type: ['array', 'object', 'null'] }, null, undefined],
  ['minimum', { minimum: 5 }, 3, 'arguments must be >= 5'],
  ['maximum', { maximum: 1e21 }, 2e21, 'arguments must be <= 1e+21'],
  ['exclusiveMinimum', { exclusiveMinimum: 0 }, 0, 'arguments must be > 0'],
  ['exclusiveMaximum', { exclusiveMaximum: 0.5 }, 0.5, 'arguments must be < 0.5'],
  ['multipleOf', { multipleOf: 0.1 }, 0.3, 'arguments must be multiple of 0.1'],
  ['multipleOf: parseInt of 1e21', { multipleOf: 1 }, 1e21, 'arguments must be multiple of 1'],
  ['minLength', { minLength: 3 }, 'ab', 'arguments must NOT have fewer than 3 characters'],
  ['maxLength counts code points', { maxLength: 1 }, '😀', undefined],
  ['maxLength', { maxLength: 1 }, '😀😀', 'arguments must NOT have more than 1 characters'],
  ['pattern', { pattern: '^a' }, 'b', 'arguments must match pattern "^a"'],
  ['pattern with a quote', { pattern: 'x"y' }, 'b', 'arguments must match pattern "x"y"'],
  ['minItems', { minItems: 2 }, [1], 'arguments must NOT have fewer than 2 items'],
  ['maxItems', { maxItems: 0 }, [1], 'arguments must NOT have more than 0 items'],
  ['minProperties', { minProperties: 1 }, {}, 'arguments must NOT have fewer than 1 properties'],
  ['maxProperties', { maxProperties: 0 }, { a: 1 }, 'arguments must NOT have more than 0 properties'],
  ['required', { required: ['a', 'b'] }, { a: 1 }, "missing required argument 'b'"],
  ['required sees inherited members', { required: ['toString'] }, {}, undefined],
  ['additionalProperties', { properties: { a: {} }, additionalProperties: false }, { a: 1, b: 2 }, "unknown argument 'b'"],
  ['additionalProperties schema', { additionalProperties: { type: 'string' } }, { 'x/y': 1 }, 'x~1y must be string'],
  [
    'properties',
    { properties: { a: { properties: { b: { items: { type: 'string' } } } } } },
    { a: { b: ['x', 0] } },
    'a.b.1 must be string',
  ],
  ['properties see inherited members', { properties: { toString: { type: 'string' } } }, {}, 'toString must be string'],
  ['enum', { enum: ['a', 1, null, { b: [1] }] }, { b: [2] }, 'arguments must be equal to one of the allowed values'],
  ['enum, deep', { enum: ['a', { b: [1], c: null }] }, { c: null, b: [1] }, undefined],
  ['const', { const: 'a' }, 'b', 'arguments must be equal to constant'],
  ['const, deep', { const: [1, { a: 2 }] }, [1, { a: 2 }], undefined],
  [
    'uniqueItems, typed items: larger index first',
    { items: { type: 'string' }, uniqueItems: true },
    ['a', 'b', 'a', 'b'],
    'arguments must NOT have duplicate items (items ## 3 and 1 are identical)',
  ],
  [
    'uniqueItems, untyped: smaller index first',
    { uniqueItems: true },
    ['a', 'b', 'a', 'b'],
    'arguments must NOT have duplicate items (items ## 1 and 3 are identical)',
  ],
  [
    'uniqueItems, deep',
    { uniqueItems: true },
    [{ a: 1, b: 2 }, 0, { b: 2, a: 1 }],
    'arguments must NOT have duplicate items (items ## 0 and 2 are identical)',
  ],
  ['uniqueItems, two types: "1" is not 1', { items: { type: ['string', 'number'] }, uniqueItems: true }, ['1', 1], undefined],
  ['uniqueItems, typed, "__proto__" twice passes', { items: { type: 'string' }, uniqueItems: true }, ['__proto__', '__proto__'], undefined],
  ['not', { not: { type: 'string' } }, 'a', 'arguments must NOT be valid'],
  ["anyOf: the first branch's error", { anyOf: [{ type: 'string' }, { minimum: 3 }] }, 1, 'arguments must be string'],
  ['oneOf: two pass', { oneOf: [{ minimum: 0 }, { maximum: 5 }] }, 1, 'arguments must match exactly one schema in oneOf'],
  [
    'oneOf: a failing branch before two passing',
    { oneOf: [{ minimum: 0 }, { type: 'string' }, { maximum: 5 }] },
    1,
    'arguments must be string',
  ],
  ['allOf', { allOf: [{}, { type: 'integer' }] }, 1.5, 'arguments must be integer'],
  ['false schema', { properties: { a: false } }, { a: 1 }, 'a boolean schema is false'],
  ['order: a number keyword before the string type', { type: 'string', minLength: 1, minimum: 5 }, 3, 'arguments must be >= 5'],
  [
    'order: enum before the string type',
    { type: 'string', minLength: 1, enum: ['a'] },
    3,
    'arguments must be equal to one of the allowed values',
  ],
  ['order: the type first when its group is empty', { type: 'string', enum: ['a'] }, 3, 'arguments must be string'],
  [
    'order: required before additionalProperties before properties',
    { properties: { a: { type: 'string' } }, required: ['b'], additionalProperties: false },
    { a: 1, c: 1 },
    "missing required argument 'b'",
  ],
  [
    'order: additionalProperties before properties',
    { properties: { a: { type: 'string' } }, additionalProperties: false },
    { a: 1, c: 1 },
    "unknown argument 'c'",
  ],
  ['order: maxItems before items', { maxItems: 1, items: { type: 'string' } }, [1, 2], 'arguments must NOT have more than 1 items'],
];

test("M6: each keyword's message and ajv's order and quirks, by hand and as ajv says", () => {
  for (const [name, s, v, want] of CASES) {
    assert.equal(ajvAnswer(s, v), want, `${name}: ajv`);
    assert.equal(plainAnswer(s, v), want, name);
  }
  // more than 8 properties: ajv asks hasOwnProperty of the schema's properties
  const many = Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].map((k) => [k, {}]));
  const s = { properties: many, additionalProperties: false };
  for (const v of [{ a: 1 }, { j: 1 }, JSON.parse('{"__proto__": 1}')]) assert.equal(plainAnswer(s, v), ajvAnswer(s, v), JSON.stringify(v));
});

test('M6: what is left to ajv — schemas outside the subset, and values the interpreter cannot promise', () => {
  for (const s of [
    { type: 'string', format: 'email' },
    { $ref: '#/definitions/a', definitions: { a: {} } },
    { patternProperties: { '^a': {} } },
    { items: [{ type: 'string' }] },
    { nullable: true },
    JSON.parse('{"if": {}, "then": {}}'),
    { 'x-unknown': 1 },
    { enum: [] },
    { const: Number.POSITIVE_INFINITY },
    { pattern: '(' },
    { minLength: -1 },
    { properties: { a: { $schema: 'http://json-schema.org/draft-07/schema#' } } },
  ]) {
    assert.equal(inPlainArgsSubset(s), false, JSON.stringify(s));
  }
  assert.equal(inPlainArgsSubset({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' }), true);
  // depth is bounded
  let deep: unknown = { type: 'string' };
  for (let i = 0; i < 40; i++) deep = { items: deep };
  assert.equal(inPlainArgsSubset(deep), false);
  // an own valueOf that fast-deep-equal would call (ajv throws): ajv decides
  const hostile = JSON.parse('[{"valueOf": 1}, {"valueOf": 1}]');
  assert.equal(compilePlainArgs({ uniqueItems: true })(hostile), UNSURE);
  assert.equal(compilePlainArgs({ enum: [{ valueOf: 1 }] })(hostile[0]), UNSURE);
  // a value nested deeper than the comparison's bound: ajv decides (no stack to exhaust here)
  let nested: unknown = [];
  for (let i = 0; i < 100_000; i++) nested = [nested];
  assert.equal(compilePlainArgs({ uniqueItems: true })([nested, nested]), UNSURE);
  assert.equal(compilePlainArgs({ const: [[[]]] })(nested), 'arguments must be equal to constant');
  // many items with no duplicate: linear, not ajv's pairwise loop
  const big = Array.from({ length: 200_000 }, (_, i) => ({ i }));
  const t0 = performance.now();
  assert.equal(compilePlainArgs({ uniqueItems: true })(big), undefined);
  assert.ok(performance.now() - t0 < 2000, 'uniqueItems took super-linear time');
});

test("M6: through makeToolSpec, a UNSURE answer is ajv's answer", () => {
  const spec = makeToolSpec(
    { name: 'u', description: '', parameters: { properties: { xs: { uniqueItems: true } } }, execute: () => 'ok' },
    'test',
  );
  assert.equal(spec.checkArgs({ xs: [{ a: 1 }, { a: 1 }] }), 'xs must NOT have duplicate items (items ## 0 and 1 are identical)');
  // ajv itself throws here (fast-deep-equal calls the own valueOf); checkArgs answers as before
  assert.throws(() => spec.checkArgs(JSON.parse('{"xs": [{"valueOf": 1}, {"valueOf": 1}]}')), TypeError);
});

test("M6: a fresh process's first tool call through a plain schema does not load ajv (and one through format does)", () => {
  const script = `
    import { createRequire } from 'node:module';
    const { makeToolSpec } = await import(${JSON.stringify(join(ROOT, 'src', 'tools', 'spec.ts'))});
    const loaded = () => Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('/node_modules/ajv/')).length;
    const def = (parameters) => ({ name: 't', description: '', parameters, execute: () => 'ok' });
    const plain = makeToolSpec(def({ properties: { q: { type: 'string', minLength: 1 }, n: { type: 'integer', minimum: 0 } }, required: ['q'] }), 'p');
    const answers = [plain.checkArgs({ q: 'a', n: 1 }), plain.checkArgs({ n: -1 })];
    const afterPlain = loaded();
    const formatted = makeToolSpec(def({ properties: { when: { type: 'string', format: 'date' } } }), 'p');
    answers.push(formatted.checkArgs({ when: 1 }));
    process.stdout.write(JSON.stringify({ answers, afterPlain, afterFormat: loaded() }));
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { answers: (string | null)[]; afterPlain: number; afterFormat: number };
  assert.deepEqual(out.answers, [null, "missing required argument 'q'", 'when must be string']);
  assert.equal(out.afterPlain, 0, 'ajv was loaded by a first call through a plain schema');
  assert.ok(out.afterFormat > 0, 'the probe does not see ajv load (so its 0 above would prove nothing)');
});
