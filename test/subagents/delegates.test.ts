/**
 * Issue 38 (D1–D5): a delegate is a run. Its destructive call waits on the same durable card as
 * its parent's, runs once, and the parent finishes with its answer; its confirm-once writes ask
 * (the parent's yes is not its yes); task_stop of a waiting delegate cancels it (audited); limits
 * are results the model can act on.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { Keel } from '../../src/keel/keel.js';
import type { ScriptEntry } from '../../src/models/script.js';
import { defineTool } from '../../src/tools/define.js';
import type { RunState } from '../../src/types/index.js';
import type { KeelError } from '../../src/util/errors.js';
import { calls, FIXTURES, script, tempHome } from '../support/helpers.js';

const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));
const R1 = { title: 'Pay Wingtip Bank', due: '2026-07-01' };

interface Setup {
  home: string;
  keel: Keel;
}

/** A Keel whose config names one delegate, `cleaner`, scripted by `child`; options add to the subagents config. */
function setup(t: { after: (fn: () => unknown) => void }, child: ScriptEntry[], extra: object = {}, tools?: string[]): Setup {
  const home = tempHome();
  const config = {
    subagents: {
      max_concurrent: 2,
      ...extra,
      delegates: [
        {
          name: 'cleaner',
          description: 'tidies the inbox and the calendar',
          instructions: 'You tidy things up.',
          tools: tools ?? ['search_inbox', 'trash_email', 'create_reminder'],
          model: script(home, child, 'child.yaml'),
        },
      ],
    },
  };
  writeFileSync(join(home, 'config.yaml'), stringify(config));
  const keel = new Keel({ home, defaultPluginDirs: [FIXTURES] });
  t.after(() => keel.close());
  return { home, keel };
}

async function childOf(keel: Keel, parent: string, n = 0): Promise<RunState> {
  const rows = await keel.listRuns({ parent_run: parent });
  return keel.getRun(rows[rows.length - 1 - n].id);
}

