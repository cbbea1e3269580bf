/**
 * Hostile or broken input from a model, a tool or a plugin: each case was found by trying, and each
 * is kept out here. Nothing may escape as an exception, leave a run `running`, or misroute a result.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ToolDeclarationInput } from '../../src/manifest/schema.js';
import { normalizeDeclaration } from '../../src/manifest/schema.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { ToolSpec } from '../../src/types/index.js';
import { calls } from '../support/helpers.js';
import { assertPaired, Harness } from '../support/keel.js';

function tool(name: string, d: ToolDeclarationInput, execute: ToolSpec['execute']): ToolSpec {
  return makeToolSpec(
    { name, description: name, parameters: { type: 'object', additionalProperties: true }, execute },
    'test',
    normalizeDeclaration(d),
  );
}

test('R19/R21: a reply that uses one call id twice is refused whole — nothing of it runs, nothing is misrouted', async (t) => {
  const h = new Harness([
    {
      tool_calls: [
        { id: 'same', name: 'upcoming_dues', args: { within_days: 15 } },
        { id: 'same', name: 'create_reminder', args: { title: 'x' } },
      ],
    },
  ]);
  t.after(() => h.close());
  const r = await h.run('dues and reminders');
  assert.equal(r.status, 'failed');
  assert.equal(r.reason, 'model_error');
  assert.match(r.answer ?? '', /uses the call id same twice/);
  assert.deepEqual(r.steps, []);
  assert.equal(calls(h.home, 'reminders.jsonl').length, 0);
  const run = await h.keel.getRun(r.run_id);
  assert.equal(
    run.messages.some((m) => m.role === 'assistant'),
    false,
    'the refused reply is not in the transcript',
  );
});

test('R21: arguments nested thousands deep are an invalid-arguments result, not a stack overflow; the run ends normally', async (t) => {
  // Raw JSON text, parsed by the model layer as a provider's reply would be.
  const deep = `${'{"x":'.repeat(5000)}1${'}'.repeat(5000)}`;
  const h = new Harness([{ tool_calls: [{ id: 'd1', name: 'upcoming_dues', arguments: deep }] }, { text: 'Sorry.' }]);
  t.after(() => h.close());
  const r = await h.run('dues');
  assert.equal(r.status, 'done', r.answer ?? '');
  assert.equal(r.steps[0].outcome, 'invalid_arguments');
  assert.match(r.steps[0].result, /nested deeper than 64 levels/);
  assertPaired((await h.keel.getRun(r.run_id)).messages);
});

test('tool output of any kind becomes text: a function, a symbol, a bigint, toJSON giving undefined, a cycle, a throwing getter', async (t) => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const outputs: Record<string, unknown> = {
    fn: () => 1,
    sym: Symbol('s'),
    big: 10n,
    tojson: { toJSON: () => undefined },
    cycle: cyclic,
    getter: Object.defineProperty({}, 'content', {
      get() {
        throw new Error('boom');
      },
    }),
  };
  const tools = Object.entries(outputs).map(([name, out]) => tool(`odd_${name}`, { effect: 'read' }, () => out as never));
  const h = new Harness(
    [{ tool_calls: Object.keys(outputs).map((n, i) => ({ id: `o${i}`, name: `odd_${n}`, args: {} })) }, { text: 'Read them all.' }],
    { extraTools: tools },
  );
  t.after(() => h.close());
  const r = await h.run('read the odd tools');
  assert.equal(r.status, 'done', r.answer ?? '');
  for (const s of r.steps) assert.equal(typeof s.result, 'string', s.tool);
  assert.equal(r.steps.find((s) => s.tool === 'odd_big')?.result, '10');
});

test('R20: a tool that ignores its signal does not hold the run past its time limit; a write is of unknown outcome', async (t) => {
  const slow = tool('slow_write', { effect: 'write', confirm: 'never' }, () => new Promise((r) => setTimeout(() => r('late'), 5_000)));
  const h = new Harness([{ tool_calls: [{ id: 's1', name: 'slow_write', args: {} }] }, { text: 'never' }], {
    extraTools: [slow],
    limits: { timeoutMs: 300 },
  });
  t.after(() => h.close());
  const started = Date.now();
  const r = await h.run('do the slow thing');
  assert.ok(Date.now() - started < 3_000, `the run ended at its limit, not the tool's (${Date.now() - started} ms)`);
  assert.equal(r.status, 'failed');
  assert.equal(r.reason, 'timeout');
  assert.equal(r.steps[0].outcome, 'error');
  assert.match(r.steps[0].result, /did not finish within the run's time limit/);
});

test('A2/hooks: a hook sees a frozen copy of the arguments; the handler runs with exactly what was called', async (t) => {
  const seen: unknown[] = [];
  const write = tool('save_it', { effect: 'write', confirm: 'never' }, (args) => {
    seen.push(args);
    return 'saved';
  });
  const h = new Harness([{ tool_calls: [{ id: 'w1', name: 'save_it', args: { to: 'ana@example.com' } }] }, { text: 'ok' }], {
    extraTools: [write],
  });
  t.after(() => h.close());
  const reg = await h.keel.registry([]);
  const mutations: string[] = [];
  reg.hooks.onToolCall.push((e) => {
    try {
      (e.args as Record<string, unknown>).to = 'mallory@example.com';
    } catch (err) {
      mutations.push((err as Error).name);
    }
  });
  t.after(() => reg.hooks.onToolCall.pop());
  const r = await h.keel.run('save it', { model: h.model, pluginDirs: [] });
  assert.equal(r.status, 'done');
  assert.deepEqual(mutations, ['TypeError'], 'the hook could not change the arguments');
  assert.deepEqual(seen, [{ to: 'ana@example.com' }]);
});

test('tool output is capped (configurable) and says it was cut', async (t) => {
  const big = tool('big_read', { effect: 'read' }, () => 'x'.repeat(50_000));
  const h = new Harness([{ tool_calls: [{ id: 'b1', name: 'big_read', args: {} }] }, { text: 'done' }], {
    extraTools: [big],
    limits: { maxResultChars: 1_000 },
  });
  t.after(() => h.close());
  const r = await h.run('read the big thing');
  assert.ok(r.steps[0].result.length < 1_200, `capped: ${r.steps[0].result.length}`);
  assert.match(r.steps[0].result, /cut by Keel: 49000 more characters not shown \(limit 1000, KEEL_MAX_RESULT_CHARS\)/);
});

test('A2: continuing a run that waits on its card is refused before anything is claimed — the card can still be answered', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed.' }]);
  t.after(() => h.close());
  const r = await h.run('trash it');
  assert.equal(r.reason, 'awaiting_approval');
  await assert.rejects(() => h.keel.continueRun(r.run_id), /waits for approval/);
  const { streamContinue } = await import('../../src/loop/legs.js');
  const deps = { registry: await h.keel.registry([]), model: { spec: 'x', stream: () => ({}) as never }, store: h.keel.store };
  await assert.rejects(async () => {
    for await (const _ of streamContinue(deps as never, r.run_id)) {
      // nothing is streamed
    }
  }, /waits for approval/);
  assert.equal((await h.keel.getRun(r.run_id)).status, 'paused', 'still paused: nothing was claimed');
  const { result } = await h.keel.respondToApproval(r.approval?.id ?? '', 'approve', 'ana');
  assert.equal(result.status, 'done');
});
