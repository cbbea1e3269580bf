import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { recordApprovalAnswer } from '../../src/approvals/respond.js';
import { Keel } from '../../src/keel/keel.js';
import { KeelError } from '../../src/util/errors.js';
import { calls, FIXTURES, script, tempHome } from '../support/helpers.js';
import { assertPaired, Harness } from '../support/keel.js';

const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1', 'm2'] } };
const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));
const folders = (home: string) =>
  Object.fromEntries(
    JSON.parse(readFileSync(join(home, 'mailbox.json'), 'utf8')).map((m: { id: string; folder: string }) => [m.id, m.folder]),
  );

test('A1/A2: trash two emails — the card shows both subjects and the undo; approve runs exactly that call once', async (t) => {
  const h = new Harness([{ tool_calls: [TRASH] }, { text: 'Moved both promotions to Trash.' }]);
  t.after(() => h.close());
  const r = await h.run('trash the two promotions');
  assert.equal(r.status, 'paused');
  assert.equal(r.reason, 'awaiting_approval');
  assert.ok(r.approval);
  const card = r.approval.card;
  assert.equal(card.items.length, 1);
  assert.deepEqual(card.items[0].lines, ['Your weekly deals', 'Flash sale ends tonight']);
  assert.equal(card.items[0].undo, 'reversible with restore_email');
  assert.equal(card.items[0].call, 'trash_email({"ids":["m1","m2"]})');
  assert.equal(card.request, 'trash the two promotions');
  assert.equal(trashed(h.home).length, 0, 'nothing ran before the approval');
  assert.equal(r.steps[0].outcome, 'awaiting_approval');

  const { approval, result } = await h.keel.respondToApproval(r.approval.id, 'approve', 'ana');
  assert.equal(approval.status, 'approved');
  assert.equal(result.status, 'done');
  assert.equal(result.answer, 'Moved both promotions to Trash.');
  assert.equal(result.model_calls, 2);
  assert.deepEqual(trashed(h.home), ['trash_email {"ids":["m1","m2"]}']);
  assert.deepEqual(folders(h.home), { m1: 'trash', m2: 'trash', m3: 'inbox' });
  assert.equal(result.steps[0].call_id, 't1');
  assert.equal(result.steps[0].outcome, 'ran');
  const audit = await h.keel.store!.listAudit(r.approval.id);
  assert.equal(audit.length, 1);
  assert.equal(audit[0].actor, 'ana');
  assert.equal(audit[0].action, 'approved');
  assertPaired((await h.keel.getRun(r.run_id)).messages);
});

test('A2: reject — nothing runs; the model is told nothing changed and says so', async (t) => {
  const h = new Harness([{ tool_calls: [TRASH] }, { text: 'OK, I left your emails alone.' }]);
  t.after(() => h.close());
  const r = await h.run('trash the promotions');
  const { result } = await h.keel.respondToApproval(r.approval!.id, 'reject', 'ana', 'keep them');
  assert.equal(result.status, 'done');
  assert.equal(result.answer, 'OK, I left your emails alone.');
  assert.equal(trashed(h.home).length, 0);
  const run = await h.keel.getRun(r.run_id);
  const toolMsg = run.messages.find((m) => m.role === 'tool' && m.call_id === 't1');
  assert.match(toolMsg && 'content' in toolMsg ? toolMsg.content : '', /rejected.*keep them.*Nothing changed/);
});

test('A1: validate refuses an invented id: no approval is created, the model corrects itself', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 'bad', name: 'trash_email', args: { ids: ['m1', 'm99'] } }] },
    { tool_calls: [{ id: 'good', name: 'trash_email', args: { ids: ['m1'] } }] },
    { text: 'done' },
  ]);
  t.after(() => h.close());
  const r = await h.run('trash deals');
  assert.equal(r.steps[0].outcome, 'invalid_arguments');
  assert.match(r.steps[0].result, /no email with id m99/);
  const approvals = await h.keel.store!.listApprovals();
  assert.equal(approvals.length, 1, 'only the corrected call made a card');
  assert.deepEqual(approvals[0].items[0].args, { ids: ['m1'] });
  assert.equal(r.status, 'paused');
});

test('A2: the approval pins arguments; one approval is not consent to the next destructive call', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 'a', name: 'trash_email', args: { ids: ['m1'] } }] },
    // After approval the model asks for something else: it needs its own card.
    { tool_calls: [{ id: 'b', name: 'trash_email', args: { ids: ['m3'] } }] },
    { text: 'never' },
  ]);
  t.after(() => h.close());
  const r = await h.run('trash the deals');
  const { result } = await h.keel.respondToApproval(r.approval!.id, 'approve', 'ana');
  assert.equal(result.status, 'paused');
  assert.equal(result.reason, 'awaiting_approval');
  assert.notEqual(result.approval!.id, r.approval!.id);
  assert.deepEqual(trashed(h.home), ['trash_email {"ids":["m1"]}']);
  assert.deepEqual(folders(h.home), { m1: 'trash', m2: 'inbox', m3: 'inbox' });
});

