import assert from 'node:assert/strict';
import { test } from 'node:test';
import { calls, FIXTURES } from '../support/helpers.js';
import { assertPaired, Harness } from '../support/keel.js';

const DUES = { id: 'c1', name: 'upcoming_dues', args: { within_days: 15 } };
const R1 = { title: 'Pay Wingtip Bank', due: '2026-09-30' };
const R2 = { title: 'Pay Contoso Energy', due: '2026-10-02' };

test('R15/R16/R17/R18: dues then a reminder for each — held, asked once, resumed in a new process, two written', async (t) => {
  const h = new Harness([
    { tool_calls: [DUES] },
    { tool_calls: [{ id: 'c2', name: 'create_reminder', args: R1 }] },
    {
      tool_calls: [
        { id: 'c3', name: 'ask_user', args: { question: 'Create reminders for Wingtip Bank (30 Sep) and Contoso Energy (2 Oct)?' } },
      ],
    },
    { tool_calls: [{ id: 'c4', name: 'create_reminder', args: R1 }] },
    { tool_calls: [{ id: 'c5', name: 'create_reminder', args: R2 }] },
    { text: 'Both reminders are set.' },
  ]);
  t.after(() => h.close());
  const first = await h.run('Find my dues and set a reminder for each');
  assert.equal(first.status, 'paused');
  assert.equal(first.reason, 'awaiting_user_input');
  assert.equal(first.model_calls, 3);
  assert.match(first.question ?? '', /Wingtip Bank.*Contoso Energy/);
  assert.deepEqual(
    first.steps.map((s) => [s.call_id, s.outcome]),
    [
      ['c1', 'ran'],
      ['c2', 'held_for_confirmation'],
    ],
  );
  assert.deepEqual(first.effects, [], 'nothing written before consent');
  assert.equal(calls(h.home, 'reminders.jsonl').length, 0);

  assert.deepEqual(first.confirm, { tools: ['create_reminder'], items: [{ call_id: 'c2', tool: 'create_reminder', args: R1 }] });
  const second = await h.resume(first.run_id, { text: '', confirm: true });
  assert.equal(second.status, 'done');
  assert.equal(second.reason, 'final_answer');
  assert.equal(second.answer, 'Both reminders are set.');
  assert.equal(second.model_calls - first.model_calls, 3);
  const written = calls(h.home, 'reminders.jsonl').map((l) => JSON.parse(l));
  assert.deepEqual(written, [R1, R2]);
  assert.deepEqual(
    second.effects.map((e) => e.call_id),
    ['c4', 'c5'],
    'the held call c2 never executed',
  );
  const c3 = second.steps.find((s) => s.call_id === 'c3');
  assert.equal(c3?.result, 'The user confirmed: go ahead with create_reminder.', 'the answer is the ask_user result under its own id');
  const run = await h.keel.getRun(first.run_id);
  assertPaired(run.messages);
});

test('R16: a clarifying question asked before any write was proposed is not consent', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Which bills?' } }] },
    { tool_calls: [{ id: 'w1', name: 'create_reminder', args: R1 }] },
    { text: 'I need your confirmation first.' },
  ]);
  t.after(() => h.close());
  const first = await h.run('Set reminders for my bills');
  assert.equal(first.reason, 'awaiting_user_input');
  const second = await h.resume(first.run_id, 'the bank one');
  assert.equal(second.steps.find((s) => s.call_id === 'w1')?.outcome, 'held_for_confirmation');
  assert.equal(calls(h.home, 'reminders.jsonl').length, 0);
});

