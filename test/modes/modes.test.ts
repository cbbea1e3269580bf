import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { Keel } from '../../src/keel/keel.js';
import type { ScriptEntry } from '../../src/models/script.js';
import type { Mode, RunResult } from '../../src/types/index.js';
import { calls, FIXTURES, ROOT, script, tempHome } from '../support/helpers.js';

const FILES = join(ROOT, 'test', 'fixtures', 'modes');
const dirs = [FILES, FIXTURES];

function setup(t: { after: (fn: () => unknown) => void }, config?: object) {
  const home = tempHome();
  if (config) writeFileSync(join(home, 'config.yaml'), stringify(config));
  const keel = new Keel({ home });
  t.after(() => keel.close());
  let n = 0;
  const run = (entries: ScriptEntry[], message: string, o: { mode?: Mode; session?: string } = {}) =>
    keel.run(message, { model: script(home, entries, `s${++n}.yaml`), pluginDirs: dirs, ...o });
  const file = (p: string) => (existsSync(join(home, 'files', p)) ? readFileSync(join(home, 'files', p), 'utf8') : undefined);
  return { home, keel, run, file };
}

const declared = (r: RunResult, req: number, name: string) => r.requests[req].tools.find((x) => x.name === name);

test('C3/C4 (seed 004): Plan mode after an Agent-mode write_file — still declared with the label and the same schema; the call is denied under its id; the loop goes on', async (t) => {
  const { keel, run, file } = setup(t);
  const agent = await run(
    [{ tool_calls: [{ id: 'w1', name: 'write_file', args: { path: 'a.md', content: 'v1' } }] }, { text: 'Wrote it.' }],
    'write a.md',
  );
  assert.equal(agent.status, 'done');
  assert.equal(file('a.md'), 'v1');
  const session = (await keel.getRun(agent.run_id)).session_id;

  const plan = await run(
    [
      { tool_calls: [{ id: 'w2', name: 'write_file', args: { path: 'a.md', content: 'v2' } }] },
      { text: 'In plan mode I can only propose.' },
    ],
    'now change it',
    { session, mode: 'plan' },
  );
  assert.equal(plan.mode, 'plan');
  for (const name of ['write_file', 'edit_file']) {
    const d = declared(plan, 1, name);
    assert.ok(d, `${name} declared in request 2`);
    assert.equal(d.available, false);
    assert.match(d.description, /^\[Unavailable in plan mode/);
    // What Agent mode declares: from the agent run's request when it was on that menu, else the tool's own schema.
    const agentDecl: { parameters?: unknown } | undefined =
      (await keel.getRun(agent.run_id)).requests.flatMap((q) => q.tools).find((x) => x.name === name && x.available) ??
      (await keel.registry(keel.pluginDirs(dirs))).byName.get(name);
    assert.ok(agentDecl, `${name} exists`);
    assert.equal(
      JSON.stringify((await keel.getRun(plan.run_id)).requests[1].tools.find((x) => x.name === name)?.parameters),
      JSON.stringify(agentDecl.parameters),
      'byte-identical schema',
    );
  }
  const w2 = plan.steps.find((s) => s.call_id === 'w2')!;
  assert.equal(w2.outcome, 'denied_by_mode');
  assert.equal(w2.is_error, true);
  assert.match(w2.result, /write_file is unavailable in plan mode/);
  assert.equal(file('a.md'), 'v1', 'nothing was written');
  assert.equal(plan.model_calls, 2, 'the loop made its next model call');
  assert.equal(plan.status, 'done');
  const msgs = (await keel.getRun(plan.run_id)).messages;
  assert.equal(msgs.filter((m) => m.role === 'user').length, 2, 'no extra user message');
  assert.ok(
    msgs.some((m) => m.role === 'tool' && m.call_id === 'w2'),
    'the result is under the original call id',
  );
  assert.match(plan.requests[0].system, /Unavailable in plan mode: write_file, edit_file/);
});

test('C3: a write tool without contract_modes: declare, never called, is not declared in Plan mode; calling it is unknown_tool under its id', async (t) => {
  const { run, file } = setup(t);
  const r = await run([{ tool_calls: [{ id: 'n1', name: 'add_note', args: { text: 'x' }, undeclared: true }] }, { text: 'ok' }], 'note', {
    mode: 'plan',
  });
  assert.equal(declared(r, 0, 'add_note'), undefined);
  assert.equal(declared(r, 0, 'create_reminder'), undefined, 'confirm-once writes are hidden too');
  assert.equal(declared(r, 0, 'trash_email'), undefined);
  assert.equal(declared(r, 0, 'submit_goal'), undefined, "not the other mode's submit tool");
  assert.ok(declared(r, 0, 'submit_plan')?.available);
  assert.ok(declared(r, 0, 'read_file')?.available);
  assert.equal(r.steps[0].call_id, 'n1');
  assert.equal(r.steps[0].outcome, 'unknown_tool');
  assert.equal(file('notes.txt'), undefined);
});

test('C3 beyond: a hidden tool the transcript already calls stays declared (labelled) in Plan mode', async (t) => {
  const { keel, run } = setup(t);
  const a = await run([{ tool_calls: [{ id: 'n1', name: 'add_note', args: { text: 'x' } }] }, { text: 'ok' }], 'note');
  const session = (await keel.getRun(a.run_id)).session_id;
  const p = await run([{ text: 'planning' }], 'plan more', { session, mode: 'plan' });
  const d = declared(p, 0, 'add_note');
  assert.ok(d);
  assert.equal(d.available, false);
  assert.match(d.description, /^\[Unavailable in plan mode/);
});

test('C4: a hook counting calls sees zero calls for a denied tool (and sees allowed ones)', async (t) => {
  const { home, run } = setup(t);
  await run(
    [
      {
        tool_calls: [
          { id: 'w', name: 'write_file', args: { path: 'x', content: 'y' } },
          { id: 'r', name: 'read_file', args: { path: 'x' } },
        ],
      },
      { text: 'ok' },
    ],
    'x',
    { mode: 'plan' },
  );
  assert.deepEqual(calls(home, 'hook-calls.log'), ['read_file plan']);
});

test('C9: malformed arguments to a denied tool never execute it', async (t) => {
  const { home, run, file } = setup(t);
  const r = await run(
    [
      {
        tool_calls: [
          { id: 'w', name: 'write_file', arguments: '{"path": "a", ' },
          { id: 'w2', name: 'write_file', args: { nope: 1 } },
        ],
      },
      { text: 'ok' },
    ],
    'x',
    { mode: 'goal' },
  );
  assert.deepEqual(
    r.steps.map((s) => s.outcome),
    ['denied_by_mode', 'denied_by_mode'],
  );
  assert.equal(file('a'), undefined);
  assert.deepEqual(calls(home, 'hook-calls.log'), []);
});

test('C5: a stale write_file handler captured in Agent mode refuses after the switch to Plan, and runs after the switch back', async (t) => {
  const { keel, run, file } = setup(t);
  const r = await run([{ tool_calls: [{ id: 'w', name: 'write_file', args: { path: 'a', content: '1' } }] }, { text: 'ok' }], 'write');
  const session = (await keel.getRun(r.run_id)).session_id;
  const handler = (await keel.registry(keel.pluginDirs(dirs))).byName.get('write_file')!.execute;
  const ctx = { run_id: r.run_id, call_id: 'stale', mode: 'agent' as Mode, request: '', signal: new AbortController().signal };
  await keel.setMode(session, 'plan');
  await assert.rejects(async () => handler({ path: 'a', content: 'stale' }, ctx), /write_file is unavailable in plan mode/);
  assert.equal(file('a'), '1');
  await keel.setMode(session, 'agent');
  await handler({ path: 'a', content: '2' }, { ...ctx, mode: 'plan' });
  assert.equal(file('a'), '2', 'a handler kept from Plan runs normally back in Agent mode');
});

test('C1/C7: submit_plan → approve → Agent mode → write_file runs through its normal gate; the plan is in the prompt', async (t) => {
  const { keel, run, file } = setup(t);
  const p = await run(
    [
      { tool_calls: [{ id: 'r', name: 'read_file', args: { path: 'a.md' } }] },
      {
        tool_calls: [
          {
            id: 'sp',
            name: 'submit_plan',
            args: { summary: 'create a.md', steps: ['Write a.md with a greeting', 'Set a reminder to review it'] },
          },
        ],
      },
      { tool_calls: [{ id: 'w', name: 'write_file', args: { path: 'a.md', content: 'hello' } }] },
      { tool_calls: [{ id: 'c', name: 'create_reminder', args: { title: 'Review a.md' } }] },
      { text: 'Done with step 1; step 2 needs your confirmation.' },
    ],
    'plan a greeting file',
    { mode: 'plan' },
  );
  assert.equal(p.status, 'paused');
  assert.equal(p.reason, 'awaiting_approval');
  assert.match(p.approval!.card.title, /Approve this plan: create a\.md\?/);
  assert.deepEqual(p.approval!.card.items[0].lines, ['1. Write a.md with a greeting', '2. Set a reminder to review it']);

  const { result } = await keel.respondToApproval(p.approval!.id, 'approve', 'ana');
  assert.equal(result.mode, 'agent');
  // The model answered with the reminder held: the core asks the person about it (issue 47).
  assert.equal(result.status, 'paused');
  assert.deepEqual(
    result.confirm?.items.map((i) => i.call_id),
    ['c'],
  );
  assert.equal(file('a.md'), 'hello');
  assert.equal(result.steps.find((s) => s.call_id === 'c')?.outcome, 'held_for_confirmation', 'normal gates apply');
  const after = result.requests[2];
  assert.match(after.system, /The user approved this plan \(create a\.md\)[\s\S]*1\. Write a\.md with a greeting/);
  assert.ok(
    after.tools.every((x) => x.available),
    'C7: no labels back in Agent mode',
  );
  assert.ok(!after.tools.some((x) => x.name === 'submit_plan'));
  const run2 = await keel.getRun(p.run_id);
  assert.deepEqual(run2.contract, {
    kind: 'plan',
    summary: 'create a.md',
    steps: ['Write a.md with a greeting', 'Set a reminder to review it'],
  });
});

test('C1: rejecting a plan keeps Plan mode; nothing was written', async (t) => {
  const { keel, run, file } = setup(t);
  const p = await run(
    [
      { tool_calls: [{ id: 'sp', name: 'submit_plan', args: { steps: ['Write a.md'] } }] },
      { tool_calls: [{ id: 'w', name: 'write_file', args: { path: 'a.md', content: 'x' } }] },
      { text: 'I will revise the plan.' },
    ],
    'plan',
    { mode: 'plan' },
  );
  const { result } = await keel.respondToApproval(p.approval!.id, 'reject', 'ana', 'too vague');
  assert.equal(result.mode, 'plan');
  assert.equal(result.steps.find((s) => s.call_id === 'w')?.outcome, 'denied_by_mode');
  assert.equal(file('a.md'), undefined);
});

test('C1: a goal carries outcome, criteria and boundaries into the prompt after approval', async (t) => {
  const { keel, run } = setup(t);
  const g = await run(
    [
      {
        tool_calls: [
          {
            id: 'g',
            name: 'submit_goal',
            args: { outcome: 'Inbox triaged', criteria: ['No promotions left'], boundaries: ['Do not delete personal mail'] },
          },
        ],
      },
      { tool_calls: [{ id: 'v', name: 'report_goal', args: { verified: [1], evidence: 'search found none' } }] },
      { text: 'Criterion 1 verified: no promotions left.' },
    ],
    'triage my inbox',
    { mode: 'goal' },
  );
  assert.match(g.approval!.card.items[0].lines.join('\n'), /criterion: No promotions left\nboundary: Do not delete personal mail/);
  const { result } = await keel.respondToApproval(g.approval!.id, 'approve', 'ana');
  assert.equal(result.mode, 'agent');
  assert.match(
    result.requests[1].system,
    /The user approved this goal: Inbox triaged[\s\S]*1\. No promotions left[\s\S]*Do not delete personal mail/,
  );
  assert.equal(result.status, 'done');
  assert.equal(result.reason, 'final_answer');
  assert.ok(
    result.requests[1].tools.some((x) => x.name === 'report_goal'),
    'report_goal exists under an approved goal',
  );
});

const DELEGATES = (home: string, entries: ScriptEntry[]) => ({
  subagents: {
    max_concurrent: 1,
    delegates: [
      {
        name: 'reader',
        instructions: 'You read files and report.',
        tools: ['read_file', 'write_file'],
        model: script(home, entries, 'delegate.yaml'),
      },
    ],
  },
});

test('C6: Goal mode with a delegate configured — task is denied under its id, zero delegates created; two calls, two denials in order', async (t) => {
  const home = tempHome();
  writeFileSync(join(home, 'config.yaml'), stringify(DELEGATES(home, [{ text: 'never' }])));
  const keel = new Keel({ home });
  t.after(() => keel.close());
  const r = await keel.run('do it', {
    model: script(home, [
      {
        tool_calls: [
          { id: 't1', name: 'task', args: { agent: 'reader', prompt: 'read a' } },
          { id: 't2', name: 'task', args: { agent: 'nobody', prompt: 'x' } },
          { id: 't3', name: 'task_list', args: {} },
        ],
      },
      { text: 'ok' },
    ]),
    pluginDirs: dirs,
    mode: 'goal',
  });
  assert.deepEqual(
    r.steps.map((s) => [s.call_id, s.outcome]),
    [
      ['t1', 'denied_by_mode'],
      ['t2', 'denied_by_mode'],
      ['t3', 'denied_by_mode'],
    ],
  );
  const sub = [...keel.subagents.values()][0]!;
  assert.equal(sub.created, 0);
  for (const name of ['task', 'task_wait', 'task_list', 'task_stop']) {
    const d = r.requests[0].tools.find((x) => x.name === name);
    assert.ok(d && !d.available && d.description.startsWith('[Unavailable in goal mode'), name);
  }
});

test('C3: with no delegate configured, the task family is not declared in a contract mode', async (t) => {
  const { run } = setup(t);
  const r = await run([{ text: 'ok' }], 'x', { mode: 'goal' });
  assert.equal(declared(r, 0, 'task'), undefined);
});

test('C8: task runs a delegate with an isolated history and its tool subset, through the same gate; task_wait returns its answer', async (t) => {
  const home = tempHome();
  const delegateScript: ScriptEntry[] = [
    {
      tool_calls: [
        { id: 'd1', name: 'read_file', args: { path: 'a' } },
        { id: 'd2', name: 'add_note', args: { text: 'sneaky' }, undeclared: true },
      ],
    },
    { text: 'The file says hi.' },
  ];
  writeFileSync(join(home, 'config.yaml'), stringify(DELEGATES(home, delegateScript)));
  const keel = new Keel({ home });
  t.after(() => keel.close());
  const { mkdirSync } = await import('node:fs');
  mkdirSync(join(home, 'files'), { recursive: true });
  writeFileSync(join(home, 'files', 'a'), 'hi');
  const r = await keel.run('what does a say?', {
    model: script(home, [
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'reader', prompt: 'Read file a and tell me what it says.' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'It says hi.' },
    ]),
    pluginDirs: dirs,
  });
  assert.equal(r.status, 'done');
  const wait = r.steps.find((s) => s.call_id === 'w')!;
  assert.match(wait.result, /Task tk_1 \(reader\): done; 2 model calls, tools run: read_file\.\nThe file says hi\./);
  // D1: the delegate is a run of its own, stored, its parent recorded.
  const [child] = await keel.listRuns({ parent_run: r.run_id });
  assert.equal(child.parent_run, r.run_id);
  const task = await keel.getRun(child.id);
  assert.deepEqual(task.parent && { ...task.parent }, {
    run_id: r.run_id,
    delegate: 'reader',
    depth: 1,
    task_id: 'tk_1',
    request: 'what does a say?',
  });
  const dsteps = task.steps;
  assert.equal(dsteps.find((s) => s.call_id === 'd2')?.outcome, 'unknown_tool', 'outside its subset');
  assert.equal(
    task.requests[0].tools.some((x) => !x.available),
    false,
    'a delegate never receives labelled declarations',
  );
  // A5 (issue 38): a delegate asks the same person, so ask_user is in every delegate's pool.
  assert.deepEqual(task.requests[0].tools.map((x) => x.name).sort(), ['ask_user', 'read_file', 'write_file']);
  assert.match(task.requests[0].system, /^You read files and report\./);
});

/** A delegate's run, once it has ended (it is driven in the background). */
async function endedRun(keel: Keel, id: string) {
  for (;;) {
    const run = await keel.getRun(id);
    if (run.status === 'done' || run.status === 'failed') return run;
    await new Promise((res) => setTimeout(res, 20));
  }
}

test('C5/C8: a delegate started in Agent mode cannot write after the session switches to Plan', async (t) => {
  const home = tempHome();
  // The delegate's model takes a moment, so the switch lands while it works.
  const delegateScript: ScriptEntry[] = [
    { delay_ms: 300, tool_calls: [{ id: 'd1', name: 'write_file', args: { path: 'b', content: 'late' } }] },
    { text: 'done' },
  ];
  writeFileSync(join(home, 'config.yaml'), stringify(DELEGATES(home, delegateScript)));
  const keel = new Keel({ home });
  t.after(() => keel.close());
  // The parent pauses right after starting the task; the user switches the session to Plan.
  const r = await keel.run('x', {
    model: script(home, [
      {
        tool_calls: [
          { id: 't', name: 'task', args: { agent: 'reader', prompt: 'write b' } },
          { id: 'q', name: 'ask_user', args: { question: 'ok?' } },
        ],
      },
    ]),
    pluginDirs: dirs,
  });
  assert.equal(r.status, 'paused');
  const session = (await keel.getRun(r.run_id)).session_id;
  await keel.setMode(session, 'plan');
  const [child] = await keel.listRuns({ parent_run: r.run_id });
  const res = await endedRun(keel, child.id);
  assert.equal(existsSync(join(home, 'files', 'b')), false);
  assert.match(res.steps.find((s) => s.call_id === 'd1')!.result, /write_file is unavailable in plan mode/);
});

test('hooks: onToolCall may block with a reason; onToolResult may rewrite the result', async (t) => {
  const { run, file } = setup(t);
  const r = await run(
    [
      {
        tool_calls: [
          { id: 'n', name: 'add_note', args: { text: 'blocked' } },
          { id: 'wr', name: 'write_file', args: { path: 'f', content: 'body' } },
        ],
      },
      { tool_calls: [{ id: 'rd', name: 'read_file', args: { path: 'f' } }] },
      { text: 'ok' },
    ],
    'x',
  );
  assert.match(r.steps[0].result, /add_note was not run: notes saying "blocked" are not allowed/);
  assert.equal(file('notes.txt'), undefined);
  assert.equal(r.steps.find((s) => s.call_id === 'rd')?.result, '[reviewed] body');
});

test('C1: a goal runs until each criterion is reported verified — an early answer is sent back, then the run halts; a boundary stops it', async (t) => {
  const { keel, run } = setup(t);
  const goal = { outcome: 'Files tidy', criteria: ['a.md exists', 'b.md exists'], boundaries: ['Never delete a file'] };
  const g = await run(
    [
      { tool_calls: [{ id: 'g', name: 'submit_goal', args: goal }] },
      { tool_calls: [{ id: 'v1', name: 'report_goal', args: { verified: [1], evidence: 'read it' } }] },
      { text: 'All done!' },
      { text: 'Really done.' },
      { text: 'Done, I promise.' },
    ],
    'tidy my files',
    { mode: 'goal' },
  );
  const { result } = await keel.respondToApproval(g.approval!.id, 'approve', 'ana');
  assert.equal(result.status, 'failed');
  assert.equal(result.reason, 'halted');
  assert.match(result.answer ?? '', /criteria 2 were never reported verified/);
  assert.equal(result.notes.filter((n) => n.startsWith('goal reminder')).length, 2);
  const msgs = (await keel.getRun(g.run_id)).messages.filter((m) => m.role === 'user');
  assert.match(msgs[msgs.length - 1].content, /^\[Keel\] The approved goal is not finished: criteria 2/);

  const b = await run(
    [
      { tool_calls: [{ id: 'g', name: 'submit_goal', args: goal }] },
      { tool_calls: [{ id: 'x', name: 'report_goal', args: { boundary: 'b.md can only be made by deleting c.md' } }] },
      { text: 'never reached' },
    ],
    'tidy my files',
    { mode: 'goal' },
  );
  const stopped = (await keel.respondToApproval(b.approval!.id, 'approve', 'ana')).result;
  assert.equal(stopped.reason, 'halted');
  assert.match(stopped.answer ?? '', /a boundary stops the goal: b\.md can only be made by deleting c\.md/);
  assert.equal(stopped.model_calls, 2);
});

test('C1: report_goal exists only under an approved goal', async (t) => {
  const { run } = setup(t);
  const r = await run([{ tool_calls: [{ id: 'x', name: 'report_goal', args: { verified: [1] }, undeclared: true }] }, { text: 'ok' }], 'x');
  assert.equal(r.steps[0].outcome, 'unknown_tool');
  assert.ok(!r.requests[0].tools.some((x) => x.name === 'report_goal'), 'not declared');
});
