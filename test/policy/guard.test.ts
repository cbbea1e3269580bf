/**
 * C5's fresh mode check around handlers (src/policy/modes.ts): a tool some mode refuses is wrapped
 * and refused at call time; a tool no mode refuses (a read that no operator rule denies or limits to
 * some modes) is handed back as it is — the check could never refuse it (issue 49). And makeToolSpec
 * (src/tools/spec.ts) keeps every field of a definition, its own extra ones too, now that it names
 * the fields instead of spreading the definition.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeDeclaration } from '../../src/manifest/schema.js';
import { guardHandler, ModeDenied } from '../../src/policy/modes.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { Effect, Mode, ToolContext, ToolSpec } from '../../src/types/index.js';

const ctx = (mode: Mode): ToolContext =>
  ({ run_id: 'r', call_id: 'c', mode, request: '', signal: new AbortController().signal }) as ToolContext;

function tool(effect: Effect, policy?: ToolSpec['policy']): ToolSpec {
  const spec = makeToolSpec(
    { name: `t_${effect}`, description: 'A tool.', parameters: { type: 'object', properties: {} }, execute: () => `ran ${effect}` },
    'app',
    normalizeDeclaration({ effect }),
  );
  return policy ? { ...spec, policy } : spec;
}

/** The guard reading the mode from a variable the test changes, as a session's mode changes. */
function guarded(spec: ToolSpec): { g: ToolSpec; set: (m: Mode) => void } {
  let mode: Mode = 'agent';
  return { g: guardHandler(spec, () => mode), set: (m) => (mode = m) };
}

test('C5: a read tool no rule restricts is returned as it is, and runs in every mode', async () => {
  const spec = tool('read');
  const { g } = guarded(spec);
  assert.equal(g, spec, 'no wrapper: no mode can refuse it');
  for (const m of ['agent', 'plan', 'goal'] as const) assert.equal(await g.execute({}, ctx(m)), 'ran read');
});

test('C5: a read tool an operator rule keeps to agent mode is wrapped, and refused after a switch to plan', async () => {
  const { g, set } = guarded(tool('read', { declared_gate: 'none', modes: ['agent'] }));
  assert.equal(await g.execute({}, ctx('agent')), 'ran read');
  set('plan');
  await assert.rejects(async () => g.execute({}, ctx('agent')), ModeDenied, 'the mode is read at call time, not from the context');
  set('agent');
  assert.equal(await g.execute({}, ctx('plan')), 'ran read');
});

test('C5: a read tool an operator rule denies is wrapped and refused in every mode', async () => {
  const { g } = guarded(tool('read', { declared_gate: 'none', deny: true }));
  await assert.rejects(async () => g.execute({}, ctx('agent')), ModeDenied);
});

test('C5: a write tool is wrapped: it runs in agent mode and is refused after a switch to plan or goal', async () => {
  const spec = tool('write');
  const { g, set } = guarded(spec);
  assert.notEqual(g, spec);
  assert.equal(g.name, spec.name);
  assert.equal(g.declaration, spec.declaration);
  assert.equal(g.checkArgs, spec.checkArgs);
  assert.equal(await g.execute({}, ctx('agent')), 'ran write');
  for (const m of ['plan', 'goal'] as const) {
    set(m);
    await assert.rejects(async () => g.execute({}, ctx('agent')), ModeDenied);
  }
});

test('makeToolSpec keeps describe, validate and a field of its own a definition adds; its own fields win over the definition', () => {
  const describe = () => ({ title: 't' });
  const validate = () => undefined;
  const def = {
    name: 'x_tool',
    description: 'X.',
    parameters: { properties: { a: { type: 'string' } } },
    execute: () => 'x',
    describe,
    validate,
    label: 'X tool',
    gate: 'approval',
  };
  const spec = makeToolSpec(def as never, 'p', normalizeDeclaration({ effect: 'read' })) as ToolSpec & { label?: string };
  assert.equal(spec.describe, describe);
  assert.equal(spec.validate, validate);
  assert.equal(spec.label, 'X tool');
  assert.equal(spec.gate, 'none', "the declaration's gate, not the definition's field");
  assert.equal(spec.plugin, 'p');
  // A schema without `type` is checked as an object all the same.
  assert.equal(spec.checkArgs({ a: 'ok' }), undefined);
  assert.match(String(spec.checkArgs([])), /object/);
  assert.match(String(spec.checkArgs({ a: 1 })), /string/);
});
