/**
 * Issue 48 (S12, S13): an A2A task is as durable as the run it is. On SQLite, a real `keel serve`
 * (the CLI, dist/) is killed with -9 while two tasks wait on their cards: after a restart both are
 * still input-required; a viewer's answer runs nothing; the approver's `{ approval, decision }` runs
 * the call once and completes the task; the same answer again runs nothing more; CancelTask on the
 * second cancels its run and its card can run nothing. On PostgreSQL, `keel serve` queues the legs
 * and `keel worker` drives them: the same task, paused on a worker, answered through A2A, finished
 * by the worker with the call run once. Everything through the official `@a2a-js/sdk` client.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, test } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import { a2aClient, a2aMessage, answerOf, asTask, dataOf, texts } from '../support/a2a.js';
import { calls, script, tempHome } from '../support/helpers.js';
import { dropSchemas } from '../support/pg.js';
import { call, cliServer } from '../support/server.js';
import { pgDeployment, startKeelWorker, until } from '../support/workers.js';

after(() => dropSchemas());

const trashScript = (home: string, id: string) =>
  script(
    home,
    [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: [id] } }] }, { text: `Trashed ${id}.` }] as never,
    `trash-${id}.yaml`,
  );
const trashed = (home: string, id: string) => calls(home, 'mail-calls.log').filter((l) => l === `trash_email {"ids":["${id}"]}`).length;

test('S12 (SQLite): kill -9 of keel serve while two tasks wait — after a restart they are still input-required; the viewer runs nothing, the approver runs the call once, a replay nothing more; CancelTask cancels the other and its card runs nothing', async (t) => {
  const home = tempHome('keel-a2a-restart-');
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const first = await cliServer(home);
  t.after(() => {
    if (first.child.exitCode === null) first.child.kill('SIGKILL');
  });
  const admin = /admin token: (\S+)/.exec(first.stdout())?.[1] ?? '';
  const token = async (name: string, role: string) =>
    (await call(first.url, 'POST', '/v1/tokens', { token: admin, body: { name, role } })).body.token;
  const approverToken = await token('ana', 'approver');
  const viewerToken = await token('vic', 'viewer');

  let approver = await a2aClient(first.url, approverToken);
  const one = asTask(await approver.sendMessage(a2aMessage({ text: 'trash m1', model: trashScript(home, 'm1') })));
  const two = asTask(await approver.sendMessage(a2aMessage({ text: 'trash m2', model: trashScript(home, 'm2') })));
  for (const task of [one, two]) assert.equal(task.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const cardOne = dataOf(one.status?.message);
  const cardTwo = dataOf(two.status?.message);
  assert.deepEqual(
    cardOne.items.map((i: { tool: string; args: unknown }) => [i.tool, i.args]),
    [['trash_email', { ids: ['m1'] }]],
  );

  // The server dies as kill -9 kills it: nothing of it is left but the store.
  first.child.kill('SIGKILL');
  await first.exited;

  const second = await cliServer(home);
  t.after(() => {
    if (second.child.exitCode === null) second.child.kill('SIGKILL');
  });
  approver = await a2aClient(second.url, approverToken);
  const viewer = await a2aClient(second.url, viewerToken);
  const again = await viewer.getTask({ tenant: '', id: one.id });
  assert.equal(again.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED, 'still waiting after the restart');
  assert.equal(dataOf(again.status?.message).approval, cardOne.approval, 'on the same card');
  assert.match(texts(again.status?.message).join('\n'), /exact call: trash_email\(\{"ids":\["m1"\]\}\)/);

  await assert.rejects(
    viewer.sendMessage(a2aMessage({ taskId: one.id, data: { approval: cardOne.approval, decision: 'approve' } })),
    /viewer/,
  );
  assert.equal(trashed(home, 'm1'), 0, "the viewer's answer ran nothing");

  const done = asTask(
    await approver.sendMessage(a2aMessage({ taskId: one.id, data: { approval: cardOne.approval, decision: 'approve' } })),
  );
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.deepEqual(answerOf(done), ['Trashed m1.']);
  assert.equal(trashed(home, 'm1'), 1, 'the approved call ran once');
  await assert.rejects(approver.sendMessage(a2aMessage({ taskId: one.id, data: { approval: cardOne.approval, decision: 'approve' } })));
  assert.equal(trashed(home, 'm1'), 1, 'the same answer again ran nothing more');

  const cancelled = await approver.cancelTask({ tenant: '', id: two.id, metadata: undefined });
  assert.equal(cancelled.status?.state, TaskState.TASK_STATE_CANCELED);
  await assert.rejects(approver.sendMessage(a2aMessage({ taskId: two.id, data: { approval: cardTwo.approval, decision: 'approve' } })));
  assert.equal(
    (await call(second.url, 'POST', `/v1/approvals/${cardTwo.approval}`, { token: approverToken, body: { decision: 'approve' } })).status,
    409,
  );
  assert.equal(trashed(home, 'm2'), 0, "the cancelled task's card ran nothing");
  second.child.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});

test('S12 (PostgreSQL): keel serve queues the legs of an A2A task and keel worker drives them — input-required from the worker, answered through A2A, finished by a worker, the call run once', async (t) => {
  const { home, env, store, srv, api } = await pgDeployment(t, 'keel-a2a-workers-', {});
  const worker = await startKeelWorker(env);
  const approverToken = (await api('POST', '/v1/tokens', { name: 'ana', role: 'approver' })).body.token;
  const approver = await a2aClient(srv.url, approverToken);

  const waiting = asTask(await approver.sendMessage(a2aMessage({ text: 'trash m1', model: trashScript(home, 'm1') })));
  assert.equal(waiting.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const run = await store.loadRun(waiting.id);
  assert.equal(run?.owner, worker.owner, 'the worker drove the leg, not the server');
  const card = dataOf(waiting.status?.message);

  // Streamed this time: the answer's leg is queued, a worker drives it, the server follows the journal.
  const seen = [];
  for await (const e of approver.sendMessageStream(
    a2aMessage({ taskId: waiting.id, data: { approval: card.approval, decision: 'approve' } }),
  ))
    seen.push(e.payload);
  const last = seen[seen.length - 1];
  assert.equal(last?.$case === 'statusUpdate' ? last.value.status?.state : undefined, TaskState.TASK_STATE_COMPLETED);
  const done = await until('the run to finish', async () => {
    const r = await store.loadRun(waiting.id);
    return r?.status === 'done' ? r : undefined;
  });
  assert.equal(done.owner, worker.owner);
  assert.equal(trashed(home, 'm1'), 1, 'the approved call ran once');
  await assert.rejects(approver.sendMessage(a2aMessage({ taskId: waiting.id, data: { approval: card.approval, decision: 'approve' } })));
  assert.equal(trashed(home, 'm1'), 1);
  worker.child.kill('SIGTERM');
  assert.equal(await worker.exited, 0, worker.err());
});
