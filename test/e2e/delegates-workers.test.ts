/**
 * Issue 38 end to end on PostgreSQL: `keel serve` queues legs and `keel worker` processes drive
 * them — a delegate's run too, as legs of its own. The parent starts its delegate on worker A and
 * waits for it (awaiting_task, stored); the delegate waits on its card. Worker A is killed (-9)
 * while the delegate waits; the card is approved through the API; worker B starts the approved
 * call and is killed (-9) inside it; worker C takes the delegate over after its lease (the call is
 * reported as of unknown outcome, never run again), and the delegate's end carries the parent on,
 * which finishes with the delegate's answer. (D1, D2, S4, A2, R18)
 */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { stringify } from 'yaml';
import type { RunState } from '../../src/types/index.js';
import { calls, script, tempHome } from '../support/helpers.js';
import { dropSchemas } from '../support/pg.js';
import { pgDeployment, startKeelWorker, until } from '../support/workers.js';

after(() => dropSchemas());

test('D1/D2 PostgreSQL: a delegate is driven by workers as legs of its own; kill -9 of the worker while it waits and while it runs its approved call loses nothing and runs nothing twice; the parent finishes with its answer', async (t) => {
  const dir = tempHome('keel-dw-config-');
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    stringify({
      subagents: {
        delegates: [
          {
            name: 'cleaner',
            instructions: 'You tidy the inbox.',
            tools: ['search_inbox', 'trash_email'],
            model: script(
              dir,
              [{ tool_calls: [{ id: 'd1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed m1, I think.' }] as never,
              'child.yaml',
            ),
          },
        ],
      },
    }),
  );
  const { home, env, store, api } = await pgDeployment(t, 'keel-dw-', { KEEL_LEASE_MS: '1500', KEEL_CONFIG: config });
  const trashed = () => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length;
  const waitFor = (id: string, ok: (r: RunState) => boolean, what: string) =>
    until(what, async () => {
      const r = await store.loadRun(id);
      return r && ok(r) ? r : undefined;
    });

  // 1. Worker A drives the parent; its delegate is queued as a leg of its own and pauses on its card.
  const a = await startKeelWorker(env);
  const model = script(home, [
    { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Trash m1.' } }] },
    { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
    { text: 'The cleaner is done.' },
  ] as never);
  const started = await api('POST', '/v1/runs', { request: 'Clean up my inbox', model });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = started.body.run_id as string;
  const parent = await waitFor(runId, (r) => r.status === 'paused', 'the parent to wait for its delegate');
  assert.equal(parent.pause?.kind, 'task');
  const childId = parent.pause?.kind === 'task' ? parent.pause.child_run : '';
  const child = await waitFor(childId, (r) => r.status === 'paused', 'the delegate to wait on its card');
  assert.equal(child.parent?.run_id, runId);
  assert.equal(child.owner, a.owner, 'a worker drove the delegate');
  const approvalId = child.pause?.kind === 'approval' ? child.pause.approval_id : '';
  const card = (await api('GET', `/v1/approvals/${approvalId}`)).body;
  assert.deepEqual(card.card.chain, { delegate: 'cleaner', parent_run: runId, request: 'Clean up my inbox' });

  // 2. kill -9 of worker A while the delegate waits; worker B hangs inside the approved call and is killed too.
  a.child.kill('SIGKILL');
  await a.exited;
  const b = await startKeelWorker({ ...env, KEEL_TEST_HANG_IN_TRASH: '1' });
  const approved = await api('POST', `/v1/approvals/${approvalId}`, { decision: 'approve' });
  assert.equal(approved.status, 200, JSON.stringify(approved.body));
  await until('worker B to start the call', async () => (existsSync(join(home, 'trash-started')) ? true : undefined));
  assert.equal(trashed(), 1);
  b.child.kill('SIGKILL');
  await b.exited;

  // 3. Worker C takes the delegate over after B's lease; its end carries the parent on.
  const c = await startKeelWorker(env);
  const done = await waitFor(runId, (r) => r.status === 'done', 'the parent to finish');
  assert.equal(done.answer, 'The cleaner is done.');
  const wait = done.steps.find((s) => s.call_id === 'w');
  assert.match(wait?.result ?? '', /^Task tk_1 \(cleaner\): done; 2 model calls, tools run: .*\nTrashed m1, I think\./);
  const ended = await store.loadRun(childId);
  assert.match(
    ended?.steps.find((s) => s.call_id === 'd1' && s.outcome !== 'awaiting_approval')?.result ?? '',
    /The outcome of trash_email is unknown/,
  );
  assert.equal(trashed(), 1, 'the started call was never run again: 0 lost, 0 duplicated');
  const shown = (await api('GET', `/v1/runs/${runId}`)).body;
  assert.deepEqual(
    shown.children.map((x: { run_id: string; status: string }) => [x.run_id, x.status]),
    [[childId, 'done']],
  );
  c.child.kill('SIGTERM');
  assert.equal(await c.exited, 0, c.err());
});
