import assert from 'node:assert/strict';
import { test } from 'node:test';
import { calls, FIXTURES, json, keel, script, tempHome } from '../support/helpers.js';

const R1 = { title: 'Pay Wingtip Bank', due: '2026-09-30' };
const R2 = { title: 'Pay Contoso Energy', due: '2026-10-02' };
const DUES_SCRIPT = [
  { tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: { within_days: 15 } }] },
  { tool_calls: [{ id: 'c2', name: 'create_reminder', args: R1 }] },
  { tool_calls: [{ id: 'c3', name: 'ask_user', args: { question: 'Create reminders for Wingtip Bank and Contoso Energy?' } }] },
  { tool_calls: [{ id: 'c4', name: 'create_reminder', args: R1 }] },
  { tool_calls: [{ id: 'c5', name: 'create_reminder', args: R2 }] },
  { text: 'Both reminders are set.' },
];

const S1_FIELDS = ['run_id', 'status', 'reason', 'answer', 'model_calls', 'effects', 'requests', 'steps'];

test('S1/R17/R18: keel run --json pauses; keel resume in a new process finishes; a second resume is refused', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, DUES_SCRIPT);
  const run = await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'Find my dues and set a reminder for each'], env);
  assert.equal(run.code, 3, run.stderr); // paused for the user (S1)
  const r1 = json<Record<string, unknown> & { run_id: string; steps: { outcome: string }[]; requests: { tools: unknown[] }[] }>(run);
  for (const f of S1_FIELDS) assert.ok(f in r1, `S1 field ${f}`);
  assert.equal(r1.status, 'paused');
  assert.equal(r1.reason, 'awaiting_user_input');
  assert.equal(r1.model_calls, 3);
  assert.equal(r1.question, 'Create reminders for Wingtip Bank and Contoso Energy?');
  assert.deepEqual(
    r1.steps.map((s) => s.outcome),
    ['ran', 'held_for_confirmation'],
  );
  assert.equal(calls(home, 'reminders.jsonl').length, 0);

  const resumed = await keel(['resume', r1.run_id, '--yes', '--json'], env);
  assert.equal(resumed.code, 0, resumed.stderr);
  const r2 = json<{ status: string; model_calls: number; answer: string; effects: { call_id: string }[] }>(resumed);
  assert.equal(r2.status, 'done');
  assert.equal(r2.model_calls, 6);
  assert.equal(r2.answer, 'Both reminders are set.');
  assert.deepEqual(
    r2.effects.map((e) => e.call_id),
    ['c4', 'c5'],
  );
  assert.deepEqual(
    calls(home, 'reminders.jsonl').map((l) => JSON.parse(l)),
    [R1, R2],
  );

  const again = await keel(['resume', r1.run_id, '--yes'], env);
  assert.equal(again.code, 2);
  assert.match(again.stderr, /not waiting for an answer/);
  assert.equal(calls(home, 'reminders.jsonl').length, 2, 'nothing lost or redone');

  const show = await keel(['runs', 'show', r1.run_id, '--json'], env);
  assert.equal(show.code, 0);
  const state = json<{ messages: { role: string }[]; status: string }>(show);
  assert.equal(state.status, 'done');
  assert.equal(state.messages.filter((m) => m.role === 'tool').length, 5);
  const list = await keel(['runs', 'list'], env);
  assert.match(list.stdout, new RegExp(`${r1.run_id}\\s+done`));
});

test('S1: without --json the CLI prints a readable transcript, the question, the run id and how to resume', async () => {
  const home = tempHome();
  const model = script(home, DUES_SCRIPT);
  const r = await keel(['run', '--model', model, '--plugins', FIXTURES, 'Find my dues and set a reminder for each'], { KEEL_HOME: home });
  assert.equal(r.code, 3, r.stderr);
  // The trace and how to go on on stderr; what the run waits for on stdout.
  assert.match(r.stderr, /upcoming_dues\(\{"within_days":15\}\)\s+✓/);
  assert.match(r.stderr, /create_reminder\(.*\)\s+⏸ held/);
  assert.match(r.stdout, /\? Create reminders for Wingtip Bank and Contoso Energy\?/);
  assert.match(r.stdout, /Held until you confirm \(create_reminder\)/);
  assert.match(r.stderr, /keel resume run_\w+ --yes {4}or {4}keel resume run_\w+ --no/);
});

test('R18: two processes resuming the same pause at once: exactly one continues', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const model = script(home, DUES_SCRIPT);
  const r1 = json<{ run_id: string }>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'dues and reminders'], env));
  const both = await Promise.all([
    keel(['resume', r1.run_id, '--yes', '--json'], env),
    keel(['resume', r1.run_id, '--yes', '--json'], env),
  ]);
  const codes = both.map((b) => b.code).sort();
  assert.deepEqual(codes, [0, 2], both.map((b) => b.stderr).join('\n'));
  assert.match(both.find((b) => b.code === 2)!.stderr, /already resumed|not waiting/);
  assert.equal(calls(home, 'reminders.jsonl').length, 2);
});

test('user errors: unknown run id, bad flag, no model, missing script, unknown provider — clear message, exit 2', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home, KEEL_MODEL: '' };
  const unknown = await keel(['resume', 'run_nope', '--answer', 'x'], env);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /no run run_nope in the store/);
  const show = await keel(['runs', 'show', 'run_nope'], env);
  assert.equal(show.code, 2);
  const flag = await keel(['run', '--bogus', 'hi'], env);
  assert.equal(flag.code, 2);
  assert.match(flag.stderr, /unknown option '--bogus'/);
  const mode = await keel(['run', '--mode', 'yolo', 'hi'], env);
  assert.equal(mode.code, 2);
  assert.match(mode.stderr, /yolo.*(agent|Allowed choices)/);
  const noModel = await keel(['run', '--plugins', FIXTURES, 'hi'], env);
  assert.equal(noModel.code, 2);
  assert.match(noModel.stderr, /no model given: pass --model SPEC or set KEEL_MODEL/);
  const missing = await keel(['run', '--model', `script:${home}/nope.yaml`, '--plugins', FIXTURES, 'hi'], env);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read script .*nope\.yaml: no such file/);
  const provider = await keel(['run', '--model', 'acme:big', 'hi'], env);
  assert.equal(provider.code, 2);
  assert.match(provider.stderr, /unknown model provider "acme"/);
  const noDir = await keel(['run', '--model', 'script:x', '--plugins', `${home}/nowhere`, 'hi'], env);
  assert.equal(noDir.code, 2);
  assert.match(noDir.stderr, /plugin folder not found/);
});

test('S1: a failed run exits non-zero and its JSON still says why', async () => {
  const home = tempHome();
  const model = script(home, [{ tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: {} }] }]);
  const r = await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'dues'], { KEEL_HOME: home });
  assert.equal(r.code, 1);
  const out = json<{ status: string; reason: string }>(r);
  assert.equal(out.status, 'failed');
  assert.equal(out.reason, 'model_error');
});
