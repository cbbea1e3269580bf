/**
 * S3: `keel mcp serve` and MCP tasks (protocol 2025-11-25), driven by the SDK's own client over
 * stdio and Streamable HTTP. tools/list declares per tool whether a call may be a task (writes and
 * destructive calls `optional`, reads `forbidden`); a call made as a task that waits on a card is
 * `input_required` — however long, the client polling — until the card is answered where every card
 * is answered (`keel approvals approve|reject ID`, the real CLI on the same store): then `completed`
 * with the tool's result (it ran once), or `failed` with the reason (it never ran); tasks/cancel
 * rejects the card (audited) and nothing runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, type Task } from '@modelcontextprotocol/sdk/types.js';
import { FIXTURES, keel, tempHome } from '../support/helpers.js';
import { cards, httpServe, stdioClient, textOf, trashed, until } from './clients.js';

/** tools/call made as a task (params.task): the task as created. */
async function callAsTask(client: Client, name: string, args: Record<string, unknown>): Promise<Task> {
  const r = await client.request(
    { method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 } } },
    CreateTaskResultSchema,
  );
  return r.task;
}

const status = (client: Client, id: string) => () => client.experimental.tasks.getTask(id);

/** The task waits on a card: input_required, its status message naming the card. Returns the card's id. */
async function waitsOnCard(client: Client, task: Task): Promise<string> {
  const t = await until('input_required', status(client, task.taskId), (x) => x.status === 'input_required');
  const id = /approval (apr_\w+)/.exec(t.statusMessage ?? '')?.[1];
  assert.ok(id, `the status message names the card: ${t.statusMessage}`);
  assert.match(t.statusMessage ?? '', new RegExp(`keel approvals approve ${id}`));
  return id;
}

test('S3 tasks (stdio): tools/list declares task support per tool; a read is not a task', async (t) => {
  const home = tempHome('keel-mcp-tasks-');
  const client = await stdioClient(home, ['--plugins', FIXTURES]);
  t.after(() => client.close());
  assert.ok(client.getServerCapabilities()?.tasks?.requests?.tools?.call, 'the server offers tool calls as tasks');
  const by = new Map((await client.listTools()).tools.map((x) => [x.name, x]));
  assert.equal(by.get('trash_email')?.execution?.taskSupport, 'optional');
  assert.equal(by.get('create_reminder')?.execution?.taskSupport, 'optional');
  assert.equal(by.get('calendar_lookup')?.execution?.taskSupport, 'forbidden');
  await assert.rejects(callAsTask(client, 'calendar_lookup', { day: 'Friday' }), /only reads.*without a task/);
  // The same read without a task runs.
  assert.equal(textOf(await client.callTool({ name: 'calendar_lookup', arguments: { day: 'Friday' } })), 'No events on Friday.');
});

test('S3 tasks (stdio): the SDK client’s own task stream — input_required on its card, completed after keel approvals approve; the tool ran once', async (t) => {
  const home = tempHome('keel-mcp-tasks-');
  // --wait is for calls without a task: a task waits for the answer however long.
  const client = await stdioClient(home, ['--plugins', FIXTURES, '--wait', '0.2']);
  t.after(() => client.close());
  await client.listTools(); // the client learns which tools may be tasks
  const seen: string[] = [];
  let taskId = '';
  const stream = (async () => {
    for await (const m of client.experimental.tasks.callToolStream({ name: 'trash_email', arguments: { ids: ['m1'] } })) {
      if (m.type === 'taskCreated') taskId = m.task.taskId;
      if (m.type === 'taskStatus') seen.push(m.task.status);
      if (m.type === 'result') return m.result;
      if (m.type === 'error') throw m.error;
    }
  })();
  await until('the task', async () => taskId, Boolean);
  const id = await waitsOnCard(client, { taskId } as Task);
  // Past --wait many times over: still waiting, nothing ran.
  await new Promise((r) => setTimeout(r, 1_000));
  assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'input_required');
  assert.deepEqual(trashed(home), []);
  const ok = await keel(['approvals', 'approve', id], { KEEL_HOME: home });
  assert.equal(ok.code, 0, ok.stderr);
  const result = await stream;
  assert.match(textOf(result), /Moved 1 email/);
  assert.ok(seen.includes('input_required'), `statuses seen: ${seen}`);
  assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'completed');
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m1"]}']);
  // The same call made again, without a task: its recorded outcome, not a second run.
  assert.match(textOf(await client.callTool({ name: 'trash_email', arguments: { ids: ['m1'] } })), /Moved 1 email/);
  assert.equal(trashed(home).length, 1, 'ran once');
  assert.equal((await cards(home)).length, 1, 'one card');
});

test('S3 tasks (stdio): a card rejected with keel approvals reject ends its task failed with the reason; the tool never ran', async (t) => {
  const home = tempHome('keel-mcp-tasks-');
  const client = await stdioClient(home, ['--plugins', FIXTURES]);
  t.after(() => client.close());
  const task = await callAsTask(client, 'trash_email', { ids: ['m2'] });
  assert.equal(task.status, 'working');
  const id = await waitsOnCard(client, task);
  const no = await keel(['approvals', 'reject', id, '--reason', 'keep the March files'], { KEEL_HOME: home });
  assert.equal(no.code, 0, no.stderr);
  const done = await until('ended', status(client, task.taskId), (x) => x.status !== 'input_required' && x.status !== 'working');
  assert.equal(done.status, 'failed');
  assert.match(done.statusMessage ?? '', /keep the March files/);
  const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  assert.equal(result.isError, true);
  assert.match(textOf(result), new RegExp(`Not run: approval ${id} was rejected.*keep the March files`));
  assert.deepEqual(trashed(home), [], 'never ran');
});

