import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SAY } from '../../src/loop/sentences.js';
import { normalizeDeclaration, type ToolDeclarationInput } from '../../src/manifest/schema.js';
import { type Decision, decide, deriveGateState, type GateState, SUBMIT_TOOL } from '../../src/policy/gate.js';
import { confirmOnceFromEnv, OperatorPolicy } from '../../src/policy/operator.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { CallRecord, Mode, ToolSpec } from '../../src/types/index.js';
import { callKey, canonicalJson } from '../../src/util/json.js';

const tool = (name: string, d: ToolDeclarationInput): ToolSpec =>
  makeToolSpec(
    { name, description: name, parameters: { type: 'object', properties: {} }, execute: () => 'ok' },
    'p',
    normalizeDeclaration(d),
  );

const T = {
  read: tool('lookup', { effect: 'read' }),
  ask: tool('ask_user', { effect: 'read' }),
  once: tool('create_reminder', { effect: 'write' }),
  never: tool('restore_email', { effect: 'write', confirm: 'never' }),
  destructive: tool('trash_email', { effect: 'destructive' }),
  pinnedWrite: tool('send_email', { effect: 'write', approval: 'pinned' }),
  submitPlan: tool('submit_plan', { effect: 'write', confirm: 'never' }),
  declared: tool('write_file', { effect: 'write', contract_modes: 'declare' }),
};

const rec = (tool: string, outcome: CallRecord['outcome'], effect: CallRecord['effect'] = 'read', args = {}): CallRecord => ({
  step: 1,
  call_id: `c_${Math.random()}`,
  tool,
  args,
  outcome,
  result: `${tool} result`,
  is_error: false,
  effect,
  by_core: outcome !== 'ran',
});

function run(
  t: ToolSpec | undefined,
  opts: { mode?: Mode; state?: GateState; args?: object; argsProblem?: string; admissible?: boolean } = {},
): Decision {
  const mode = opts.mode ?? 'agent';
  return decide({
    name: t?.name ?? 'nope',
    tool: t,
    admissible: opts.admissible ?? true,
    argsProblem: opts.argsProblem,
    key: callKey(t?.name ?? 'nope', opts.args ?? {}),
    mode,
    state: opts.state ?? deriveGateState([], true),
  });
}

const consented = deriveGateState([rec('create_reminder', 'held_for_confirmation', 'write'), rec('ask_user', 'ran')], true);
const askedFirst = deriveGateState([rec('ask_user', 'ran'), rec('create_reminder', 'held_for_confirmation', 'write')], true);

const table: [string, () => Decision, Decision['kind']][] = [
  ['M3/R9: a read runs', () => run(T.read), 'run'],
  ['R17: ask_user pauses (never executed)', () => run(T.ask), 'ask_user'],
  ['M3: write + confirm never runs', () => run(T.never), 'run'],
  ['R15: first confirm-once write is held', () => run(T.once), 'hold_for_confirmation'],
  ['R16: held then answered ask_user = consent', () => run(T.once, { state: consented }), 'run'],
  ['R16: a question before the write was proposed is not consent', () => run(T.once, { state: askedFirst }), 'hold_for_confirmation'],
  [
    'R16: consent to one tool is not consent to another',
    () => run(tool('create_event', { effect: 'write' }), { state: consented }),
    'hold_for_confirmation',
  ],
  ['A1: destructive needs approval', () => run(T.destructive), 'needs_approval'],
  ['A1: approval: pinned write needs approval', () => run(T.pinnedWrite), 'needs_approval'],
  ['A1: consent to a write is no approval for a destructive call', () => run(T.destructive, { state: consented }), 'needs_approval'],
  ['A5: no store → approval refused outright', () => run(T.destructive, { state: deriveGateState([], false) }), 'refuse_approval'],
  ['R21: unknown tool', () => run(undefined), 'unknown_tool'],
  ['C3: a hidden tool is unknown to the model', () => run(T.once, { admissible: false }), 'unknown_tool'],
  ['R21: bad arguments', () => run(T.read, { argsProblem: 'x' }), 'invalid_arguments'],
  ['C2: plan mode denies a write', () => run(T.declared, { mode: 'plan' }), 'deny'],
  ['C2: goal mode denies destructive', () => run(T.destructive, { mode: 'goal' }), 'deny'],
  ['C2: plan mode runs reads', () => run(T.read, { mode: 'plan' }), 'run'],
  ['C2: plan mode allows ask_user', () => run(T.ask, { mode: 'plan' }), 'ask_user'],
  ['C2: plan mode allows its own submit tool', () => run(T.submitPlan, { mode: 'plan' }), 'run'],
  ['C2: goal mode denies the other submit tool', () => run(T.submitPlan, { mode: 'goal' }), 'deny'],
  ['C9: malformed args to a denied tool: denial, nothing runs', () => run(T.declared, { mode: 'plan', argsProblem: 'bad' }), 'deny'],
  [
    'R13: an executed read with the same args is a repeat',
    () => run(T.read, { state: deriveGateState([rec('lookup', 'ran')], true) }),
    'repeat',
  ],
  [
    'R13: different args are a fan-out, not a repeat',
    () => run(T.read, { args: { d: 2 }, state: deriveGateState([rec('lookup', 'ran', 'read', { d: 1 })], true) }),
    'run',
  ],
  [
    'R13: a write invalidates cached reads',
    () => run(T.read, { state: deriveGateState([rec('lookup', 'ran'), rec('restore_email', 'ran', 'write')], true) }),
    'run',
  ],
  [
    'R13: a repeated write is not executed again',
    () => run(T.never, { state: deriveGateState([rec('restore_email', 'ran', 'write')], true) }),
    'repeat',
  ],
  [
    'R13: a held call is not an executed call',
    () => run(T.once, { state: deriveGateState([rec('create_reminder', 'held_for_confirmation', 'write')], true) }),
    'hold_for_confirmation',
  ],
];

