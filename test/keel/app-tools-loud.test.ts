/**
 * R32 (issue 40): a mistake in the application's own tools fails loudly — a KeelError naming the
 * tool and the field, with the manifest's message (M4) — at construction, or at the first run when
 * only the mount can tell (a core name, a run's own list); `degradedTools: 'warn'` asks for degraded
 * mounting instead (the tool stays out of the pool, the run warns), as a plugin folder degrades.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import type { AppTool } from '../../src/types/index.js';
import { KeelError } from '../../src/util/errors.js';
import { script, tempHome } from '../support/helpers.js';

const params = { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] };
/** A read declared with `confirm`: refused by M4 ('confirm' applies only to write tools). */
const PAY = {
  name: 'pay',
  description: 'Pay an amount',
  parameters: params,
  execute: () => 'paid',
  effect: 'read',
  confirm: 'never',
} as unknown as AppTool;
const BALANCE = {
  name: 'balance',
  description: 'The balance',
  parameters: { type: 'object', properties: {} },
  execute: () => '12 EUR',
  effect: 'read',
} as unknown as AppTool;
const CONFIRM = "tools[0] (pay).confirm: 'confirm' applies only to write tools; this tool is read";

const refused = (message: string | RegExp) => (err: unknown) => {
  assert.ok(err instanceof KeelError, String(err));
  assert.equal(err.code, 'config');
  if (typeof message === 'string') assert.ok(err.message.startsWith(message), err.message);
  else assert.match(err.message, message);
  assert.match(err.message, /degradedTools: 'warn'/, 'it says how to mount the others');
  return true;
};

test('R32: new Keel({ tools }) with a refused declaration throws at construction, naming the tool and the field', () => {
  assert.throws(() => new Keel({ home: tempHome(), store: null, tools: [PAY, BALANCE] }), refused(CONFIRM));
  // Each mistake is named.
  const bad = { ...BALANCE, name: 'balance', colour: 'red' } as unknown as AppTool;
  assert.throws(
    () => new Keel({ home: tempHome(), store: null, tools: [PAY, bad] }),
    refused(/tools\[0\] \(pay\)\.confirm: .*; tools\[1\] \(balance\)\.colour: unknown field 'colour'/),
  );
  assert.throws(
    () => new Keel({ home: tempHome(), store: null, tools: [BALANCE], degradedTools: 'loud' as never }),
    /degradedTools: must be 'throw' or 'warn'/,
  );
});

test('R32: a name only the mount can judge (a core name), or a run’s own list with a mistake, fails the first run — nothing is stored', async (t) => {
  const home = tempHome();
  const ask = { ...BALANCE, name: 'ask_user' } as unknown as AppTool;
  const keel = new Keel({ home, tools: [ask] });
  t.after(() => keel.close());
  const model = script(home, [{ text: 'Hello.' }]);
  await assert.rejects(
    keel.run('hello', { model }),
    refused('tools[0] (ask_user): tool ask_user declared in code is refused: the core already registers that name'),
  );
  const mine = new Keel({ home: tempHome(), store: null });
  await assert.rejects(mine.run('hello', { model, tools: [PAY] }), refused(CONFIRM));
  assert.deepEqual(await keel.listRuns(), [], 'no run was started');
});

test("R32: degradedTools: 'warn' mounts the valid tools; the refused one stays out of the pool and the run warns", async () => {
  const home = tempHome();
  const keel = new Keel({ home, store: null, tools: [PAY, BALANCE], degradedTools: 'warn' });
  const r = await keel.run('what is my balance', {
    model: script(home, [{ tool_calls: [{ id: 'b1', name: 'balance', args: {} }] }, { text: '12 EUR.' }]),
  });
  assert.equal(r.status, 'done');
  assert.equal(r.steps[0].result, '12 EUR');
  assert.deepEqual(r.warnings, [`the tools declared in code (app) are degraded: ${CONFIRM}`]);
  const pool = (await keel.tools()).map((x) => x.name);
  assert.ok(pool.includes('balance') && !pool.includes('pay'), pool.join(', '));
});