test('R16: consent covers the fan-out and survives pause/resume, but a question in the same reply before the write is not consent', async (t) => {
  const h = new Harness([
    {
      tool_calls: [
        { id: 'a', name: 'ask_user', args: { question: 'Anything else?' } },
        { id: 'w1', name: 'create_reminder', args: R1 },
      ],
    },
    { tool_calls: [{ id: 'q', name: 'ask_user', args: { question: 'Create Wingtip and Contoso reminders?' } }] },
    {
      tool_calls: [
        { id: 'w2', name: 'create_reminder', args: R1 },
        { id: 'w3', name: 'create_reminder', args: R2 },
      ],
    },
    { text: 'done' },
  ]);
  t.after(() => h.close());
  const p1 = await h.run('remind me of my bills');
  assert.equal(p1.steps.find((s) => s.call_id === 'w1')?.outcome, 'held_for_confirmation');
  const p2 = await h.resume(p1.run_id, 'no, that is all');
  assert.equal(p2.status, 'paused');
  assert.deepEqual(p2.confirm?.tools, ['create_reminder'], 'the second question is the confirmation');
  const end = await h.resume(p2.run_id, { text: 'yes', confirm: true });
  assert.equal(end.status, 'done');
  assert.deepEqual(
    end.steps.filter((s) => s.tool === 'create_reminder').map((s) => s.outcome),
    ['held_for_confirmation', 'ran', 'ran'],
  );
});

test('R22: two writes in one reply are both held; neither runs unasked', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 'w1', name: 'create_reminder', args: R1 }, { id: 'w2', name: 'create_reminder', args: R2 }, DUES] },
    { text: 'I will ask first.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('set the reminders');
  // The model then answered without asking: the core asks about both held calls (issue 47).
  assert.deepEqual(
    r.confirm?.items.map((i) => i.call_id),
    ['w1', 'w2'],
  );
  const own = r.steps.filter((s) => s.tool !== 'ask_user');
  assert.deepEqual(
    own.map((s) => s.outcome),
    ['held_for_confirmation', 'held_for_confirmation', 'ran'],
  );
  assert.deepEqual(
    own.map((s) => s.call_id),
    ['w1', 'w2', 'c1'],
    'results in call order',
  );
  assert.equal(calls(h.home, 'reminders.jsonl').length, 0);
});

test('R12: an answers_directly tool as the first tool ends the run on its output (1 model call)', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 'd', name: 'inbox_digest', args: {} }] }]);
  t.after(() => h.close());
  const r = await h.run('summarize my inbox');
  assert.equal(r.status, 'done');
  assert.equal(r.reason, 'answered_by_tool');
  assert.equal(r.model_calls, 1);
  assert.match(r.answer ?? '', /You have 3 emails/);
  assert.equal(calls(h.home, 'mail-calls.log').length, 1);
});

test('R12: ask_user before the answers_directly tool does not count', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 'q', name: 'ask_user', args: { question: 'Which inbox?' } }] },
    { tool_calls: [{ id: 'd', name: 'inbox_digest', args: {} }] },
  ]);
  t.after(() => h.close());
  const p = await h.run('summarize');
  const r = await h.resume(p.run_id, 'main');
  assert.equal(r.reason, 'answered_by_tool');
  assert.equal(r.model_calls, 2);
});

test('R12: after another tool, the model writes the answer', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 's', name: 'search_inbox', args: { query: 'sale' } }] },
    { tool_calls: [{ id: 'd', name: 'inbox_digest', args: {} }] },
    { text: 'Summary written by the model.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('find sales and summarize');
  assert.equal(r.reason, 'final_answer');
  assert.equal(r.answer, 'Summary written by the model.');
  assert.equal(r.model_calls, 3);
});

test('R12/R13: an answers_directly tool repeated with the same arguments ends on the result in hand; it ran once', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 's', name: 'search_inbox', args: {} }] },
    { tool_calls: [{ id: 'd1', name: 'inbox_digest', args: {} }] },
    { tool_calls: [{ id: 'd2', name: 'inbox_digest', args: {} }] },
    { text: 'never reached' },
  ]);
  t.after(() => h.close());
  const r = await h.run('summarize');
  assert.equal(r.reason, 'answered_by_tool');
  assert.equal(r.model_calls, 3);
  assert.match(r.answer ?? '', /You have 3 emails/);
  assert.equal(calls(h.home, 'mail-calls.log').filter((l) => l.startsWith('inbox_digest')).length, 1);
  assert.equal(r.steps.find((s) => s.call_id === 'd2')?.outcome, 'repeat');
});

