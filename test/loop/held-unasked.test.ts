/**
 * Issue 47 (R16): a model that calls a confirm-once write and then answers without asking does not
 * end the run on its claim. The core asks the person itself — a confirmation naming the held calls in
 * the tool's own words — and a yes runs them once (then the model answers), a no runs nothing; a run
 * that cannot pause says in its answer that nothing was written. On both stores.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { defineTool } from '../../src/tools/define.js';
import type { Store } from '../../src/types/index.js';
import { script, tempHome } from '../support/helpers.js';
import { freshSchema, testPgUrl, withSchema } from '../support/pg.js';

/** An app with one confirm-once write, `pay_bill`, that records each payment. */
function app() {
  const paid: string[] = [];
  const payBill = defineTool({
    name: 'pay_bill',
    description: 'Pay a bill',
    parameters: {
      type: 'object',
      properties: { payee: { type: 'string' }, amount: { type: 'number' } },
      required: ['payee', 'amount'],
    },
    effect: 'write',
    describe: ({ payee, amount }) => ({ title: `Pay ${String(payee)} $${String(amount)}`, lines: [] }),
    execute: ({ payee, amount }) => {
      paid.push(`${String(payee)} ${String(amount)}`);
      return `Paid ${String(payee)}: confirmation P-${paid.length}.`;
    },
  });
  return { paid, tools: [payBill] };
}

const PAY = { id: 'c1', name: 'pay_bill', args: { payee: 'Acme', amount: 120 } };

type StoreMaker = (() => Promise<Store>) | undefined;

async function heldThenYes(t: test.TestContext, makeStore: StoreMaker): Promise<void> {
  const home = tempHome();
  const { paid, tools } = app();
  const model = script(home, [{ tool_calls: [PAY] }, { text: 'I paid the Acme bill.' }, { text: 'Paid Acme: confirmation P-1.' }]);
  const first = new Keel({ home, tools, ...(makeStore ? { store: await makeStore() } : {}) });
  const r = await first.run('pay the Acme bill', { model });
  await first.close();
  assert.equal(r.status, 'paused', `the model's claim is not the answer: ${JSON.stringify(r.answer)}`);
  assert.equal(r.reason, 'awaiting_user_input');
  if (r.status !== 'paused' || r.reason !== 'awaiting_user_input') return;
  assert.deepEqual(r.confirm?.tools, ['pay_bill'], 'a confirmation of the held write');
  assert.deepEqual(
    r.confirm?.items.map((i) => [i.call_id, i.tool, i.title]),
    [['c1', 'pay_bill', 'Pay Acme $120']],
    "the held call in the tool's own words",
  );
  assert.match(r.question, /pay_bill \(Pay Acme \$120\)/);
  assert.doesNotMatch(r.question, /I paid/, "never the model's words");
  assert.deepEqual(paid, [], 'nothing ran before the yes');

  // Answered in another process, as a person would later.
  const later = new Keel({ home, tools, ...(makeStore ? { store: await makeStore() } : {}) });
  t.after(() => later.close());
  const done = await later.confirm(r.run_id, true);
  assert.equal(done.status, 'done', JSON.stringify(done));
  assert.equal(done.answer, 'Paid Acme: confirmation P-1.', 'the model answers after the held call ran');
  assert.deepEqual(paid, ['Acme 120'], 'the held call ran once');
  const run = await later.getRun(r.run_id);
  const asked = run.steps.find((s) => s.tool === 'ask_user');
  assert.equal(asked?.decision, 'yes', 'the consent is in the trace');
  assert.equal(asked?.by_core, true, 'asked by the core, not by a call of the model');
  const ran = done.steps.filter((s) => s.tool === 'pay_bill').map((s) => [s.call_id, s.outcome]);
  assert.deepEqual(ran, [
    ['c1', 'held_for_confirmation'],
    ['c1.confirmed', 'ran'],
  ]);
  assert.deepEqual(done.warnings, [], 'nothing was left unasked');
  // The model was told in the core's words what ran, and its result.
  const told = run.messages.filter((m) => m.role === 'user').at(-1);
  assert.match(told?.content ?? '', /^\[Keel\] .*said yes.*pay_bill\(\{"amount":120,"payee":"Acme"\}\): ran.*confirmation P-1/s);
  // A second answer is refused; nothing runs again.
  await assert.rejects(() => later.confirm(r.run_id, true));
  assert.deepEqual(paid, ['Acme 120']);
}

test('R16: a model that writes without asking: the person is asked, and a yes runs the held call once (SQLite)', (t) =>
  heldThenYes(t, undefined));

test('R16: a model that writes without asking: the person is asked, and a yes runs the held call once (PostgreSQL)', async (t) => {
  const url = withSchema(await testPgUrl(), freshSchema());
  await heldThenYes(t, async () => new PostgresStore(url));
});

async function heldThenNo(t: test.TestContext, makeStore: StoreMaker): Promise<void> {
  const home = tempHome();
  const { paid, tools } = app();
  const model = script(home, [{ tool_calls: [PAY] }, { text: 'I paid the Acme bill.' }, { text: 'I did not pay the Acme bill.' }]);
  const keel = new Keel({ home, tools, ...(makeStore ? { store: await makeStore() } : {}) });
  t.after(() => keel.close());
  const r = await keel.run('pay the Acme bill', { model });
  assert.equal(r.status, 'paused');
  const done = await keel.confirm(r.run_id, false);
  assert.equal(done.status, 'done');
  assert.equal(done.answer, 'I did not pay the Acme bill.');
  assert.deepEqual(paid, [], 'a no runs nothing');
  const run = await keel.getRun(r.run_id);
  assert.equal(run.steps.find((s) => s.tool === 'ask_user')?.decision, 'no');
  assert.match(run.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '', /said no.*do not claim it was done/s);
}

test('R16: the core asks about a held write the model never asked about; a no runs nothing and the model is told (SQLite)', (t) =>
  heldThenNo(t, undefined));

test('R16: the core asks about a held write the model never asked about; a no runs nothing and the model is told (PostgreSQL)', async (t) => {
  const url = withSchema(await testPgUrl(), freshSchema());
  await heldThenNo(t, async () => new PostgresStore(url));
});

test('R16: a run that cannot pause (no store) ends with its answer saying the held write was not done', async (t) => {
  const home = tempHome();
  const { paid, tools } = app();
  const model = script(home, [{ tool_calls: [PAY] }, { text: 'I paid the Acme bill.' }]);
  const keel = new Keel({ home, tools, store: null });
  t.after(() => keel.close());
  const r = await keel.run('pay the Acme bill', { model });
  assert.equal(r.status, 'done');
  assert.deepEqual(paid, []);
  assert.notEqual(r.answer, 'I paid the Acme bill.', "the model's claim alone is never the answer");
  assert.match(r.answer ?? '', /^I paid the Acme bill\.\n\n\[Keel: nothing was written by pay_bill: it needs the user's confirmation/);
  assert.ok(r.warnings.some((w) => /pay_bill was held/.test(w)));
});
