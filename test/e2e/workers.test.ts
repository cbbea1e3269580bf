/**
 * #15 end to end on PostgreSQL: one `keel serve` that queues legs and `keel worker` processes that
 * drive them, all real CLI processes on one database. A run pauses on a card on worker A; it is
 * approved through the API; worker B continues it and the destructive call runs once (counted by
 * the fixture tool's own call log). A worker killed (-9) inside the approved call: once its lease
 * runs out another worker takes the run over, reports the call as of unknown outcome and never runs
 * it again, and finishes the run. (S4, A2, R18)
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { RunState } from '../../src/types/index.js';
import { calls, script } from '../support/helpers.js';
import { dropSchemas } from '../support/pg.js';
import { webhookReceiver } from '../support/webhooks.js';
import { pgDeployment, startKeelWorker, until } from '../support/workers.js';

after(() => dropSchemas());

const worker = (env: Record<string, string>) => startKeelWorker(env);

/** A run that pauses on a card to trash m1, then answers. */
const TRASH_M1 = [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed m1.' }] as never;

test('#15: server + two workers on PostgreSQL — paused on worker A, approved through the API, continued by worker B; the destructive call runs once; a worker killed mid-call is taken over after its lease and the call is reported as of unknown outcome, never run again', async (t) => {
  const { home, env, store, api } = await pgDeployment(t, 'keel-workers-', { KEEL_LEASE_MS: '1500' });
  const trashed = () => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length;
  const waitFor = (id: string, ok: (r: RunState) => boolean, what: string) =>
    until(what, async () => {
      const r = await store.loadRun(id);
      return r && ok(r) ? r : undefined;
    });

  // 1. Worker A starts the run; it pauses on its card.
  const a = await worker(env);
  const model = script(home, TRASH_M1);
  const started = await api('POST', '/v1/runs', { request: 'trash m1', model });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  assert.equal(started.body.status, 'queued', 'the server queues the leg: it does not drive it');
  const paused = await waitFor(started.body.run_id, (r) => r.status === 'paused', 'the run to pause on its card');
  assert.equal(paused.owner, a.owner, 'worker A drove the start');
  assert.equal(paused.pause?.kind, 'approval');
  const approvalId = paused.pause?.kind === 'approval' ? paused.pause.approval_id : '';

  // 2. Worker B joins; A stops (gracefully). The card is approved through the API: B carries the run on.
  const b = await worker(env);
  a.child.kill('SIGTERM');
  assert.equal(await a.exited, 0, a.err());
  const approved = await api('POST', `/v1/approvals/${approvalId}`, { decision: 'approve' });
  assert.equal(approved.status < 300, true, JSON.stringify(approved.body));
  assert.equal((await api('POST', `/v1/approvals/${approvalId}`, { decision: 'approve' })).status, 409, 'a second answer is a conflict');
  const done = await waitFor(started.body.run_id, (r) => r.status === 'done', 'worker B to finish the run');
  assert.equal(done.owner, b.owner, 'worker B continued it');
  assert.equal(done.answer, 'Trashed m1.');
  assert.equal(trashed(), 1, 'the approved destructive call ran exactly once');

  // 3. Only a worker that hangs inside trash_email is left; the next run is approved and it starts the call.
  b.child.kill('SIGTERM');
  assert.equal(await b.exited, 0, b.err());
  const c = await worker({ ...env, KEEL_TEST_HANG_IN_TRASH: '1' });
  const model2 = script(
    home,
    [{ tool_calls: [{ id: 't2', name: 'trash_email', args: { ids: ['m2'] } }] }, { text: 'I could not confirm it.' }] as never,
    'two.yaml',
  );
  const second = await api('POST', '/v1/runs', { request: 'trash m2', model: model2 });
  const paused2 = await waitFor(second.body.run_id, (r) => r.status === 'paused', 'the second run to pause on its card');
  const approval2 = paused2.pause?.kind === 'approval' ? paused2.pause.approval_id : '';
  assert.equal((await api('POST', `/v1/approvals/${approval2}`, { decision: 'approve' })).status < 300, true);
  await until('worker C to start the call', async () => (existsSync(join(home, 'trash-started')) ? true : undefined));
  assert.equal(trashed(), 2);
  c.child.kill('SIGKILL');
  await c.exited;

  // 4. A fresh worker takes the run over once C's lease runs out.
  const d = await worker(env);
  const finished = await waitFor(second.body.run_id, (r) => r.status === 'done', 'worker D to take the run over and finish it');
  assert.equal(finished.owner, d.owner, 'worker D took it over');
  const rec = finished.steps.find((s) => s.call_id === 't2' && s.outcome !== 'awaiting_approval');
  assert.match(rec?.result ?? '', /The outcome of trash_email is unknown/, JSON.stringify(finished.steps));
  assert.equal(trashed(), 2, 'the started call was never run again');
  assert.equal(finished.answer, 'I could not confirm it.');
  d.child.kill('SIGTERM');
  assert.equal(await d.exited, 0, d.err());
});

test('#15: a worker killed between fetching a leg and holding its run leaves nothing stuck — the job is offered again; one killed after holding it, before finishing the hand-over, is taken over after its lease', async (t) => {
  const { home, env, store, api } = await pgDeployment(t, 'keel-handover-', { KEEL_LEASE_MS: '1000' });
  const model = script(home, [
    { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Which folder?' } }] },
    { text: 'Done.' },
  ] as never);

  for (const point of ['leg-fetched', 'leg-held']) {
    // The only worker dies at that point of its first hand-over: the run is queued, or held by a dead process.
    const doomed = await startKeelWorker({ ...env, KEEL_TEST_CRASH_AT: point }, 1);
    const started = await api('POST', '/v1/runs', { request: `sort my mail (${point})`, model });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    assert.equal(await doomed.exited, null, `the worker died at ${point}`);
    assert.equal(doomed.child.signalCode, 'SIGKILL');
    const left = await store.loadRun(started.body.run_id);
    assert.equal(left?.status, 'running', 'left running: its leg was handed over, not worked');
    assert.equal(left?.model_calls, 0);

    // A healthy worker: the run reaches its question, is answered through the API, and finishes.
    const next = await startKeelWorker(env, 1);
    const paused = await until(
      `the run left at ${point} to reach its question`,
      async () => {
        const r = await store.loadRun(started.body.run_id);
        return r?.status === 'paused' ? r : undefined;
      },
      30_000,
    );
    assert.equal(paused.owner, next.owner, 'the healthy worker took the leg');
    assert.equal((await api('POST', `/v1/runs/${paused.id}/answer`, { text: 'Promotions' })).status < 300, true);
    const done = await until(`the run left at ${point} to finish`, async () => {
      const r = await store.loadRun(started.body.run_id);
      return r?.status === 'done' ? r : undefined;
    });
    assert.equal(done.answer, 'Done.');
    assert.equal(done.model_calls, 2, 'the model was called once per step: no leg ran twice');
    next.child.kill('SIGTERM');
    assert.equal(await next.exited, 0, next.err());
  }
});

test('#15: webhooks of a run a keel worker drives — its card and its pause are announced once, by the worker (the server that queued the leg did not drive it); a worker stopped gracefully announces no pause', async (t) => {
  const hooks = await webhookReceiver(t);
  const got = hooks.got;
  const { home, env, store, api } = await pgDeployment(t, 'keel-workers-notify-', hooks.env);
  const w = await worker(env);
  const model = script(home, TRASH_M1);
  const started = await api('POST', '/v1/runs', { request: 'trash m1', model });
  assert.equal(started.body.status, 'queued');
  const runId = started.body.run_id as string;
  const paused = await until('the run to pause on its card', async () => {
    const r = await store.loadRun(runId);
    return r?.status === 'paused' ? r : undefined;
  });
  assert.equal(paused.owner, w.owner, 'the worker drove it');
  const approvalId = paused.pause?.kind === 'approval' ? paused.pause.approval_id : '';
  await until('the webhooks', async () => (got.length >= 2 ? true : undefined));
  // The worker stops gracefully with nothing running: no pause of its own to announce.
  w.child.kill('SIGTERM');
  assert.equal(await w.exited, 0, w.err());
  await new Promise((r) => setTimeout(r, 500)); // a duplicate, if any, would be in by now
  assert.deepEqual(
    got.map((g) => [g.type, g.run_id]),
    [
      ['approval_created', runId],
      ['run_paused', runId],
    ],
  );
  assert.equal(got[0].data.approval_id, approvalId);
});
