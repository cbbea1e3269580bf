/** CLI conventions: `--version`; `keel run -` reads the request from stdin (and refuses an empty one). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { FIXTURES, json, keel, ROOT, script, tempHome } from '../support/helpers.js';

test('keel --version prints the package version on stdout and exits 0', async () => {
  const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
  for (const flag of ['--version', '-V']) {
    const r = await keel([flag]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.trim(), version);
    assert.equal(r.stderr, '');
  }
});

test('keel run - reads the request from stdin; an empty stdin is refused with exit 2', async () => {
  const home = tempHome();
  const model = script(home, [{ text: 'Noted.' }]);
  const r = await keel(
    ['run', '--json', '--model', model, '--plugins', FIXTURES, '-'],
    { KEEL_HOME: home },
    'remember the milk\nand the eggs\n',
  );
  assert.equal(r.code, 0, r.stderr);
  const out = json<{ run_id: string; answer: string }>(r);
  assert.equal(out.answer, 'Noted.');
  const shown = json<{ request: string }>(await keel(['runs', 'show', out.run_id, '--json'], { KEEL_HOME: home }));
  assert.equal(shown.request, 'remember the milk\nand the eggs');
  const empty = await keel(['run', '--model', model, '--plugins', FIXTURES, '-'], { KEEL_HOME: home }, '  \n');
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /stdin was empty/);
});

test("a usage error points to that command's own help, on stderr, with exit 2", async () => {
  const flag = await keel(['run', '--bogus', 'x']);
  assert.equal(flag.code, 2);
  assert.equal(flag.stdout, '');
  assert.match(flag.stderr, /unknown option '--bogus'\n\(keel run --help shows its usage\)/);
  const missing = await keel(['approvals', 'approve']);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /missing required argument 'id'\n\(keel approvals approve --help shows its usage\)/);
  const unknown = await keel(['nope']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /\(keel --help lists the commands\)/);
});

// --- stdout for the answer, stderr for the trace (clig.dev); --quiet; exit codes; colour; run_id

const ESC = '\u001b[';

test('S1: the answer goes to stdout alone; the tool trace and the status line go to stderr', async () => {
  const home = tempHome();
  const model = script(home, [{ tool_calls: [{ name: 'upcoming_dues', args: { within_days: 7 } }] }, { text: 'Two bills are due.' }]);
  const r = await keel(['run', '--model', model, '--plugins', FIXTURES, 'what is due?'], { KEEL_HOME: home });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'Two bills are due.\n');
  assert.match(r.stderr, /→ upcoming_dues\(\{"within_days":7\}\)\s+✓/);
  assert.match(r.stderr, /\(done: final_answer; 2 model calls; run run_\w+\)/);
  // --quiet: the answer only.
  const q = await keel(['run', '-q', '--model', script(home, [{ text: 'Quiet.' }], 'q.yaml'), '--plugins', FIXTURES, 'x'], {
    KEEL_HOME: home,
  });
  assert.equal(q.code, 0, q.stderr);
  assert.equal(q.stdout, 'Quiet.\n');
  assert.equal(q.stderr, '');
});

test('S1: exit codes: 3 for a run paused for the user, 0 once it is answered, 1 for a failed run', async () => {
  const home = tempHome();
  const model = script(home, [{ tool_calls: [{ name: 'ask_user', args: { question: 'Which month?' } }] }, { text: 'March it is.' }]);
  const paused = await keel(['run', '--model', model, '--plugins', FIXTURES, 'sum my bills'], { KEEL_HOME: home });
  assert.equal(paused.code, 3, paused.stderr);
  // What the run waits for is the output; how to answer it is a hint on stderr.
  assert.equal(paused.stdout, '? Which month?\n');
  const runId = /keel resume (run_\w+) --answer/.exec(paused.stderr)?.[1];
  assert.ok(runId, paused.stderr);
  const done = await keel(['resume', runId, '--answer', 'March', '--quiet'], { KEEL_HOME: home });
  assert.equal(done.code, 0, done.stderr);
  assert.equal(done.stdout, 'March it is.\n');
  // A card pauses too: exit 3, the card on stdout.
  const card = await keel(
    [
      'run',
      '--model',
      script(home, [{ tool_calls: [{ name: 'trash_email', args: { ids: ['m1'] } }] }], 'card.yaml'),
      '--plugins',
      FIXTURES,
      'trash email m1',
    ],
    { KEEL_HOME: home },
  );
  assert.equal(card.code, 3, card.stderr);
  assert.match(card.stdout, /trash_email/);
  assert.match(card.stderr, /keel approvals approve apr_\w+/);
  // A script that runs out is a model error: the run failed.
  const failed = await keel(['run', '--model', script(home, [], 'empty.yaml'), '--plugins', FIXTURES, 'x'], { KEEL_HOME: home });
  assert.equal(failed.code, 1, failed.stderr);
});

test('colour: none when piped or with NO_COLOR; on with FORCE_COLOR; never from what a model wrote', async () => {
  const home = tempHome();
  const forged = 'done \ufdd031\ufdd1 not red';
  const model = script(home, [
    { tool_calls: [{ name: 'create_reminder', args: { title: 'plumber' } }] },
    { tool_calls: [{ name: 'ask_user', args: { question: 'Create the reminder?' } }] },
  ]);
  const held = ['run', '--model', model, '--plugins', FIXTURES, 'remind me'];
  const piped = await keel(held, { KEEL_HOME: home });
  assert.equal(piped.code, 3);
  assert.ok(!piped.stdout.includes(ESC) && !piped.stderr.includes(ESC), 'no colour when piped');
  assert.ok(!piped.stderr.includes('\ufdd0'), 'no marker is left in the text');
  const forced = await keel(held, { KEEL_HOME: home, FORCE_COLOR: '1' });
  assert.ok(forced.stderr.includes(`${ESC}33m⏸ held${ESC}0m`), forced.stderr);
  const no = await keel(held, { KEEL_HOME: home, FORCE_COLOR: '1', NO_COLOR: '1' });
  assert.ok(!no.stdout.includes(ESC) && !no.stderr.includes(ESC), 'NO_COLOR wins');
  // A model that writes the marker characters gets them shown as they are, uncoloured.
  const m = await keel(['run', '--model', script(home, [{ text: forged }], 'forged.yaml'), '--plugins', FIXTURES, 'x'], {
    KEEL_HOME: home,
    FORCE_COLOR: '1',
  });
  assert.equal(m.stdout, `${forged}\n`);
  // Statuses in listings are coloured too: FAILED plugins.
  const bad = join(home, 'bad');
  const { mkdirSync, writeFileSync } = await import('node:fs');
  mkdirSync(bad);
  writeFileSync(join(bad, 'plugin.yaml'), 'name: bad\nversion: 1.0.0\nprovides: [tool]\ntools:\n  x:\n    effect: rread\n');
  const check = await keel(['plugins', 'check', bad], { KEEL_HOME: home, FORCE_COLOR: '1' });
  assert.equal(check.code, 1);
  assert.ok(check.stdout.includes(`${ESC}31mFAILED${ESC}0m`), check.stdout);
});

test('S1: a run id is run_id in every JSON the CLI prints', async () => {
  const home = tempHome();
  const model = script(home, [{ tool_calls: [{ name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Left it.' }]);
  const run = json<{ run_id: string; approval: { id: string } }>(
    await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'trash email m1'], { KEEL_HOME: home }),
  );
  assert.match(run.run_id, /^run_/);
  const list = json<Record<string, unknown>[]>(await keel(['runs', 'list', '--json'], { KEEL_HOME: home }));
  assert.deepEqual(
    list.map((r) => [r.run_id, r.id]),
    [[run.run_id, undefined]],
  );
  const show = json<Record<string, unknown>>(await keel(['runs', 'show', run.run_id, '--json'], { KEEL_HOME: home }));
  assert.equal(show.run_id, run.run_id);
  assert.equal(show.id, undefined);
  const approvals = json<Record<string, unknown>[]>(await keel(['approvals', 'list', '--json'], { KEEL_HOME: home }));
  assert.equal(approvals[0].run_id, run.run_id);
  const rejected = await keel(['approvals', 'reject', run.approval.id, '--json'], { KEEL_HOME: home });
  assert.equal(json<{ run_id: string }>(rejected).run_id, run.run_id);
});

test('R8: a manifest error in JSON carries file, line and column as fields', async () => {
  const home = tempHome();
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const dir = join(home, 'todo');
  mkdirSync(dir);
  writeFileSync(
    join(dir, 'plugin.yaml'),
    'name: todo\nversion: 1.0.0\nprovides: [tool]\ntools:\n  add_item:\n    effect: write\n    confrim: once\n',
  );
  const r = await keel(['plugins', 'check', dir, '--json'], { KEEL_HOME: home });
  assert.equal(r.code, 1);
  const out = json<{ plugins: { failures: { file: string; line: number; column: number; field?: string; message: string }[] }[] }>(r);
  const f = out.plugins[0].failures[0];
  assert.equal(f.file, join(dir, 'plugin.yaml'));
  assert.equal(f.line, 7);
  assert.equal(f.column, 5);
  assert.equal(f.field, 'confrim');
  assert.match(f.message, /plugin\.yaml:7:5: .*confirm/);
});

test('every command and subcommand has a description and an Examples section, with no internal notes in its help', async () => {
  const { main } = await import('../../src/cli/main.js');
  const help = async (path: string[]) => {
    let out = '';
    const code = await main(['node', 'keel', ...path, '--help'], { out: (s) => (out += s), err: (s) => (out += s), env: {} });
    assert.equal(code, 0, path.join(' '));
    return out;
  };
  const commandsOf = (text: string) =>
    [...(text.split('\nCommands:\n')[1] ?? '').matchAll(/^ {2}([a-z][\w-]*)/gm)].map((m) => m[1]).filter((c) => c !== 'help');
  const seen: string[] = [];
  const walk = async (path: string[]) => {
    const text = await help(path);
    const name = ['keel', ...path].join(' ');
    seen.push(name);
    assert.match(text, /\nExamples:\n {2}(# .+\n {2})?\$ keel/, `${name} --help has examples`);
    assert.doesNotMatch(text, /\(default: (\[\]|\{\})\)/, `${name}: no empty defaults that contradict the description`);
    assert.doesNotMatch(text, /\b[MRACPS]\d{1,2}\b/, `${name}: no rule ids in help`);
    const subs = commandsOf(text);
    for (const sub of subs) {
      const line = new RegExp(`^ {2}${sub}\\b.* {2,}\\S`, 'm');
      assert.match(text, line, `${name} describes ${sub}`);
      await walk([...path, sub]);
    }
  };
  await walk([]);
  for (const c of ['keel run', 'keel runs show', 'keel tokens revoke', 'keel plugins init', 'keel mcp serve', 'keel data reset'])
    assert.ok(seen.includes(c), `${c} was walked (${seen.join(', ')})`);
});
