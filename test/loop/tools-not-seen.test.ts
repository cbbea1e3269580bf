// Issue 26: a server whose chat template cannot render tools drops them silently (llama.cpp with
// Gemma 3): the model then names tools it was never shown. A first reply calling a tool its request
// did not declare warns once per run, naming the model and the likely cause.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Harness } from '../support/keel.js';

test('issue 26: a first reply calling an undeclared tool warns once, naming the model and its chat template', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 'a', name: 'get_weather', args: {}, undeclared: true }] },
    { tool_calls: [{ id: 'b', name: 'get_forecast', args: {}, undeclared: true }] },
    { text: 'I cannot check the weather.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('what is the weather?');
  assert.equal(r.status, 'done', r.answer ?? '');
  const warned = r.warnings.filter((w) => /did not declare/.test(w));
  assert.equal(warned.length, 1, `once per run: ${r.warnings.join(' | ')}`);
  assert.match(warned[0], new RegExp(`the model ${h.model.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} called get_weather`));
  assert.match(warned[0], /chat template/);
});

test('issue 26: no warning when the first reply calls declared tools', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 'a', name: 'upcoming_dues', args: {} }] }, { text: 'Two bills.' }]);
  t.after(() => h.close());
  const r = await h.run('which bills are due?');
  assert.equal(r.status, 'done', r.answer ?? '');
  assert.ok(!r.warnings.some((w) => /did not declare/.test(w)), r.warnings.join(' | '));
});