test('R12: an answers_directly tool that returns an error or nothing goes back to the model', async (t) => {
  for (const args of [{ fail: true }, { empty: true }]) {
    const h = new Harness([{ tool_calls: [{ id: 'd', name: 'inbox_digest', args }] }, { text: 'The digest is unavailable right now.' }]);
    t.after(() => h.close());
    const r = await h.run('summarize');
    assert.equal(r.reason, 'final_answer', JSON.stringify(args));
    assert.equal(r.model_calls, 2);
  }
});

test('R13: a repeated read is not re-executed; a fan-out with different arguments is', async (t) => {
  const h = new Harness([
    { tool_calls: [DUES, { id: 'c2', name: 'upcoming_dues', args: { within_days: 30 } }] },
    { tool_calls: [{ id: 'c3', name: 'upcoming_dues', args: { within_days: 15 } }] },
    { text: 'ok' },
  ]);
  t.after(() => h.close());
  const r = await h.run('dues?');
  assert.deepEqual(
    r.steps.map((s) => s.outcome),
    ['ran', 'ran', 'repeat'],
  );
  assert.equal(calls(h.home, 'finance-calls.log').length, 2);
  assert.match(r.steps[2].result, /Wingtip Bank[\s\S]*Repeat: upcoming_dues was already called/);
});

test('R13: repeating a second time ends the run on the last usable result, with no further model call', async (t) => {
  const h = new Harness([
    { tool_calls: [DUES] },
    { tool_calls: [{ ...DUES, id: 'c2' }] },
    { tool_calls: [{ ...DUES, id: 'c3' }] },
    { text: 'never' },
  ]);
  t.after(() => h.close());
  const r = await h.run('dues?');
  assert.equal(r.reason, 'stalled');
  assert.equal(r.model_calls, 3);
  assert.match(r.answer ?? '', /^Wingtip Bank/);
  assert.equal(calls(h.home, 'finance-calls.log').length, 1);
});

test('R13: a write in the run invalidates cached reads', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 's1', name: 'search_inbox', args: {} }] },
    { tool_calls: [{ id: 'r', name: 'restore_email', args: { ids: ['m1'] } }] },
    { tool_calls: [{ id: 's2', name: 'search_inbox', args: {} }] },
    { text: 'ok' },
  ]);
  t.after(() => h.close());
  const r = await h.run('search the inbox, restore email m1, search again');
  assert.equal(r.steps.find((s) => s.call_id === 's2')?.outcome, 'ran');
  assert.equal(calls(h.home, 'mail-calls.log').filter((l) => l.startsWith('search_inbox')).length, 2);
});

test('R21: malformed JSON arguments become an error result under the call id; the run continues', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 'bad', name: 'upcoming_dues', arguments: '{"within_days": 1' }] }, { text: 'Sorry.' }]);
  t.after(() => h.close());
  const r = await h.run('dues?');
  assert.equal(r.status, 'done');
  assert.equal(r.steps[0].call_id, 'bad');
  assert.equal(r.steps[0].outcome, 'invalid_arguments');
  assert.match(r.steps[0].result, /not valid JSON/);
  assert.equal(calls(h.home, 'finance-calls.log').length, 0);
});

test('R21: arguments that fail the schema are refused before the tool runs', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 'x', name: 'upcoming_dues', args: { within_days: 'soon' } }] }, { text: 'ok' }]);
  t.after(() => h.close());
  const r = await h.run('dues?');
  assert.equal(r.steps[0].outcome, 'invalid_arguments');
  assert.match(r.steps[0].result, /within_days must be integer/);
});

