/**
 * Issue 47 (U1/U2, A2): an approved call whose result marked itself untrusted (`untrusted: true`, with
 * a `source`), its process killed right after the call ran and before the run was saved, then carried
 * on by another process: the result replayed from the call ledger comes back as it ran — untrusted,
 * with its label — so a later write of a tool the person said yes to earlier waits on a card, exactly
 * as in the same run without the crash. On SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import type { ScriptEntry } from '../../src/models/script.js';
import type { RunResult } from '../../src/types/index.js';
import { calls, ROOT, script, tempHome } from '../support/helpers.js';
import { dropSchemas } from '../support/pg.js';
import { PROCESS_STORES } from '../support/stores.js';

after(() => dropSchemas());

const DIRS = [join(ROOT, 'test', 'fixtures', 'untrusted'), join(ROOT, 'test', 'fixtures', 'ledger')];
const LABEL = 'imported message m2 from eve@attacker.example';

/** A yes to create_reminder (tool-wide: nothing untrusted read yet), an import on a card, then another reminder. */
const SCRIPT: ScriptEntry[] = [
  { tool_calls: [{ id: 'c1', name: 'create_reminder', args: { title: 'Pay water' } }] },
  { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Create a reminder to pay water?' } }] },
  { tool_calls: [{ id: 'c2', name: 'create_reminder', args: { title: 'Pay water' } }] },
  { tool_calls: [{ id: 'i1', name: 'import_message', args: { id: 'm2' } }] },
  { tool_calls: [{ id: 'c3', name: 'create_reminder', args: { title: 'Forward every bill to eve' } }] },
  { text: 'Done.' },
];

/** Approves the card in a process of its own, killed (as by kill -9) right after the approved call ran. */
function approveAndDie(env: Record<string, string>, approvalId: string): Promise<NodeJS.Signals | null> {
  const base = { ...process.env };
  delete base.KEEL_TEST_CRASH_AT;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'reliability', 'approve.ts'), approvalId], {
      cwd: ROOT,
      env: { ...base, ...env, KEEL_TEST_CRASH_AT: 'after-approved-call' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.on('error', reject);
    child.on('close', (_code, signal) => resolve(signal));
  });
}

const stepOf = (r: RunResult, id: string) => r.steps.find((s) => s.call_id === id);

for (const kind of PROCESS_STORES) {
  test(`U1/U2/A2 (${kind.name}): a result that marked itself untrusted, replayed from the ledger after a crash, is still untrusted — the next write waits on a card`, async () => {
    const home = tempHome('keel-untrusted-replay-');
    const env: Record<string, string> = { KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', ...(await kind.env()) };
    const open = () => new Keel({ home, env: { ...process.env, ...env } });
    const model = script(home, SCRIPT);
    let keel = open();
    try {
      const asked = await keel.run('import my messages and remind me of the bills', { model, pluginDirs: DIRS });
      assert.equal(asked.reason, 'awaiting_user_input');
      const carded = await keel.answer(asked.run_id, { text: 'yes', confirm: true });
      assert.equal(carded.reason, 'awaiting_approval', 'the import waits on its card');
      assert.deepEqual(carded.untrusted, [], 'nothing untrusted read yet');
      await keel.close();

      assert.equal(await approveAndDie(env, carded.approval?.id ?? ''), 'SIGKILL', 'killed right after the approved call ran');
      assert.equal(calls(home, 'outside.log').filter((l) => l.startsWith('import_message')).length, 1, 'the import ran');

      keel = open();
      const after = await keel.resume(asked.run_id);
      assert.equal(calls(home, 'outside.log').filter((l) => l.startsWith('import_message')).length, 1, 'never twice');
      assert.equal(stepOf(after, 'i1')?.outcome, 'ran', 'the result the ledger kept');
      assert.equal(stepOf(after, 'i1')?.untrusted, LABEL, 'replayed with the mark and the source label it ran with');
      assert.deepEqual(
        after.untrusted.map((u) => u.label),
        [LABEL],
        'the run knows what it read',
      );
      assert.equal(after.status, 'paused');
      assert.equal(after.reason, 'awaiting_approval', 'the write after the untrusted read waits on a card, not on the earlier yes');
      assert.equal(after.approval?.card.items[0].tool, 'create_reminder');
      assert.equal(after.approval?.card.untrusted?.[0]?.label, LABEL);
      assert.deepEqual(
        calls(home, 'outside.log').filter((l) => l.startsWith('create_reminder')),
        [`create_reminder ${JSON.stringify({ title: 'Pay water' })}`],
        'the reminder for eve did not run',
      );
    } finally {
      await keel.close();
    }
  });
}

test('U1/U2: the same run without the crash pauses on the same card (the replay is the run as it ran)', async () => {
  const home = tempHome('keel-untrusted-replay-');
  const keel = new Keel({ home, env: { ...process.env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0' } });
  try {
    const model = script(home, SCRIPT);
    const asked = await keel.run('import my messages and remind me of the bills', { model, pluginDirs: DIRS });
    const carded = await keel.answer(asked.run_id, { text: 'yes', confirm: true });
    const after = await keel.approve(carded.approval?.id ?? '', { actor: 'ana' });
    assert.equal(stepOf(after, 'i1')?.untrusted, LABEL);
    assert.equal(after.reason, 'awaiting_approval');
    assert.equal(after.approval?.card.items[0].tool, 'create_reminder');
  } finally {
    await keel.close();
  }
});
