import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { calls, FIXTURES, json, KEEL_BIN, keel, script, tempHome } from '../support/helpers.js';

const TRASH_SCRIPT = [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1', 'm2'] } }] }, { text: 'Handled.' }];
const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

interface Out {
  run_id: string;
  status: string;
  reason: string;
  answer: string;
  approval?: { id: string; card: { items: { lines: string[]; undo: string }[] } };
  steps: { call_id: string; outcome: string; result: string }[];
}

test('A3/A5 CLI: approvals list, approve prints the continuation, approve again is a conflict, unknown id is not found', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, TRASH_SCRIPT);
  const r = json<Out>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'trash the promotions'], env));
  assert.equal(r.reason, 'awaiting_approval');
  const id = r.approval!.id;
  const list = await keel(['approvals', 'list', '--status', 'pending', '--json'], env);
  const rows = json<{ id: string; status: string; run_id: string }[]>(list);
  assert.deepEqual(
    rows.map((a) => [a.id, a.status, a.run_id]),
    [[id, 'pending', r.run_id]],
  );
  const text = await keel(['approvals', 'list'], env);
  assert.match(text.stdout, /Your weekly deals/);
  assert.match(text.stdout, /Reversible with restore_email/);

  const approved = await keel(['approvals', 'approve', id, '--reason', 'clean up'], env);
  assert.equal(approved.code, 0, approved.stderr);
  // Progress on stderr (the answer alone on stdout, S1).
  assert.match(approved.stderr, /Approval apr_\w+: approved/);
  assert.match(approved.stderr, /trash_email\(.*\)\s+✓/);
  assert.equal(approved.stdout, 'Handled.\n');
  assert.equal(trashed(home).length, 1);

  const twice = await keel(['approvals', 'approve', id], env);
  assert.equal(twice.code, 2);
  assert.match(twice.stderr, /already approved/);
  const unknown = await keel(['approvals', 'reject', 'apr_missing'], env);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /no approval apr_missing/);
  assert.equal(trashed(home).length, 1);
});

test('A2 crash safety: kill -9 during execution, restart — the call is not re-run and is reported as of unknown outcome', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, TRASH_SCRIPT);
  const r = json<Out>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'trash'], env));
  const child = spawn(process.execPath, [KEEL_BIN, 'approvals', 'approve', r.approval!.id], {
    env: { ...process.env, ...env, KEEL_TEST_HANG_IN_TRASH: '1' },
    stdio: 'ignore',
  });
  const started = join(home, 'trash-started');
  for (let i = 0; i < 200 && !existsSync(started); i++) await new Promise((res) => setTimeout(res, 50));
  assert.ok(existsSync(started), 'the approved call started');
  child.kill('SIGKILL');
  await new Promise((res) => child.on('close', res));
  assert.equal(trashed(home).length, 1);

  const recovered = await keel(['resume', r.run_id, '--json'], env);
  assert.equal(recovered.code, 0, recovered.stderr);
  const out = json<Out>(recovered);
  assert.equal(out.status, 'done');
  const t1 = out.steps.find((s) => s.call_id === 't1')!;
  assert.equal(t1.outcome, 'error');
  assert.match(t1.result, /outcome of trash_email is unknown.*not run again/);
  assert.equal(trashed(home).length, 1, 'not re-run');
});

test('A2 crash safety: a run killed after the approval was answered continues once, from another process', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, TRASH_SCRIPT);
  const r = json<Out>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'trash'], env));
  // The approving process is killed (SIGKILL) while it mounts the plugins to continue the run:
  // the answer is stored, nothing ran.
  const dead = await keel(['approvals', 'approve', r.approval!.id], { ...env, KEEL_TEST_KILL_IN_SETUP: '1' });
  assert.notEqual(dead.code, 0);
  assert.equal(trashed(home).length, 0);
  const [a, b] = await Promise.all([keel(['resume', r.run_id, '--json'], env), keel(['resume', r.run_id, '--json'], env)]);
  assert.deepEqual([a.code, b.code].sort(), [0, 2], a.stderr + b.stderr);
  assert.equal(trashed(home).length, 1, 'exactly once');
});
