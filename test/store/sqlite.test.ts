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
