/**
 * Issue 40: an owner's edit (A7) is held to what a model's call is held to — the bounds on
 * arguments (64 levels, 1,000,000 characters), the repeat guard (R13) — and the card then describes
 * the call that runs, in the tool's own words, with the model's beside it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderCard } from '../../src/approvals/card.js';
import { MAX_ARGS_CHARS } from '../../src/util/bounds.js';
import { KeelError } from '../../src/util/errors.js';
import { calls } from '../support/helpers.js';
import { Harness } from '../support/keel.js';

const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));
const refusal = (field: RegExp) => (err: unknown) => err instanceof KeelError && err.code === 'bad_input' && field.test(err.message);

/** Arguments `levels` deep, counting the arguments object itself as a model's call counts it. */
function deepArgs(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { end: true };
  for (let i = 2; i < levels; i++) v = { a: v };
  return { ids: ['m2'], note: v };
}

async function stillPending(h: Harness, runId: string, id: string) {
  const a = (await h.keel.listApprovals({ run_id: runId })).find((x) => x.id === id);
  assert.ok(a);
  assert.equal(a.status, 'pending', 'the card stays pending');
  assert.equal(a.items[0].original_args, undefined, 'nothing of the edit was stored');
  assert.equal((await h.keel.getRun(runId)).status, 'paused');
}

test('A7/R21: an edit nested deeper than a model’s call may be (100 and 3,000 levels) is refused up front; the card stays pending, nothing runs', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Done.' }]);
  t.after(() => h.close());
  const r = await h.run('trash the deals mail');
  const id = r.approval?.id ?? '';
  for (const levels of [100, 3000, 200_000]) {
    await assert.rejects(
      h.keel.approve(id, { actor: 'ana', arguments: deepArgs(levels) }),
      refusal(/^arguments: nested deeper than 64 levels/),
      `${levels} levels`,
    );
    await stillPending(h, r.run_id, id);
  }
  await assert.rejects(
    h.keel.approve(id, { actor: 'ana', arguments: { ids: ['m2'], note: 'x'.repeat(MAX_ARGS_CHARS) } }),
    refusal(/^arguments: .*over the limit of 1000000 characters/),
  );
  await stillPending(h, r.run_id, id);
  assert.equal(trashed(h.home).length, 0, 'nothing ran');
  // 64 levels is what a model's call may have: the edit is taken, and runs once.
  const done = await h.keel.approve(id, { actor: 'ana', arguments: deepArgs(64) });
  assert.equal(done.status, 'done');
  assert.equal(trashed(h.home).length, 1);
});

