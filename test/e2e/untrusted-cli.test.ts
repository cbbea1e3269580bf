/**
 * U2/U3 through the real CLI (issue 36): a run resumed in another process keeps what it read, on
 * SQLite and on PostgreSQL. `keel run --json` reads an email a stranger wrote (read_message m2,
 * `output: untrusted`) and asks the user a plain question (exit 3); `keel resume RUN --answer …`, a
 * new process that rebuilds the run from the store, then meets a `confirm: never` write (save_note):
 * it must pause on a card naming the email, not run. The same run without the read saves the note
 * unasked — so the test fails if what the run read is lost on the way, or if nothing narrows.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { ScriptEntry } from '../../src/models/script.js';
import { calls, json, keel, ROOT, script, tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';

after(() => dropSchemas());

const OUTSIDE = join(ROOT, 'test', 'fixtures', 'untrusted');
const EVE = 'message m2 from eve@attacker.example';

interface Out {
  run_id: string;
  status: string;
  reason: string;
  question?: string;
  untrusted: { tool: string; call_id: string; label: string }[];
  approval?: { id: string; card: { untrusted?: { tool: string; call_id: string; label: string }[]; items: { call: string }[] } };
  steps: { call_id: string; tool: string; outcome: string; untrusted?: string }[];
}

const entries = (read: boolean): ScriptEntry[] => [
  { tool_calls: [read ? { id: 'r1', name: 'read_message', args: { id: 'm2' } } : { id: 'd1', name: 'list_dues', args: {} }] },
  { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Anything else?' } }] },
  { tool_calls: [{ id: 'n1', name: 'save_note', args: { text: 'eve is trusted' } }] },
  { text: 'Saved.' },
];

async function resumedInAnotherProcess(store: () => Promise<Record<string, string>>): Promise<void> {
  for (const read of [false, true]) {
    const home = tempHome('keel-untrusted-cli-');
    const env = { KEEL_HOME: home, ...(await store()) };
    const model = script(home, entries(read));
    const ran = await keel(['run', '--json', '--model', model, '--plugins', OUTSIDE, 'read my latest message'], env);
    assert.equal(ran.code, 3, ran.stderr);
    const asked = json<Out>(ran);
    assert.equal(asked.reason, 'awaiting_user_input');
    assert.equal(asked.question, 'Anything else?');
    assert.deepEqual(asked.untrusted, read ? [{ tool: 'read_message', call_id: 'r1', label: EVE }] : []);

    const resumed = await keel(['resume', asked.run_id, '--answer', 'save a note that eve is trusted', '--json'], env);
    if (!read) {
      // Control: a run that read nothing from outside saves the note unasked (confirm: never), as before.
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.equal(json<Out>(resumed).status, 'done');
      assert.deepEqual(calls(home, 'outside.log'), ['save_note {"text":"eve is trusted"}']);
      continue;
    }
    assert.equal(resumed.code, 3, resumed.stderr);
    const r = json<Out>(resumed);
    assert.equal(r.status, 'paused');
    assert.equal(r.reason, 'awaiting_approval', 'the resumed run still knows it read the email: the write waits on a card');
    assert.match(r.approval?.card.items[0].call ?? '', /^save_note\(/);
    assert.ok(r.approval?.card.untrusted?.[0].label.includes('eve@attacker.example'), JSON.stringify(r.approval?.card));
    assert.deepEqual(r.untrusted, [{ tool: 'read_message', call_id: 'r1', label: EVE }]);
    assert.equal(r.steps.find((s) => s.call_id === 'r1')?.untrusted, EVE);
    assert.deepEqual(calls(home, 'outside.log'), [], 'nothing was written');

    // keel runs show, a third process, lists what the run read.
    const shown = await keel(['runs', 'show', asked.run_id], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.ok(shown.stdout.includes(`read from outside you (untrusted):\n  - read_message r1: ${EVE}`), shown.stdout);
  }
}

test('U2: keel resume in another process keeps what the run read (SQLite): the write after it waits on a card naming the email', () =>
  resumedInAnotherProcess(async () => ({})));

test('U2: keel resume in another process keeps what the run read (PostgreSQL): the write after it waits on a card naming the email', async () => {
  const url = await testPgUrl();
  await resumedInAnotherProcess(async () => ({ KEEL_STORE: withSchema(url, freshSchema()) }));
});
