/**
 * S4: `keel db migrate|status`, `--store` and KEEL_STORE, through the real CLI (dist/) on PostgreSQL:
 * migrations listed and applied once; a bad URL or an unreachable database is one line, exit 2; a
 * run paused on a card in one process is approved in another and its call runs once — all on the
 * PostgreSQL store, nothing written to the SQLite file under KEEL_HOME.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { MIGRATIONS } from '../../src/store/pg-migrations.js';
import { calls, FIXTURES, json, keel, script, tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';

after(() => dropSchemas());

test('S4: keel db status lists pending migrations, keel db migrate applies them once, status then shows them applied', async () => {
  const url = withSchema(await testPgUrl(), freshSchema());
  const home = tempHome();
  const before = await keel(['db', 'status', '--store', url], { KEEL_HOME: home });
  assert.equal(before.code, 0, before.stderr);
  assert.match(before.stdout, /0001 init\s+pending/);
  assert.match(before.stdout, new RegExp(`0 applied, ${MIGRATIONS.length} pending: keel db migrate applies them`));

  const migrated = await keel(['db', 'migrate', '--store', url], { KEEL_HOME: home });
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.match(migrated.stdout, /^Applied 0001 init/);

  const again = await keel(['db', 'migrate'], { KEEL_HOME: home, KEEL_STORE: url });
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /is up to date: nothing to apply/);

  const status = json<{ store: string; pending: number; migrations: { version: number; applied_at: string | null }[] }>(
    await keel(['db', 'status', '--json'], { KEEL_HOME: home, KEEL_STORE: url }),
  );
  assert.equal(status.store, 'postgres');
  assert.equal(status.pending, 0);
  assert.deepEqual(
    status.migrations.map((m) => m.version),
    MIGRATIONS.map((m) => m.version),
  );
  assert.equal(
    status.migrations.every((m) => typeof m.applied_at === 'string'),
    true,
  );
  assert.equal(existsSync(join(home, 'keel.db')), false, 'the SQLite file was never made');
});

test('S4: keel db with a bad URL or an unreachable database says so in one line and exits 2 (no password shown)', async () => {
  const home = tempHome();
  const cases: [string[], RegExp][] = [
    [
      ['db', 'status', '--store', 'postgres://keel:secret@127.0.0.1:1/keel'],
      /cannot reach the PostgreSQL store .*127\.0\.0\.1:1.*ECONNREFUSED/,
    ],
    [['db', 'migrate', '--store', 'postgres://keel:secret@127.0.0.1:1/keel'], /cannot reach the PostgreSQL store/],
    [['db', 'migrate', '--store', 'postgres://keel:secret@/keel'], /is not a valid PostgreSQL URL/],
    [['db', 'status', '--store', 'postgres://keel:secret@localhost/keel?schema=No-Such'], /schema=No-Such is not a schema name/],
    [['db', 'status', '--store', 'mysql://keel:secret@localhost/keel'], /is not a store Keel knows/],
    [['runs', 'list', '--store', 'postgres://keel:secret@127.0.0.1:1/keel'], /cannot reach the PostgreSQL store/],
  ];
  for (const [args, message] of cases) {
    const r = await keel(args, { KEEL_HOME: home });
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stderr.trim().split('\n').length, 1, `${args.join(' ')}: one line`);
    assert.doesNotMatch(r.stderr, /secret|\n\s+at /);
  }
});

test('S4/A2: on --store postgres://… a run pauses on its card in one process, is approved in another, and the call runs once', async () => {
  const url = withSchema(await testPgUrl(), freshSchema());
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed.' }] as never);
  const paused = json<{ run_id: string; status: string; approval?: { id: string } }>(
    await keel(['run', '--json', '--store', url, '--model', model, '--plugins', FIXTURES, 'trash m1'], env),
  );
  assert.equal(paused.status, 'paused');
  const id = paused.approval?.id ?? '';
  const listed = await keel(['approvals', 'list', '--json'], { ...env, KEEL_STORE: url });
  assert.deepEqual(
    (JSON.parse(listed.stdout) as { id: string }[]).map((a) => a.id),
    [id],
  );
  const approved = await keel(['approvals', 'approve', id, '--store', url], env);
  assert.equal(approved.code, 0, approved.stderr);
  assert.match(approved.stdout, /Trashed\./);
  const twice = await keel(['approvals', 'approve', id, '--store', url], env);
  assert.equal(twice.code, 2, 'a second answer is a conflict');
  assert.equal(calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length, 1, 'the approved call ran once');
  const runs = json<{ id?: string; run_id?: string; status: string }[]>(await keel(['runs', 'list', '--json', '--store', url], env));
  assert.deepEqual(
    runs.map((r) => [r.run_id ?? r.id, r.status]),
    [[paused.run_id, 'done']],
  );
  assert.equal(existsSync(join(home, 'keel.db')), false, 'the SQLite file under KEEL_HOME was never made');
});
