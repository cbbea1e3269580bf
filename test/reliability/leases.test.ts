/**
 * Leases, store by store (S4, R18; issue 27 item 3): one semantics on SQLite and PostgreSQL, through
 * the one Store interface, with two stores on one file or schema standing for two processes.
 * - A run whose lease is renewed is never taken over, however old its last save; once its holder
 *   stops renewing (here: closes) and the lease runs out, it is.
 * - A store whose run another process took can no longer save it: the save is refused whole and
 *   the taker's state stands.
 * (The process-level rows — a `keel run` in another UTS namespace, zombies, reused PIDs — are the
 * crash matrix's owner rows, crashes.ts.)
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/types/index.js';
import { sampleRun } from '../store/conformance.js';
import { tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';

after(() => dropSchemas());

/** Two stores over one database, as two processes have; `leaseMs` for the first (the holder). */
const PAIRS: [string, (leaseMs: number) => Promise<[Store, Store]>][] = [
  [
    'sqlite',
    async (leaseMs) => {
      const file = join(tempHome('keel-leases-'), 'keel.db');
      return [new SqliteStore(file, { leaseMs }), new SqliteStore(file)];
    },
  ],
  [
    'postgres',
    async (leaseMs) => {
      const url = withSchema(await testPgUrl(), freshSchema());
      return [new PostgresStore(url, { leaseMs }), new PostgresStore(url)];
    },
  ],
];

const ELSEWHERE = 'a-container:4242:777';
const running = (id: string, owner: string) =>
  sampleRun(id, {
    status: 'running',
    reason: null,
    pause: null,
    pause_seq: 1,
    owner,
    // Silent for 11 minutes by its last save: only the lease says its owner is alive.
    updated_at: new Date(Date.now() - 11 * 60_000).toISOString(),
  });

for (const [name, pair] of PAIRS) {
  test(`${name}: S4/R18 a renewed lease is never taken over; once its holder stops renewing and it runs out, it is`, async (t) => {
    // Long enough that a renewal every third of it is not missed on a loaded machine.
    const [holder, other] = await pair(3000);
    t.after(() => Promise.all([holder.close(), other.close()]));
    await holder.createRun(running('run-1', ELSEWHERE));
    // Past one whole lease: only the holder's renewals keep it valid.
    await new Promise((r) => setTimeout(r, 3500));
    assert.equal(await other.takeOver('run-1', 1, ELSEWHERE, 'taker:1:1'), false, 'a valid lease wins');
    assert.equal((await other.loadRun('run-1'))?.owner, ELSEWHERE, 'nothing changed');
    assert.equal(await other.takeOver('run-1', 1, ELSEWHERE, 'taker:1:1', true), true, 'unless the caller saw its owner gone');

    await holder.createRun(running('run-2', ELSEWHERE));
    await holder.close(); // its renewals stop, as when its process dies
    const deadline = Date.now() + 20_000;
    let taken = false;
    while (!taken && Date.now() < deadline) {
      taken = await other.takeOver('run-2', 1, ELSEWHERE, 'taker:1:1');
      if (!taken) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(taken, 'taken over once the lease ran out');
    assert.equal((await other.loadRun('run-2'))?.owner, 'taker:1:1');
  });

  test(`${name}: S4/R18 a store whose run was taken over can no longer save it; the taker's state stands`, async (t) => {
    const [holder, other] = await pair(30_000);
    t.after(() => Promise.all([holder.close(), other.close()]));
    const run = running('run-1', ELSEWHERE);
    await holder.createRun(run);
    assert.equal(await other.takeOver('run-1', 1, ELSEWHERE, 'taker:1:1', true), true);
    const before = await other.loadRun('run-1');
    run.notes = [...run.notes, 'written by the process that lost the run'];
    run.status = 'done';
    run.reason = 'final_answer';
    await assert.rejects(holder.saveRun(run), /run run-1 was taken over by taker:1:1: this process lost its lease/);
    await assert.rejects(holder.saveRun(run), /lost its lease/, 'and every later save');
    const now = await other.loadRun('run-1');
    assert.equal(now?.status, 'running');
    assert.equal(now?.owner, 'taker:1:1');
    assert.deepEqual(now?.notes, before?.notes, 'nothing of the refused save was kept');
  });
}