for (const [name, fn, kind] of table) {
  test(`gate: ${name}`, () => assert.equal(fn().kind, kind));
}

test('gate R13: the second repeat is counted (nth = 2)', () => {
  const state = deriveGateState([rec('lookup', 'ran'), rec('lookup', 'repeat')], true);
  const d = run(T.read, { state });
  assert.equal(d.kind, 'repeat');
  assert.equal(d.kind === 'repeat' && d.nth, 2);
});

test('gate C2: the denial names the mode; its one sentence names the tool and the mode', () => {
  const d = run(T.declared, { mode: 'plan' });
  assert.equal(d.kind, 'deny');
  assert.equal(d.kind === 'deny' && d.mode, 'plan');
  assert.match(SAY.deniedByMode('write_file', 'plan', SUBMIT_TOOL.plan), /write_file is unavailable in plan mode/);
});

test('R13: canonical arguments ignore key order', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } }), '{"a":{"c":null,"d":[1,{"x":1,"y":2}]},"b":1}');
  assert.equal(callKey('t', { a: 1, b: 2 }), callKey('t', { b: 2, a: 1 }));
  assert.notEqual(callKey('t', { a: 1 }), callKey('u', { a: 1 }));
});

test('R13: canonical arguments are JSON: undefined members left out, keys escaped, arrays as JSON.stringify writes them', () => {
  // The one-pass writer (bench/loop) must say exactly what the sorted JSON says.
  assert.equal(canonicalJson({ a: undefined, b: 2, c: undefined }), '{"b":2}');
  assert.equal(canonicalJson({ z: { a: undefined } }), '{"z":{}}');
  assert.equal(canonicalJson({ 'k"\\': 'v\n', '': 0 }), '{"":0,"k\\"\\\\":"v\\n"}');
  assert.equal(canonicalJson([undefined, null, 1, 'x', [], {}]), '[null,null,1,"x",[],{}]');
  assert.equal(canonicalJson({ n: 1.5, t: true, s: 'a' }), JSON.stringify({ n: 1.5, s: 'a', t: true }));
  assert.equal(callKey('t', undefined), callKey('t', {}));
});

test('R7: KEEL_CONFIRM_ONCE_TOOLS turns a gate-none tool into confirm-once', () => {
  const policy = new OperatorPolicy([], confirmOnceFromEnv({ KEEL_CONFIRM_ONCE_TOOLS: 'configure_brief' }));
  const t = policy.apply(
    makeToolSpec(
      { name: 'configure_brief', description: '', parameters: { type: 'object' }, execute: () => '' },
      'p',
      normalizeDeclaration({ effect: 'write', confirm: 'never' }),
    ),
  );
  assert.equal(t.gate, 'confirm_once');
  assert.equal(run(t).kind, 'hold_for_confirmation');
});

// U2-U5: the gate after an untrusted read, as a table. `read` is a record of an untrusted result;
// `held(args)` + `yes`/`no` is a confirmation of exactly those calls.
const untrustedRead: CallRecord = { ...rec('read_email', 'ran'), untrusted: 'email m2 from eve@example.com' };
const heldA = { ...rec('create_reminder', 'held_for_confirmation', 'write', { title: 'A' }) };
const yes: CallRecord = { ...rec('ask_user', 'ran'), decision: 'yes' };
const no: CallRecord = { ...rec('ask_user', 'ran'), decision: 'no' };
const tightenedRead = new OperatorPolicy([{ pattern: 'lookup', at: 'c.yaml:1:1', gate: 'confirm_once' }]).apply(T.read);
const allowed = new OperatorPolicy([{ pattern: 'restore_email', at: 'c.yaml:2:5', after_untrusted: 'allow' }]).apply(T.never);

