import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Ajv } from 'ajv';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { JsonSchema } from '../../src/types/index.js';

const def = (name: string, parameters: JsonSchema) => ({ name, description: name, parameters, execute: () => 'ok' });

/** What an eager `ajv.compile` at registration says about a schema (the guarantee lazy compiling must keep). */
function eagerVerdict(parameters: JsonSchema): string | undefined {
  try {
    new Ajv({ allErrors: false, strict: false, coerceTypes: false, logger: false }).compile({ type: 'object', ...parameters });
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

function registrationVerdict(name: string, parameters: JsonSchema): string | undefined {
  try {
    makeToolSpec(def(name, parameters), 'test');
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Schemas across the plain (compiled on first use) and non-plain (compiled at registration) paths. */
const CORPUS: [string, JsonSchema][] = [
  ['plain, valid', { properties: { q: { type: 'string', minLength: 1 }, n: { type: 'integer', minimum: 0 } }, required: ['q'] }],
  [
    'plain, nested',
    { properties: { o: { type: 'object', properties: { tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } } } } } },
  ],
  ['plain, anyOf/not', { properties: { v: { anyOf: [{ type: 'string' }, { type: 'number', not: { const: 0 } }] } } }],
  ['plain, draft-07 $schema', { $schema: 'http://json-schema.org/draft-07/schema#', properties: { a: { type: 'string' } } }],
  ['plain, unknown format (ignored)', { properties: { d: { type: 'string', format: 'no-such-format' } } }],
  ['plain, valid pattern', { properties: { id: { type: 'string', pattern: '^[a-z0-9-]+$' } } }],
  ['plain, unicode pattern', { properties: { w: { type: 'string', pattern: '^\\p{L}+$' } } }],
  ['plain but a type that does not exist', { properties: { a: { type: 'nonsense' } } }],
  ['plain but required is not a list', { required: 'a' }],
  ['plain but minLength is negative', { properties: { a: { type: 'string', minLength: -1 } } }],
  ['plain but multipleOf is 0', { properties: { a: { type: 'number', multipleOf: 0 } } }],
  ['plain but required lists a name twice', { required: ['a', 'a'] }],
  ['a pattern that does not compile', { properties: { a: { type: 'string', pattern: '(' } } }],
  ['a pattern invalid only with the u flag', { properties: { a: { type: 'string', pattern: '\\-' } } }],
  ['a $ref that resolves', { definitions: { s: { type: 'string' } }, properties: { a: { $ref: '#/definitions/s' } } }],
  ['a $ref that does not resolve', { properties: { a: { $ref: '#/definitions/missing' } } }],
  ['a remote $ref', { properties: { a: { $ref: 'http://example.com/x.json' } } }],
  ['patternProperties that do not compile', { patternProperties: { '(': { type: 'string' } } }],
  ['the old id keyword', { id: 'args', properties: {} }],
  ['nullable without type', { properties: { a: { nullable: true } } }],
  ['a tuple', { properties: { t: { type: 'array', items: [{ type: 'string' }], additionalItems: false } } }],
  // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword here.
  ['if/then', { properties: { a: { type: 'string' } }, if: { required: ['a'] }, then: { required: ['b'] } }],
  ['an unknown keyword', { properties: { a: { type: 'string', 'x-order': 1 } } }],
  ['a 2019-09 $schema', { $schema: 'https://json-schema.org/draft/2019-09/schema', properties: {} }],
];

describe('R1/DESIGN: a parameters schema that does not compile is refused at registration (compiling lazily keeps this)', () => {
  CORPUS.forEach(([label, parameters], i) => {
    test(`R1: ${label}`, () => {
      const eager = eagerVerdict(parameters);
      const got = registrationVerdict(`t${i}`, parameters);
      if (eager === undefined) assert.equal(got, undefined, 'accepted by ajv.compile, so accepted at registration');
      else {
        assert.ok(got, `ajv.compile refuses it (${eager}), so registration must too`);
        assert.ok(got.startsWith(`tool t${i}: 'parameters' is not a valid JSON Schema: `), got);
      }
    });
  });

  test('R1: the corpus covers both outcomes', () => {
    const refused = CORPUS.filter(([, p]) => eagerVerdict(p) !== undefined).length;
    assert.ok(refused >= 10 && refused < CORPUS.length - 5, `${refused} of ${CORPUS.length} refused`);
  });

  test('R1: a schema accepted at registration validates arguments on first use', () => {
    const spec = makeToolSpec(
      def('lazy_check', {
        properties: { q: { type: 'string', pattern: '^[a-z]+$' }, n: { type: 'integer' } },
        required: ['q'],
        additionalProperties: false,
      }),
      'test',
    );
    assert.equal(spec.checkArgs({ q: 'abc', n: 2 }), undefined);
    assert.equal(spec.checkArgs({ n: 2 }), "missing required argument 'q'");
    assert.equal(spec.checkArgs({ q: 'abc', extra: 1 }), "unknown argument 'extra'");
    assert.equal(spec.checkArgs({ q: 'ABC' }), 'q must match pattern "^[a-z]+$"');
    assert.equal(spec.checkArgs({ q: 'abc', n: 1.5 }), 'n must be integer');
  });

  test('R1: a plugin that breaks its schema object after registration gets an argument error, not a crash', () => {
    const parameters = { properties: { a: { type: 'string' } } };
    const spec = makeToolSpec(def('mutated_later', parameters), 'test');
    (parameters.properties.a as { type: string }).type = 'nonsense';
    // ajv's compile error (the schema is not checked against the meta-schema a second time: issue 49)
    assert.match(spec.checkArgs({ a: 'x' }) ?? '', /^the tool's parameters schema no longer compiles: type must be JSONType/);
  });

  test('R1: a schema with a $ref validates through the reference', () => {
    const spec = makeToolSpec(
      def('ref_check', { definitions: { s: { type: 'string' } }, properties: { a: { $ref: '#/definitions/s' } } }),
      'test',
    );
    assert.equal(spec.checkArgs({ a: 'x' }), undefined);
    assert.equal(spec.checkArgs({ a: 1 }), 'a must be string');
  });
});

test("R5: every core tool's parameters pass the JSON Schema meta-schema (the core trusts its own schemas at start)", async () => {
  const { askUser, findTools, memoryTools, reportGoal, submitGoal, submitPlan } = await import('../../src/tools/builtins.js');
  const { Subagents } = await import('../../src/subagents/delegates.js');
  const noStore = {} as Parameters<typeof memoryTools>[0];
  const delegates = new Subagents(
    { delegates: [{ name: 'researcher', instructions: 'Look things up.', tools: [] }], max_concurrent: 2 } as never,
    {} as never,
  );
  const specs = [askUser, findTools, submitPlan, submitGoal, reportGoal, ...memoryTools(noStore), ...delegates.tools()];
  const names = specs.map((s) => s.name);
  for (const n of ['ask_user', 'find_tools', 'memory_search', 'record_feedback', 'task', 'task_wait', 'task_list', 'task_stop'])
    assert.ok(names.includes(n), `${n} checked`);
  const ajv = new Ajv({ strict: false });
  for (const s of specs) assert.equal(ajv.validateSchema({ type: 'object', ...s.parameters }), true, `${s.name}: ${ajv.errorsText()}`);
});
