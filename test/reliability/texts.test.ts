/**
 * Issue 27, the text campaign in CI: lone surrogates, NUL, bidi controls, 1 MB texts and an emoji at
 * every cut point of KEEL_MAX_RESULT_CHARS, as the request, model text, arguments, tool output, a
 * question and the answer, through the real Keel on SQLite and on PostgreSQL: 0 failures to save.
 * `npm run bench reliability` runs the same campaign and reports its row.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { CUT, textCampaign } from './texts.js';

after(() => dropSchemas());

const CASES = Number(process.env.KEEL_TEXT_CASES || 40);

test(`issue 27: ${CASES} hostile texts (lone surrogates, NUL, bidi, 1 MB, an emoji at every cut point of ${CUT}) through SQLite and PostgreSQL: 0 failures to save`, async (t) => {
  const sqlite = new SqliteStore(join(tempHome('keel-texts-db-'), 'keel.db'));
  const postgres = new PostgresStore(withSchema(await testPgUrl(), freshSchema()));
  t.after(async () => {
    await sqlite.close();
    await postgres.close();
  });
  const r = await textCampaign(
    [
      { name: 'sqlite', store: sqlite },
      { name: 'postgres', store: postgres },
    ],
    CASES,
  );
  t.diagnostic(
    `texts: ${r.cases} cases × ${r.stores.length} stores, ${r.runs} runs, ${r.replaced_runs} with text replaced, ${r.save_failures} failures to save, ${r.ms} ms`,
  );
  assert.deepEqual(r.violations, [], `seed ${r.seed}`);
  assert.equal(r.save_failures, 0);
  assert.equal(r.runs, CASES * 2);
  assert.ok(r.replaced_runs > CASES / 2, `the campaign replaces text, not only carries it (${r.replaced_runs})`);
});