const untrustedTable: [string, () => Decision, Decision['kind'] | Decision][] = [
  [
    'U3: nothing untrusted read, a consented tool runs any arguments (the fan-out)',
    () => run(T.once, { state: deriveGateState([heldA, yes], true), args: { title: 'B' } }),
    'run',
  ],
  [
    'U3: after an untrusted read, the exact call the person said yes to runs',
    () => run(T.once, { state: deriveGateState([untrustedRead, heldA, yes], true), args: { title: 'A' } }),
    'run',
  ],
  [
    'U3: after an untrusted read, other arguments of a consented tool wait on a card',
    () => run(T.once, { state: deriveGateState([untrustedRead, heldA, yes], true), args: { title: 'B' } }),
    { kind: 'needs_approval', narrowed: true },
  ],
  [
    'U3: consent given before the untrusted read narrows too',
    () => run(T.once, { state: deriveGateState([heldA, yes, untrustedRead], true), args: { title: 'B' } }),
    { kind: 'needs_approval', narrowed: true },
  ],
  [
    'U3: a confirm-once tool never asked about is held, so the confirmation shows the call',
    () => run(T.once, { state: deriveGateState([untrustedRead], true), args: { title: 'A' } }),
    { kind: 'hold_for_confirmation', declined: false },
  ],
  [
    'U3: confirm: never waits on a card after an untrusted read',
    () => run(T.never, { state: deriveGateState([untrustedRead], true) }),
    { kind: 'needs_approval', narrowed: true },
  ],
  [
    'U3: a plan’s consent_writes narrows after an untrusted read',
    () => run(T.once, { state: deriveGateState([{ ...rec('submit_plan', 'ran', 'write'), consent_writes: true }, untrustedRead], true) }),
    { kind: 'needs_approval', narrowed: true },
  ],
  [
    'U3: a run that cannot pause refuses a narrowed write',
    () => run(T.never, { state: deriveGateState([untrustedRead], false) }),
    'refuse_approval',
  ],
  [
    'U2: what a delegate inherits narrows it from its first call',
    () => run(T.never, { state: deriveGateState([], true, [{ tool: 'read_email', call_id: 'p1', label: 'x' }]) }),
    { kind: 'needs_approval', narrowed: true },
  ],
  [
    'U4: an operator rule lets a confirm: never write run as before, naming itself',
    () => run(allowed, { state: deriveGateState([untrustedRead], true) }),
    { kind: 'run', allowed_after_untrusted: 'restore_email (c.yaml:2:5)' },
  ],
  [
    'U5: the exact call the person said no to is refused at once',
    () => run(T.once, { state: deriveGateState([heldA, no], true), args: { title: 'A' } }),
    'declined_call',
  ],
  [
    'U5: another call of that tool is held again',
    () => run(T.once, { state: deriveGateState([heldA, no], true), args: { title: 'B' } }),
    { kind: 'hold_for_confirmation', declined: true },
  ],
  [
    'U5: a call whose card was rejected is refused at once',
    () => run(T.destructive, { state: deriveGateState([rec('trash_email', 'rejected', 'destructive', { id: 1 })], true), args: { id: 1 } }),
    'declined_call',
  ],
  [
    'a read the operator tightened to confirm-once is still held',
    () => run(tightenedRead),
    { kind: 'hold_for_confirmation', declined: false },
  ],
  ['an untrusted read itself runs', () => run(T.read, { state: deriveGateState([untrustedRead], true) }), 'run'],
];

for (const [name, decision, expected] of untrustedTable) {
  test(name, () => {
    const d = decision();
    if (typeof expected === 'string') assert.equal(d.kind, expected);
    else assert.deepEqual(d, expected);
  });
}

test('U2: what the run has read is rebuilt from its records, in order, and a repeat or a core answer adds nothing', () => {
  const s = deriveGateState(
    [untrustedRead, { ...rec('read_email', 'repeat'), untrusted: undefined }, { ...rec('fetch', 'ran'), untrusted: 'https://x.example/' }],
    true,
    [{ tool: 'task', call_id: 'p', label: 'parent' }],
  );
  assert.deepEqual(
    s.untrusted.map((u) => u.label),
    ['parent', 'email m2 from eve@example.com', 'https://x.example/'],
  );
});
