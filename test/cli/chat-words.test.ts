/** S6: what `keel chat` says about each call is for a person, never the core's sentence for the model. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerLater, chatOutcome, chatWarning, renderChatCall } from '../../src/cli/chat-words.js';
import { SAY } from '../../src/loop/sentences.js';
import type { CallRecord } from '../../src/types/index.js';

type Shown = Pick<CallRecord, 'tool' | 'outcome' | 'result' | 'is_error' | 'decision'>;
const call = (outcome: CallRecord['outcome'], result: string, extra: Partial<Shown> = {}): Shown => ({
  tool: 'write_file',
  outcome,
  result,
  is_error: outcome !== 'ran',
  ...extra,
});

/** Each sentence the core can write into a call's record, and what chat says instead. */
const CASES: [Shown, string][] = [
  [call('held_for_confirmation', SAY.heldForConfirmation('write_file')), '⏸ held until you confirm'],
  [call('held_for_confirmation', SAY.declinedEarlier('write_file')), '⏸ held: you declined it earlier in this run'],
  [call('denied_by_mode', SAY.deniedByMode('write_file', 'plan', 'submit_plan')), '⛔ denied: plan mode allows only reads'],
  [call('denied_by_mode', SAY.deniedByMode('write_file', 'goal', 'submit_goal')), '⛔ denied: goal mode allows only reads'],
  [call('denied_by_policy', SAY.deniedByPolicy('write_file', 'plan', ['agent'])), '⛔ denied by policy: an operator rule forbids it'],
  [call('repeat', SAY.repeat('write_file', 'c1', 'Wrote a.md.')), '↺ repeat: the same call as before; its earlier result was used again'],
  [call('unknown_tool', SAY.unknownTool('write_fil', ['write_file'])), '✗ unknown tool: no tool by that name is available'],
  [call('invalid_arguments', SAY.invalidArguments('write_file', 'path is required')), '✗ invalid arguments: path is required'],
  [call('invalid_arguments', SAY.notQueued('write_file', 'no such folder')), '✗ its plugin refused the arguments: no such folder'],
  [
    call('invalid_arguments', SAY.notQueued('write_file', SAY.questionPendingForApproval)),
    '✗ held back: it came with a question in the same reply',
  ],
  [call('error', SAY.toolFailed('write_file', 'disk full')), '✗ failed: disk full'],
  [call('error', SAY.hookFailed('write_file', 'boom')), '✗ a tool-call hook failed: boom'],
  [call('error', SAY.blockedByHook('write_file', 'outside the project')), '⛔ blocked by a hook: outside the project'],
  [call('error', SAY.rejected('write_file', null)), '✗ rejected: nothing changed'],
  [call('error', SAY.rejected('write_file', 'not now')), '✗ rejected (not now): nothing changed'],
  [call('error', SAY.approvalExpired('write_file', 'apr_1')), '✗ its approval expired before anyone answered: nothing changed'],
  [call('error', SAY.toolLate('write_file')), "⚠ did not finish within the run's time limit: its outcome is unknown"],
  [
    call('error', SAY.unknownOutcome('write_file')),
    '⚠ outcome unknown: Keel stopped while it was running, and did not run it again; check its effect',
  ],
  [call('error', SAY.interruptedCall('write_file')), '⚠ interrupted when Keel stopped: it may not have finished'],
  [call('error', SAY.stoppedBeforeApproval('write_file')), '✗ the run stopped before its card was answered: nothing changed'],
  [call('error', SAY.noLongerAvailable('write_file')), '✗ its plugin is no longer mounted: nothing ran'],
  [call('error', SAY.approvalUnavailable('write_file')), "✗ it needs the owner's approval, which cannot be given here"],
  [call('error', SAY.cannotAsk), '✗ the question could not be asked here'],
  [call('error', SAY.oneThingAtATime), '✗ held back: another question or card was already waiting'],
  [call('error', SAY.questionUnanswered), '✗ unanswered: the run was stopped'],
  [call('ran', SAY.confirmed(['write_file'], 'go'), { tool: 'ask_user', decision: 'yes', is_error: false }), '✓ you confirmed'],
  [
    call('ran', SAY.declined(['write_file'], ''), { tool: 'ask_user', decision: 'no', is_error: false }),
    '✓ you declined: nothing it held is written',
  ],
  [call('awaiting_approval', ''), '⏳ waiting for approval'],
];

test('S6: each core sentence in a call record is shown in chat as its own short human line, with none of the model-facing text', () => {
  for (const [record, expected] of CASES) {
    const shown = chatOutcome(record);
    assert.equal(shown.mark, expected, record.result);
    assert.equal(shown.detail, undefined, `no second line for ${record.result}`);
    const line = renderChatCall({ ...record, args: { path: 'a.md' } });
    assert.ok(!line.includes(record.result) || record.result === '', `the model's sentence is not printed: ${line}`);
  }
});

test("S6: a tool's own output is shown as it is; a question's answer is shown as the user's", () => {
  assert.deepEqual(chatOutcome(call('ran', 'Wrote a.md.', { is_error: false })), { mark: '✓', detail: 'Wrote a.md.' });
  assert.deepEqual(chatOutcome(call('ran', 'no such folder', { is_error: true })), {
    mark: '✗ the tool reported a problem',
    detail: 'no such folder',
  });
  assert.deepEqual(chatOutcome(call('ran', 'the blue one', { tool: 'ask_user', is_error: false })), {
    mark: '✓ you answered',
    detail: 'the blue one',
  });
  assert.equal(
    renderChatCall({ ...call('ran', 'Wrote a.md.', { is_error: false }), args: { path: 'a.md' } }),
    '  → write_file({"path":"a.md"})  ✓\n      Wrote a.md.',
  );
  // A core sentence chat does not know is not shown either.
  assert.deepEqual(chatOutcome(call('error', 'Some new instruction for the model. Call it again.')), { mark: '✗ error' });
});

test('S6: a held write never asked about is said to the user; other warnings pass as they are', () => {
  assert.equal(
    chatWarning(SAY.heldNeverAsked('create_reminder')),
    'create_reminder was held for your confirmation, but the run ended without asking you: nothing was written by it.',
  );
  assert.equal(chatWarning('plugin mail failed to mount'), 'plugin mail failed to mount');
});

test('S6: how to answer a paused run later names the exact command for what it waits on', () => {
  assert.match(answerLater({ kind: 'question', run_id: 'run_1' }), /keel resume run_1 --answer "…"/);
  assert.match(answerLater({ kind: 'confirm', run_id: 'run_1' }), /keel resume run_1 --yes {4}or {4}keel resume run_1 --no/);
  assert.match(
    answerLater({ kind: 'card', run_id: 'run_1', approval_id: 'apr_1' }),
    /keel approvals approve apr_1 {4}or {4}keel approvals reject apr_1\n\(or \/approve apr_1 in keel chat\)/,
  );
  assert.match(answerLater({ kind: 'interrupted', run_id: 'run_1' }), /keel resume run_1$/);
});
