/**
 * The library API (#24): one method per action, each taking the options of `run` — a ModelClient of
 * the application's own among them, kept across the run's pauses — a RunResult that narrows on
 * `status`, and the per-run options (instructions, signal, limits, menu size, structured output).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { Keel } from '../../src/keel/keel.js';
import type { ModelClient, ModelEvent, ModelRequest } from '../../src/models/types.js';
import { defineTool } from '../../src/tools/define.js';
import type { ToolCall } from '../../src/types/index.js';
import { calls, FIXTURES, tempHome } from '../support/helpers.js';

/** A model of the application's own: replies from a list, recording what it was asked. */
class ListModel implements ModelClient {
  readonly spec = 'rules:v1';
  readonly requests: ModelRequest[] = [];
  constructor(private readonly replies: ({ text: string } | { calls: ToolCall[] })[]) {}
  async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    this.requests.push(req);
    const r = this.replies[this.requests.length - 1];
    if (!r) throw new Error('the list model ran out of replies');
    yield { type: 'done', reply: 'text' in r ? { text: r.text, tool_calls: [] } : { text: '', tool_calls: r.calls } };
  }
}

const TRASH: ToolCall = { id: 't1', name: 'trash_email', args: { ids: ['m1'] } };
const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

test('A2: a run started with a ModelClient of its own is approved with that model, in the same Keel, without naming it again', async (t) => {
  const home = tempHome();
  const keel = new Keel({ home });
  t.after(() => keel.close());
  const model = new ListModel([{ calls: [TRASH] }, { text: 'Moved it to Trash.' }]);
  const r = await keel.run('trash the deals email', { model, pluginDirs: [FIXTURES] });
  assert.equal(r.status, 'paused');
  assert.equal(r.reason, 'awaiting_approval');
  if (r.status !== 'paused' || r.reason !== 'awaiting_approval') return;
  // Narrowed: the card is there, typed, with no optional chaining.
  const done = await keel.approve(r.approval.id, { actor: 'ana' });
  assert.equal(done.status, 'done');
  assert.equal(done.answer, 'Moved it to Trash.');
  assert.equal(model.requests.length, 2, 'the same model object answered after the card');
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m1"]}']);
  const [card] = await keel.listApprovals({ run_id: r.run_id });
  assert.equal(card.status, 'approved');
  assert.equal(card.answered_by, 'ana');
});

test('A2: in another process the model is given again; without it the answer is kept and the error names the option', async (t) => {
  const home = tempHome();
  const first = new Keel({ home });
  const r = await first.run('trash the deals email', { model: new ListModel([{ calls: [TRASH] }]), pluginDirs: [FIXTURES] });
  await first.close();
  assert.equal(r.reason, 'awaiting_approval');
  const id = r.approval?.id ?? '';

  const later = new Keel({ home });
  t.after(() => later.close());
  await assert.rejects(
    () => later.approve(id, { actor: 'ana' }),
    (err: Error) => {
      assert.match(err.message, /approval .* is recorded \(approved\)/);
      assert.match(err.message, /started with the model "rules:v1", which Keel cannot rebuild here/);
      assert.match(err.message, /`model` option/);
      return true;
    },
  );
  assert.equal(trashed(home).length, 0, 'nothing ran without the model');
  const model = new ListModel([{ text: 'Done: moved to Trash.' }]);
  const done = await later.resume(r.run_id, { model });
  assert.equal(done.status, 'done');
  assert.equal(done.answer, 'Done: moved to Trash.');
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m1"]}'], 'the approved call ran once');
});

