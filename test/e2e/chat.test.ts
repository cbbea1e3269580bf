import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { calls, ensureBuilt, KEEL_BIN, keel, ROOT, script, tempHome } from '../support/helpers.js';

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

// A private tmux server, started without the test runner's environment (NODE_TEST_CONTEXT would
// make the child node report to a test parent that is not there).
const SOCKET = `keel-test-${process.pid}`;
function tmux(...args: string[]): string {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  delete env.NODE_OPTIONS;
  return execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8', env });
}

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
    /\? Create 'Pay water' on Sep 23\?\s*\n\s+\(nothing is written until you confirm: create_reminder\)\s*\nconfirm\? \[y\/n\] /,
  );
  type('maybe');
  await waitFor(session, /please answer y or n: /);
  type('yes');
  await waitFor(session, /Reminder set\.\n\(done: final_answer, 5 model calls\)/);
  assert.equal(calls(home, 'reminders.jsonl').length, 0, 'the reference calendar keeps reminders in its own database');
  type('trash the travel deal');
  await waitFor(session, /Approval needed .*\n[\s\S]*approve\? \[y\/N\] /);
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
  assert.match(r.stdout, /still paused/);
});
