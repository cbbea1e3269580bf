/**
 * The human in the loop, driven through the real CLI as a user would: a confirmation is a decision
 * (R16), no run is ever wedged (Ctrl-C, kill -9, cancel), nothing fails silently, runs do not depend
 * on the folder they started in, the library shuts down, settings mistakes are one clear line, and
 * the audit names a person.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite.js';
import { calls, FIXTURES, json, KEEL_BIN, keel, ROOT, script, tempHome } from '../support/helpers.js';

const R1 = { title: 'Pay Wingtip Bank', due: '2026-09-30' };
const R2 = { title: 'Pay Contoso Energy', due: '2026-10-02' };
const QUESTION = 'Create reminders for Wingtip Bank and Contoso Energy?';
const DUES_SCRIPT = [
  { tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: { within_days: 15 } }] },
  { tool_calls: [{ id: 'c2', name: 'create_reminder', args: R1 }] },
  { tool_calls: [{ id: 'c3', name: 'ask_user', args: { question: QUESTION } }] },
  { tool_calls: [{ id: 'c4', name: 'create_reminder', args: R1 }] },
  { tool_calls: [{ id: 'c5', name: 'create_reminder', args: R2 }] },
  { text: 'Both reminders are set.' },
];

interface Out {
  run_id: string;
  status: string;
  reason: string;
  answer: string;
  question?: string;
  confirm?: { tools: string[]; items: { call_id: string; tool: string }[] };
  approval?: { id: string; card: { offers_write_consent?: boolean } };
  model_calls: number;
  warnings: string[];
  effects: { call_id: string }[];
  steps: { call_id: string; tool: string; outcome: string; result: string }[];
}

const reminders = (home: string) => calls(home, 'reminders.jsonl');
const step = (r: Out, id: string) => r.steps.find((s) => s.call_id === id);

async function pausedOnConfirmation(entries: unknown[] = DUES_SCRIPT) {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, entries as never);
  const r = json<Out>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'dues, then a reminder for each'], env));
  assert.equal(r.reason, 'awaiting_user_input');
  assert.deepEqual(r.confirm?.tools, ['create_reminder']);
  assert.deepEqual(
    r.confirm?.items.map((i) => i.call_id),
    ['c2'],
  );
  return { home, env, r };
}

test('R16: "no" to a confirmation leaves the write unrun and tells the model the user declined', async () => {
  const { home, env, r } = await pausedOnConfirmation([
    ...DUES_SCRIPT.slice(0, 3),
    { tool_calls: [{ id: 'c4', name: 'create_reminder', args: R1 }] },
    { tool_calls: [{ id: 'c5', name: 'create_reminder', args: R2 }] },
    { text: 'OK, I created nothing.' },
    { text: 'OK, I created nothing.' },
  ]);
  const no = await keel(['resume', r.run_id, '--no', '--answer', "No, don't add anything", '--json'], env);
  assert.equal(no.code, 3, no.stderr);
  const out = json<Out>(no);
  // Issue 47: the model answered with another call of the tool held: the core asks about that call.
  assert.equal(out.status, 'paused');
  assert.deepEqual(
    out.confirm?.items.map((i) => i.call_id),
    ['c5'],
  );
  assert.match(
    step(out, 'c3')?.result ?? '',
    /^The user declined: do not run create_reminder; nothing was written\. They said: No, don't add anything/,
  );
  // U5: the very call the user refused is refused at once, never asked again.
  assert.equal(step(out, 'c4')?.outcome, 'rejected', 'the refused call itself');
  assert.match(step(out, 'c4')?.result ?? '', /the user declined this exact create_reminder call earlier in this run/);
  assert.equal(step(out, 'c5')?.outcome, 'held_for_confirmation', 'another call of the tool: still unconsented after the no');
  assert.match(step(out, 'c5')?.result ?? '', /the user declined create_reminder earlier in this run/);
  const again = await keel(['resume', r.run_id, '--no', '--json'], env);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(json<Out>(again).status, 'done');
  assert.deepEqual(reminders(home), []);
  assert.deepEqual(json<Out>(again).effects, []);
});

test('R16: --yes runs the held write, and the fan-out after it', async () => {
  const { home, env, r } = await pausedOnConfirmation();
  const yes = await keel(['resume', r.run_id, '--yes', '--json'], env);
  assert.equal(yes.code, 0, yes.stderr);
  const out = json<Out>(yes);
  assert.equal(out.status, 'done');
  assert.equal(step(out, 'c3')?.result, 'The user confirmed: go ahead with create_reminder.');
  assert.equal(reminders(home).length, 2);
});

test('R16: a free-text answer to a confirmation is refused without a tty (exit 2), and the question stays open', async () => {
  const { home, env, r } = await pausedOnConfirmation();
  const text = await keel(['resume', r.run_id, '--answer', "No, don't add anything"], env);
  assert.equal(text.code, 2);
  assert.match(text.stderr, /asks the user to confirm create_reminder: answer with --yes or --no/);
  assert.equal(reminders(home).length, 0, 'nothing ran');
  const both = await keel(['resume', r.run_id, '--yes', '--no'], env);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /contradict/);
  const later = await keel(['resume', r.run_id, '--yes', '--json'], env);
  assert.equal(later.code, 0, 'the pause was not used up by the refused answers');
  assert.equal(reminders(home).length, 2);
});

const PLAN_SCRIPT = [
  { tool_calls: [{ id: 'p1', name: 'submit_plan', args: { summary: 'two reminders', steps: ['Create both reminders'] } }] },
  { tool_calls: [{ id: 'w1', name: 'create_reminder', args: R1 }] },
  { tool_calls: [{ id: 'w2', name: 'create_reminder', args: R2 }] },
  { text: 'Both reminders are set.' },
];

test('R16/C1: a plan approved with its writes asks once (the card); approved without, its write is still confirmed', async () => {
  for (const withWrites of [true, false]) {
    const home = tempHome();
    const env = { KEEL_HOME: home };
    const model = script(home, PLAN_SCRIPT as never);
    const r = json<Out>(
      await keel(['run', '--json', '--mode', 'plan', '--model', model, '--plugins', FIXTURES, 'plan the reminders'], env),
    );
    assert.equal(r.reason, 'awaiting_approval');
    assert.equal(r.approval?.card.offers_write_consent, true);
    const args = ['approvals', 'approve', r.approval?.id ?? '', '--json', ...(withWrites ? ['--allow-writes'] : [])];
    const out = json<Out>(await keel(args, env));
    if (withWrites) {
      assert.equal(out.status, 'done', out.answer);
      assert.deepEqual(
        out.steps.filter((s) => s.tool === 'create_reminder').map((s) => s.outcome),
        ['ran', 'ran'],
      );
      assert.equal(reminders(home).length, 2);
    } else {
      // Issue 47: the model then claimed "Both reminders are set." without asking: the core asks about both held calls.
      assert.equal(out.status, 'paused');
      assert.deepEqual(
        out.confirm?.items.map((i) => i.call_id),
        ['w1', 'w2'],
      );
      assert.equal(step(out, 'w1')?.outcome, 'held_for_confirmation', 'approved without its writes: the write still asks first');
      assert.equal(reminders(home).length, 0);
    }
  }
  // --allow-writes belongs to plan and goal cards only.
  const home = tempHome();
  const model = script(home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'ok' }] as never);
  const r = json<Out>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'trash it'], { KEEL_HOME: home }));
  const refused = await keel(['approvals', 'approve', r.approval?.id ?? '', '--allow-writes'], { KEEL_HOME: home });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /is not a plan or a goal/);
});

function start(
  args: string[],
  env: Record<string, string>,
): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string }> } {
  const child = spawn(process.execPath, [KEEL_BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout?.on('data', (d) => (stdout += d));
  const done = new Promise<{ code: number | null; stdout: string }>((res) => child.on('close', (code) => res({ code, stdout })));
  return { child, done };
}

async function until(what: () => boolean, label: string): Promise<void> {
  for (let i = 0; i < 300 && !what(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(what(), true, label);
}

/** Until the run's first step is stored: its second model call (the slow one) is then under way. */
async function waitForFirstStep(home: string): Promise<void> {
  await until(() => existsSync(join(home, 'keel.db')), 'the run started');
  for (let i = 0; i < 300; i++) {
    const store = new SqliteStore(join(home, 'keel.db'));
    const [row] = await store.listRuns({ limit: 1 });
    const run = row ? await store.loadRun(row.id) : undefined;
    await store.close();
    if (run && run.steps.length >= 1) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 300));
}

