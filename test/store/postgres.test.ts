/**
 * S4: the PostgreSQL store passes the store conformance suite, each test in a schema of its own, on
 * the cluster at KEEL_TEST_PG_URL (in CI: the one .ci/run starts; missing there, these tests fail)
 * or, elsewhere, on a throwaway cluster started for this file (test/support/pg.ts).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import pg from 'pg';
import { MIGRATIONS } from '../../src/store/pg-migrations.js';
import { LEG_QUEUE, migrate, migrationStatus, PostgresStore, parsePostgresUrl } from '../../src/store/postgres.js';
import type { RunState } from '../../src/types/index.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { at, sampleRun, storeConformance } from './conformance.js';

after(() => dropSchemas());

const open = async () => new PostgresStore(withSchema(await testPgUrl(), freshSchema()));

storeConformance('postgres', open);

test('postgres: S4/R18 two stores on one database (two processes) hand a run over and both append correctly', async (t) => {
  const url = withSchema(await testPgUrl(), freshSchema());
  const a = new PostgresStore(url);
  const b = new PostgresStore(url);
  t.after(async () => {
    await a.close();
    await b.close();
  });
  const run = sampleRun('run-1');
  await a.createRun(structuredClone(run));
  assert.equal(await b.claimPause(run.id, run.pause_seq, 'host-b:2'), true, 'b claims the pause a stored');
  assert.equal(await a.claimPause(run.id, run.pause_seq, 'host-a:1'), false, 'a cannot claim it again');
  const inB = (await b.loadRun(run.id)) as RunState;
  inB.messages.push({ role: 'tool', call_id: 'c3', name: 'trash_email', content: 'Moved 2 emails.', is_error: false });
  Object.assign(inB, { status: 'paused', reason: 'awaiting_user_input', pause_seq: 2, model_calls: 3, updated_at: at(5) });
  await b.saveRun(inB);
  assert.equal(await a.claimPause(run.id, 2, 'host-a:1'), true, 'a claims the next pause');
  const inA = (await a.loadRun(run.id)) as RunState;
  assert.deepEqual(inA, { ...inB, status: 'running', owner: 'host-a:1', updated_at: inA.updated_at });
  inA.messages.push({ role: 'user', content: 'Deals' });
  Object.assign(inA, { status: 'done', reason: 'final_answer', answer: 'ok', pause: null, updated_at: at(6) });
  await a.saveRun(inA);
  assert.deepEqual(await b.loadRun(run.id), inA, 'b reads what a appended after b');
});

test('postgres: S4 claims race across connections: of 20 concurrent claims of one pause exactly one wins', async (t) => {
  const url = withSchema(await testPgUrl(), freshSchema());
  const stores = [0, 1, 2, 3].map(() => new PostgresStore(url));
  t.after(() => Promise.all(stores.map((s) => s.close())));
  await stores[0].createRun(sampleRun('run-1'));
  const wins = await Promise.all(Array.from({ length: 20 }, (_, i) => stores[i % 4].claimPause('run-1', 1, `host:${i}`)));
  assert.equal(wins.filter(Boolean).length, 1);
  // The journal across four connections at once: ids all distinct, read back in order.
  const ids = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      stores[i % 4].appendEvent(
        'run-1',
        { type: 'run_started', run_id: 'run-1', session_id: 's', mode: 'agent', request: 'r', resumed: false },
        at(i),
      ),
    ),
  );
  assert.equal(new Set(ids).size, 40);
  assert.deepEqual(
    (await stores[1].listEvents({ run_id: 'run-1' })).map((e) => e.id),
    [...ids].sort((x, y) => x - y),
  );
});

test('postgres: S4 text with a NUL character (which JSONB cannot hold) round-trips whole', async (t) => {
  const store = await open();
  t.after(() => store.close());
  const run = sampleRun('run-nul', { status: 'done', reason: 'answered_by_tool', pause: null, answer: 'a\u0000b', request: 'x\u0000y' });
  run.messages.push({ role: 'tool', call_id: 'n1', name: 'search_email', content: 'bytes \u0000 here', is_error: false });
  await store.createRun(structuredClone(run));
  assert.deepEqual(await store.loadRun(run.id), run);
  assert.equal((await store.listRuns())[0].request, 'x\u0000y');
  await store.ledgerStart({ approval_id: 'ap', call_id: 'c', tool: 't', args_json: '{}' });
  await store.ledgerFinish('ap', 'c', 'out\u0000put', false);
  assert.equal((await store.ledgerGet('ap', 'c'))?.result, 'out\u0000put');
  const m = await store.memoryAdd('nul\u0000memory');
  assert.equal((await store.memorySearch('memory', 5))[0]?.text, 'nul\u0000memory');
  assert.equal(m.text, 'nul\u0000memory');
});

test('postgres: S4 migrations run once, under a lock, recorded in schema_migrations; a newer schema is refused', async (t) => {
  const target = parsePostgresUrl(withSchema(await testPgUrl(), freshSchema()));
  const clients = [0, 1, 2].map(() => new pg.Client({ connectionString: target.connectionString }));
  await Promise.all(clients.map((c) => c.connect()));
  t.after(() => Promise.all(clients.map((c) => c.end())));
  const before = await migrationStatus(clients[0], target.schema);
  assert.deepEqual(
    before.migrations.map((m) => m.applied_at),
    MIGRATIONS.map(() => null),
    'all pending on an empty schema',
  );
  // Three processes start at once: each migration is applied by exactly one of them.
  const applied = await Promise.all(clients.map((c) => migrate(c, target.schema)));
  assert.deepEqual(applied.flat().sort(), MIGRATIONS.map((m) => m.version).sort());
  const after1 = await migrationStatus(clients[1], target.schema);
  assert.equal(
    after1.migrations.every((m) => typeof m.applied_at === 'string'),
    true,
    'all applied',
  );
  assert.deepEqual(await migrate(clients[2], target.schema), [], 'nothing left to apply');
  await clients[0].query(`INSERT INTO ${target.schema}.schema_migrations (version, name) VALUES (9999, 'from the future')`);
  await assert.rejects(migrate(clients[0], target.schema), /at migration 9999, newer than this Keel knows/);
  assert.deepEqual((await migrationStatus(clients[0], target.schema)).unknown, [9999]);
});

test('postgres: S4 a bad URL is refused at once; an unreachable database is one clear line on first use', async () => {
  assert.throws(() => new PostgresStore('postgres://'), /names no host|not a valid PostgreSQL URL/);
  assert.throws(
    () => new PostgresStore('postgres://u:secret@h/db?schema=Bad-Name'),
    (e: Error) => /schema=Bad-Name/.test(e.message) && !/secret/.test(e.message),
  );
  const store = new PostgresStore('postgres://keel:secret@127.0.0.1:1/keel');
  await assert.rejects(
    store.listRuns(),
    (e: Error) =>
      /cannot reach the PostgreSQL store postgres:\/\/\[redacted\]@127\.0\.0\.1:1\/keel \(ECONNREFUSED\)/.test(e.message) &&
      !/secret/.test(e.message),
  );
  await store.close();
});

test('postgres: S4 leases — a held run is renewed; handed to the queue it is released and its leg queued once, in one transaction', async (t) => {
  const url = withSchema(await testPgUrl(), freshSchema());
  const a = new PostgresStore(url, { leaseMs: 1500 });
  t.after(() => a.close());
  await a.createRun(sampleRun('run-1', { status: 'running', reason: null, pause: null, owner: 'host-a:1' }));
  await new Promise((r) => setTimeout(r, 3500)); // longer than the lease: the heartbeat keeps it
  assert.deepEqual(await a.reapExpired(), [], 'a renewed lease is not reaped');
  assert.equal(await a.handOff('run-1', 'host-b:2', { kind: 'start' }), false, 'only the holder hands a run off');
  assert.equal(await a.handOff('run-1', 'host-a:1', { kind: 'start' }), true);
  assert.equal(await a.handOff('run-1', 'host-a:1', { kind: 'start' }), false, 'a second hand-off queues nothing');
  assert.equal((await a.loadRun('run-1'))?.owner, null, 'released: no owner');
  const boss = await a.queue();
  const jobs = await boss.fetch<{ run_id: string; kind: string }>(LEG_QUEUE, { batchSize: 10 });
  assert.deepEqual(
    jobs.map((j) => [j.data.run_id, j.data.kind]),
    [['run-1', 'start']],
  );
});

test('postgres: S4 leases — a run whose holder stopped renewing is reaped once: released and queued to be taken over; the old holder can no longer save it', async (t) => {
  const url = withSchema(await testPgUrl(), freshSchema());
  const dead = new PostgresStore(url, { leaseMs: 300 });
  const other = new PostgresStore(url, { leaseMs: 300 });
  t.after(() => Promise.all([dead.close(), other.close()]));
  const run = sampleRun('run-1', { status: 'running', reason: null, pause: null, owner: 'host-a:1' });
  await dead.createRun(structuredClone(run));
  dead.release('run-1'); // its process stops renewing (as a process that died would)
  await new Promise((r) => setTimeout(r, 600));
  const reaped = await Promise.all([other.reapExpired(), other.reapExpired(), dead.reapExpired()]);
  assert.deepEqual(reaped.flat(), ['run-1'], 'reaped exactly once, whoever looks');
  const jobs = await (await other.queue()).fetch<{ run_id: string; kind: string }>(LEG_QUEUE, { batchSize: 10 });
  assert.deepEqual(
    jobs.map((j) => [j.data.run_id, j.data.kind]),
    [['run-1', 'continue']],
  );
  // A worker takes it over; the old holder, still holding it in its mind, is refused.
  assert.equal(await other.takeOver('run-1', run.pause_seq, null, 'host-b:2'), true);
  const held = new PostgresStore(url, { leaseMs: 300 });
  t.after(() => held.close());
  await held.createRun(sampleRun('run-2', { status: 'running', reason: null, pause: null, owner: 'host-c:3' }));
  // Issue 27.3: a valid lease always wins — unless the caller saw the holder's process gone (ownerGone).
  assert.equal(await other.takeOver('run-2', 1, 'host-c:3', 'host-b:2'), false, 'refused while its lease is renewed');
  assert.equal(await other.takeOver('run-2', 1, 'host-c:3', 'host-b:2', true), true, 'taken over while its holder lives on');
  const stale = (await held.loadRun('run-2')) as RunState;
  stale.owner = 'host-c:3';
  stale.model_calls = 9;
  await assert.rejects(held.saveRun(stale), /was taken over by host-b:2/);
  assert.equal((await other.loadRun('run-2'))?.model_calls, 2, 'nothing was written');
});