test('R16/R17: answer() answers a plain question, confirm(runId, yes) held writes, reject() a card — all with the run’s own model', async (t) => {
  const home = tempHome();
  const keel = new Keel({ home });
  t.after(() => keel.close());
  const reminder = (id: string, title: string): ToolCall => ({ id, name: 'create_reminder', args: { title } });
  const model = new ListModel([
    { calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Which bills?' } }] },
    { calls: [reminder('r1', 'rent')] },
    { calls: [{ id: 'q2', name: 'ask_user', args: { question: 'Create reminders for rent and power?' } }] },
    { calls: [reminder('r2', 'rent'), reminder('r3', 'power')] },
    { calls: [{ id: 's1', name: 'send_email', args: { to: 'a@example.com', subject: 'done', body: 'two reminders' } }] },
    { text: 'Two reminders made; no email sent.' },
  ]);
  const q = await keel.run('remind me of my bills', { model, pluginDirs: [FIXTURES] });
  assert.equal(q.status === 'paused' && q.reason === 'awaiting_user_input' && !q.confirm ? q.question : undefined, 'Which bills?');
  const held = await keel.answer(q.run_id, 'rent and power');
  assert.equal(held.status, 'paused');
  if (held.status !== 'paused' || held.reason !== 'awaiting_user_input' || !held.confirm) throw new Error('expected a confirmation');
  assert.deepEqual(held.confirm.tools, ['create_reminder']);
  const card = await keel.confirm(held.run_id, true);
  assert.equal(card.reason, 'awaiting_approval', 'send_email is a pinned write: its card');
  assert.deepEqual(
    card.steps.filter((s) => s.tool === 'create_reminder').map((s) => s.outcome),
    ['held_for_confirmation', 'ran', 'ran'],
  );
  const out = await keel.reject(card.approval?.id ?? '', { reason: 'not today' });
  assert.equal(out.status, 'done');
  assert.equal(out.answer, 'Two reminders made; no email sent.');
  assert.equal(model.requests.length, 6);
});

test('output: a zod schema checks the final answer, sends a mismatch back once, and types the parsed value', async (t) => {
  const home = tempHome();
  const keel = new Keel({ home });
  t.after(() => keel.close());
  const Bill = z.object({ payee: z.string(), amount: z.number(), paid: z.boolean().default(false) });
  const model = new ListModel([{ text: 'The bill is from ACME for 42.' }, { text: '```json\n{"payee":"ACME","amount":42}\n```' }]);
  const r = await keel.run('what is my next bill?', { model, pluginDirs: [FIXTURES], output: Bill });
  assert.equal(r.status, 'done');
  if (r.status !== 'done') return;
  const bill: { payee: string; amount: number; paid: boolean } | undefined = r.output;
  assert.deepEqual(bill, { payee: 'ACME', amount: 42, paid: false }, 'parsed by zod: the default applies');
  assert.match(model.requests[0].system, /must be only a JSON value[\s\S]*"payee"/);
  assert.match(JSON.stringify(model.requests[1].messages), /does not match the required output schema: the answer is not JSON/);
  assert.ok(r.notes.some((n) => n.startsWith('output retry: ')));
});

test('output: a JSON Schema answer that misses twice ends the run failed, invalid_output, never done', async (t) => {
  const home = tempHome();
  const keel = new Keel({ home });
  t.after(() => keel.close());
  const schema = { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] } as const;
  const model = new ListModel([{ text: '{"sum": 3}' }, { text: '{"total": "three"}' }, { text: '{"total": 3}' }]);
  const r = await keel.run('add it up', { model, pluginDirs: [FIXTURES], output: schema });
  assert.equal(r.status, 'failed');
  assert.equal(r.reason, 'invalid_output');
  assert.equal(model.requests.length, 2, 'one retry, no more');
  assert.match(r.answer ?? '', /did not match the required output schema/);
  assert.match(r.answer ?? '', /total/);
});

test('R20/R23: per-run instructions, maxSteps and menuSize apply to that run only', async (t) => {
  const home = tempHome();
  const keel = new Keel({ home });
  t.after(() => keel.close());
  const loop = new ListModel(
    Array.from({ length: 5 }, (_, i) => ({ calls: [{ id: `s${i}`, name: 'search_inbox', args: { q: `x${i}` } }] })),
  );
  const r = await keel.run('look around', {
    model: loop,
    pluginDirs: [FIXTURES],
    maxSteps: 2,
    instructions: 'Answer like a pirate.',
    menuSize: 1,
  });
  assert.equal(r.status, 'failed');
  assert.equal(r.reason, 'max_steps');
  assert.equal(loop.requests.length, 2);
  assert.ok(loop.requests[0].system.startsWith('Answer like a pirate.'));
  assert.ok(r.requests[0].dropped.length > 0, 'the menu was cut to the given size');

  const plain = new ListModel([{ text: 'Hello.' }]);
  const other = await keel.run('hello', { model: plain, pluginDirs: [FIXTURES] });
  assert.equal(other.status, 'done');
  assert.ok(!plain.requests[0].system.includes('pirate'));
  assert.ok(
    r.requests[0].tools.length < other.requests[0].tools.length,
    `menuSize 1 declared ${r.requests[0].tools.length} tools, the default ${other.requests[0].tools.length}`,
  );
  await assert.rejects(() => keel.run('hello', { model: plain, maxSteps: 0 }), /maxSteps option must be a positive number/);
});