async function runIdOf(home: string): Promise<string> {
  const store = new SqliteStore(join(home, 'keel.db'));
  const [row] = await store.listRuns({ limit: 1 });
  await store.close();
  return row?.id ?? '';
}

test('no run is wedged: Ctrl-C during a model call leaves a resumable run; keel resume finishes it', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, [
    { tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: { within_days: 15 } }] },
    { delay_ms: 20_000, text: 'too slow' },
  ] as never);
  const { child, done } = start(['run', '--json', '--model', model, '--plugins', FIXTURES, 'what is due?'], env);
  await waitForFirstStep(home);
  child.kill('SIGINT');
  const ended = await done;
  assert.equal(ended.code, 130);
  const out = JSON.parse(ended.stdout) as Out;
  assert.equal(out.status, 'paused');
  assert.equal(out.reason, 'interrupted');
  // R18/P2: the call Ctrl-C cut short gave no reply, so resuming asks again — the scripted model
  // replays its entry (as after kill -9), here made quick as a model answering this time would be.
  script(home, [
    { tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: { within_days: 15 } }] },
    { text: 'Two bills are due.' },
    { text: 'the entry after: skipped' },
  ] as never);
  const resumed = await keel(['resume', out.run_id, '--json'], env);
  assert.equal(resumed.code, 0, resumed.stderr);
  const r2 = json<Out>(resumed);
  assert.equal(r2.status, 'done');
  assert.equal(r2.answer, 'Two bills are due.', 'the interrupted entry is replayed, not skipped');
});

