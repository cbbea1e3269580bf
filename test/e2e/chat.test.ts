import assert from 'node:assert/strict';
import { test } from 'node:test';
import { calls, ensureBuilt, FIXTURES, json, KEEL_BIN, keel, ROOT, script, tempHome } from '../support/helpers.js';
import { tmuxServer } from '../support/tmux.js';

const SCRIPT = [
  { tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: { within_days: 10 } }] },
  { tool_calls: [{ id: 'c2', name: 'create_reminder', args: { title: 'Pay water', due_date: '2026-09-23' } }] },
  { tool_calls: [{ id: 'c3', name: 'ask_user', args: { question: "Create 'Pay water' on Sep 23?" } }] },
  { tool_calls: [{ id: 'c4', name: 'create_reminder', args: { title: 'Pay water', due_date: '2026-09-23' } }] },
  { text: 'Reminder set.' },
  { tool_calls: [{ id: 'c5', name: 'trash_email', args: { ids: ['m120'] } }] },
  { text: 'Trashed it.' },
  { tool_calls: [{ id: 'c6', name: 'write_file', args: { path: 'a.md', content: 'x' } }] },
  { text: 'Plan mode: proposing instead.' },
];

const tmux = tmuxServer('keel-test', 'the chat tests drive keel chat');

async function waitFor(session: string, pattern: RegExp, ms = 90_000): Promise<string> {
  const until = Date.now() + ms;
  let screen = '';
  while (Date.now() < until) {
    screen = tmux('capture-pane', '-p', '-J', '-t', session, '-S', '-500');
    if (pattern.test(screen)) return screen;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${pattern} on the screen:\n${screen}`);
}

test('keel chat under tmux: a question answered inline, an approval card answered inline, /mode plan, /runs', async (t) => {
  ensureBuilt();
  const home = tempHome();
  const model = script(home, SCRIPT);
  const session = `keel-chat-${process.pid}`;
  tmux(
    'new-session',
    '-d',
    '-s',
    session,
    '-x',
    '220',
    '-y',
    '60',
    '-c',
    ROOT,
    `KEEL_HOME=${home} ${process.execPath} ${KEEL_BIN} chat --model ${model}`,
  );
  t.after(() => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
  });
  const type = (text: string) => {
    tmux('send-keys', '-t', session, '-l', text);
    tmux('send-keys', '-t', session, 'Enter');
  };
  await waitFor(session, /you> $/m);
  type('remind me of the water bill');
  // R16: a question asked while a write is held is a confirmation: a yes/no choice, not free text.
  await waitFor(
    session,
    // U3: the held call is shown in the core's words under the model's question.
    /\? Create 'Pay water' on Sep 23\?\s*\n\s+Held until you confirm \(create_reminder\):\s*\n\s+• create_reminder\(\{"due_date":"2026-09-23","title":"Pay water"\}\)\s*\n\s+\(nothing is written until you confirm\)\s*\nconfirm\? \[y\/n\] /,
  );
  type('maybe');
  await waitFor(session, /please answer y or n: /);
  type('yes');
  await waitFor(session, /Reminder set\.\n\(done: final_answer, 5 model calls\)/);
  assert.equal(calls(home, 'reminders.jsonl').length, 0, 'the reference calendar keeps reminders in its own database');
  type('trash the travel deal');
  await waitFor(session, /Approval needed .*\n[\s\S]*approve\? \[y\/N, e = edit the arguments\] /);
  type('y');
  await waitFor(session, /Trashed it\./);
  type('/mode plan');
  await waitFor(session, /mode: plan\n\[plan\] you> /);
  type('write a.md');
  const screen = await waitFor(session, /Plan mode: proposing instead\./);
  assert.match(screen, /write_file\(.*\)\s+⛔ denied/);
  type('/runs');
  await waitFor(session, /run_\w+\s+done\s+final_answer\s+plan/);
  type('/quit');
});

test('keel chat with a closed stdin never hangs, and a paused question is reported', async () => {
  const home = tempHome();
  const model = script(home, SCRIPT);
  const r = await keel(['chat', '--model', model], { KEEL_HOME: home }, 'remind me of the water bill\n');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /\? Create 'Pay water' on Sep 23\?/);
  // S6: how to answer it later, with the run's own id.
  const run = /▶ (run_\w+): remind me/.exec(r.stdout)?.[1];
  assert.ok(run, r.stdout);
  assert.match(r.stdout, new RegExp(`still paused.*\\n  keel resume ${run} --yes    or    keel resume ${run} --no`));
});

/** The run requests in the store, oldest first. */
async function requests(home: string): Promise<string[]> {
  const rows = json<{ request: string }[]>(await keel(['runs', 'list', '--json'], { KEEL_HOME: home }));
  return rows.map((r) => r.request).reverse();
}

test('S6: an unknown /command is refused in chat and never reaches the model; // sends a request that starts with /', async () => {
  const home = tempHome();
  const model = script(home, [{ text: 'Noted.' }]);
  const r = await keel(['chat', '--model', model], { KEEL_HOME: home }, '/frobnicate now\n/mdoe plan\n//tmp is full\n/quit\n');
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    /unknown command \/frobnicate: nothing was sent\. Commands: \/mode \/approvals \/approve \/reject \/runs \/help \/quit/,
  );
  assert.match(r.stdout, /unknown command \/mdoe \(did you mean \/mode\?\)/);
  assert.match(r.stdout, /Noted\./);
  // Only the // line became a run: the unknown commands never became requests.
  assert.deepEqual(await requests(home), ['/tmp is full']);
});

test('S6: /mode with no argument shows the mode; /mode plan changes it; an unknown mode is refused', async () => {
  const home = tempHome();
  const model = script(home, [{ text: 'unused' }]);
  const r = await keel(['chat', '--model', model], { KEEL_HOME: home }, '/mode\n/mode plan\n/mode\n/mode loud\n/mode\n');
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    /you> mode: agent {2}\(\/mode agent\|plan\|goal changes it\)\nyou> mode: plan\n\[plan\] you> mode: plan {2}\(\/mode agent\|plan\|goal changes it\)\n/,
  );
  assert.match(r.stdout, /\[plan\] you> unknown mode loud: \/mode agent\|plan\|goal\n\[plan\] you> mode: plan {2}\(/);
  assert.deepEqual(await requests(home), [], 'no command became a request');
});

test('S6: chat shows each outcome in its own words, never the sentences written for the model', async () => {
  const home = tempHome();
  const model = script(home, [
    { tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: { within_days: 10 } }] },
    { tool_calls: [{ id: 'c2', name: 'create_reminder', args: { title: 'Pay water', due_date: '2026-09-23' } }] },
    { tool_calls: [{ id: 'c3', name: 'upcoming_dues', args: { within_days: 10 } }] },
    { tool_calls: [{ id: 'c4', name: 'ask_user', args: { question: "Create 'Pay water' on Sep 23?" } }] },
    { tool_calls: [{ id: 'c5', name: 'create_reminder', args: { title: 'Pay water', due_date: '2026-09-23' } }] },
    { text: 'Reminder set.' },
    { tool_calls: [{ id: 'c6', name: 'write_file', args: { path: 'a.md', content: 'x' } }] },
    { text: 'Proposing instead.' },
    { tool_calls: [{ id: 'c7', name: 'trash_email', args: { ids: ['m120'] } }] },
    { text: 'Kept it.' },
  ]);
  const input = 'remind me of the water bill\ny\n/mode plan\nwrite a.md\n/mode agent\ntrash the travel deal\nn\n';
  const r = await keel(['chat', '--model', model], { KEEL_HOME: home }, input);
  assert.equal(r.code, 0, r.stderr);
  const out = r.stdout;
  assert.match(out, /create_reminder\(.*\) {2}⏸ held until you confirm\n/);
  assert.match(out, /upcoming_dues\(.*\) {2}↺ repeat: the same call as before; its earlier result was used again\n/);
  assert.match(out, /ask_user\(.*\) {2}✓ you confirmed\n/);
  assert.match(out, /create_reminder\(.*\) {2}✓\n {6}Created reminder/);
  assert.match(out, /write_file\(.*\) {2}⛔ denied: plan mode allows only reads\n/);
  assert.match(out, /trash_email\(.*\) {2}✗ rejected: nothing changed\n/);
  // The core's sentences for the model (src/loop/sentences.ts) are not shown.
  for (const said of [
    /Ask once with ask_user/,
    /has not confirmed/,
    /\[Repeat:/,
    /Do not call it again/,
    /The user confirmed/,
    /is unavailable in plan mode/,
    /put this action in your plan/,
    /the owner rejected this/,
  ]) {
    assert.doesNotMatch(out, said);
  }
});

const TRASH = [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1', 'm2'] } }] }, { text: 'Handled.' }];

interface Card {
  id: string;
  status: string;
  run_id: string;
  reason: string | null;
}

/** A `keel run` in `home` that pauses on a card (the TRASH script): its run id and card. */
async function pausedOnCard(home: string, request: string) {
  const model = script(home, TRASH);
  return json<{ run_id: string; approval: { id: string } }>(
    await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, request], { KEEL_HOME: home }),
  );
}

test('S6/A3: cards left pending by earlier runs are listed and answered in chat, and their runs continue there', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const first = await pausedOnCard(home, 'trash the promotions');
  const second = await pausedOnCard(home, 'trash them too');
  const [a, b] = [first.approval.id, second.approval.id];
  const input = `/approvals\n/approve ${a}\n/reject ${b} keep them\n/approve ${a}\n/approvals\n`;
  const r = await keel(['chat', '--plugins', FIXTURES], env, input);
  assert.equal(r.code, 0, r.stderr);
  const out = r.stdout;
  // Both cards, each with its run.
  assert.match(out, new RegExp(`Approval needed \\(${a}\\)[\\s\\S]*run ${first.run_id}`));
  assert.match(out, new RegExp(`Approval needed \\(${b}\\)[\\s\\S]*run ${second.run_id}`));
  assert.match(out, /Answer one with \/approve ID or \/reject ID/);
  // Approved: the run continued here, the call ran once.
  assert.match(
    out,
    new RegExp(`▶ resuming ${first.run_id}\\n  → trash_email\\(.*\\) {2}✓[\\s\\S]*Approval ${a}: approved\\.\\nHandled\\.`),
  );
  assert.equal(calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length, 1);
  // Rejected with a reason: nothing ran, the run continued.
  assert.match(out, new RegExp(`▶ resuming ${second.run_id}\\n  → trash_email\\(.*\\) {2}✗ rejected \\(keep them\\): nothing changed`));
  // Answering twice is refused, as on the command line.
  assert.match(out, new RegExp(`error: approval ${a} .*already approved`));
  assert.match(out, /No pending approvals\.\n/);
  const cards = json<Card[]>(await keel(['approvals', 'list', '--json'], env));
  assert.deepEqual(
    cards.map((c) => [c.id, c.status, c.reason]).sort(),
    [
      [a, 'approved', null],
      [b, 'rejected', 'keep them'],
    ].sort(),
  );
  const runs = json<{ status: string }[]>(await keel(['runs', 'list', '--json'], env));
  assert.deepEqual(
    runs.map((x) => x.status),
    ['done', 'done'],
  );
});

test('S6/A7: /approve ID --args JSON runs the card’s call with the owner’s arguments (the rest of the line, spaces and all); bad JSON and an unknown word are refused where typed', async () => {
  const home = tempHome();
  const env = { KEEL_HOME: home };
  const a = (await pausedOnCard(home, 'trash the promotions')).approval.id;
  const input = `/approve ${a} --args {"ids": oops\n/approve ${a} --frobnicate\n/approve ${a} --args {"ids": ["m2"]}\n`;
  const r = await keel(['chat', '--plugins', FIXTURES], env, input);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /error: --args: not valid JSON/);
  assert.match(r.stdout, /\/approve does not take "--frobnicate": \/approve ID \[--allow-writes\] \[--args JSON\]/);
  assert.match(r.stdout, new RegExp(`Approval ${a}: approved\\.\\nHandled\\.`));
  // Only the edited call ran, once; the card keeps what the model asked for and who changed it.
  assert.deepEqual(
    calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')),
    ['trash_email {"ids":["m2"]}'],
  );
  const cards = json<{ id: string; items: { original_args?: unknown; args: unknown; edited_by?: string }[] }[]>(
    await keel(['approvals', 'list', '--json'], env),
  );
  const card = cards.find((c) => c.id === a);
  assert.ok(card);
  assert.deepEqual(card.items[0].args, { ids: ['m2'] });
  assert.deepEqual(card.items[0].original_args, { ids: ['m1', 'm2'] });
  assert.ok(card.items[0].edited_by, 'who changed them is kept');
});

/** A chat under tmux whose exit code is printed when it ends. */
async function chatUnderTmux(session: string, home: string, args: string[]): Promise<(text: string) => void> {
  tmux(
    'new-session',
    '-d',
    '-s',
    session,
    '-x',
    '200',
    '-y',
    '60',
    '-c',
    ROOT,
    `KEEL_HOME=${home} ${process.execPath} ${KEEL_BIN} chat ${args.join(' ')}; echo "chat exited with $?"; sleep 600`,
  );
  await waitFor(session, /you> $/m);
  return (text: string) => {
    tmux('send-keys', '-t', session, '-l', text);
    tmux('send-keys', '-t', session, 'Enter');
  };
}

test('S6: Ctrl-C at a card or a confirmation says how to answer it later, and exits; answering later works', async (t) => {
  ensureBuilt();
  t.after(() => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
  });
  const home = tempHome();
  const env = { KEEL_HOME: home };
  // At an approval card.
  const card = `keel-card-${process.pid}`;
  const type = await chatUnderTmux(card, home, ['--plugins', FIXTURES, '--model', script(home, TRASH)]);
  type('trash the promotions');
  const asked = await waitFor(card, /approve\? \[y\/N, e = edit the arguments\] $/m);
  const run = /▶ (run_\w+): trash the promotions/.exec(asked)?.[1];
  const id = /Approval needed \((apr_\w+)\)/.exec(asked)?.[1];
  assert.ok(run && id, asked);
  tmux('send-keys', '-t', card, 'C-c');
  const left = await waitFor(card, /chat exited with \d+/);
  assert.match(
    left,
    new RegExp(
      `Run ${run} stays paused for approval ${id}\\. Answer it later with:\\n  keel approvals approve ${id}    or    keel approvals reject ${id}`,
    ),
  );
  assert.match(left, /chat exited with 130/);
  const later = await keel(['approvals', 'approve', id], env);
  assert.equal(later.code, 0, later.stderr);
  assert.match(later.stdout, /Handled\./);

  // At a confirmation of a held write.
  const confirm = `keel-confirm-${process.pid}`;
  const type2 = await chatUnderTmux(confirm, home, ['--model', script(home, SCRIPT.slice(0, 5), 'confirm.yaml')]);
  type2('remind me of the water bill');
  const held = await waitFor(confirm, /confirm\? \[y\/n\] $/m);
  const run2 = /▶ (run_\w+): remind me/.exec(held)?.[1];
  assert.ok(run2, held);
  tmux('send-keys', '-t', confirm, 'C-c');
  const left2 = await waitFor(confirm, /chat exited with \d+/);
  assert.match(left2, new RegExp(`Run ${run2} stays paused until you confirm\\. Answer it later with:\\n  keel resume ${run2} --yes`));
  assert.match(left2, /chat exited with 130/);
  const yes = await keel(['resume', run2, '--yes'], env);
  assert.equal(yes.code, 0, yes.stderr);
  assert.match(yes.stdout, /Reminder set\./);
});
