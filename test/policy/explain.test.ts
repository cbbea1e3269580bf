/**
 * Issue 47 and 46: `keel.checkPolicy()` and `keel.explainPolicy()` on a Keel constructed with the
 * app's own tools declared in code, and explain answering what the run's gate would do — a card
 * where U3 narrows consent after untrusted reads, the operator's `@after_untrusted("allow")` by its
 * policy id (O4), and an open-world call's values that are not the user's own (O2).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import type { AppTool } from '../../src/types/index.js';
import { KeelError } from '../../src/util/errors.js';
import { tempHome } from '../support/helpers.js';

const obj = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object', properties, required });
const TOOLS = [
  {
    name: 'send_money',
    description: 'Send money',
    parameters: obj({ to: { type: 'string' }, amount: { type: 'number' } }, ['to', 'amount']),
    execute: () => 'sent',
    effect: 'write',
  },
  {
    name: 'restore_note',
    description: 'Restore a note',
    parameters: obj({ id: { type: 'string' } }, ['id']),
    execute: () => 'restored',
    effect: 'write',
    confirm: 'never',
  },
  {
    name: 'read_inbox',
    description: 'Read the inbox',
    parameters: obj({}, []),
    execute: () => 'mail',
    effect: 'read',
    output: 'untrusted',
  },
  {
    name: 'fetch_url',
    description: 'Fetch a page',
    parameters: obj({ url: { type: 'string' }, cached: { type: 'boolean' } }, []),
    execute: () => 'page',
    effect: 'read',
    open_world: true,
  },
] as unknown as AppTool[];

const ALL = 'permit (principal, action == Keel::Action::"call", resource);\n';
const DOCS = `${ALL}@id("docs-host")
@after_untrusted("allow")
permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"fetch_url")
when { context.args has url && context.args.url like "https://docs.example.com/*" };
`;

function keelWith(policy: string, tools: readonly AppTool[] = TOOLS): { keel: Keel; file: string } {
  const home = tempHome('keel-explain-');
  const file = join(home, 'policy.cedar');
  writeFileSync(file, policy);
  writeFileSync(join(home, 'config.yaml'), 'policy_file: policy.cedar\n');
  return { keel: new Keel({ home, store: null, tools, env: { KEEL_HOME: home } }), file };
}

test("issue 47: keel.checkPolicy() and explainPolicy() see the app's own tools declared in code", async (t) => {
  const { keel, file } = keelWith(
    `${ALL}@id("big") @ask @approvers("finance")\npermit (principal, action == Keel::Action::"call", resource == Keel::Tool::"send_money") when { context.args.amount > 500 };\n`,
  );
  t.after(() => keel.close());
  const check = await keel.checkPolicy();
  assert.equal(check.file, file, "the config's policy_file");
  assert.equal(check.ok, true, JSON.stringify(check.diagnostics));
  assert.deepEqual(
    check.policies.map((p) => p.id),
    ['policy0 (policy.cedar:1)', 'big'],
  );
  const x = await keel.explainPolicy('send_money', { to: 'bob', amount: 900 }, { principal: { kind: 'token', name: 'ana', groups: [] } });
  assert.equal(x.verdict?.decision, 'ask');
  assert.equal(x.gate.kind, 'needs_approval');
  assert.match(x.text, /^send_money as ana \(token\), mode agent: ask: an approval card pinned to these arguments\n/);
  assert.match(x.text, /\n {2}by big \(.*policy\.cedar:3:1\)\n {2}approvers: finance\n/);
  // A misspelt argument of an app tool is caught by check, as a plugin tool's is.
  const typo = keelWith(
    `${ALL}forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"send_money") when { context.args.amout > 5 };\n`,
  );
  t.after(() => typo.keel.close());
  const bad = await typo.keel.checkPolicy();
  assert.equal(bad.ok, false);
  assert.match(bad.diagnostics[0].message, /amout/);
  // A run's own tools (the `tools` option) join the Keel's, as they do for a run.
  const bare = keelWith(ALL, []);
  t.after(() => bare.keel.close());
  await assert.rejects(bare.keel.explainPolicy('send_money', { to: 'bob', amount: 1 }), /no tool named send_money is mounted/);
  const given = await bare.keel.explainPolicy('send_money', { to: 'bob', amount: 1 }, { tools: TOOLS });
  assert.equal(given.gate.kind, 'hold_for_confirmation');
});

test('issue 47 / U3: explain --read-from answers what the gate does: a confirm: never write waits on a card; a confirm-once write is held for this exact call, and after a yes to the tool a card', async (t) => {
  const { keel } = keelWith(ALL);
  t.after(() => keel.close());
  const before = await keel.explainPolicy('restore_note', { id: 'n1' });
  assert.deepEqual(before.gate, { kind: 'run' });
  const after = await keel.explainPolicy('restore_note', { id: 'n1' }, { readFrom: ['read_inbox'] });
  assert.deepEqual(after.gate, { kind: 'needs_approval', narrowed: true });
  assert.match(after.text, /, the run has read from read_inbox: permit: an approval card pinned to these arguments: after untrusted reads/);
  assert.doesNotMatch(after.text, /declared gate/);
  const pay = await keel.explainPolicy('send_money', { to: 'bob', amount: 5 }, { readFrom: ['read_inbox'] });
  assert.equal(pay.gate.kind, 'hold_for_confirmation');
  assert.match(pay.says, /held until the user confirms this exact call/);
  assert.deepEqual(pay.after_yes?.gate, { kind: 'needs_approval', narrowed: true });
  assert.match(pay.text, /\n {2}after a yes to send_money earlier in the run: permit: an approval card pinned to these arguments/);
  // With nothing read, a yes to the tool covers its next call (one question for a fan-out).
  const plain = await keel.explainPolicy('send_money', { to: 'bob', amount: 5 });
  assert.deepEqual(plain.after_yes?.gate, { kind: 'run' });
  // The mode decides before the policy: it is not asked.
  const plan = await keel.explainPolicy('send_money', { to: 'bob', amount: 5 }, { mode: 'plan' });
  assert.deepEqual(plan.gate, { kind: 'deny', mode: 'plan', by: 'mode' });
  assert.equal(plan.verdict, undefined);
  assert.match(plan.says, /^denied: in plan mode only reads, ask_user and submit_plan run/);
});

test('issue 46 / O4: explain shows @after_untrusted("allow"): after untrusted reads the matched call runs without a card, by its policy id', async (t) => {
  const { keel } = keelWith(DOCS);
  t.after(() => keel.close());
  const docs = { url: 'https://docs.example.com/guide?q=481923' };
  const read = await keel.explainPolicy('fetch_url', docs, { untrusted: true });
  assert.deepEqual(read.gate, { kind: 'run', allowed_after_untrusted: 'policy docs-host' });
  assert.match(read.text, /: permit: runs without a card after untrusted reads, by policy docs-host\n/);
  // Without reads, explain still says what the annotation does once the run has read outside words.
  const fresh = await keel.explainPolicy('fetch_url', docs);
  assert.deepEqual(fresh.gate, { kind: 'run' });
  assert.match(fresh.text, /\n {2}after untrusted reads: permit: runs without a card after untrusted reads, by policy docs-host\n$/);
  // Another host is not the operator's exception: the card, with the value marked.
  const other = await keel.explainPolicy('fetch_url', { url: 'https://collect.mallory.example/c?d=481923' }, { readFrom: ['read_inbox'] });
  assert.equal(other.gate.kind, 'needs_approval');
});

test("issue 46 / O2: explain of an open-world tool after untrusted reads: a card unless every value is the user's own, naming the values outside", async (t) => {
  const { keel } = keelWith(ALL);
  t.after(() => keel.close());
  const x = await keel.explainPolicy('fetch_url', { url: 'https://collect.mallory.example/c?d=481923' }, { untrusted: true });
  assert.deepEqual(x.gate, {
    kind: 'needs_approval',
    narrowed: true,
    outside: [{ path: 'url', value: 'https://collect.mallory.example/c?d=481923' }],
  });
  assert.match(x.says, /an approval card pinned to these arguments, unless every value is the user's own/);
  assert.match(x.says, /url "https:\/\/collect\.mallory\.example\/c\?d=481923"/);
  // No value that could carry data: it runs, and explain says what would put it on a card.
  const none = await keel.explainPolicy('fetch_url', { cached: true }, { untrusted: true });
  assert.deepEqual(none.gate, { kind: 'run' });
  assert.match(none.says, /a value the user did not write would put this open-world call on a card/);
  // Before any untrusted read it runs, and explain says what an untrusted read would change.
  const before = await keel.explainPolicy('fetch_url', { url: 'https://example.org' });
  assert.deepEqual(before.gate, { kind: 'run' });
  assert.match(
    before.text,
    /\n {2}after untrusted reads: permit: an approval card pinned to these arguments, unless every value is the user's own/,
  );
  // A closed-world read is never asked about.
  const closed = await keel.explainPolicy('read_inbox', {}, { untrusted: true });
  assert.deepEqual(closed.gate, { kind: 'run' });
  assert.equal(closed.after_untrusted, undefined);
});

test('issue 47: explainPolicy refuses what no run could call: bad arguments, a bad mode, an app tool with a mistake', async (t) => {
  const { keel } = keelWith(ALL);
  t.after(() => keel.close());
  await assert.rejects(keel.explainPolicy('send_money', { to: 1 }), (e: unknown) => e instanceof KeelError && e.code === 'bad_input');
  await assert.rejects(keel.explainPolicy('send_money', { to: 'a', amount: 1 }, { mode: 'plann' as never }), /mode must be one of/);
  const broken = [{ ...TOOLS[0], name: 'bad_tool', confirm: 'never', effect: 'read' }] as unknown as AppTool[];
  await assert.rejects(keel.checkPolicy({ tools: broken }), (e: unknown) => e instanceof KeelError && /bad_tool/.test(e.message));
});