test('S3 tasks (stdio): tasks/cancel rejects the card (audited, as the session) and nothing runs; the card cannot be approved after', async (t) => {
  const home = tempHome('keel-mcp-tasks-');
  const client = await stdioClient(home, ['--plugins', FIXTURES]);
  t.after(() => client.close());
  const task = await callAsTask(client, 'trash_email', { ids: ['m3'] });
  const id = await waitsOnCard(client, task);
  const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
  assert.equal(cancelled.status, 'cancelled');
  assert.match(cancelled.statusMessage ?? '', new RegExp(`approval ${id} rejected`));
  const [card] = await cards(home);
  assert.equal(card.status, 'rejected');
  assert.equal(card.reason, 'cancelled by the MCP client (tasks/cancel)');
  assert.equal(card.answered_by, 'mcp:test-client');
  const { openStore } = await import('../../src/store/open.js');
  const store = openStore(home, { KEEL_HOME: home });
  t.after(() => store.close());
  const audit = (await store.listAudit()).filter((r) => r.subject === id);
  assert.deepEqual(
    audit.map((r) => `${r.action}:${r.actor}`),
    ['rejected:mcp:test-client'],
  );
  const late = await keel(['approvals', 'approve', id], { KEEL_HOME: home });
  assert.notEqual(late.code, 0, 'answered already');
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'cancelled', 'stays cancelled');
  assert.deepEqual(trashed(home), [], 'nothing ran');
});

test('S3 tasks (stdio): a confirm-once write made as a task without elicitation waits on its tool’s card; approved, it completes', async (t) => {
  const home = tempHome('keel-mcp-tasks-');
  const client = await stdioClient(home, ['--plugins', FIXTURES]);
  t.after(() => client.close());
  const task = await callAsTask(client, 'create_reminder', { title: 'pay rent' });
  const id = await waitsOnCard(client, task);
  assert.match((await cards(home))[0].card.title, /create_reminder .*rest of this MCP session/);
  assert.equal((await keel(['approvals', 'approve', id], { KEEL_HOME: home })).code, 0);
  const done = await until('ended', status(client, task.taskId), (x) => x.status === 'completed' || x.status === 'failed');
  assert.equal(done.status, 'completed');
  assert.match(textOf(await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)), /Reminder "pay rent" created/);
  // Consented for the session: the next one, as a task, completes unasked.
  const next = await callAsTask(client, 'create_reminder', { title: 'call mum' });
  const ended = await until('ended', status(client, next.taskId), (x) => x.status === 'completed' || x.status === 'failed');
  assert.equal(ended.status, 'completed');
  assert.equal((await cards(home)).length, 1);
});

test('S3 tasks (Streamable HTTP): approve → completed and ran once; reject → failed with the reason; cancel → card rejected by the token; nothing else ran', async (t) => {
  const home = tempHome('keel-mcp-tasks-');
  const srv = await httpServe(home, ['--plugins', FIXTURES]);
  t.after(() => srv.close());
  const { client } = await srv.connect();
  t.after(() => client.close());
  await client.listTools();

  // The SDK client's own stream, polling over HTTP until the owner approves.
  let taskId = '';
  const stream = (async () => {
    for await (const m of client.experimental.tasks.callToolStream({ name: 'trash_email', arguments: { ids: ['m1'] } })) {
      if (m.type === 'taskCreated') taskId = m.task.taskId;
      if (m.type === 'result') return m.result;
      if (m.type === 'error') throw m.error;
    }
  })();
  await until('the task', async () => taskId, Boolean);
  const approveId = await waitsOnCard(client, { taskId } as Task);
  assert.equal((await keel(['approvals', 'approve', approveId], { KEEL_HOME: home })).code, 0);
  assert.match(textOf(await stream), /Moved 1 email/);
  assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'completed');

  const rejected = await callAsTask(client, 'trash_email', { ids: ['m2'] });
  const rejectId = await waitsOnCard(client, rejected);
  assert.equal((await keel(['approvals', 'reject', rejectId, '--reason', 'not that one'], { KEEL_HOME: home })).code, 0);
  const failed = await until('failed', status(client, rejected.taskId), (x) => x.status !== 'input_required');
  assert.equal(failed.status, 'failed');
  assert.match(failed.statusMessage ?? '', /not that one/);

  const cancelled = await callAsTask(client, 'trash_email', { ids: ['m3'] });
  const cancelId = await waitsOnCard(client, cancelled);
  assert.equal((await client.experimental.tasks.cancelTask(cancelled.taskId)).status, 'cancelled');
  const card = (await cards(home)).find((c) => c.id === cancelId);
  assert.equal(card?.status, 'rejected');
  assert.equal(card?.answered_by, 'ide', 'the token’s name, not the client’s');

  assert.deepEqual(trashed(home), ['trash_email {"ids":["m1"]}'], 'the approved call ran once; the others never');
});

test('S3 tasks (stdio) with elicitation: the card is shown in the client while the task is input_required; accepted there, the task completes and the tool ran once', async (t) => {
  const home = tempHome('keel-mcp-tasks-');
  const asked: string[] = [];
  const client = await stdioClient(home, ['--plugins', FIXTURES], (message) => {
    asked.push(message);
    return 'accept';
  });
  t.after(() => client.close());
  const task = await callAsTask(client, 'trash_email', { ids: ['m2'] });
  const done = await until('ended', status(client, task.taskId), (x) => x.status === 'completed' || x.status === 'failed');
  assert.equal(done.status, 'completed');
  assert.match(textOf(await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)), /Moved 1 email/);
  assert.equal(asked.length, 1);
  assert.match(asked[0], /Approve this call\?/);
  const [card] = await cards(home);
  assert.equal(card.status, 'approved');
  assert.equal(card.answered_by, 'mcp:test-client');
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m2"]}']);
});
