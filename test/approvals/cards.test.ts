/**
 * Cards, hardened (issue 27): a repeat never runs, also when it waits on a card (R13, A2); an
 * approved call is checked again just before it runs (A1, A2); a rejected card's calls have their
 * own outcome (R27).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { expireApprovals } from '../../src/approvals/respond.js';
import { chatOutcome } from '../../src/cli/chat-words.js';
import { renderCall } from '../../src/cli/render.js';
import { Keel } from '../../src/keel/keel.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { defineTool } from '../../src/tools/define.js';
import type { RunResult } from '../../src/types/index.js';
import { calls, FIXTURES, script, tempHome } from '../support/helpers.js';
import { assertPaired, Harness } from '../support/keel.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';

after(() => dropSchemas());

const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

test('R13/A2: two identical calls that need a card make one card item; approving it runs the tool once, the second is its repeat', async (t) => {
  const h = new Harness([
    {
      tool_calls: [
        { id: 't1', name: 'trash_email', args: { ids: ['m1'] } },
        { id: 't2', name: 'trash_email', args: { ids: ['m1'] } },
      ],
    },
    { text: 'Trashed.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('trash the deals mail');
  assert.equal(r.status, 'paused');
  assert.equal(r.reason, 'awaiting_approval');
  assert.equal(r.approval?.card.items.length, 1, 'the card lists the call once');
  const done = await h.keel.approve(r.approval?.id ?? '', { actor: 'ana' });
  assert.equal(done.status, 'done');
  assert.equal(trashed(h.home).length, 1, 'the tool ran once');
  const run = await h.keel.getRun(r.run_id);
  const [first, second] = run.steps.filter((s) => s.tool === 'trash_email');
  assert.equal(first.outcome, 'ran');
  assert.equal(second.outcome, 'repeat');
  assert.match(second.result, /Moved 1 email\(s\) to Trash\./);
  assert.match(second.result, /call t1/);
  assertPaired(run.messages);
});

test('R13/A2: the repeat of a carded call shares the card’s fate: rejected, neither runs and both say so', async (t) => {
  const h = new Harness([
    {
      tool_calls: [
        { id: 't1', name: 'trash_email', args: { ids: ['m2'] } },
        { id: 't2', name: 'trash_email', args: { ids: ['m2'] } },
      ],
    },
    { text: 'Nothing changed.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('trash the sale mail');
  assert.equal(r.approval?.card.items.length, 1);
  const done = await h.keel.reject(r.approval?.id ?? '', { actor: 'ana', reason: 'not today' });
  assert.equal(done.status, 'done');
  assert.equal(trashed(h.home).length, 0);
  const run = await h.keel.getRun(r.run_id);
  const first = run.steps.find((s) => s.call_id === 't1');
  // R27: a rejected card's call has its own outcome, with the reason — not an error.
  assert.equal(first?.outcome, 'rejected');
  assert.match(first?.result ?? '', /the owner rejected this trash_email call \(not today\)/);
  const second = run.steps.find((s) => s.call_id === 't2');
  assert.equal(second?.outcome, 'repeat');
  assert.match(second?.result ?? '', /rejected this trash_email call \(not today\)/);
  assertPaired(run.messages);
});

test('R13/A2: a run cancelled while its card waits answers the carded call and its repeat, neither run', async (t) => {
  const h = new Harness([
    {
      tool_calls: [
        { id: 't1', name: 'trash_email', args: { ids: ['m3'] } },
        { id: 't2', name: 'trash_email', args: { ids: ['m3'] } },
      ],
    },
  ]);
  t.after(() => h.close());
  const r = await h.run('trash the report');
  await h.keel.cancel(r.run_id, { actor: 'ana' });
  const run = await h.keel.getRun(r.run_id);
  assert.equal(trashed(h.home).length, 0);
  for (const id of ['t1', 't2']) assert.match(run.steps.find((s) => s.call_id === id)?.result ?? '', /card/i);
  assertPaired(run.messages);
});

test('A1/A2: an approved call is validated again just before it runs — a second card for the same deletion runs nothing, and says why', async (t) => {
  const home = tempHome();
  const jobs = new Set(['legacy-cron']);
  const ran: string[] = [];
  const deleteJob = defineTool({
    name: 'delete_job',
    description: 'Delete a scheduled job',
    parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } as const,
    effect: 'destructive',
    validate: ({ name }) => (jobs.has(name) ? undefined : `no job named ${name}`),
    execute: ({ name }) => {
      ran.push(name);
      jobs.delete(name);
      return `Deleted ${name}.`;
    },
  });
  const keel = new Keel({ home, tools: [deleteJob] });
  t.after(() => keel.close());
  const cards: RunResult[] = [];
  for (const n of [1, 2, 3]) {
    const model = script(
      home,
      [{ tool_calls: [{ id: `d${n}`, name: 'delete_job', args: { name: 'legacy-cron' } }] }, { text: 'Done.' }],
      `s${n}.yaml`,
    );
    const r = await keel.run('delete legacy-cron', { model, pluginDirs: [] });
    assert.equal(r.reason, 'awaiting_approval', 'each card is made while the job exists');
    cards.push(r);
  }
  const results = [];
  for (const r of cards) {
    await keel.approve(r.approval?.id ?? '', { actor: 'ana' });
    results.push((await keel.getRun(r.run_id)).steps.find((s) => s.tool === 'delete_job'));
  }
  assert.deepEqual(ran, ['legacy-cron'], 'the deletion ran once');
  assert.equal(results[0]?.outcome, 'ran');
  assert.equal(results[0]?.result, 'Deleted legacy-cron.');
  for (const [i, rec] of results.slice(1).entries()) {
    assert.equal(rec?.outcome, 'invalid_arguments', `card ${i + 2}'s call is answered with the refusal`);
    assert.match(rec?.result ?? '', /delete_job not run: it was approved, but its check now refuses it \(no job named legacy-cron\)/);
    const run = await keel.getRun(cards[i + 1].run_id);
    assert.ok(
      run.notes.some((n) => n.includes(`approved call refused: delete_job (d${i + 2}) under approval ${cards[i + 1].approval?.id}`)),
      run.notes.join('\n'),
    );
    const audit = await keel.store?.listAudit(cards[i + 1].approval?.id);
    assert.ok(
      audit?.some((a) => a.action === 'approved_call_refused' && (a.detail ?? '').includes('no job named legacy-cron')),
      JSON.stringify(audit),
    );
  }
});

test('R27: a rejected call is shown as rejected, with its reason — never as an error — in the CLI and in chat', () => {
  const rec = {
    tool: 'trash_email',
    args: { ids: ['m1'] },
    outcome: 'rejected' as const,
    is_error: true,
    result: 'Not run: the owner rejected this trash_email call (not today). Nothing changed.',
  };
  const line = renderCall(rec);
  assert.match(line, /⊘ rejected/);
  assert.doesNotMatch(line, /error/);
  assert.match(line, /not today/);
  assert.equal(chatOutcome(rec).mark, '✗ rejected (not today): nothing changed');
  // A run stored before rejections had their own outcome keeps reading the same way.
  assert.equal(chatOutcome({ ...rec, outcome: 'error' }).mark, '✗ rejected (not today): nothing changed');
});

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`A4 (${kind}): a card expired by a read (listApprovals) ends its run in the same step — nothing runs, nothing is left paused`, async (t) => {
    const home = tempHome();
    const store = kind === 'postgres' ? new PostgresStore(withSchema(await testPgUrl(), freshSchema())) : undefined;
    const keel = new Keel({ home, ...(store ? { store } : {}), limits: { approvalTtlMs: 50 } });
    t.after(() => keel.close());
    const model = script(home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'never asked' }]);
    const r = await keel.run('trash the deals mail', { model, pluginDirs: [FIXTURES] });
    assert.equal(r.reason, 'awaiting_approval');
    await new Promise((res) => setTimeout(res, 120));
    const cards = await keel.listApprovals({ run_id: r.run_id });
    assert.equal(cards[0]?.status, 'expired');
    const run = await keel.getRun(r.run_id);
    assert.equal(run.status, 'failed', 'the read that expired the card ended its run');
    assert.equal(run.reason, 'approval_expired');
    assert.match(run.steps.find((s) => s.call_id === 't1')?.result ?? '', /expired before anyone answered it/);
    assert.equal(trashed(home).length, 0);
    assertPaired(run.messages);
    // Noticing again changes nothing: the run is ended once.
    await keel.listApprovals();
    assert.equal((await keel.getRun(r.run_id)).reason, 'approval_expired');
  });
}

test('A4: the sweep (stranded) ends a run left paused on a card that expired before — a process stopped between the two', async (t) => {
  const home = tempHome();
  const keel = new Keel({ home, limits: { approvalTtlMs: 50 } });
  t.after(() => keel.close());
  const model = script(home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m2'] } }] }, { text: 'never asked' }]);
  const r = await keel.run('trash the sale mail', { model, pluginDirs: [FIXTURES] });
  await new Promise((res) => setTimeout(res, 120));
  // The card alone is expired (as a reader did before expiry and ending were one step).
  const store = keel.store;
  assert.ok(store);
  assert.equal((await expireApprovals(store)).length, 1);
  assert.equal((await keel.getRun(r.run_id)).status, 'paused');
  assert.deepEqual(await keel.expireApprovals({ stranded: true }), [], 'no card expires now');
  const run = await keel.getRun(r.run_id);
  assert.equal(run.status, 'failed');
  assert.equal(run.reason, 'approval_expired');
  assert.equal(trashed(home).length, 0);
});