test('no run is wedged: kill -9 while waiting on the model — keel resume takes the run over and finishes it', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, [
    { tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: { within_days: 15 } }] },
    { delay_ms: 20_000, text: 'too slow' },
  ] as never);
  const { child, done } = start(['run', '--json', '--model', model, '--plugins', FIXTURES, 'what is due?'], env);
  await waitForFirstStep(home);
  child.kill('SIGKILL');
  await done;
  const id = await runIdOf(home);
  const shown = json<{ status: string }>(await keel(['runs', 'show', id, '--json'], env));
  assert.equal(shown.status, 'running', 'left running by the dead process');
  // The scripted model's slow entry is replaced, as a model that answers this time would.
  script(home, [{ tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: { within_days: 15 } }] }, { text: 'Two bills are due.' }] as never);
  const resumed = await keel(['resume', id, '--json'], env);
  assert.equal(resumed.code, 0, resumed.stderr);
  const out = json<Out>(resumed);
  assert.equal(out.status, 'done');
  assert.equal(out.answer, 'Two bills are due.');
});

test('no run is wedged: kill -9 inside a write — keel resume reports it as of unknown outcome and never runs it again', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const { r } = await (async () => {
    const model = script(home, DUES_SCRIPT as never);
    return { r: json<Out>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'dues and reminders'], env)) };
  })();
  const { child, done } = start(['resume', r.run_id, '--yes'], { ...env, KEEL_TEST_HANG_IN_REMINDER: '1' });
  await until(() => existsSync(join(home, 'reminder-started')), 'the write started');
  child.kill('SIGKILL');
  await done;
  rmSync(join(home, 'reminder-started'));
  const recovered = await keel(['resume', r.run_id, '--json'], env);
  assert.equal(recovered.code, 0, recovered.stderr);
  const out = json<Out>(recovered);
  assert.equal(step(out, 'c4')?.outcome, 'error');
  assert.match(step(out, 'c4')?.result ?? '', /outcome of create_reminder is unknown.*not run again/);
  assert.equal(out.status, 'done');
  // c4 never wrote (the process died before it appended); c5 ran once after the recovery.
  assert.deepEqual(
    reminders(home).map((l) => JSON.parse(l).title),
    ['Pay Contoso Energy'],
  );
  assert.deepEqual(
    out.effects.map((e) => e.call_id),
    ['c4', 'c5'],
  );
});

