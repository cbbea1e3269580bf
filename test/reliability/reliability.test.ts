/**
 * The reliability campaign, in CI on every change (docs/rules.md R17–R22, A2, M4), in-process half:
 * generated model replies through the engine and the store, and mutated manifests (crashes.test.ts
 * has the crash matrix and the races). Each reports what it tried; any violation fails the suite with
 * the case to replay it.
 * `npm run bench reliability` runs the same campaign and writes bench/results/reliability.json.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';
import { manifestCampaign } from './manifests.js';
import { replyCampaign } from './replies.js';

const REPLY_CASES = Number(process.env.KEEL_FUZZ_CASES || 10_000);

test(`R19/R21/R22/A2/C4: ${REPLY_CASES} generated model replies through the engine and the store break no invariant`, async (t) => {
  const r = await replyCampaign(REPLY_CASES);
  t.diagnostic(
    `replies: ${r.cases} cases, ${r.calls} calls, ${r.executions} executions, ${r.pauses} pauses answered, seed ${r.seed}, ${r.ms} ms`,
  );
  assert.equal(r.cases, REPLY_CASES);
  assert.deepEqual(r.violations, [], `seed ${r.seed}`);
  assert.ok(r.executions > REPLY_CASES / 5, `the campaign executes tools, not only refusals (${r.executions})`);
  assert.ok(r.pauses > REPLY_CASES / 20, `and answers pauses (${r.pauses})`);
});

test('M4: mutated manifests never throw out of the parser; every issue has file:line:col; a good plugin beside a broken one mounts', async (t) => {
  const r = await manifestCampaign(ROOT, 3_000, 20);
  t.diagnostic(`manifests: ${r.manifests} files, ${r.cases} mutations (${r.refused} refused), ${r.mounts} mounts, ${r.ms} ms`);
  assert.deepEqual(r.violations, []);
  assert.ok(r.manifests >= 20, `every manifest in the repository (${r.manifests})`);
});
