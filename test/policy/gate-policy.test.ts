/**
 * PC8: the operator's Cedar policy as an input of the one gate. The policy's answer is faked here
 * (test/policy/cedar*.test.ts evaluate real Cedar files): what matters is where in the gate's order
 * it is asked, and that it only ever tightens.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { prepareApproval, prepareCall } from '../../src/loop/pipeline.js';
import { normalizeDeclaration, type ToolDeclarationInput } from '../../src/manifest/schema.js';
import { type Decision, decide, deriveGateState, type GateState, type PolicyVerdict } from '../../src/policy/gate.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { CallRecord, Mode, ToolSpec } from '../../src/types/index.js';
import { callKey } from '../../src/util/json.js';

const tool = (name: string, d: ToolDeclarationInput): ToolSpec =>
  makeToolSpec(
    { name, description: name, parameters: { type: 'object', properties: { amount: { type: 'number' } } }, execute: () => 'ok' },
    'p',
    normalizeDeclaration(d),
  );

const read = tool('lookup', { effect: 'read' });
const once = tool('create_reminder', { effect: 'write' });
const never = tool('restore_email', { effect: 'write', confirm: 'never' });
const destructive = tool('trash_email', { effect: 'destructive' });

const FORBID: PolicyVerdict = { decision: 'forbid', policies: ['no-wipe'] };
const DEFAULT_DENY: PolicyVerdict = { decision: 'forbid', policies: [] };
const ASK: PolicyVerdict = { decision: 'ask', policies: ['big-payment'], approvers: ['finance'] };
const PERMIT: PolicyVerdict = { decision: 'permit', policies: ['all'] };

function gate(
  t: ToolSpec,
  verdict: PolicyVerdict | undefined,
  o: { mode?: Mode; state?: GateState; argsProblem?: string } = {},
): { decision: Decision; asked: number } {
  let asked = 0;
  const decision = decide({
    name: t.name,
    tool: t,
    admissible: true,
    argsProblem: o.argsProblem,
    key: callKey(t.name, {}),
    mode: o.mode ?? 'agent',
    state: o.state ?? deriveGateState([], true),
    verdict: () => {
      asked++;
      return verdict;
    },
  });
  return { decision, asked };
}

const ran = (tool: string, effect: CallRecord['effect']): CallRecord => ({
  step: 1,
  call_id: `c_${tool}`,
  tool,
  args: {},
  outcome: 'ran',
  result: 'r',
  is_error: false,
  effect,
  by_core: false,
});

test('PC8: a forbid (or no permit) denies a call of any effect, naming the policies', () => {
  for (const t of [read, once, never, destructive]) {
    const { decision } = gate(t, FORBID);
    assert.deepEqual(decision, { kind: 'deny', mode: 'agent', by: 'policy', policies: ['no-wipe'] }, t.name);
    assert.deepEqual(gate(t, DEFAULT_DENY).decision, { kind: 'deny', mode: 'agent', by: 'policy', policies: [] });
  }
});

test('PC8: a forbid is final even for a call the person already consented to, or that ran before (no repeat answer)', () => {
  const consented = deriveGateState([ran('restore_email', 'write')], true);
  consented.consented.add('create_reminder');
  assert.equal(gate(once, FORBID, { state: consented }).decision.kind, 'deny');
  const before = deriveGateState([ran('lookup', 'read')], true);
  assert.equal(gate(read, FORBID, { state: before }).decision.kind, 'deny');
});

test('PC8: @ask puts any call on a card pinned to its arguments; a run that cannot pause refuses it', () => {
  for (const t of [read, once, never, destructive]) {
    assert.equal(gate(t, ASK).decision.kind, 'needs_approval', t.name);
    assert.equal(gate(t, ASK, { state: deriveGateState([], false) }).decision.kind, 'refuse_approval', t.name);
  }
  // Consent to the tool does not cover an @ask call: the policy tightens, never loosens.
  const consented = deriveGateState([], true);
  consented.consented.add('create_reminder');
  consented.consentAll = true;
  assert.equal(gate(once, ASK, { state: consented }).decision.kind, 'needs_approval');
});

test('PC8: a plain permit leaves the declared gate: never loosens a card', () => {
  assert.equal(gate(read, PERMIT).decision.kind, 'run');
  assert.deepEqual(gate(once, PERMIT).decision, { kind: 'hold_for_confirmation', declined: false });
  assert.equal(gate(never, PERMIT).decision.kind, 'run');
  assert.equal(gate(destructive, PERMIT).decision.kind, 'needs_approval');
});

test('PC8: the policy is asked only for a known, allowed, well-formed call — after the mode, before the handler', () => {
  // C2: Plan mode denies the write before the policy is asked (the mode's own sentence).
  const planned = gate(once, PERMIT, { mode: 'plan' });
  assert.equal(planned.decision.kind, 'deny');
  assert.equal(planned.asked, 0);
  assert.equal(gate(once, FORBID, { argsProblem: 'amount: must be a number' }).asked, 0);
  assert.equal(gate(once, PERMIT).asked, 1);
});

test('PC11: prepare keeps the verdict for the trace and the card: policies that asked and the groups that answer', async () => {
  const pool = new Map([[once.name, once]]);
  const call = { id: 'c1', name: once.name, args: { amount: 900 } };
  let asked = 0;
  const prepared = prepareCall({
    call,
    pool,
    menu: { admissible: () => true },
    mode: 'agent',
    gate: deriveGateState([], true),
    pending: { question: false, approvals: false },
    policy: (t, args) => {
      asked++;
      assert.equal(t.name, 'create_reminder');
      assert.deepEqual(args, { amount: 900 });
      return ASK;
    },
  });
  assert.equal(asked, 1, 'asked once per call');
  assert.equal(prepared.kind, 'needs_card');
  assert.deepEqual(prepared.verdict, ASK);
  if (prepared.kind !== 'needs_card') return;
  const ready = await prepareApproval('c1', prepared.tool, prepared.args, prepared.verdict);
  assert.equal(ready.kind, 'approval');
  if (ready.kind !== 'approval') return;
  assert.deepEqual(ready.item.policy, ['big-payment']);
  assert.deepEqual(ready.item.approvers, ['finance']);
  // A forbid is answered by the core, naming the policy; the model is told to do without.
  const denied = prepareCall({
    call,
    pool,
    menu: { admissible: () => true },
    mode: 'agent',
    gate: deriveGateState([], true),
    pending: { question: false, approvals: false },
    policy: () => FORBID,
  });
  assert.equal(denied.kind, 'answered');
  if (denied.kind === 'answered') {
    assert.equal(denied.outcome, 'denied_by_policy');
    assert.match(denied.result, /policy no-wipe/);
  }
});

test('A9/PC8 (issue 47): a plain permit that routes a call (@approvers) consents it only on a routed card — never a confirmation, nor a yes given before; a call that asks no one still runs', async () => {
  const ROUTED: PolicyVerdict = { decision: 'permit', policies: ['all', 'finance-pays'], approvers: ['finance'] };
  assert.deepEqual(gate(once, ROUTED).decision, { kind: 'needs_approval' }, 'a confirm-once write: a card, not a hold');
  const consented = deriveGateState([], true);
  consented.consented.add('create_reminder');
  consented.consentAll = true;
  assert.deepEqual(gate(once, ROUTED, { state: consented }).decision, { kind: 'needs_approval' }, 'an earlier yes covers no routed call');
  assert.deepEqual(gate(destructive, ROUTED).decision, { kind: 'needs_approval' }, 'a destructive call keeps its card');
  assert.deepEqual(gate(read, ROUTED).decision, { kind: 'run' }, 'a read asks no one');
  assert.deepEqual(gate(never, ROUTED).decision, { kind: 'run' }, 'a confirm: never write asks no one');
  assert.deepEqual(gate(once, PERMIT).decision, { kind: 'hold_for_confirmation', declined: false }, 'unrouted: its confirmation');
  assert.deepEqual(gate(once, ROUTED, { state: deriveGateState([], false) }).decision, { kind: 'refuse_approval' }, 'no store');
  // The card it makes is routed to the group.
  const r = await prepareApproval('c1', once, {}, ROUTED);
  assert.ok(r.kind === 'approval');
  assert.deepEqual(r.item.approvers, ['finance']);
});