test('no run is wedged: kill -9 after the approved call ran — keel resume takes over, reports its result, never runs it twice', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, [
    { tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] },
    { text: 'Trashed it.' },
  ] as never);
  const r = json<Out>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'trash the deal'], env));
  const dead = await keel(['approvals', 'approve', r.approval?.id ?? ''], { ...env, KEEL_TEST_CRASH_AT: 'after-approved-call' });
  assert.notEqual(dead.code, 0, 'killed');
  const trashed = () => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length;
  assert.equal(trashed(), 1);
  const recovered = await keel(['resume', r.run_id, '--json'], env);
  assert.equal(recovered.code, 0, recovered.stderr);
  const out = json<Out>(recovered);
  assert.equal(out.status, 'done');
  assert.equal(step(out, 't1')?.outcome, 'ran', 'the result the ledger kept');
  assert.match(step(out, 't1')?.result ?? '', /Moved 1 email\(s\) to Trash/);
  assert.equal(trashed(), 1, 'never twice');
});

test('keel runs cancel ends a paused run for good: reason kept, its card rejected, audited; a finished run is refused', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'never' }] as never);
  const r = json<Out>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'trash the deal'], env));
  assert.equal(r.reason, 'awaiting_approval');
  const cancelled = await keel(['runs', 'cancel', r.run_id, '--reason', 'changed my mind', '--as', 'ana', '--json'], env);
  assert.equal(cancelled.code, 0, cancelled.stderr);
  const out = json<Out>(cancelled);
  assert.equal(out.status, 'failed');
  assert.equal(out.reason, 'cancelled');
  assert.match(out.answer, /cancelled by ana: changed my mind/);
  assert.match(step(out, 't1')?.result ?? '', /stopped before the owner answered/);
  const approvals = json<{ id: string; status: string; answered_by: string }[]>(await keel(['approvals', 'list', '--json'], env));
  assert.deepEqual(
    approvals.map((a) => [a.status, a.answered_by]),
    [['rejected', 'ana']],
  );
  const store = new SqliteStore(join(home, 'keel.db'));
  const audit = await store.listAudit(r.run_id);
  await store.close();
  assert.deepEqual(
    audit.map((a) => [a.actor, a.action]),
    [['ana', 'cancel_run']],
  );
  const again = await keel(['runs', 'cancel', r.run_id], env);
  assert.equal(again.code, 2);
  assert.match(again.stderr, /is failed \(cancelled\) already/);
  assert.equal(calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length, 0);
});

test('nothing fails silently: keel run warns on stderr (and in --json) about a degraded plugin, exit code unchanged; a held write the model never asked about is asked by the core', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, [
    { tool_calls: [{ id: 'w1', name: 'create_reminder', args: R1 }] },
    { text: 'I will do it later.' },
    { text: 'Nothing was set.' },
  ] as never);
  const undeclared = join(ROOT, 'test', 'fixtures', 'bad-plugins', 'undeclared');
  const run = await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, '--plugins', undeclared, 'remind me'], env);
  assert.equal(run.code, 3, 'paused: the core asks about the held write (issue 47); warnings do not change the exit code');
  const out = json<Out>(run);
  assert.match(run.stderr, /keel: warning: plugin \S+ is degraded: tool \S+ is registered by plugin \S+ but not declared/);
  assert.ok(
    out.warnings.some((w) => /is degraded/.test(w)),
    out.warnings.join('\n'),
  );
  assert.equal(out.reason, 'awaiting_user_input');
  assert.deepEqual(out.confirm?.tools, ['create_reminder']);
  assert.deepEqual(
    out.confirm?.items.map((i) => i.call_id),
    ['w1'],
  );
  const no = await keel(['resume', out.run_id, '--no', '--json'], env);
  assert.equal(no.code, 0, no.stderr);
  const end = json<Out>(no);
  assert.equal(end.answer, 'Nothing was set.');
  assert.equal(calls(home, 'reminders.jsonl').length, 0);
});

