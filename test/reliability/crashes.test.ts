/**
 * The reliability campaign, process-level (see reliability.test.ts for the in-process half): the crash
 * matrix and the races through the real CLI. Each reports what it tried; any violation fails the suite.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { dropSchemas } from '../support/pg.js';
import { PROCESS_STORES } from '../support/stores.js';
import { crashMatrix, ownerMatrix, races } from './crashes.js';

after(() => dropSchemas());

test('R18/A2/D2: kill -9 at each persistence point of the confirm, approval, plan and delegate scenarios — nothing lost, nothing twice, nothing wedged', async (t) => {
  const r = await crashMatrix();
  t.diagnostic(`crash matrix: ${r.trials} trials, ${r.kills} kills (${JSON.stringify(r.by_scenario)}), ${r.ms} ms`);
  assert.deepEqual(r.violations, []);
  assert.ok(r.kills >= 20, `the matrix killed processes (${r.kills})`);
  // Issue 38: the delegate rows kill the process driving the parent and its delegate at each of their saves, claims and ledger points.
  assert.ok(r.by_scenario.delegate >= 10, `the delegate rows killed processes (${r.by_scenario.delegate})`);
});

test('R18/A3: processes racing to answer, approve or continue one run — exactly one wins every round', async (t) => {
  const r = await races();
  t.diagnostic(`races: ${r.rounds} rounds of ${r.contenders} processes, ${r.ms} ms`);
  assert.deepEqual(r.violations, []);
  assert.equal(r.rounds, 12);
});

test('R18/S4 (issue 27.3, 27.10): the owner rows on SQLite and PostgreSQL — a live owner with a valid lease is never taken over (on another host too); a killed, zombie or PID-reused owner is', async (t) => {
  const r = await ownerMatrix(PROCESS_STORES);
  t.diagnostic(`owner rows: ${r.trials} trials, ${r.refused} refused, ${r.taken_over} taken over, ${r.ms} ms`);
  for (const u of r.unavailable) t.diagnostic(`not made here: ${u}`);
  assert.deepEqual(r.violations, []);
  assert.equal(r.trials + r.unavailable.length, 8, 'four rows on each store');
  assert.equal(r.taken_over, r.trials, 'every dead owner was taken over');
  // The live-owner rows need no privilege but a UTS namespace for the other host's: at least this host's, on each store.
  assert.ok(r.refused >= 2, `the live owners were refused (${r.refused})`);
});
