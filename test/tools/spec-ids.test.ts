import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeToolSpec } from '../../src/tools/spec.js';

test('R1: two tools may use the same $id in their parameters; each validates against its own schema', () => {
  const a = makeToolSpec(
    {
      name: 'a',
      description: '',
      parameters: { $id: 'args', type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] },
      execute: () => '',
    },
    'p1',
  );
  const b = makeToolSpec(
    {
      name: 'b',
      description: '',
      parameters: { $id: 'args', type: 'object', properties: { y: { type: 'string' } }, required: ['y'] },
      execute: () => '',
    },
    'p2',
  );
  assert.equal(a.checkArgs({ x: 1 }), undefined);
  assert.match(a.checkArgs({ y: 'z' }) ?? '', /missing required argument 'x'/);
  assert.equal(b.checkArgs({ y: 'z' }), undefined);
  assert.match(b.checkArgs({ x: 1 }) ?? '', /missing required argument 'y'/);
});