async function until(keel: Keel, id: string, ok: (r: RunState) => boolean): Promise<RunState> {
  for (let i = 0; i < 500; i++) {
    const r = await keel.getRun(id);
    if (ok(r)) return r;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error(`run ${id} never reached the state waited for`);
}

test("D2/D3: a delegate's destructive call waits on a card that names the chain; approving it runs the call once, and the parent finishes with the delegate's answer", async (t) => {
  const { home, keel } = setup(t, [
    { tool_calls: [{ id: 'd1', name: 'trash_email', args: { ids: ['m1', 'm2'] } }] },
    { text: 'Trashed the two deals.' },
  ]);
  const r = await keel.run('Clean up my inbox', {
    model: script(home, [
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Trash the promotions m1 and m2.' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'The cleaner trashed the two deals.' },
    ]),
  });
  assert.equal(r.status, 'paused');
  assert.equal(r.reason, 'awaiting_task');
  assert.ok(r.status === 'paused' && r.reason === 'awaiting_task');
  assert.equal(r.task.id, 'tk_1');
  assert.equal(r.task.delegate, 'cleaner');
  const waiting = r.task.waiting;
  assert.ok(waiting?.reason === 'awaiting_approval', 'the delegate waits on its card, shown on the parent');
  assert.equal(waiting.run_id, r.task.run_id);
  assert.deepEqual(waiting.approval.card.chain, { delegate: 'cleaner', parent_run: r.run_id, request: 'Clean up my inbox' });
  assert.deepEqual(trashed(home), [], 'nothing ran before the card was answered');
  // The card is in the same inbox as every card (D3).
  const pending = await keel.listApprovals({ status: 'pending' });
  assert.deepEqual(
    pending.map((a) => a.run_id),
    [r.task.run_id],
  );
  // Stored: the parent waits for its delegate, the delegate for its card.
  const parent = await keel.getRun(r.run_id);
  assert.equal(parent.status, 'paused');
  assert.equal(parent.reason, 'awaiting_task');
  assert.equal(parent.pause?.kind, 'task');

  const end = await keel.approve(waiting.approval.id, { actor: 'owner' });
  assert.equal(end.run_id, r.run_id, "answering the delegate's card carries the parent on too");
  assert.equal(end.status, 'done');
  assert.equal(end.answer, 'The cleaner trashed the two deals.');
  assert.match(
    end.steps.find((s) => s.call_id === 'w')?.result ?? '',
    /Task tk_1 \(cleaner\): done; 2 model calls, tools run: trash_email\.\nTrashed the two deals\./,
  );
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m1","m2"]}'], 'exactly once');
  const child = await keel.getRun(r.task.run_id);
  assert.equal(child.status, 'done');
  assert.equal(child.steps.find((s) => s.call_id === 'd1')?.outcome, 'ran');
  await assert.rejects(keel.approve(waiting.approval.id), (e: KeelError) => e.code === 'conflict');
  assert.equal(trashed(home).length, 1);
});

test("D4: a delegate's confirm-once write asks the same person — the parent's yes to that tool is not the delegate's", async (t) => {
  const { home, keel } = setup(t, [
    { tool_calls: [{ id: 'd1', name: 'create_reminder', args: R1 }] },
    { tool_calls: [{ id: 'dq', name: 'ask_user', args: { question: 'Create the Wingtip reminder?' } }] },
    { tool_calls: [{ id: 'd2', name: 'create_reminder', args: R1 }] },
    { text: 'Reminder set.' },
  ]);
  const first = await keel.run('Set my reminders, and have the cleaner set one too', {
    model: script(home, [
      { tool_calls: [{ id: 'p1', name: 'create_reminder', args: { title: 'Mine', due: '2026-07-02' } }] },
      { tool_calls: [{ id: 'pq', name: 'ask_user', args: { question: 'Create your reminder?' } }] },
      { tool_calls: [{ id: 'p2', name: 'create_reminder', args: { title: 'Mine', due: '2026-07-02' } }] },
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Set a reminder to pay Wingtip Bank on 2026-07-01.' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'Both reminders are set.' },
    ]),
  });
  assert.equal(first.reason, 'awaiting_user_input');
  assert.ok(first.confirm, "the parent's own write asks first");
  const second = await keel.confirm(first.run_id, true);
  assert.ok(second.status === 'paused' && second.reason === 'awaiting_task', second.reason ?? '');
  const asks = second.task.waiting;
  assert.ok(
    asks?.reason === 'awaiting_user_input' && asks.confirm,
    "the delegate's write asks, although the parent's same tool was consented to",
  );
  assert.deepEqual(asks.confirm.tools, ['create_reminder']);
  const child = await keel.getRun(asks.run_id);
  assert.equal(child.steps.find((s) => s.call_id === 'd1')?.outcome, 'held_for_confirmation');
  assert.equal(calls(home, 'reminders.jsonl').length, 1, "only the parent's reminder so far");

  const end = await keel.confirm(asks.run_id, true);
  assert.equal(end.run_id, first.run_id);
  assert.equal(end.status, 'done');
  assert.equal(end.answer, 'Both reminders are set.');
  assert.deepEqual(
    calls(home, 'reminders.jsonl').map((l) => JSON.parse(l).title),
    ['Mine', 'Pay Wingtip Bank'],
  );
});

test('D2: task_stop of a delegate waiting on its card cancels its run (audited) and closes the card; nothing of it runs', async (t) => {
  const { home, keel } = setup(t, [{ tool_calls: [{ id: 'd1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'never' }]);
  const r = await keel.run('Clean up', {
    model: script(home, [
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Trash m1.' } }] },
      // The delegate reaches its card while the parent's model thinks.
      { delay_ms: 400, tool_calls: [{ id: 's', name: 'task_stop', args: { id: 'tk_1' } }] },
      { tool_calls: [{ id: 'l', name: 'task_list', args: {} }] },
      { text: 'Stopped the cleaner.' },
    ]),
  });
  assert.equal(r.status, 'done');
  assert.match(r.steps.find((s) => s.call_id === 's')?.result ?? '', /^Stopped task tk_1: its run was cancelled/);
  const child = await childOf(keel, r.run_id);
  assert.equal(child.status, 'failed');
  assert.equal(child.reason, 'cancelled');
  assert.match(r.steps.find((s) => s.call_id === 'l')?.result ?? '', new RegExp(`^tk_1 cleaner failed \\(cancelled\\) run ${child.id}$`));
  const cards = await keel.listApprovals({ run_id: child.id });
  assert.deepEqual(
    cards.map((a) => a.status),
    ['rejected'],
  );
  const audit = await keel.store!.listAudit(child.id);
  assert.ok(audit.some((a) => a.action === 'cancel_run' && a.actor === `run ${r.run_id} (task_stop)`));
  assert.deepEqual(trashed(home), []);
});

test('D5: limits are results the model can act on — concurrent delegates per run, and a delegate’s step budget', async (t) => {
  const { home, keel } = setup(
    t,
    [
      { delay_ms: 200, tool_calls: [{ id: 'd1', name: 'search_inbox', args: {} }] },
      { tool_calls: [{ id: 'd2', name: 'search_inbox', args: { query: 'x' } }] },
    ],
    { max_concurrent: 1, max_steps: 1 },
  );
  const r = await keel.run('Two jobs', {
    model: script(home, [
      {
        tool_calls: [
          { id: 't1', name: 'task', args: { agent: 'cleaner', prompt: 'one' } },
          { id: 't2', name: 'task', args: { agent: 'cleaner', prompt: 'two' } },
        ],
      },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'One job done.' },
    ]),
  });
  assert.equal(r.status, 'done');
  const t2 = r.steps.find((s) => s.call_id === 't2');
  assert.equal(t2?.is_error, true);
  assert.match(
    t2?.result ?? '',
    /^No task started: 1 delegates are already running for this run \(limit 1\)\. Wait for one with task_wait/,
  );
  assert.match(
    r.steps.find((s) => s.call_id === 'w')?.result ?? '',
    /^Task tk_1 \(cleaner\): failed; 1 model calls, tools run: search_inbox\./,
  );
  const child = await childOf(keel, r.run_id);
  assert.equal(child.reason, 'max_steps', 'the delegate stopped at its budget');
  assert.equal((await keel.listRuns({ parent_run: r.run_id })).length, 1, 'no second delegate');
});

test('D5: depth — at max_depth 1 (the default) a delegate has no task tool, even when its config names it', async (t) => {
  const { home, keel } = setup(
    t,
    [{ tool_calls: [{ id: 'dt', name: 'task', args: { agent: 'cleaner', prompt: 'deeper' }, undeclared: true }] }, { text: 'no deeper' }],
    {},
    ['search_inbox', 'task', 'task_wait'],
  );
  const r = await keel.run('Go', {
    model: script(home, [
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'go' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'ok' },
    ]),
  });
  assert.equal(r.status, 'done');
  const child = await childOf(keel, r.run_id);
  assert.equal(child.parent?.depth, 1);
  assert.equal(child.steps.find((s) => s.call_id === 'dt')?.outcome, 'unknown_tool', 'at max_depth 1 a delegate has no task tool');
  assert.ok(child.notes.includes('delegate cleaner: tools not available: task, task_wait'), 'the trace says why');
  assert.deepEqual(await keel.listRuns({ parent_run: child.id }), []);
});

test('D1: a delegate left running by a stopped leg is carried on by resuming its parent; the parent goes on when it ends', async (t) => {
  // The delegate's model takes long (the interruption cuts it short): the test interrupts while it
  // works, once the delegate's run is stored and running — not after a guessed delay.
  const { home, keel } = setup(t, [
    { delay_ms: 60_000, tool_calls: [{ id: 'd1', name: 'search_inbox', args: {} }] },
    { text: 'Three emails.' },
  ]);
  const controller = new AbortController();
  const parentModel = script(home, [
    { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'count' } }] },
    { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
    { text: 'You have three emails.' },
  ]);
  const started = keel.run('How many emails?', { model: parentModel, signal: controller.signal });
  let delegate: RunState | undefined;
  for (let i = 0; i < 500 && !delegate; i++) {
    await new Promise((res) => setTimeout(res, 20));
    for (const row of await keel.listRuns({})) {
      const run = await keel.getRun(row.id);
      if (run.parent && run.status === 'running') delegate = run;
    }
  }
  assert.ok(delegate, 'the delegate started');
  // Interrupt every leg of this Keel while the delegate's model works: both pause at a safe point.
  assert.ok(keel.interrupt('test stop') >= 1);
  const r = await started;
  assert.equal(r.status, 'paused');
  assert.equal(r.reason, 'awaiting_task', 'the parent waits for its delegate, stored');
  const child = await until(keel, (await childOf(keel, r.run_id)).id, (c) => c.status === 'paused');
  assert.equal(child.parent?.run_id, r.run_id);
  assert.equal(child.reason, 'interrupted');
  // Asked again on resume (the cut-short call is replayed), the delegate's model answers at once now.
  script(home, [{ tool_calls: [{ id: 'd1', name: 'search_inbox', args: {} }] }, { text: 'Three emails.' }], 'child.yaml');
  const end = await keel.resume(r.run_id, { model: parentModel });
  assert.equal(child.id, delegate.id);
  assert.equal(end.run_id, r.run_id);
  assert.equal(end.status, 'done');
  assert.equal(end.answer, 'You have three emails.');
});

test('D2: the owner cancels a delegate its parent waits for (keel runs cancel): the parent goes on with the delegate reported stopped', async (t) => {
  const { home, keel } = setup(t, [{ tool_calls: [{ id: 'd1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'never' }]);
  const r = await keel.run('Clean up', {
    model: script(home, [
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Trash m1.' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'The cleaner was stopped; nothing was trashed.' },
    ]),
  });
  assert.ok(r.status === 'paused' && r.reason === 'awaiting_task' && r.task.waiting?.reason === 'awaiting_approval');
  const cancelled = await keel.cancel(r.task.run_id, { actor: 'owner', reason: 'not now' });
  assert.equal(cancelled.reason, 'cancelled');
  const parent = await until(keel, r.run_id, (p) => p.status === 'done');
  assert.equal(parent.answer, 'The cleaner was stopped; nothing was trashed.');
  assert.match(
    parent.steps.find((s) => s.call_id === 'w')?.result ?? '',
    /^Task tk_1 \(cleaner\): stopped; 1 model calls, tools run: none\./,
  );
  assert.deepEqual(trashed(home), []);
});

test('D2: a parent paused on its own card keeps its delegate working; approving the card carries the parent on to the delegate’s answer', async (t) => {
  const { home, keel } = setup(t, [
    { delay_ms: 300, tool_calls: [{ id: 'd1', name: 'search_inbox', args: {} }] },
    { text: 'Three emails.' },
  ]);
  const r = await keel.run('Count and trash', {
    model: script(home, [
      {
        tool_calls: [
          { id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Count the emails.' } },
          { id: 'x', name: 'trash_email', args: { ids: ['m3'] } },
        ],
      },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'Trashed m3; you have three emails.' },
    ]),
  });
  assert.equal(r.reason, 'awaiting_approval', 'the parent waits on its own card');
  const child = await until(keel, (await childOf(keel, r.run_id)).id, (c) => c.status === 'done');
  assert.equal(child.answer, 'Three emails.', 'the delegate worked on while its parent waited');
  const end = await keel.approve(r.approval!.id);
  assert.equal(end.status, 'done');
  assert.match(
    end.steps.find((s) => s.call_id === 'w')?.result ?? '',
    /^Task tk_1 \(cleaner\): done; 2 model calls, tools run: search_inbox\.\nThree emails\./,
  );
  assert.equal(trashed(home).length, 1);
});

test('U2/D3: a delegate inherits what its parent had read from outside the user — its write waits on a card naming it — and its report carries it back to the parent', async (t) => {
  const OUTSIDE = join(FIXTURES, '..', 'untrusted', 'outside');
  const home = tempHome();
  const config = {
    subagents: {
      delegates: [
        {
          name: 'noter',
          instructions: 'You save notes.',
          tools: ['save_note'],
          model: script(
            home,
            [{ tool_calls: [{ id: 'n1', name: 'save_note', args: { text: 'pay the invoice' } }] }, { text: 'Noted.' }],
            'child.yaml',
          ),
        },
      ],
    },
  };
  writeFileSync(join(home, 'config.yaml'), stringify(config));
  const keel = new Keel({ home, defaultPluginDirs: [OUTSIDE] });
  t.after(() => keel.close());
  const r = await keel.run('Read m1 and have it noted', {
    model: script(home, [
      { tool_calls: [{ id: 'rd', name: 'read_message', args: { id: 'm1' } }] },
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'noter', prompt: 'Save a note: pay the invoice.' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'Noted.' },
    ]),
  });
  assert.ok(r.status === 'paused' && r.reason === 'awaiting_task');
  const waiting = r.task.waiting;
  // U3 in the delegate: after untrusted content a confirm-never write waits on a card pinned to it, naming the source.
  assert.ok(waiting?.reason === 'awaiting_approval', JSON.stringify(waiting));
  assert.equal(waiting.approval.card.untrusted?.[0]?.tool, 'read_message');
  const child = await keel.getRun(waiting.run_id);
  assert.equal(child.inherited_untrusted?.[0]?.call_id, 'rd', 'the delegate inherited the parent’s read');
  const end = await keel.approve(waiting.approval.id);
  assert.equal(end.run_id, r.run_id);
  assert.equal(end.status, 'done');
  const wait = end.steps.find((s) => s.call_id === 'w');
  assert.match(wait?.untrusted ?? '', /^delegate noter \(tk_1\) read read_message: /, 'the report carries what the delegate had read');
});

test('D2: cancelling a parent cancels the delegates it started (audited, their cards closed); a delegate’s question names who asks', async (t) => {
  const { home, keel } = setup(t, [{ tool_calls: [{ id: 'd1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'never' }]);
  const r = await keel.run('Clean up', {
    model: script(home, [
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Trash m1.' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'never' },
    ]),
  });
  assert.ok(r.status === 'paused' && r.reason === 'awaiting_task' && r.task.waiting?.reason === 'awaiting_approval');
  const cancelled = await keel.cancel(r.run_id, { actor: 'owner', reason: 'changed my mind' });
  assert.equal(cancelled.reason, 'cancelled');
  const child = await keel.getRun(r.task.run_id);
  assert.equal(child.status, 'failed');
  assert.equal(child.reason, 'cancelled');
  assert.deepEqual(
    (await keel.listApprovals({ run_id: child.id })).map((a) => a.status),
    ['rejected'],
  );
  const audit = await keel.store!.listAudit(child.id);
  assert.ok(
    audit.some((a) => a.action === 'cancel_run' && a.actor === 'owner' && a.detail.includes(`its parent run ${r.run_id} was cancelled`)),
  );
  assert.deepEqual(trashed(home), []);
});

test('D3: answerPauses tells the responder which delegate asks a question its parent waits for', async (t) => {
  const { home, keel } = setup(t, [
    { tool_calls: [{ id: 'dq', name: 'ask_user', args: { question: 'Which folder?' } }] },
    { text: 'Done with Inbox.' },
  ]);
  const first = await keel.run('Tidy', {
    model: script(home, [
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Tidy a folder.' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'Tidied.' },
    ]),
  });
  const asked: unknown[] = [];
  const { result } = await keel.answerPauses(first, {
    answer: async (question, _confirm, from) => {
      asked.push([question, from?.delegate, from?.parent_run]);
      return { text: 'Inbox' };
    },
    decide: async () => undefined,
  });
  assert.deepEqual(asked, [['Which folder?', 'cleaner', first.run_id]]);
  assert.equal(result.run_id, first.run_id);
  assert.equal(result.answer, 'Tidied.');
});

test("C8/D1: a delegate can use the application's tools declared in code — the Keel's and its parent run's own — under their gates", async (t) => {
  const home = tempHome();
  const ran: string[] = [];
  const lookup = defineTool({
    name: 'lookup_order',
    description: 'Look up an order',
    parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const,
    effect: 'read',
    execute: ({ id }) => `Order ${id}: shipped.`,
  });
  const refund = defineTool({
    name: 'refund_order',
    description: 'Refund an order',
    parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const,
    effect: 'destructive',
    describe: ({ id }) => ({ title: `Refund order ${id}`, lines: [] }),
    execute: ({ id }) => {
      ran.push(`refund ${id}`);
      return `Refunded ${id}.`;
    },
  });
  const child = [
    { tool_calls: [{ id: 'd1', name: 'lookup_order', args: { id: '7' } }] },
    { tool_calls: [{ id: 'd2', name: 'refund_order', args: { id: '7' } }] },
    { text: 'Refunded order 7.' },
  ];
  const config = {
    subagents: {
      delegates: [
        {
          name: 'clerk',
          instructions: 'You handle orders.',
          tools: ['lookup_order', 'refund_order'],
          model: script(home, child, 'child.yaml'),
        },
      ],
    },
  };
  writeFileSync(join(home, 'config.yaml'), stringify(config));
  const keel = new Keel({ home, tools: [lookup] });
  t.after(() => keel.close());
  const r = await keel.run('Refund order 7', {
    tools: [refund],
    model: script(home, [
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'clerk', prompt: 'Refund order 7.' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'Order 7 is refunded.' },
    ]),
  });
  assert.ok(r.status === 'paused' && r.reason === 'awaiting_task' && r.task.waiting?.reason === 'awaiting_approval', JSON.stringify(r));
  assert.deepEqual(ran, []);
  const end = await keel.approve(r.task.waiting.approval.id);
  assert.equal(end.run_id, r.run_id);
  assert.equal(end.answer, 'Order 7 is refunded.');
  assert.deepEqual(ran, ['refund 7'], "the delegate ran the application's destructive tool once, approved");
  const run = await keel.getRun(r.task.run_id);
  assert.equal(run.steps.find((s) => s.call_id === 'd1')?.result, 'Order 7: shipped.');
});

test('D5: the limit in total counts every delegate not over in the store', async (t) => {
  const { home, keel } = setup(t, [{ delay_ms: 200, text: 'one' }, { text: 'two' }], { max_concurrent: 5, max_total: 1 });
  const r = await keel.run('Two jobs', {
    model: script(home, [
      {
        tool_calls: [
          { id: 't1', name: 'task', args: { agent: 'cleaner', prompt: 'one' } },
          { id: 't2', name: 'task', args: { agent: 'cleaner', prompt: 'two' } },
        ],
      },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'One job done.' },
    ]),
  });
  assert.equal(r.status, 'done');
  assert.match(
    r.steps.find((s) => s.call_id === 't2')?.result ?? '',
    /^No task started: 1 delegates are already running in total \(limit 1\)/,
  );
});
