/**
 * The concurrent-approvals campaign (approvals.ts), on both stores: two `keel serve` processes and a
 * CLI answer the same cards at once — each card answered once, every loser a 409, each approved call
 * run exactly once (issue 27; A2, A3, R18, S3, S4).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { dropSchemas } from '../support/pg.js';
import { PROCESS_STORES } from '../support/stores.js';
import { approvalRaces } from './approvals.js';

after(() => dropSchemas());

test('A2/A3/S4: two servers and a CLI answer the same cards at once, on SQLite and PostgreSQL — one answer each, the others 409, each approved call run once', async (t) => {
  const r = await approvalRaces(PROCESS_STORES);
  t.diagnostic(
    `approvals: ${r.cards} cards × ${r.contenders} processes on ${r.stores.join(' and ')}, ${r.approved} approved, ${r.rejected} rejected, ${r.conflicts} conflicts, ${r.executions} executions, ${r.ms} ms`,
  );
  assert.deepEqual(r.violations, []);
  assert.equal(r.cards, 24);
  assert.equal(r.conflicts, r.cards * (r.contenders - 1), 'every answer but one per card lost with a conflict');
  assert.equal(r.executions, r.approved, 'each approved call ran once, no rejected one ran');
  assert.ok(r.approved > 0 && r.rejected > 0, `both decisions won some cards (${r.approved} approved, ${r.rejected} rejected)`);
});