test('R18: an AbortSignal pauses the run at its next safe point; resume carries it on', async (t) => {
  const home = tempHome();
  const keel = new Keel({ home });
  t.after(() => keel.close());
  const ac = new AbortController();
  const model: ModelClient = {
    spec: 'rules:slow',
    async *stream(req) {
      if (req.seq === 0) {
        ac.abort('the user pressed stop');
        yield { type: 'done', reply: { text: '', tool_calls: [{ id: 'a', name: 'search_inbox', args: { q: 'deals' } }] } };
      } else yield { type: 'done', reply: { text: 'Found the deals.', tool_calls: [] } };
    },
  };
  const r = await keel.run('find the deals', { model, pluginDirs: [FIXTURES], signal: ac.signal });
  assert.equal(r.status, 'paused');
  assert.equal(r.reason, 'interrupted');
  const done = await keel.resume(r.run_id);
  assert.equal(done.status, 'done');
  assert.equal(done.answer, 'Found the deals.');
});

test("R32: tools declared in code — the Keel’s and a run’s own — get their gates, are listed by tools(), and a bad declaration is refused (thrown, or with degradedTools: 'warn' a degraded row)", async (t) => {
  const home = tempHome();
  const ran: string[] = [];
  const lookup = defineTool({
    name: 'lookup_order',
    description: 'Look up an order',
    parameters: z.object({ id: z.string() }),
    effect: 'read',
    answers_directly: true,
    execute: ({ id }) => `Order ${id}: shipped.`,
  });
  const refund = defineTool({
    name: 'refund_order',
    description: 'Refund an order',
    parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const,
    effect: 'destructive',
    describe: ({ id }) => ({ title: `Refund order ${id}`, lines: ['the money goes back to the card'] }),
    execute: ({ id }) => {
      ran.push(`refund ${id}`);
      return `Refunded ${id}.`;
    },
  });
  const keel = new Keel({ home, tools: [lookup] });
  t.after(() => keel.close());
  const direct = await keel.run('where is order 7?', {
    model: new ListModel([{ calls: [{ id: 'l1', name: 'lookup_order', args: { id: '7' } }] }]),
  });
  assert.equal(direct.status, 'done');
  assert.equal(direct.reason, 'answered_by_tool');
  assert.equal(direct.answer, 'Order 7: shipped.');

  const model = new ListModel([{ calls: [{ id: 'r1', name: 'refund_order', args: { id: '7' } }] }, { text: 'Refunded.' }]);
  const r = await keel.run('refund order 7', { model, tools: [refund] });
  assert.equal(r.reason, 'awaiting_approval');
  assert.equal(r.approval?.card.items[0].title ?? r.approval?.card.title, 'Refund order 7');
  assert.deepEqual(ran, [], 'nothing ran before the approval');
  const done = await keel.approve(r.approval?.id ?? '');
  assert.equal(done.status, 'done');
  assert.deepEqual(ran, ['refund 7']);

  const rows = await keel.tools({ tools: [refund] });
  const gate = (n: string) => rows.find((x) => x.name === n);
  assert.equal(gate('lookup_order')?.gate, 'none');
  assert.equal(gate('refund_order')?.gate, 'approval');
  assert.equal(gate('refund_order')?.plugin, 'app');

  const bad = { ...refund, name: 'bad_refund', confirm: 'once' } as never;
  // Issue 40: the app's own mistake throws, naming the tool and the field; degraded mounting is asked for.
  assert.throws(() => new Keel({ home, tools: [bad] }), /tools\[0\] \(bad_refund\)\.confirm/);
  const report = (await new Keel({ home, tools: [bad], degradedTools: 'warn' }).registry()).plugins.find((p) => p.name === 'app');
  assert.notEqual(report?.status, 'loaded');
  assert.match(JSON.stringify(report), /tools\[0\] \(bad_refund\)\.confirm/);
});