test('R21/R24: an unknown tool is an error result suggesting the closest names', async (t) => {
  // A name no request declares (undeclared: the scripted model lets it through, as no real server would).
  const h = new Harness([{ tool_calls: [{ id: 'u', name: 'upcoming_due', args: {}, undeclared: true }] }, { text: 'ok' }]);
  t.after(() => h.close());
  const r = await h.run('dues?');
  assert.equal(r.steps[0].outcome, 'unknown_tool');
  assert.match(r.steps[0].result, /Unknown tool 'upcoming_due'.*Closest: upcoming_dues/);
});

test('R6: a tool that throws returns an error result, is charged to its plugin, and the run continues', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 'f', name: 'flaky_quote', args: { symbol: 'X' } }] },
    { text: 'The quote service is down.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('quote?');
  assert.equal(r.status, 'done');
  assert.equal(r.steps[0].outcome, 'error');
  assert.match(r.steps[0].result, /flaky_quote is unavailable \(quote service timed out\); answer without it/);
  const reg = await h.keel.registry([FIXTURES]);
  assert.equal(reg.plugins.find((p) => p.name === 'finance')?.runtime_failures, 1);
});

test('R20: the step cap halts with an interruption message that says what was done, why, and how to continue', async (t) => {
  const entries = Array.from({ length: 5 }, (_, i) => ({
    tool_calls: [{ id: `c${i}`, name: 'upcoming_dues', args: { within_days: i + 1 } }],
  }));
  const h = new Harness(entries, { limits: { maxSteps: 3 } });
  t.after(() => h.close());
  const r = await h.run('dues?');
  assert.equal(r.status, 'failed');
  assert.equal(r.reason, 'max_steps');
  assert.equal(r.model_calls, 3);
  assert.match(r.answer ?? '', /stopped before finishing: it reached the step limit \(3 model calls\)/);
  assert.match(r.answer ?? '', /Done so far: upcoming_dues ×3/);
  assert.match(r.answer ?? '', /KEEL_MAX_STEPS/);
  assert.doesNotMatch(r.answer ?? '', /done\b(?! so far)/i);
});

test('R20: consecutive tool failures halt the run', async (t) => {
  const entries = Array.from({ length: 6 }, (_, i) => ({ tool_calls: [{ id: `f${i}`, name: 'flaky_quote', args: { symbol: `S${i}` } }] }));
  const h = new Harness(entries, { limits: { maxConsecutiveFailures: 3 } });
  t.after(() => h.close());
  const r = await h.run('quotes');
  assert.equal(r.reason, 'halted');
  assert.equal(r.model_calls, 3);
  assert.match(r.answer ?? '', /3 tool calls failed in a row: an error from flaky_quote, three times; keel plugins check shows/);
});

test('R20: a halt on invalid arguments names the tool and how often, and does not blame the plugins (issue 26)', async (t) => {
  const entries = Array.from({ length: 4 }, (_, i) => ({
    tool_calls: [{ id: `u${i}`, name: 'upcoming_dues', args: { within_days: 'soon' } }],
  }));
  const h = new Harness(entries, { limits: { maxConsecutiveFailures: 4 } });
  t.after(() => h.close());
  const r = await h.run('which bills are due?');
  assert.equal(r.reason, 'halted');
  assert.deepEqual(
    r.steps.map((s) => s.outcome),
    ['invalid_arguments', 'invalid_arguments', 'invalid_arguments', 'invalid_arguments'],
  );
  assert.match(r.answer ?? '', /4 tool calls failed in a row: invalid arguments of upcoming_dues, four times\)/);
  assert.doesNotMatch(r.answer ?? '', /plugins check/);
});

test('P2: a script that runs out ends the run with model_error and a clear message', async (t) => {
  const h = new Harness([{ tool_calls: [DUES] }]);
  t.after(() => h.close());
  const r = await h.run('dues?');
  assert.equal(r.status, 'failed');
  assert.equal(r.reason, 'model_error');
  assert.match(r.notes.join(' '), /ran out: model call 2 was asked for but the script has 1 entry/);
});

