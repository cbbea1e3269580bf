/**
 * Issue 28: the owner edits a card's call arguments and approves the edited call (A7), and answers
 * many cards in one action (A8) — through the library, the one path every surface takes.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { defineTool } from '../../src/tools/define.js';
import { KeelError } from '../../src/util/errors.js';
import { calls, FIXTURES, script, tempHome } from '../support/helpers.js';
import { assertPaired, Harness } from '../support/keel.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';

after(() => dropSchemas());

const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));
const refusal = (field: RegExp) => (err: unknown) => err instanceof KeelError && err.code === 'bad_input' && field.test(err.message);

test('A7: an edited call is approved as edited — it runs once with the owner’s arguments; card, audit and trace keep both and who edited', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Done.' }]);
  t.after(() => h.close());
  const r = await h.run('trash the deals mail');
  const id = r.approval?.id ?? '';
  const done = await h.keel.approve(id, { actor: 'ana', arguments: { ids: ['m2'] } });
  assert.equal(done.status, 'done');
  assert.deepEqual(trashed(h.home), ['trash_email {"ids":["m2"]}'], 'exactly the edited call ran, once');
  const a = (await h.keel.listApprovals({ run_id: r.run_id }))[0];
  assert.equal(a.status, 'approved');
  assert.deepEqual(a.items[0].args, { ids: ['m2'] });
  assert.deepEqual(a.items[0].original_args, { ids: ['m1'] });
  assert.equal(a.items[0].edited_by, 'ana');
  const audit = (await h.keel.store!.listAudit(id)).find((row) => row.action === 'approved');
  const detail = JSON.parse(audit?.detail ?? '{}');
  assert.equal(audit?.actor, 'ana');
  assert.deepEqual(detail.calls[0].args, { ids: ['m2'] });
  assert.deepEqual(detail.calls[0].original_args, { ids: ['m1'] });
  assert.equal(detail.edited_by, 'ana');
  const run = await h.keel.getRun(r.run_id);
  const step = run.steps.find((s) => s.call_id === 't1');
  assert.equal(step?.outcome, 'ran');
  assert.deepEqual(step?.args, { ids: ['m2'] });
  assert.deepEqual(step?.edited_from, { ids: ['m1'] });
  assert.equal(step?.edited_by, 'ana');
  // The model is told the owner changed the arguments, and to what.
  const told = run.messages.find((m) => m.role === 'tool' && m.call_id === 't1');
  assert.match(told?.content ?? '', /owner changed the arguments of this trash_email call.*trash_email\(\{"ids":\["m2"\]\}\)/);
  assert.match(told?.content ?? '', /Moved 1 email\(s\) to Trash\./);
  assertPaired(run.messages);
  // A2: approving again is a conflict; nothing runs twice.
  await assert.rejects(
    h.keel.approve(id, { actor: 'ana', arguments: { ids: ['m3'] } }),
    (e: unknown) => e instanceof KeelError && e.code === 'conflict',
  );
  assert.equal(trashed(h.home).length, 1);
});

test('A7: an edit the schema or the plugin’s validate refuses is bad_input naming the field; the card stays pending and nothing runs', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Done.' }]);
  t.after(() => h.close());
  const r = await h.run('trash the deals mail');
  const id = r.approval?.id ?? '';
  await assert.rejects(h.keel.approve(id, { actor: 'ana', arguments: { ids: 'm2' } }), refusal(/^arguments: .*ids must be array/));
  await assert.rejects(h.keel.approve(id, { actor: 'ana', arguments: {} }), refusal(/missing required argument 'ids'/));
  await assert.rejects(
    h.keel.approve(id, { actor: 'ana', arguments: { ids: ['m9'] } }),
    refusal(/trash_email refuses them: no email with id m9/),
  );
  await assert.rejects(h.keel.reject(id, { actor: 'ana', arguments: { ids: ['m2'] } }), refusal(/editing applies to an approval/));
  assert.equal(trashed(h.home).length, 0, 'nothing ran');
  const a = (await h.keel.listApprovals({ run_id: r.run_id }))[0];
  assert.equal(a.status, 'pending');
  assert.deepEqual(a.items[0].args, { ids: ['m1'] });
  assert.equal(a.items[0].original_args, undefined);
  // Unchanged arguments are no edit: the call runs as the model asked.
  await h.keel.approve(id, { actor: 'ana', arguments: { ids: ['m1'] } });
  assert.deepEqual(trashed(h.home), ['trash_email {"ids":["m1"]}']);
  assert.equal((await h.keel.getRun(r.run_id)).steps[0].edited_from, undefined);
});

test('A7: a card of several calls takes { call_id: arguments }; an unknown call id is refused', async (t) => {
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
  assert.equal(r.approval?.card.items.length, 2);
  await assert.rejects(h.keel.approve(id, { actor: 'ana', arguments: { to: 'x' } }), refusal(/^arguments\.to: approval .* has 2 calls/));
  await h.keel.approve(id, { actor: 'ana', arguments: { t2: { to: 'carol@example.com', subject: 'Hi' } } });
  const log = calls(h.home, 'mail-calls.log');
  assert.deepEqual(log, ['trash_email {"ids":["m1"]}', 'send_email {"to":"carol@example.com","subject":"Hi"}']);
});

test('A7/M2/R32: a tool declared editable: false refuses any edit; the card can still be approved as it is', async (t) => {
  const home = tempHome();
  const wired: unknown[] = [];
  const wire = defineTool({
    name: 'wire_money',
    description: 'Send money',
    parameters: { type: 'object', properties: { to: { type: 'string' }, cents: { type: 'integer' } }, required: ['to', 'cents'] } as const,
    effect: 'write',
    approval: 'pinned',
    editable: false,
    execute: (args) => {
      wired.push(args);
      return 'Sent.';
    },
  });
  const keel = new Keel({ home, tools: [wire] });
  t.after(() => keel.close());
  const model = script(home, [{ tool_calls: [{ id: 'w1', name: 'wire_money', args: { to: 'sam', cents: 500 } }] }, { text: 'Sent.' }]);
  const r = await keel.run('pay sam', { model, pluginDirs: [] });
  const id = r.approval?.id ?? '';
  await assert.rejects(
    keel.approve(id, { actor: 'ana', arguments: { to: 'eve', cents: 500 } }),
    refusal(/wire_money is declared editable: false/),
  );
  assert.equal(wired.length, 0);
  await keel.approve(id, { actor: 'ana' });
  assert.deepEqual(wired, [{ to: 'sam', cents: 500 }]);
});

test('A8: a batch answers each card on its own and once; a card answered meanwhile is reported, the others proceed', async (t) => {
  const h = new Harness([]);
  t.after(() => h.close());
  const ids: string[] = [];
  for (const m of ['m1', 'm2', 'm3']) {
    const model = script(h.home, [{ tool_calls: [{ id: `t-${m}`, name: 'trash_email', args: { ids: [m] } }] }, { text: 'Done.' }]);
    const r = await h.keel.run(`trash ${m}`, { model, pluginDirs: [FIXTURES] });
    ids.push(r.approval?.id ?? '');
  }
  // Someone else answers the second card first.
  await h.keel.reject(ids[1], { actor: 'bob' });
  const out = await h.keel.answerApprovals([...ids, ids[0], 'appr_nope'], 'approve', { actor: 'ana' });
  assert.deepEqual(
    out.map((o) => [o.id, o.outcome]),
    [
      [ids[0], 'answered'],
      [ids[1], 'conflict'],
      [ids[2], 'answered'],
      ['appr_nope', 'not_found'],
    ],
  );
  assert.match(out[1].error ?? '', /already rejected by bob/);
  for (const o of out) if (o.leg) for await (const _ of o.leg.drive());
  assert.deepEqual(trashed(h.home).sort(), ['trash_email {"ids":["m1"]}', 'trash_email {"ids":["m3"]}']);
  for (const id of [ids[0], ids[2]]) {
    const rows = (await h.keel.store!.listAudit(id)).filter((a) => a.action === 'approved');
    assert.equal(rows.length, 1, 'each card audited once');
    assert.equal(rows[0].actor, 'ana');
  }
});

test('A8: two answers at once to one card — one wins, the other is a conflict; the call runs once with the winner’s arguments', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Done.' }]);
  t.after(() => h.close());
  const r = await h.run('trash the deals mail');
  const id = r.approval?.id ?? '';
  const [x, y] = await Promise.allSettled([
    h.keel.approve(id, { actor: 'ana', arguments: { ids: ['m2'] } }),
    h.keel.approve(id, { actor: 'bob', arguments: { ids: ['m3'] } }),
  ]);
  const won = [x, y].filter((p) => p.status === 'fulfilled');
  const lost = [x, y].filter((p) => p.status === 'rejected') as PromiseRejectedResult[];
  assert.equal(won.length, 1);
  assert.equal(lost.length, 1);
  assert.equal((lost[0].reason as KeelError).code, 'conflict');
  const a = (await h.keel.listApprovals({ run_id: r.run_id }))[0];
  assert.deepEqual(trashed(h.home), [`trash_email ${JSON.stringify(a.items[0].args)}`]);
  assert.equal(a.items[0].edited_by, a.answered_by);
});

test('A7 (postgres): the edited calls are stored with the answer in one update, and the run takes them from the store', async (t) => {
  const home = tempHome();
  const store = new PostgresStore(withSchema(await testPgUrl(), freshSchema()));
  const keel = new Keel({ home, store });
  t.after(() => keel.close());
  const model = script(home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Done.' }]);
  const r = await keel.run('trash the deals mail', { model, pluginDirs: [FIXTURES] });
  const id = r.approval?.id ?? '';
  await assert.rejects(keel.approve(id, { actor: 'ana', arguments: { ids: ['m9'] } }), refusal(/no email with id m9/));
  assert.deepEqual((await store.getApproval(id))?.items[0].args, { ids: ['m1'] }, 'a refused edit stores nothing');
  const done = await keel.approve(id, { actor: 'ana', arguments: { ids: ['m2'] } });
  assert.equal(done.status, 'done');
  const a = await store.getApproval(id);
  assert.deepEqual(a?.items[0].args, { ids: ['m2'] });
  assert.deepEqual(a?.items[0].original_args, { ids: ['m1'] });
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m2"]}']);
});
