/**
 * The mode-switch campaign (modes.ts), on both stores: a run in one process, its session switched
 * to Plan by another process (a Keel of its own, or `keel serve`) mid-run — no write runs after the switch (C2, C5; issue 27, item 1).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { modeSwitches } from './modes.js';

after(() => dropSchemas());

test('C2/C5: a session switched to Plan by another process mid-run — every write before ran, none after, on SQLite and PostgreSQL', async (t) => {
  const r = await modeSwitches([
    { name: 'sqlite', url: async () => undefined },
    { name: 'postgres', url: async () => withSchema(await testPgUrl(), freshSchema()) },
  ]);
  t.diagnostic(
    `mode switches: ${r.rounds} rounds (${r.server_rounds} switched through keel serve), ${r.writes} writes asked, ${r.ran} ran, ${r.denied} denied by mode, ${r.ms} ms`,
  );
  assert.deepEqual(r.violations, []);
  assert.equal(r.rounds, 6);
  assert.equal(r.server_rounds, 2, 'one round on each store switched through a server process');
  assert.ok(r.denied > 0 && r.ran > 0);
});