test('R29: a write is recorded as an effect before it runs, even when it throws', async (t) => {
  const { makeToolSpec } = await import('../../src/tools/spec.js');
  const { normalizeDeclaration } = await import('../../src/manifest/schema.js');
  let seenEffects = -1;
  const h = new Harness([{ tool_calls: [{ id: 'w', name: 'wipe', args: {} }] }, { text: 'It failed halfway.' }]);
  const boom = makeToolSpec(
    {
      name: 'wipe',
      description: 'wipes',
      parameters: { type: 'object' },
      execute: async (_a, ctx) => {
        seenEffects = (await h.keel.store!.loadRun(ctx.run_id))!.effects.length;
        throw new Error('disk full');
      },
    },
    'test',
    normalizeDeclaration({ effect: 'write', confirm: 'never' }),
  );
  await h.keel.close();
  const { Keel } = await import('../../src/keel/keel.js');
  h.keel = new Keel({ home: h.home, extraTools: [boom] });
  t.after(() => h.close());
  const r = await h.run('wipe it');
  assert.equal(seenEffects, 1, 'the effect was in the store when the handler started');
  assert.deepEqual(
    r.effects.map((e) => [e.tool, e.effect]),
    [['wipe', 'write']],
  );
});

test('R14: the blocking result equals what the event stream carried', async (t) => {
  const h = new Harness([{ tool_calls: [DUES] }, { text: 'Two bills.' }]);
  t.after(() => h.close());
  const r = await h.run('dues?');
  const finished = h.events.filter((e) => e.type === 'run_finished');
  assert.equal(finished.length, 1);
  assert.deepEqual(finished[0].type === 'run_finished' && finished[0].result, r);
  assert.deepEqual(
    h.events.map((e) => e.type),
    ['run_started', 'model_request', 'assistant', 'tool_result', 'model_request', 'text_delta', 'assistant', 'run_finished'],
  );
});

test('R30/S1: the result carries model_calls, requests with declared tools, and steps', async (t) => {
  // A scripted model's requests are counted only when asked for.
  const h = new Harness([{ tool_calls: [DUES] }, { text: 'ok' }], { env: { ...process.env, KEEL_COUNT_TOKENS: '1' } });
  t.after(() => h.close());
  const r = await h.run('find my dues and create reminders');
  assert.equal(r.model_calls, 2);
  assert.equal(r.requests.length, 2);
  const names = r.requests[0].tools.map((t) => t.name);
  for (const n of ['ask_user', 'upcoming_dues', 'create_reminder']) assert.ok(names.includes(n), `${n} declared`);
  assert.ok(
    r.requests[0].tools.every((t) => t.available),
    'all available',
  );
  assert.ok((r.requests[0].input_tokens ?? 0) > 100, 'the request is counted');
});

test('R20: the time limit cuts a model call that is still running', async (t) => {
  const h = new Harness([{ delay_ms: 5000, text: 'too late' }], { limits: { timeoutMs: 150 } });
  t.after(() => h.close());
  const started = Date.now();
  const r = await h.run('slow');
  assert.equal(r.status, 'failed');
  assert.equal(r.reason, 'timeout');
  assert.ok(Date.now() - started < 4000, 'it did not wait for the model');
  assert.match(r.answer ?? '', /ran past the time limit/);
});

test('R30: a scripted model is not token-counted unless KEEL_COUNT_TOKENS=1 (its runs load no encoding)', async (t) => {
  const h = new Harness([{ text: 'ok' }], { env: { ...process.env, KEEL_COUNT_TOKENS: '' } });
  t.after(() => h.close());
  const r = await h.run('hello');
  assert.equal(r.requests[0].input_tokens, undefined);
});
