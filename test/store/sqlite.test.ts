/** S4: the SQLite store passes the store conformance suite, on a file and in memory. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { nativeBinding } from '../../src/store/sqlite/schema.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { contentHash, stepRow, toolsBlob } from '../../src/store/trace.js';
import type { RunState } from '../../src/types/index.js';
import { ROOT, tempHome } from '../support/helpers.js';
import { at, sampleRun, storeConformance } from './conformance.js';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function dbFile(): string {
  const dir = tempHome('keel-store-');
  dirs.push(dir);
  return join(dir, 'keel.db');
}

storeConformance('sqlite file', () => new SqliteStore(dbFile()));
storeConformance('sqlite memory', () => new SqliteStore(':memory:'));

test('sqlite file: S4/R18 two stores on one file (two processes) hand a run over and both append correctly', async (t) => {
  const file = dbFile();
  const a = new SqliteStore(file);
  const b = new SqliteStore(file);
  t.after(async () => {
    await a.close();
    await b.close();
  });

  const run = sampleRun('run-1');
  await a.createRun(structuredClone(run));
  assert.equal(await b.claimPause(run.id, run.pause_seq, 'host-b:2'), true, 'b claims the pause a stored');
  const inB = (await b.loadRun(run.id)) as RunState;
  inB.messages.push({ role: 'tool', call_id: 'c3', name: 'trash_email', content: 'Moved 2 emails.', is_error: false });
  inB.messages.push({ role: 'assistant', content: 'Which folder next?', tool_calls: [] });
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

test('sqlite: a tool result is stored once (the call record refers to its tool message); a file from an older Keel is migrated', async (t) => {
  const file = dbFile();
  const store = new SqliteStore(file);
  t.after(() => store.close());
  const big = 'x'.repeat(200_000);
  const run = sampleRun('run-big', { status: 'done', reason: 'final_answer', pause: null });
  run.messages.push({ role: 'assistant', content: '', tool_calls: [{ id: 'b1', name: 'search_email', args: {} }] });
  run.messages.push({ role: 'tool', call_id: 'b1', name: 'search_email', content: big, is_error: false });
  run.steps.push({
    step: 9,
    call_id: 'b1',
    tool: 'search_email',
    args: {},
    outcome: 'ran',
    result: big,
    is_error: false,
    effect: 'read',
    by_core: false,
  });
  await store.createRun(structuredClone(run));
  assert.deepEqual(await store.loadRun(run.id), run);
  const Database = (await import('better-sqlite3')).default;
  const raw = new Database(file, { readonly: true });
  const parts = (
    raw.prepare('SELECT part AS body FROM run_events WHERE run_id = ? AND part IS NOT NULL').all(run.id) as { body: string }[]
  ).map((r) => JSON.parse(r.body) as { m?: unknown[]; c?: unknown[] });
  raw.close();
  const holding = (xs: unknown[]) => xs.filter((x) => JSON.stringify(x).includes(big)).length;
  assert.equal(holding(parts.flatMap((p) => p.c ?? [])), 0, 'not in the call records');
  assert.equal(holding(parts.flatMap((p) => p.m ?? [])), 1, 'once, in its tool message');
  assert.equal(parts.length, 1, 'issue 29: what one save adds to the trace is part of its one journal row');

  // An older file: no warnings column, no consent_writes column, no tool counts.
  const old = dbFile();
  const s1 = new SqliteStore(old);
  await s1.createRun(sampleRun('run-old'));
  await s1.createRun(sampleRun('run-old-2'));
  await s1.close();
  const db = new Database(old);
  // Stamped by this schema (issue 49: an up-to-date file skips the migration's look-ups) …
  assert.notEqual(db.pragma('user_version', { simple: true }), 0);
  // … and an older Keel's file has no stamp.
  db.exec(
    'ALTER TABLE runs DROP COLUMN warnings; ALTER TABLE approvals DROP COLUMN consent_writes; DROP TABLE tool_usage; PRAGMA user_version = 0;',
  );
  db.close();
  const s2 = new SqliteStore(old);
  t.after(() => s2.close());
  assert.deepEqual((await s2.loadRun('run-old'))?.warnings, []);
  assert.deepEqual(await s2.toolUsage(5), [{ tool: 'search_email', calls: 2 }], 'R23: the calls already stored are counted, once');
  const s3 = new SqliteStore(old);
  t.after(() => s3.close());
  assert.deepEqual(await s3.toolUsage(5), [{ tool: 'search_email', calls: 2 }], 'opening it again counts nothing twice');
});

test('sqlite: a run an older Keel stored a row per message, call and request loads whole and grows by parts (issue 29)', async (t) => {
  const file = dbFile();
  const run = sampleRun('run-rows', { status: 'running', reason: null, pause: null, owner: null });
  const s1 = new SqliteStore(file);
  await s1.createRun(structuredClone(run));
  await s1.close();
  // The same trace as an older Keel laid it out: its parts become rows of messages, calls and requests.
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(file);
  db.transaction(() => {
    db.prepare('DELETE FROM run_events WHERE run_id = ?').run(run.id);
    for (const [seq, m] of run.messages.entries()) db.prepare('INSERT INTO messages VALUES (?, ?, ?)').run(run.id, seq, JSON.stringify(m));
    for (let seq = 0; seq < run.steps.length; seq++) {
      db.prepare('INSERT INTO calls VALUES (?, ?, ?)').run(run.id, seq, JSON.stringify(stepRow(run, seq)));
    }
    run.requests.forEach(({ system, tools, ...meta }, seq) => {
      const menu = toolsBlob(tools);
      db.prepare('INSERT OR IGNORE INTO blobs VALUES (?, ?), (?, ?)').run(contentHash(system), system, menu.hash, menu.body);
      db.prepare('INSERT INTO requests VALUES (?, ?, ?, ?, ?, ?)').run(
        run.id,
        seq,
        meta.step,
        contentHash(system),
        menu.hash,
        JSON.stringify(meta),
      );
    });
  })();
  db.close();
  const s2 = new SqliteStore(file);
  t.after(() => s2.close());
  assert.deepEqual(await s2.loadRun(run.id), run, 'the rows load as the run');
  // Carried on by this Keel (a store that has not loaded it counts the rows): the next step is a part after them.
  const grown = structuredClone(run);
  grown.messages.push({ role: 'assistant', content: 'done', tool_calls: [] });
  grown.requests.push({ ...structuredClone(run.requests[1]), step: 3 });
  grown.model_calls = 3;
  const s3 = new SqliteStore(file);
  t.after(() => s3.close());
  await s3.saveRun(structuredClone(grown));
  assert.deepEqual(await s2.loadRun(run.id), grown, 'rows, then parts');
  // And a store that has not loaded it since reads the lengths from the last part.
  grown.messages.push({ role: 'user', content: 'and then?' });
  grown.steps.push({ ...structuredClone(run.steps[0]), call_id: 'c9', step: 3 });
  const s4 = new SqliteStore(file);
  t.after(() => s4.close());
  await s4.saveRun(structuredClone(grown));
  assert.deepEqual(await s2.loadRun(run.id), grown, 'rows, then two parts');
});

test('sqlite: R23 a run counts its calls that ran when it pauses or ends, each once, whichever process saves it (issue 29: no write at every step)', async (t) => {
  const file = dbFile();
  const a = new SqliteStore(file);
  t.after(() => a.close());
  const run = sampleRun('run-count', { status: 'running', reason: null, pause: null, owner: null });
  await a.createRun(structuredClone(run));
  assert.deepEqual(await a.toolUsage(5), [], 'not while it runs');
  run.steps.push({ ...run.steps[0], call_id: 'c4', tool: 'archive_email' });
  await a.saveRun(structuredClone(run));
  assert.deepEqual(await a.toolUsage(5), [], 'nor at its next step');
  // Another process carries it on and pauses it: every call that ran so far counts, once.
  const b = new SqliteStore(file);
  t.after(() => b.close());
  const loaded = (await b.loadRun(run.id)) as RunState;
  Object.assign(loaded, { status: 'paused', reason: 'awaiting_user_input' });
  await b.saveRun(structuredClone(loaded));
  await b.saveRun(structuredClone(loaded));
  const counted = [
    { tool: 'archive_email', calls: 1 },
    { tool: 'search_email', calls: 1 },
  ];
  assert.deepEqual(await a.toolUsage(5), counted);
  // Running again (a third store that never loaded it), then ending: only the calls since count.
  const c = new SqliteStore(file);
  t.after(() => c.close());
  Object.assign(loaded, { status: 'running', reason: null });
  loaded.steps.push({ ...run.steps[0], call_id: 'c5', tool: 'archive_email' });
  await c.saveRun(structuredClone(loaded));
  assert.deepEqual(await a.toolUsage(5), counted);
  Object.assign(loaded, { status: 'done', reason: 'final_answer' });
  await c.saveRun(structuredClone(loaded));
  assert.deepEqual(await a.toolUsage(5), [
    { tool: 'archive_email', calls: 2 },
    { tool: 'search_email', calls: 1 },
  ]);
});

test('sqlite: issue 29 a run held running is written field by field as it changes; another store reads every change', async (t) => {
  const file = dbFile();
  const a = new SqliteStore(file);
  t.after(() => a.close());
  const run = sampleRun('run-fields', { status: 'running', reason: null, pause: null, owner: 'host-a:1:1', contract: null });
  await a.createRun(structuredClone(run));
  const b = new SqliteStore(file);
  t.after(() => b.close());
  const changes: ((r: RunState) => void)[] = [
    (r) => r.notes.push('a note'),
    (r) => r.effects.push({ call_id: 'c9', tool: 'archive_email', effect: 'write', args: { id: 'm9' } }),
    (r) => r.warnings.push('a warning'),
    (r) => (r.model_calls += 1),
    (r) => (r.contract = { kind: 'plan', summary: 'Sort the inbox', steps: ['sort'] }),
    (r) => (r.mode = 'plan'),
    (r) => Object.assign(r, { status: 'done', reason: 'final_answer', answer: 'Sorted.' }),
  ];
  for (const change of changes) {
    change(run);
    run.updated_at = at(changes.indexOf(change) + 5);
    await a.saveRun(structuredClone(run));
    assert.deepEqual(await b.loadRun(run.id), run, String(change));
  }
});

test('sqlite file: issue 49 runs saved in one tick share a commit; each save resolves only once another store reads it, and one refused rolls back alone', async (t) => {
  const file = dbFile();
  const a = new SqliteStore(file);
  const b = new SqliteStore(file);
  t.after(async () => {
    await a.close();
    await b.close();
  });
  // Every COMMIT of a's connection, counted (a transaction of its own, or the journal group's).
  const db = (a as unknown as { st: { db: object; stmt: { commit: object } } }).st;
  const proto = Object.getPrototypeOf(db.stmt.commit) as { run: (...args: unknown[]) => unknown };
  const run0 = proto.run;
  let commits = 0;
  proto.run = function (this: { source: string; database: object }, ...args: unknown[]) {
    if (this.source === 'COMMIT' && this.database === db.db) commits++;
    return run0.apply(this, args);
  };
  t.after(() => {
    proto.run = run0;
  });
  const ids = ['run-g0', 'run-g1', 'run-g2', 'run-g3', 'run-g4'];
  const runs = ids.map((id) => sampleRun(id, { status: 'running', reason: null, pause: null, owner: 'host-a:1' }));
  await Promise.all(runs.map((r) => a.createRun(structuredClone(r))));
  assert.ok(commits <= 2, `five runs created in one tick: ${commits} commits (the first alone, the others together)`);
  // Another process takes run-g2 over: a's save of it is refused, the others of the same tick are kept.
  assert.equal(await b.takeOver('run-g2', runs[2].pause_seq, 'host-a:1', 'host-b:2', true), true);
  commits = 0;
  const saved = runs.map((r) => {
    const next = structuredClone(r);
    next.messages.push({ role: 'user', content: `more for ${r.id}` });
    Object.assign(next, { model_calls: 3, updated_at: at(7) });
    return next;
  });
  const outcomes = await Promise.allSettled(
    saved.map((r) =>
      a
        .saveRun(r)
        .then(async () => assert.deepEqual((await b.loadRun(r.id))?.messages, r.messages, `${r.id} is in the file once its save resolves`)),
    ),
  );
  assert.ok(commits <= 2, `five saves in one tick: ${commits} commits`);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
  );
  assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /taken over/);
  assert.deepEqual((await b.loadRun('run-g2'))?.messages, runs[2].messages, 'the refused save left nothing');
  assert.equal((await b.loadRun('run-g2'))?.owner, 'host-b:2');
});

test("sqlite: issue 49 the store loads better-sqlite3's addon from where its build puts it, without the bindings search", () => {
  const found = nativeBinding(createRequire(import.meta.url));
  assert.ok(found.nativeBinding?.endsWith('better_sqlite3.node'), JSON.stringify(found));
  assert.ok(existsSync(found.nativeBinding ?? ''));
});

test('sqlite file: S4 two processes bringing one file up to date together do not both add a column (the second waits and finds it added)', async () => {
  // An older Keel's file: a column missing and no stamp, so whoever opens it migrates it.
  const file = dbFile();
  await new SqliteStore(file).close();
  const Database = (await import('better-sqlite3')).default;
  const raw = new Database(file);
  raw.exec('ALTER TABLE runs DROP COLUMN warnings; PRAGMA user_version = 0;');
  // Another process is migrating it: it holds the write lock while a process of ours opens the file.
  raw.exec('BEGIN IMMEDIATE');
  const code = `import { SqliteStore } from ${JSON.stringify(join(ROOT, 'src/store/sqlite.ts'))};
    console.log('opening');
    const s = new SqliteStore(${JSON.stringify(file)});
    console.log(JSON.stringify((await s.listRuns({ limit: 1 })).length));
    await s.close();`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (err += d));
  const ended = new Promise<number | null>((resolve) => child.on('close', resolve));
  for (let i = 0; i < 200 && !out.includes('opening'); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(out.includes('opening'), err);
  // Long enough for it to look at the columns and find the one missing (its open waits up to 5 s).
  await new Promise((r) => setTimeout(r, 700));
  raw.exec("ALTER TABLE runs ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]'; COMMIT");
  raw.close();
  assert.equal(await ended, 0, err);
  assert.doesNotMatch(err, /duplicate column/);
  assert.equal(out.trim().split('\n').at(-1), '0');
});
