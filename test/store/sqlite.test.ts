/** S4: the SQLite store passes the store conformance suite, on a file and in memory. */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { RunState } from '../../src/types/index.js';
import { tempHome } from '../support/helpers.js';
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
  const rows = raw.prepare('SELECT body FROM calls WHERE run_id = ?').all(run.id) as { body: string }[];
  const messages = raw.prepare('SELECT body FROM messages WHERE run_id = ?').all(run.id) as { body: string }[];
  raw.close();
  assert.equal(rows.filter((r) => r.body.includes(big)).length, 0, 'not in the call records');
  assert.equal(messages.filter((r) => r.body.includes(big)).length, 1, 'once, in its tool message');

  // An older file: no warnings column, no consent_writes column, no tool counts.
  const old = dbFile();
  const s1 = new SqliteStore(old);
  await s1.createRun(sampleRun('run-old'));
  await s1.createRun(sampleRun('run-old-2'));
  await s1.close();
  const db = new Database(old);
  db.exec('ALTER TABLE runs DROP COLUMN warnings; ALTER TABLE approvals DROP COLUMN consent_writes; DROP TABLE tool_usage;');
  db.close();
  const s2 = new SqliteStore(old);
  t.after(() => s2.close());
  assert.deepEqual((await s2.loadRun('run-old'))?.warnings, []);
  assert.deepEqual(await s2.toolUsage(5), [{ tool: 'search_email', calls: 2 }], 'R23: the calls already stored are counted, once');
  const s3 = new SqliteStore(old);
  t.after(() => s3.close());
  assert.deepEqual(await s3.toolUsage(5), [{ tool: 'search_email', calls: 2 }], 'opening it again counts nothing twice');
});