test('A3: approve twice → conflict; unknown id → not found; every decision audited once', async (t) => {
  const h = new Harness([{ tool_calls: [TRASH] }, { text: 'done' }]);
  t.after(() => h.close());
  const r = await h.run('trash');
  await h.keel.respondToApproval(r.approval!.id, 'approve', 'ana');
  await assert.rejects(
    () => h.keel.respondToApproval(r.approval!.id, 'approve', 'bob'),
    (e: unknown) => e instanceof KeelError && e.code === 'conflict' && /already approved by ana/.test(e.message),
  );
  await assert.rejects(
    () => h.keel.respondToApproval('apr_nope', 'reject', 'bob'),
    (e: unknown) => e instanceof KeelError && e.code === 'not_found',
  );
  assert.equal(trashed(h.home).length, 1);
  assert.equal((await h.keel.store!.listAudit(r.approval!.id)).length, 1);
});

test('A4: an expired approval runs nothing; the run stays stopped with a notice', async (t) => {
  const h = new Harness([{ tool_calls: [TRASH] }, { text: 'never' }], { limits: { approvalTtlMs: 1 } });
  t.after(() => h.close());
  const r = await h.run('trash');
  await new Promise((res) => setTimeout(res, 5));
  const { approval, result } = await h.keel.respondToApproval(r.approval!.id, 'approve', 'ana');
  assert.equal(approval.status, 'expired');
  assert.equal(result.status, 'failed');
  assert.equal(result.reason, 'approval_expired');
  assert.match(result.answer ?? '', /Nothing was run: approval apr_\w+ .* expired/);
  assert.equal(result.model_calls, 1, 'no further model call');
  assert.equal(trashed(h.home).length, 0);
  const again = await h.keel.store!.getApproval(r.approval!.id);
  assert.equal(again?.status, 'expired');
});

test('A2: crash after the approval was recorded, before execution — a new process runs the pinned call exactly once', async (t) => {
  const h = new Harness([{ tool_calls: [TRASH] }, { text: 'Moved.' }]);
  t.after(() => h.close());
  const r = await h.run('trash');
  // The answer is committed, then the process dies before continuing the run.
  await recordApprovalAnswer(h.keel.store!, r.approval!.id, 'approve', 'ana');
  await h.keel.close();
  h.keel = new Keel({ home: h.home });
  const result = await h.keel.continueRun(r.run_id);
  assert.equal(result.status, 'done');
  assert.equal(trashed(h.home).length, 1);
  await assert.rejects(() => h.keel.continueRun(r.run_id), /is done/);
  assert.equal(trashed(h.home).length, 1, 'never twice');
});

test('A2/R22: a destructive call and a read in one reply — the read runs, the destructive call waits for its card', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 's', name: 'search_inbox', args: {} }, TRASH] }, { text: 'done' }]);
  t.after(() => h.close());
  const r = await h.run('find and trash');
  assert.equal(r.status, 'paused');
  assert.deepEqual(
    r.steps.map((s) => [s.call_id, s.outcome]),
    [
      ['s', 'ran'],
      ['t1', 'awaiting_approval'],
    ],
  );
  assert.equal(calls(h.home, 'mail-calls.log').filter((l) => l.startsWith('search_inbox')).length, 1);
  const { result } = await h.keel.respondToApproval(r.approval!.id, 'approve', 'ana');
  assertPaired((await h.keel.getRun(result.run_id)).messages);
});

test('A1/R22: two destructive calls in one reply make one card with both items; reject runs neither', async (t) => {
  const h = new Harness([
    {
      tool_calls: [
        { id: 'x', name: 'trash_email', args: { ids: ['m1'] } },
        { id: 'y', name: 'trash_email', args: { ids: ['m2'] } },
      ],
    },
    { text: 'left alone' },
  ]);
  t.after(() => h.close());
  const r = await h.run('trash both');
  assert.equal(r.approval!.card.items.length, 2);
  assert.equal((await h.keel.store!.listApprovals()).length, 1);
  await h.keel.respondToApproval(r.approval!.id, 'reject', 'ana');
  assert.equal(trashed(h.home).length, 0);
});

test('A1: a write with approval: pinned shows a card in the plugin words', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 'm', name: 'send_email', args: { to: 'li@example.com', subject: 'Lunch', body: 'Noon?' } }] },
    { text: 'Sent.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('email Li about lunch');
  assert.equal(r.approval!.card.items[0].title, 'Send "Lunch" to li@example.com');
  assert.equal(r.approval!.card.items[0].undo, 'cannot be undone');
  const { result } = await h.keel.respondToApproval(r.approval!.id, 'approve', 'ana');
  assert.equal(result.answer, 'Sent.');
  assert.equal(calls(h.home, 'mail-calls.log').filter((l) => l.startsWith('send_email')).length, 1);
});

test('A6: the undo tool runs without asking', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 'u', name: 'restore_email', args: { ids: ['m1'] } }] }, { text: 'Restored.' }]);
  t.after(() => h.close());
  const r = await h.run('undo that: restore the email');
  assert.equal(r.status, 'done');
  assert.equal(r.steps[0].outcome, 'ran');
});

test('A5: with no store, destructive calls are refused with a clear result', async () => {
  const home = tempHome();
  const k = new Keel({ home, store: null });
  const model = script(home, [{ tool_calls: [TRASH] }, { text: 'I cannot do that here.' }]);
  const r = await k.run('trash', { model, pluginDirs: [FIXTURES] });
  await k.close();
  assert.equal(r.status, 'done');
  assert.equal(r.steps[0].outcome, 'error');
  assert.match(r.steps[0].result, /not run: it needs the owner's approval, which cannot be taken here/);
  assert.equal(trashed(home).length, 0);
});