test('A7/R13: an edit that makes a call the same as another call on its card is refused; the card stays pending', async (t) => {
  const h = new Harness([
    {
      tool_calls: [
        { id: 't1', name: 'trash_email', args: { ids: ['m1'] } },
        { id: 't2', name: 'trash_email', args: { ids: ['m2'] } },
      ],
    },
    { text: 'Done.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('trash m1 and m2');
  const id = r.approval?.id ?? '';
  assert.equal(r.approval?.card.items.length, 2);
  await assert.rejects(
    h.keel.approve(id, { actor: 'ana', arguments: { t2: { ids: ['m1'] } } }),
    refusal(/^arguments\.t2: .*the same call as t1 on this card.*R13/),
  );
  // Both edited to one call: refused too.
  await assert.rejects(
    h.keel.approve(id, { actor: 'ana', arguments: { t1: { ids: ['m3'] }, t2: { ids: ['m3'] } } }),
    refusal(/^arguments\.t2: .*the same call as t1 on this card/),
  );
  await stillPending(h, r.run_id, id);
  assert.equal(trashed(h.home).length, 0, 'nothing ran');
  // A change that makes no repeat goes through.
  await h.keel.approve(id, { actor: 'ana', arguments: { t2: { ids: ['m3'] } } });
  assert.deepEqual(trashed(h.home), ['trash_email {"ids":["m1"]}', 'trash_email {"ids":["m3"]}']);
});

test('A7/R13: an edit that makes a call the same as one already run in the run is refused; the card stays pending', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] },
    { tool_calls: [{ id: 't2', name: 'trash_email', args: { ids: ['m2'] } }] },
    { text: 'Done.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('trash m1, then m2');
  const first = await h.keel.approve(r.approval?.id ?? '', { actor: 'ana' });
  assert.equal(first.status, 'paused');
  const id = first.status === 'paused' && first.reason === 'awaiting_approval' ? first.approval.id : '';
  await assert.rejects(
    h.keel.approve(id, { actor: 'ana', arguments: { ids: ['m1'] } }),
    refusal(/^arguments: trash_email already ran with these arguments in this run \(call t1\).*R13/),
  );
  await stillPending(h, r.run_id, id);
  assert.deepEqual(trashed(h.home), ['trash_email {"ids":["m1"]}'], 'the first call ran once, and only once');
  await h.keel.approve(id, { actor: 'ana' });
  assert.deepEqual(trashed(h.home), ['trash_email {"ids":["m1"]}', 'trash_email {"ids":["m2"]}']);
});

test('A7: after an edit the card describes the call that runs, in the tool’s words, with the model’s beside it', async (t) => {
  const h = new Harness([
    {
      tool_calls: [
        { id: 't1', name: 'trash_email', args: { ids: ['m1'] } },
        { id: 't2', name: 'send_email', args: { to: 'bob@example.com', subject: 'Hi' } },
      ],
    },
    { text: 'Done.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('trash the deals mail and send an email to bob');
  const id = r.approval?.id ?? '';
  const before = r.approval?.card.items[1];
  assert.equal(before?.title, 'Send "Hi" to bob@example.com');
  const done = await h.keel.approve(id, { actor: 'ana', arguments: { t2: { to: 'carol@example.com', subject: 'Hello' } } });
  assert.equal(done.status, 'done');
  const a = (await h.keel.listApprovals({ run_id: r.run_id }))[0];
  // The stored record: the item's words and the card's are the edited call's; the model's are kept beside them.
  assert.deepEqual(a.items[1].card, { title: 'Send "Hello" to carol@example.com', lines: [''] });
  assert.deepEqual(a.items[1].original_card, { title: 'Send "Hi" to bob@example.com', lines: [''] });
  const item = a.card.items[1];
  assert.equal(item.title, 'Send "Hello" to carol@example.com');
  assert.equal(item.call, 'send_email({"subject":"Hello","to":"carol@example.com"})');
  assert.deepEqual(item.original, {
    title: 'Send "Hi" to bob@example.com',
    lines: [''],
    call: 'send_email({"subject":"Hi","to":"bob@example.com"})',
  });
  assert.equal(item.edited_by, 'ana');
  // The untouched call keeps its words.
  const { call_id: _id, args: _args, ...shown } = r.approval?.card.items[0] ?? ({} as never);
  assert.deepEqual(a.card.items[0], shown);
  assert.equal(a.items[0].original_card, undefined);
});

test('A7: a card of one call takes the edited call’s title; the text card shows what runs and what was asked', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Done.' }]);
  t.after(() => h.close());
  const r = await h.run('trash the deals mail');
  const id = r.approval?.id ?? '';
  const asked = r.approval?.card.items[0];
  await h.keel.approve(id, { actor: 'ana', arguments: { ids: ['m2', 'm3'] } });
  const a = (await h.keel.listApprovals({ run_id: r.run_id }))[0];
  assert.equal(a.card.title, 'Move 2 email(s) to Trash');
  assert.equal(a.card.items[0].title, 'Move 2 email(s) to Trash');
  assert.equal(a.card.items[0].original?.title, asked?.title);
  const text = renderCard(a.card, a.id);
  assert.match(text, /Approval needed \(.*\): Move 2 email\(s\) to Trash/);
  assert.match(text, /exact call: trash_email\(\{"ids":\["m2","m3"\]\}\)/);
  assert.match(text, /edited by ana; was: Move 1 email\(s\) to Trash/);
  assert.match(text, /was: trash_email\(\{"ids":\["m1"\]\}\)/);
});
