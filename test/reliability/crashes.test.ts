/**
 * The reliability campaign, process-level (see reliability.test.ts for the in-process half): the crash
 * matrix and the races through the real CLI. Each reports what it tried; any violation fails the suite.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crashMatrix, races } from './crashes.js';

test('R18/A2: kill -9 at each persistence point of the confirm, approval and plan scenarios — nothing lost, nothing twice, nothing wedged', async (t) => {
  const r = await crashMatrix();
  t.diagnostic(`crash matrix: ${r.trials} trials, ${r.kills} kills, ${r.ms} ms`);
  assert.deepEqual(r.violations, []);
  assert.ok(r.kills >= 20, `the matrix killed processes (${r.kills})`);
});

test('R18/A3: processes racing to answer, approve or continue one run — exactly one wins every round', async (t) => {
  const r = await races();
  t.diagnostic(`races: ${r.rounds} rounds of ${r.contenders} processes, ${r.ms} ms`);
  assert.deepEqual(r.violations, []);
  assert.equal(r.rounds, 12);
});