test('runs do not depend on their folder: a relative script started in one folder is approved from another', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const a = join(home, 'a');
  const b = join(home, 'b');
  mkdirSync(a);
  mkdirSync(b);
  script(a, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed.' }] as never, 'chat.yaml');
  const inFolder = (cwd: string, args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((res) => {
      const c = spawn(process.execPath, [KEEL_BIN, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      c.stdout.on('data', (d) => (stdout += d));
      c.stderr.on('data', (d) => (stderr += d));
      c.on('close', (code) => res({ code, stdout, stderr }));
    });
  const r = JSON.parse(
    (await inFolder(a, ['run', '--json', '--model', 'script:chat.yaml', '--plugins', FIXTURES, 'trash it'])).stdout,
  ) as Out;
  assert.equal(r.reason, 'awaiting_approval');
  const approved = await inFolder(b, ['approvals', 'approve', r.approval?.id ?? '', '--json']);
  assert.equal(approved.code, 0, approved.stderr);
  assert.equal((JSON.parse(approved.stdout) as Out).answer, 'Trashed.');

  // The script is gone when the next card is answered: the message says the answer is recorded and how to go on.
  const r2 = JSON.parse(
    (await inFolder(a, ['run', '--json', '--model', 'script:chat.yaml', '--plugins', FIXTURES, 'trash it'])).stdout,
  ) as Out;
  rmSync(join(a, 'chat.yaml'));
  const failed = await inFolder(b, ['approvals', 'approve', r2.approval?.id ?? '']);
  assert.equal(failed.code, 2);
  assert.match(failed.stderr, new RegExp(`approval ${r2.approval?.id} is recorded \\(approved\\).*keel resume ${r2.run_id} --model SPEC`));
  const model = script(b, [
    { tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] },
    { text: 'Trashed again.' },
  ] as never);
  const resumed = await inFolder(b, ['resume', r2.run_id, '--model', model, '--json']);
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.equal((JSON.parse(resumed.stdout) as Out).answer, 'Trashed again.');
});

test('the library shuts down: with an MCP plugin mounted, the process exits by itself after close() (await using); no folders, no plugins', async () => {
  const home = tempHome();
  const file = join(home, 'embed.mts');
  writeFileSync(
    file,
    `import { Keel } from ${JSON.stringify(join(ROOT, 'src', 'index.ts'))};
{
  await using keel = new Keel({ home: ${JSON.stringify(home)} });
  const none = await keel.registry();
  if (none.plugins.length !== 0) throw new Error('a library Keel mounted plugins nobody asked for');
  const reg = await keel.registry([${JSON.stringify(join(ROOT, 'test', 'fixtures', 'mcp', 'memory'))}]);
  console.log(reg.plugins.map((p) => p.name + ':' + p.status).join(','));
}
`,
  );
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: ROOT,
    env: { ...process.env, PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((res) => child.on('close', res));
  clearTimeout(timer);
  assert.equal(code, 0, `the process must exit by itself (stderr: ${stderr})`);
  assert.equal(stdout.trim(), 'memory:loaded');
});

test('settings mistakes are one clear line, exit 2, no stack trace', async () => {
  const home = tempHome();
  writeFileSync(join(home, 'a-file'), 'x');
  const corrupt = tempHome();
  writeFileSync(join(corrupt, 'keel.db'), 'this is not a database');
  const cases: [Record<string, string>, RegExp][] = [
    [{ KEEL_HOME: join(home, 'a-file') }, /a-file is a file, not a folder/],
    [{ KEEL_HOME: corrupt }, /keel\.db is not a readable Keel database .*move it aside/],
    [
      { KEEL_HOME: home, KEEL_STORE: 'postgres://u:secret@127.0.0.1:1/keel' },
      /cannot reach the PostgreSQL store postgres:\/\/\[redacted\]@127\.0\.0\.1:1\/keel/,
    ],
    [{ KEEL_HOME: home, KEEL_STORE: 'postgres://u:secret@/keel' }, /is not a valid PostgreSQL URL/],
    [{ KEEL_HOME: home, KEEL_STORE: 'mysql:thing' }, /KEEL_STORE=mysql:thing is not a store Keel knows/],
  ];
  for (const [env, message] of cases) {
    const r = await keel(['runs', 'list'], env);
    assert.equal(r.code, 2, `${JSON.stringify(env)}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    assert.doesNotMatch(r.stderr, /\n\s+at |secret/);
  }
});

test('A3: the audit names a person: without --as, the OS user answers even when $USER is unset', async () => {
  const home = tempHome();
  const model = script(home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed.' }] as never);
  const r = json<Out>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'trash it'], { KEEL_HOME: home }));
  const env: Record<string, string> = { KEEL_HOME: home, USER: '', LOGNAME: '' };
  const approved = await keel(['approvals', 'approve', r.approval?.id ?? ''], env);
  assert.equal(approved.code, 0, approved.stderr);
  const store = new SqliteStore(join(home, 'keel.db'));
  const audit = await store.listAudit(r.approval?.id);
  await store.close();
  assert.equal(audit[0]?.actor, userInfo().username);
});
