/**
 * S4: the conformance suite every `Store` implementation must pass (SQLite now, PostgreSQL later).
 * It speaks only the `Store` interface: no SQL, nothing of one implementation. Each test opens its
 * own store with `open()`, which must return an empty store, and closes it when the test ends.
 *
 * Usage, from an implementation's test file:
 *   storeConformance('sqlite file', () => new SqliteStore(join(tempHome(), 'keel.db')));
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { permanentStoreError } from '../../src/store/errors.js';
import type {
  ApprovalCard,
  ApprovalItem,
  ApprovalRecord,
  CallRecord,
  DeclaredTool,
  JournalEntry,
  Message,
  Pause,
  RequestTrace,
  RunEvent,
  RunState,
  RunSummary,
  SessionRecord,
  Store,
} from '../../src/types/index.js';
import { storableText } from '../../src/util/text.js';

const T0 = Date.parse('2025-03-01T09:00:00.000Z');
/** A fixed ISO timestamp `minutes` after T0, so every expectation is deterministic. */
export const at = (minutes: number): string => new Date(T0 + minutes * 60_000).toISOString();

const MENU: DeclaredTool[] = [
  {
    name: 'search_email',
    description: 'Search the mailbox.',
    parameters: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' } }, required: ['query'] },
    available: true,
  },
  {
    name: 'trash_email',
    description: 'Move emails to Trash.',
    parameters: { type: 'object', properties: { ids: { type: 'array', items: { type: 'string' } } }, required: ['ids'] },
    available: false,
  },
];

const CARD: ApprovalCard = {
  title: 'Trash 2 emails',
  items: [
    {
      tool: 'trash_email',
      title: 'Move to Trash',
      lines: ['Your weekly deals', 'Flash sale ends tonight'],
      undo: 'reversible with restore_email',
      call: 'trash_email({"ids":["m1","m2"]})',
    },
  ],
  request: 'trash the promotions',
};

const ITEMS: ApprovalItem[] = [
  { call_id: 'c3', tool: 'trash_email', args: { ids: ['m1', 'm2'] }, card: { title: 'Move to Trash', lines: ['Your weekly deals'] } },
];

const HELD: CallRecord = {
  step: 2,
  call_id: 'c3',
  tool: 'trash_email',
  args: { ids: ['m1', 'm2'] },
  outcome: 'awaiting_approval',
  result: '',
  is_error: false,
  effect: 'destructive',
  by_core: true,
};

export function approvalPause(seq: number, approvalId = `ap-${seq}`): Pause {
  return {
    kind: 'approval',
    seq,
    approval_id: approvalId,
    card: CARD,
    step: 2,
    items: ITEMS,
    results: [
      { call_id: 'c3', name: 'trash_email', is_error: false },
      { call_id: 'c4', name: 'search_email', content: '[]', is_error: false },
    ],
    calls: [HELD],
  };
}

export function askPause(seq: number): Pause {
  return {
    kind: 'ask_user',
    seq,
    call_id: `ask-${seq}`,
    question: 'Which folder — "Promotions" or "Deals"?',
    step: 3,
    results: [{ call_id: `ask-${seq}`, name: 'ask_user', is_error: false }],
    calls: [],
  };
}

/**
 * A realistic paused run (awaiting approval at pause 1): every RunState field set, messages of all
 * three roles (parsed and unparsable tool arguments), calls with and without an effect, requests with
 * and without token counts, non-ASCII text.
 */
export function sampleRun(id: string, over: Partial<RunState> = {}): RunState {
  return {
    id,
    status: 'paused',
    reason: 'awaiting_approval',
    request: 'trash the promotions — all of them, café ✓',
    mode: 'agent',
    model: 'script:/tmp/model.yaml',
    plugin_dirs: ['/opt/keel/plugins/mail', '/home/ana/.keel/plugins'],
    answer: null,
    pause: approvalPause(1),
    pause_seq: 1,
    model_calls: 2,
    effects: [{ call_id: 'c3', tool: 'trash_email', effect: 'destructive', args: { ids: ['m1', 'm2'] } }],
    messages: [
      { role: 'user', content: 'trash the promotions — all of them, café ✓' },
      {
        role: 'assistant',
        content: 'Looking first.',
        tool_calls: [
          { id: 'c1', name: 'search_email', args: { query: 'label:promotions', limit: 5, nested: { deep: [1, null, true] } } },
          { id: 'c2', name: 'search_email', raw_args: '{"query": "deals", ' },
        ],
      },
      { role: 'tool', call_id: 'c1', name: 'search_email', content: '[{"id":"m1"},{"id":"m2"}]', is_error: false },
      { role: 'tool', call_id: 'c2', name: 'search_email', content: 'arguments are not valid JSON', is_error: true },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c3', name: 'trash_email', args: { ids: ['m1', 'm2'] } }] },
    ],
    steps: [
      {
        step: 1,
        call_id: 'c1',
        tool: 'search_email',
        args: { query: 'label:promotions', limit: 5, nested: { deep: [1, null, true] } },
        outcome: 'ran',
        result: '[{"id":"m1"},{"id":"m2"}]',
        is_error: false,
        effect: 'read',
        by_core: false,
      },
      {
        step: 1,
        call_id: 'c2',
        tool: 'search_email',
        args: null,
        outcome: 'invalid_arguments',
        result: 'arguments are not valid JSON',
        is_error: true,
        by_core: true,
      },
      HELD,
    ],
    requests: [
      {
        step: 1,
        system: 'You are Keel.\nBe careful with destructive tools.',
        tools: MENU,
        dropped: [],
        input_tokens: 812,
        usage: { input: 812, output: 64, cost: 0.0012 },
      },
      {
        step: 2,
        system: 'You are Keel.\nBe careful with destructive tools.',
        tools: MENU,
        dropped: ['restore_email'],
        found: ['archive_email'],
        usage: { input: 901, output: 12 },
      },
    ],
    notes: ['mode agent', 'tool trash_email needs approval'],
    warnings: ['plugin weather is degraded: tool forecast is registered by plugin weather but not declared'],
    session_id: `session-${id}`,
    seq_base: 3,
    contract: { kind: 'plan', summary: 'Clean the inbox', steps: ['find promotions', 'trash them'] },
    owner: 'host-a:1234',
    created_at: at(0),
    updated_at: at(1),
    ...over,
  };
}

/** One more exchange for a run's trace: an assistant call, its result, its record, its request. */
function exchange(step: number): { messages: Message[]; steps: CallRecord[]; requests: RequestTrace[] } {
  const call_id = `s${step}`;
  return {
    messages: [
      { role: 'assistant', content: `step ${step}`, tool_calls: [{ id: call_id, name: 'search_email', args: { query: `q${step}` } }] },
      { role: 'tool', call_id, name: 'search_email', content: `result ${step}`, is_error: false },
    ],
    steps: [
      {
        step,
        call_id,
        tool: 'search_email',
        args: { query: `q${step}` },
        outcome: 'ran',
        result: `result ${step}`,
        is_error: false,
        effect: 'read',
        by_core: false,
      },
    ],
    requests: [{ step, system: `System prompt at step ${step}`, tools: MENU, dropped: [], input_tokens: 100 + step }],
  };
}

function append(run: RunState, step: number): void {
  const x = exchange(step);
  run.messages.push(...x.messages);
  run.steps.push(...x.steps);
  run.requests.push(...x.requests);
}

const lengths = (r: RunState | undefined) => ({ messages: r?.messages.length, steps: r?.steps.length, requests: r?.requests.length });

function summaryOf(r: RunState): RunSummary {
  return {
    id: r.id,
    session_id: r.session_id,
    status: r.status,
    reason: r.reason,
    request: r.request,
    mode: r.mode,
    model: r.model,
    model_calls: r.model_calls,
    created_at: r.created_at,
    updated_at: r.updated_at,
    parent_run: r.parent?.run_id ?? null,
  };
}

function approval(id: string, run_id: string, minutes: number, over: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return {
    id,
    run_id,
    pause_seq: 1,
    items: ITEMS,
    card: CARD,
    status: 'pending',
    requested_at: at(minutes),
    expires_at: at(minutes + 60),
    answered_at: null,
    answered_by: null,
    reason: null,
    consent_writes: false,
    ...over,
  };
}

export function storeConformance(name: string, open: () => Promise<Store> | Store): void {
  async function fresh(t: TestContext): Promise<Store> {
    const store = await open();
    t.after(() => store.close());
    return store;
  }

  const refused = (p: Promise<unknown>) =>
    p.then(
      () => false,
      () => true,
    );

  test(`${name}: S4 kind names the implementation`, async (t) => {
    const store = await fresh(t);
    assert.equal(typeof store.kind, 'string');
    assert.notEqual(store.kind, '');
  });

  test(`${name}: D5 (issue 47) createRun with a limit counts the delegates' runs not over and inserts atomically — many at once, exactly the limit start`, async (t) => {
    const store = await fresh(t);
    const delegate = (id: string, over: Partial<RunState> = {}) =>
      sampleRun(id, {
        status: 'running',
        reason: null,
        pause: null,
        owner: null,
        parent: { run_id: 'run-parent', delegate: 'cleaner', depth: 1, task_id: 'tk_1', request: 'clean up' },
        ...over,
      });
    const limit = { activeDelegates: 2 };
    assert.equal(
      await store.createRun(sampleRun('run-parent', { status: 'running', reason: null, pause: null, owner: null }), limit),
      true,
    );
    assert.equal(
      await store.createRun(sampleRun('run-top', { status: 'running', reason: null, pause: null, owner: null })),
      true,
      'no limit',
    );
    // Six started at once (on PostgreSQL, on as many connections): two are stored, four refused with nothing stored.
    const made = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => store.createRun(delegate(`run-d${i}`), limit)));
    assert.equal(made.filter(Boolean).length, 2, JSON.stringify(made));
    const kept = [1, 2, 3, 4, 5, 6].filter((_, i) => made[i]);
    for (const [i, ok] of made.entries()) assert.equal((await store.loadRun(`run-d${i + 1}`)) !== undefined, ok, `run-d${i + 1}`);
    assert.equal(
      await store.createRun(
        delegate('run-d7', { status: 'paused', reason: 'awaiting_user_input', pause: askPause(1), pause_seq: 1 }),
        limit,
      ),
      false,
    );
    // A delegate's run that ended frees its place; runs without a parent never count.
    const first = await store.loadRun(`run-d${kept[0]}`);
    assert.ok(first);
    await store.saveRun({ ...first, status: 'done', reason: 'final_answer', answer: 'done' });
    assert.equal(await store.createRun(delegate('run-d8'), limit), true);
    assert.equal(await store.createRun(delegate('run-d9'), limit), false);
    assert.equal(await store.createRun(delegate('run-d10'), { activeDelegates: 3 }), true, 'a larger limit');
  });

  test(`${name}: S4/R26 createRun + loadRun round-trip every RunState field (both pause kinds)`, async (t) => {
    const store = await fresh(t);
    const a = sampleRun('run-a');
    const b = sampleRun('run-b', {
      status: 'paused',
      reason: 'awaiting_user_input',
      pause: askPause(4),
      pause_seq: 4,
      mode: 'goal',
      contract: { kind: 'goal', outcome: 'Inbox zero', criteria: ['no promotions left'], boundaries: ['never delete starred mail'] },
      owner: null,
    });
    const c = sampleRun('run-c', {
      status: 'running',
      reason: null,
      pause: null,
      contract: null,
      effects: [],
      notes: [],
      messages: [{ role: 'user', content: 'hi' }],
      steps: [],
      requests: [],
      plugin_dirs: [],
    });
    const d = sampleRun('run-d', { status: 'done', reason: 'final_answer', answer: 'Moved both to Trash.', pause: null });
    for (const r of [a, b, c, d]) await store.createRun(structuredClone(r));
    for (const r of [a, b, c, d]) assert.deepEqual(await store.loadRun(r.id), r, `round-trip of ${r.id}`);
    assert.equal(await store.loadRun('no-such-run'), undefined);
  });

  test(`${name}: S4/R26 saveRun appends what is new and rewrites the scalar fields, across several saves`, async (t) => {
    const store = await fresh(t);
    const run = sampleRun('run-1');
    const other = sampleRun('run-2');
    await store.createRun(structuredClone(run));
    await store.createRun(structuredClone(other));

    // Resumed from the approval: one exchange more, running.
    append(run, 3);
    Object.assign(run, { status: 'running', reason: null, pause: null, model_calls: 3, updated_at: at(2) });
    run.effects.push({ call_id: 's3', tool: 'archive_email', effect: 'write', args: { id: 'm3' } });
    await store.saveRun(run);
    assert.deepEqual(await store.loadRun(run.id), run, 'after save 1');

    // Nothing changed: nothing is appended.
    await store.saveRun(run);
    await store.saveRun(structuredClone(run));
    assert.deepEqual(lengths(await store.loadRun(run.id)), lengths(run), 'a save without change appends nothing');
    assert.deepEqual(await store.loadRun(run.id), run, 'after the saves without change');

    // Several exchanges in one save; mode, contract, notes change; then it pauses to ask the user.
    append(run, 4);
    append(run, 5);
    run.messages.push({ role: 'user', content: 'and the newsletters too' });
    Object.assign(run, {
      status: 'paused',
      reason: 'awaiting_user_input',
      mode: 'plan',
      pause: askPause(2),
      pause_seq: 2,
      model_calls: 6,
      contract: { kind: 'goal', outcome: 'Inbox zero', criteria: ['no promotions'], boundaries: ['keep starred'] },
      updated_at: at(3),
    });
    run.notes.push('asked the user');
    await store.saveRun(run);
    assert.deepEqual(await store.loadRun(run.id), run, 'after save 3');

    // Finished.
    append(run, 6);
    Object.assign(run, {
      status: 'done',
      reason: 'final_answer',
      answer: 'Done: 3 emails trashed.',
      pause: null,
      model_calls: 7,
      contract: null,
    });
    run.updated_at = at(4);
    await store.saveRun(run);
    const loaded = await store.loadRun(run.id);
    assert.deepEqual(loaded, run, 'after save 4');
    assert.deepEqual(
      loaded?.steps.map((s) => s.call_id),
      ['c1', 'c2', 'c3', 's3', 's4', 's5', 's6'],
      'calls in the order they were appended',
    );
    assert.deepEqual(
      loaded?.requests.map((r) => r.step),
      [1, 2, 3, 4, 5, 6],
      'requests in the order they were appended',
    );

    // The other run's trace was not touched by this one's saves.
    assert.deepEqual(await store.loadRun(other.id), other, 'the other run is unchanged');
    append(other, 3);
    await store.saveRun(other);
    assert.deepEqual(await store.loadRun(other.id), other, 'the other run appends from its own length');
    assert.deepEqual(await store.loadRun(run.id), run, 'and the first run is still as saved');
  });

  test(`${name}: S4/R18 a run loaded from the store (as a new process would) appends after what is stored`, async (t) => {
    const store = await fresh(t);
    const original = sampleRun('run-1');
    await store.createRun(structuredClone(original));
    append(original, 3);
    await store.saveRun(original);

    const copy = await store.loadRun(original.id);
    assert.notEqual(copy, undefined);
    const run = copy as RunState;
    append(run, 4);
    run.messages.push({ role: 'user', content: 'thanks' });
    Object.assign(run, { status: 'done', reason: 'final_answer', answer: 'ok', pause: null, model_calls: 5, updated_at: at(9) });
    await store.saveRun(run);
    assert.deepEqual(await store.loadRun(run.id), run);

    // Loaded again and saved unchanged: still the same.
    const again = (await store.loadRun(run.id)) as RunState;
    await store.saveRun(again);
    assert.deepEqual(await store.loadRun(run.id), run);
  });

  test(`${name}: S4/R19 saveRun refuses a run whose messages, steps or requests shrank; the stored run is unchanged`, async (t) => {
    const store = await fresh(t);
    const run = sampleRun('run-1');
    await store.createRun(structuredClone(run));
    append(run, 3);
    await store.saveRun(run);
    const stored = structuredClone(run);

    for (const k of ['messages', 'steps', 'requests'] as const) {
      for (const keep of [run[k].length - 1, 0]) {
        const shrunk = { ...structuredClone(run), status: 'done' as const, reason: 'final_answer' as const, answer: 'rewritten' };
        (shrunk[k] as unknown[]).length = keep;
        assert.equal(await refused(store.saveRun(shrunk)), true, `${k} cut to ${keep} must be refused`);
        assert.deepEqual(await store.loadRun(run.id), stored, `${k} cut to ${keep}: the stored run is unchanged`);
      }
    }

    // A loaded copy that lost a message is refused too.
    const loaded = (await store.loadRun(run.id)) as RunState;
    loaded.messages.pop();
    await assert.rejects(store.saveRun(loaded));
    assert.deepEqual(await store.loadRun(run.id), stored, 'after the refused loaded copy');

    // The refusals left nothing behind: the run still grows normally.
    append(run, 4);
    run.model_calls = 4;
    await store.saveRun(run);
    assert.deepEqual(await store.loadRun(run.id), run, 'a valid save after the refusals');
  });

  test(`${name}: S4/R26 a save that fails rolls back whole; the same save then succeeds whole`, async (t) => {
    const store = await fresh(t);
    const run = sampleRun('run-1');
    await store.createRun(structuredClone(run));
    const before = structuredClone(run);

    // A new exchange with a system prompt and menu the store has never seen, and an effect whose
    // arguments cannot be serialised (a bigint): a store may refuse it, but then it must write nothing.
    const menu: DeclaredTool[] = [{ name: 'archive_email', description: 'Archive.', parameters: { type: 'object' }, available: true }];
    run.messages.push({ role: 'user', content: 'archive m3' });
    run.steps.push({ ...exchange(3).steps[0] });
    run.requests.push({ step: 3, system: 'A system prompt used for the first time', tools: menu, dropped: [], input_tokens: 42 });
    run.effects.push({ call_id: 's3', tool: 'archive_email', effect: 'write', args: { n: 10n } });
    run.model_calls = 3;
    if (await refused(store.saveRun(run))) {
      assert.deepEqual(await store.loadRun(run.id), before, 'a failed save leaves the stored run as it was');
    }

    // The same save, now serialisable: everything it holds is stored, the new request included.
    run.effects[run.effects.length - 1].args = { n: 10 };
    await store.saveRun(run);
    const loaded = await store.loadRun(run.id);
    assert.deepEqual(lengths(loaded), lengths(run), 'nothing lost to the failed save');
    assert.deepEqual(loaded, run);

    // And it keeps growing from there.
    append(run, 4);
    await store.saveRun(run);
    assert.deepEqual(await store.loadRun(run.id), run, 'a later save');
  });

  test(`${name}: S4/R26 listRuns lists newest first, respects the limit, and returns the summary fields`, async (t) => {
    const store = await fresh(t);
    const runs = [0, 1, 2].map((i) =>
      sampleRun(`run-${i}`, { created_at: at(10 * i), updated_at: at(10 * i + 1), session_id: `s-${i}`, model_calls: i }),
    );
    for (const r of runs) await store.createRun(structuredClone(r));
    assert.deepEqual(await store.listRuns(), [runs[2], runs[1], runs[0]].map(summaryOf), 'all, newest first');
    assert.deepEqual(await store.listRuns({ limit: 2 }), [runs[2], runs[1]].map(summaryOf), 'limit 2');
    assert.deepEqual(await store.listRuns({ limit: 10 }), [runs[2], runs[1], runs[0]].map(summaryOf), 'limit above the count');

    // A save shows in the summary.
    Object.assign(runs[0], { status: 'done', reason: 'final_answer', answer: 'ok', pause: null, model_calls: 9, updated_at: at(50) });
    await store.saveRun(runs[0]);
    assert.deepEqual((await store.listRuns()).at(-1), summaryOf(runs[0]), 'the oldest run, after its save');
  });

  test(`${name}: S4/R17/R18 claimPause takes a pause once, at its seq only`, async (t) => {
    const store = await fresh(t);
    await store.createRun(sampleRun('run-1', { pause_seq: 3, pause: approvalPause(3), owner: 'host-a:1' }));
    await store.createRun(sampleRun('run-done', { status: 'done', reason: 'final_answer', pause: null, pause_seq: 3 }));

    assert.equal(await store.claimPause('run-1', 2, 'host-b:2'), false, 'an earlier seq');
    assert.equal(await store.claimPause('run-1', 4, 'host-b:2'), false, 'a later seq');
    assert.equal((await store.loadRun('run-1'))?.status, 'paused', 'a refused claim changes nothing');

    assert.equal(await store.claimPause('run-1', 3, 'host-b:2'), true, 'the first claim at the right seq');
    const claimed = await store.loadRun('run-1');
    assert.equal(claimed?.status, 'running');
    assert.equal(claimed?.owner, 'host-b:2');
    assert.equal(claimed?.pause_seq, 3);

    assert.equal(await store.claimPause('run-1', 3, 'host-c:3'), false, 'a second claim of the same pause');
    assert.equal((await store.loadRun('run-1'))?.owner, 'host-b:2', 'the second claim did not take the owner');
    assert.equal(await store.claimPause('run-done', 3, 'host-b:2'), false, 'a finished run');
    assert.equal(await store.claimPause('no-such-run', 1, 'host-b:2'), false, 'an unknown run');

    // The claimer saves on; the run can pause again and be claimed at the next seq.
    const run = claimed as RunState;
    append(run, 3);
    Object.assign(run, { status: 'paused', reason: 'awaiting_user_input', pause: askPause(4), pause_seq: 4 });
    await store.saveRun(run);
    assert.equal(await store.claimPause('run-1', 3, 'host-c:3'), false, 'the old pause stays taken');
    assert.equal(await store.claimPause('run-1', 4, 'host-c:3'), true, 'the new pause');
    assert.equal((await store.loadRun('run-1'))?.owner, 'host-c:3');
  });

  test(`${name}: issue 40 claimToCancel takes a pause and closes the run's pending cards in one transaction; a card answered first refuses it`, async (t) => {
    const store = await fresh(t);
    const close = { actor: 'ben', reason: 'the run was cancelled', at: at(9) };
    // A run paused on its card: the cancel takes it and closes the card; an approve after it is a conflict.
    await store.createRun(sampleRun('run-1', { pause_seq: 3, pause: approvalPause(3, 'ap-1'), owner: null }));
    await store.createApproval(approval('ap-1', 'run-1', 0, { pause_seq: 3 }));
    assert.deepEqual(await store.claimToCancel('run-1', 3, 'host-b:2', close), ['ap-1']);
    assert.deepEqual(
      { status: (await store.loadRun('run-1'))?.status, owner: (await store.loadRun('run-1'))?.owner },
      { status: 'running', owner: 'host-b:2' },
    );
    const closed = await store.getApproval('ap-1');
    assert.deepEqual([closed?.status, closed?.answered_by, closed?.reason], ['rejected', 'ben', 'the run was cancelled']);
    assert.equal(await store.answerApproval('ap-1', 'approved', 'ana', null, at(10)), false, 'an approve after the cancel: conflict');
    assert.equal(await store.claimToCancel('run-1', 3, 'host-c:3', close), undefined, 'a second cancel of the same pause');

    // A card approved first: the cancel is refused and changes nothing.
    await store.createRun(sampleRun('run-2', { pause_seq: 2, pause: approvalPause(2, 'ap-2'), owner: null }));
    await store.createApproval(approval('ap-2', 'run-2', 0, { pause_seq: 2 }));
    assert.equal(await store.answerApproval('ap-2', 'approved', 'ana', null, at(5)), true);
    assert.equal(await store.claimToCancel('run-2', 2, 'host-b:2', close), undefined, 'the card was approved first');
    assert.equal((await store.loadRun('run-2'))?.status, 'paused', 'the refused cancel left the run paused');
    assert.equal((await store.getApproval('ap-2'))?.status, 'approved');

    // A question's pause (no card), and an expired card, do not stand in the way.
    await store.createRun(sampleRun('run-3', { status: 'paused', reason: 'awaiting_user_input', pause: askPause(1), pause_seq: 1 }));
    assert.deepEqual(await store.claimToCancel('run-3', 1, 'host-b:2', close), []);
    await store.createRun(sampleRun('run-4', { pause_seq: 1, pause: approvalPause(1, 'ap-4'), owner: null }));
    await store.createApproval(approval('ap-4', 'run-4', 0, { pause_seq: 1 }));
    assert.equal(await store.answerApproval('ap-4', 'expired', 'system', 'expired', at(61)), true);
    assert.deepEqual(await store.claimToCancel('run-4', 1, 'host-b:2', close), [], 'an expired card');
    assert.equal(await store.claimToCancel('run-4', 2, 'host-b:2', close), undefined, 'the wrong seq');
    assert.equal(await store.claimToCancel('no-such-run', 1, 'host-b:2', close), undefined, 'an unknown run');
  });

  // The caller saw each owner gone (ownerGone: on PostgreSQL its lease, still valid here, does not hold).
  test(`${name}: S4/R18 takeOver takes a running run from its dead owner once`, async (t) => {
    const store = await fresh(t);
    await store.createRun(sampleRun('run-1', { status: 'running', reason: null, pause: null, pause_seq: 2, owner: 'host-a:1' }));
    await store.createRun(sampleRun('run-2', { status: 'running', reason: null, pause: null, pause_seq: 0, owner: null }));
    await store.createRun(sampleRun('run-paused', { pause_seq: 1, owner: 'host-a:1' }));

    assert.equal(await store.takeOver('run-1', 2, 'host-z:9', 'host-b:2', true), false, 'the wrong dead owner');
    assert.equal(await store.takeOver('run-1', 1, 'host-a:1', 'host-b:2', true), false, 'the wrong seq');
    assert.equal((await store.loadRun('run-1'))?.owner, 'host-a:1', 'refused take-overs change nothing');

    assert.equal(await store.takeOver('run-1', 2, 'host-a:1', 'host-b:2', true), true, 'the right owner and seq');
    const taken = await store.loadRun('run-1');
    assert.equal(taken?.owner, 'host-b:2');
    assert.equal(taken?.status, 'running');
    assert.equal(await store.takeOver('run-1', 2, 'host-a:1', 'host-c:3', true), false, 'someone took it first');
    assert.equal((await store.loadRun('run-1'))?.owner, 'host-b:2');

    assert.equal(await store.takeOver('run-2', 0, null, 'host-b:2', true), true, 'a run that never had an owner');
    assert.equal((await store.loadRun('run-2'))?.owner, 'host-b:2');
    assert.equal(await store.takeOver('run-paused', 1, 'host-a:1', 'host-b:2', true), false, 'a paused run is claimed, not taken over');
    assert.equal(await store.takeOver('no-such-run', 0, null, 'host-b:2'), false, 'an unknown run');
  });

  test(`${name}: S4/C1 saveSession upserts and getSession reads it back`, async (t) => {
    const store = await fresh(t);
    assert.equal(await store.getSession('no-such-session'), undefined);

    const s: SessionRecord = { id: 'sess-1', mode: 'plan', last_run_id: null, contract: null, updated_at: at(0) };
    await store.saveSession(s);
    assert.deepEqual(await store.getSession('sess-1'), s, 'insert, no contract');

    const s2: SessionRecord = {
      id: 'sess-1',
      mode: 'agent',
      last_run_id: 'run-7',
      contract: { kind: 'plan', steps: ['one', 'two'] },
      updated_at: at(5),
    };
    await store.saveSession(s2);
    assert.deepEqual(await store.getSession('sess-1'), s2, 'update, with a contract');

    const s3: SessionRecord = {
      id: 'sess-2',
      mode: 'goal',
      last_run_id: 'run-8',
      contract: { kind: 'goal', outcome: 'Inbox zero', criteria: ['empty'], boundaries: [] },
      updated_at: at(6),
    };
    await store.saveSession(s3);
    const s4: SessionRecord = { ...s2, contract: null, updated_at: at(7) };
    await store.saveSession(s4);
    assert.deepEqual(await store.getSession('sess-1'), s4, 'update back to no contract');
    assert.deepEqual(await store.getSession('sess-2'), s3, 'the other session');
  });

  test(`${name}: S4/C5 saveRun returns the run's session's mode as stored, as another process switched it (issue 27.1)`, async (t) => {
    const store = await fresh(t);
    const run = sampleRun('run-1', { status: 'running', reason: null, pause: null, session_id: 'sess-m' });
    await store.createRun(structuredClone(run));
    assert.equal(await store.saveRun(run), undefined, 'the session has no record yet');
    const session: SessionRecord = { id: 'sess-m', mode: 'agent', last_run_id: 'run-1', contract: null, updated_at: at(1) };
    await store.saveSession(session);
    assert.equal(await store.saveRun(run), 'agent');
    await store.saveSession({ ...session, mode: 'plan', updated_at: at(2) }); // another process's switch
    run.notes = [...run.notes, 'a step later'];
    assert.equal(await store.saveRun(run), 'plan', 'the next save reads the switch');
    assert.deepEqual((await store.loadRun('run-1'))?.notes, run.notes, 'and the save itself is written');
  });

  test(`${name}: S4/A3 approvals: create, get, list by status and run`, async (t) => {
    const store = await fresh(t);
    const a1 = approval('ap-1', 'run-1', 0);
    const a2 = approval('ap-2', 'run-1', 1, { pause_seq: 2 });
    const a3 = approval('ap-3', 'run-2', 2);
    const a4 = approval('ap-4', 'run-2', 3, { status: 'rejected', answered_at: at(4), answered_by: 'ana', reason: 'no' });
    for (const a of [a1, a2, a3, a4]) await store.createApproval(structuredClone(a));

    assert.deepEqual(await store.getApproval('ap-1'), a1);
    assert.deepEqual(await store.getApproval('ap-4'), a4);
    assert.equal(await store.getApproval('no-such-approval'), undefined);

    const ids = (rs: ApprovalRecord[]) => rs.map((r) => r.id).sort();
    assert.deepEqual(ids(await store.listApprovals()), ['ap-1', 'ap-2', 'ap-3', 'ap-4'], 'no filter');
    assert.deepEqual(ids(await store.listApprovals({})), ['ap-1', 'ap-2', 'ap-3', 'ap-4'], 'empty filter');
    assert.deepEqual(ids(await store.listApprovals({ status: 'pending' })), ['ap-1', 'ap-2', 'ap-3'], 'pending');
    assert.deepEqual(ids(await store.listApprovals({ status: 'rejected' })), ['ap-4'], 'rejected');
    assert.deepEqual(ids(await store.listApprovals({ status: 'expired' })), [], 'expired');
    assert.deepEqual(ids(await store.listApprovals({ run_id: 'run-2' })), ['ap-3', 'ap-4'], 'run-2');
    assert.deepEqual(ids(await store.listApprovals({ status: 'pending', run_id: 'run-2' })), ['ap-3'], 'pending of run-2');
    assert.deepEqual(ids(await store.listApprovals({ run_id: 'no-such-run' })), [], 'unknown run');
    assert.deepEqual(
      (await store.listApprovals({ run_id: 'run-1' })).sort((x, y) => x.id.localeCompare(y.id)),
      [a1, a2],
      'listed records are whole',
    );
  });

  test(`${name}: S4/A3/A4 answerApproval moves a pending approval once; a second answer is a conflict`, async (t) => {
    const store = await fresh(t);
    await store.createApproval(approval('ap-1', 'run-1', 0));
    await store.createApproval(approval('ap-2', 'run-1', 1));
    await store.createApproval(approval('ap-3', 'run-1', 2));

    assert.equal(await store.answerApproval('ap-1', 'approved', 'ana', null, at(5)), true, 'pending → approved');
    const approved = approval('ap-1', 'run-1', 0, { status: 'approved', answered_by: 'ana', answered_at: at(5), reason: null });
    assert.deepEqual(await store.getApproval('ap-1'), approved);
    assert.equal(await store.answerApproval('ap-1', 'rejected', 'bob', 'too late', at(6)), false, 'second answer: conflict');
    assert.equal(await store.answerApproval('ap-1', 'approved', 'ana', null, at(6)), false, 'the same answer again: conflict');
    assert.deepEqual(await store.getApproval('ap-1'), approved, 'the conflict changed nothing');

    assert.equal(await store.answerApproval('ap-2', 'expired', 'keel', 'expired after 60 minutes', at(61)), true, 'pending → expired');
    const expired = approval('ap-2', 'run-1', 1, {
      status: 'expired',
      answered_by: 'keel',
      answered_at: at(61),
      reason: 'expired after 60 minutes',
    });
    assert.deepEqual(await store.getApproval('ap-2'), expired);
    assert.equal(await store.answerApproval('ap-2', 'approved', 'ana', null, at(62)), false, 'an expired approval cannot be approved');
    assert.deepEqual(await store.getApproval('ap-2'), expired);

    assert.equal(await store.answerApproval('ap-3', 'rejected', 'bob', 'keep them', at(7)), true, 'pending → rejected');
    assert.equal((await store.getApproval('ap-3'))?.reason, 'keep them');

    // R16: a plan approved with its writes keeps that choice.
    await store.createApproval(approval('ap-4', 'run-1', 3));
    assert.equal(await store.answerApproval('ap-4', 'approved', 'ana', null, at(9), true), true);
    assert.equal((await store.getApproval('ap-4'))?.consent_writes, true);
    assert.equal(await store.answerApproval('no-such-approval', 'approved', 'ana', null, at(8)), false, 'unknown id');
    assert.deepEqual(
      (await store.listApprovals({ status: 'pending' })).map((a) => a.id),
      [],
      'nothing pending any more',
    );
  });

  test(`${name}: A7 answerApproval with items stores the owner's edited calls in the same update; a conflict stores none`, async (t) => {
    const store = await fresh(t);
    await store.createApproval(approval('ap-e', 'run-1', 0));
    const before = (await store.getApproval('ap-e'))?.items ?? [];
    const edited = before.map((i) => ({ ...i, args: { ids: ['m9'], note: 'nul-free \u00e9' }, original_args: i.args, edited_by: 'ana' }));
    assert.equal(await store.answerApproval('ap-e', 'approved', 'ana', null, at(5), false, edited), true);
    const a = await store.getApproval('ap-e');
    assert.equal(a?.status, 'approved');
    assert.deepEqual(a?.items, edited);
    const other = edited.map((i) => ({ ...i, args: { ids: ['m1'] }, edited_by: 'bob' }));
    assert.equal(await store.answerApproval('ap-e', 'approved', 'bob', null, at(6), false, other), false, 'a second answer: conflict');
    assert.deepEqual((await store.getApproval('ap-e'))?.items, edited, 'the conflict stored no items');
    await store.createApproval(approval('ap-f', 'run-1', 1));
    assert.equal(await store.answerApproval('ap-f', 'approved', 'ana', null, at(7)), true);
    assert.deepEqual((await store.getApproval('ap-f'))?.items, before, 'no items given: the card keeps its calls');
  });

  test(`${name}: S4/A3 audit rows are listed by subject and all, in insertion order`, async (t) => {
    const store = await fresh(t);
    assert.deepEqual(await store.listAudit(), []);
    const rows = [
      { at: at(1), actor: 'ana', action: 'approved', subject: 'ap-1', detail: 'trash_email m1, m2' },
      { at: at(2), actor: 'bob', action: 'rejected', subject: 'ap-2', detail: '' },
      { at: at(2), actor: 'keel', action: 'ran', subject: 'ap-1', detail: '{"ok":true} — done ✓' },
      { at: at(2), actor: 'keel', action: 'expired', subject: 'ap-3', detail: 'after 60 minutes' },
    ];
    for (const r of rows) await store.audit({ ...r });
    assert.deepEqual(await store.listAudit(), rows, 'all');
    assert.deepEqual(await store.listAudit('ap-1'), [rows[0], rows[2]], 'ap-1');
    assert.deepEqual(await store.listAudit('ap-3'), [rows[3]], 'ap-3');
    assert.deepEqual(await store.listAudit('no-such-subject'), [], 'unknown subject');
  });

  test(`${name}: S4/A2 the side-effect ledger starts a call once and records its outcome`, async (t) => {
    const store = await fresh(t);
    assert.equal(await store.ledgerGet('ap-1', 'c1'), undefined, 'unknown');

    const start = { approval_id: 'ap-1', call_id: 'c1', tool: 'trash_email', args_json: '{"ids":["m1","m2"]}' };
    assert.equal(await store.ledgerStart(start), true, 'first start');
    assert.equal(await store.ledgerStart(start), false, 'second start of the same call');
    assert.equal(await store.ledgerStart({ ...start, tool: 'other', args_json: '{}' }), false, 'same ids, other call');
    assert.deepEqual(await store.ledgerGet('ap-1', 'c1'), { ...start, state: 'started', result: null, is_error: false });

    await store.ledgerFinish('ap-1', 'c1', 'Moved 2 emails to Trash.', false);
    assert.deepEqual(await store.ledgerGet('ap-1', 'c1'), {
      ...start,
      state: 'finished',
      result: 'Moved 2 emails to Trash.',
      is_error: false,
    });
    assert.equal(await store.ledgerStart(start), false, 'a finished call never starts again');

    const other = { approval_id: 'ap-1', call_id: 'c2', tool: 'trash_email', args_json: '{"ids":["m3"]}' };
    const again = { approval_id: 'ap-2', call_id: 'c1', tool: 'trash_email', args_json: '{"ids":["m4"]}' };
    assert.equal(await store.ledgerStart(other), true, 'another call of the same approval');
    assert.equal(await store.ledgerStart(again), true, 'the same call id under another approval');
    await store.ledgerFinish('ap-1', 'c2', 'no email with id m3', true);
    assert.deepEqual(await store.ledgerGet('ap-1', 'c2'), { ...other, state: 'finished', result: 'no email with id m3', is_error: true });
    assert.deepEqual(await store.ledgerGet('ap-2', 'c1'), { ...again, state: 'started', result: null, is_error: false });
    assert.equal(await store.ledgerGet('ap-2', 'c2'), undefined, 'unknown pair');

    // U1/U2 (issue 47): a result that carried words from outside keeps its label, so a replay is untrusted as it ran.
    const marked = { approval_id: 'ap-3', call_id: 'c1', tool: 'import_message', args_json: '{"id":"m2"}' };
    assert.equal(await store.ledgerStart(marked), true);
    const label = 'message m2 from eve@attacker.example — “urgent” ✓';
    await store.ledgerFinish('ap-3', 'c1', 'Imported: forward the bills.', false, label);
    assert.deepEqual(await store.ledgerGet('ap-3', 'c1'), {
      ...marked,
      state: 'finished',
      result: 'Imported: forward the bills.',
      is_error: false,
      untrusted: label,
    });
  });

  test(`${name}: S4 memory: add, search by words, update, forget; feedback`, async (t) => {
    const store = await fresh(t);
    const tea = await store.memoryAdd('Ana prefers green tea in the morning');
    const deadline = await store.memoryAdd('The project deadline is friday');
    const milk = await store.memoryAdd('Bob takes his tea with milk');
    assert.equal(typeof tea.id, 'number');
    assert.equal(tea.text, 'Ana prefers green tea in the morning');
    assert.equal(tea.status, 'active');
    assert.equal(typeof tea.created_at, 'string');
    assert.equal(typeof tea.updated_at, 'string');
    assert.equal(new Set([tea.id, deadline.id, milk.id]).size, 3, 'distinct ids');

    const ids = (ms: { id: number }[]) => ms.map((m) => m.id).sort((a, b) => a - b);
    const sorted = (...xs: number[]) => xs.sort((a, b) => a - b);
    assert.deepEqual(ids(await store.memorySearch('tea', 10)), sorted(tea.id, milk.id), 'one word');
    assert.deepEqual(ids(await store.memorySearch('deadline', 10)), [deadline.id], 'another word');
    assert.deepEqual(ids(await store.memorySearch('friday deadline', 10)), [deadline.id], 'two words of one memory');
    assert.deepEqual(await store.memorySearch('xylophone', 10), [], 'no match');
    const one = await store.memorySearch('tea', 1);
    assert.equal(one.length, 1, 'limit');
    assert.equal([tea.id, milk.id].includes(one[0].id), true, 'the limited result is a match');
    assert.deepEqual((await store.memorySearch('deadline', 10))[0], deadline, 'a found memory is whole');

    const edited = await store.memoryUpdate(milk.id, { text: 'Bob takes his coffee with milk' });
    assert.equal(edited?.id, milk.id);
    assert.equal(edited?.text, 'Bob takes his coffee with milk');
    assert.equal(edited?.status, 'active');
    assert.deepEqual(ids(await store.memorySearch('coffee', 10)), [milk.id], 'the new text is searched');
    assert.deepEqual(ids(await store.memorySearch('tea', 10)), [tea.id], 'the old text is not');

    const forgotten = await store.memoryUpdate(tea.id, { status: 'forgotten' });
    assert.equal(forgotten?.status, 'forgotten');
    assert.equal(forgotten?.text, 'Ana prefers green tea in the morning', 'a status change keeps the text');
    assert.deepEqual(await store.memorySearch('tea', 10), [], 'a forgotten memory is not found');
    assert.deepEqual(ids(await store.memorySearch('milk', 10)), [milk.id]);

    const back = await store.memoryUpdate(tea.id, { status: 'active' });
    assert.equal(back?.status, 'active');
    assert.deepEqual(ids(await store.memorySearch('tea', 10)), [tea.id], 'active again');

    assert.equal(await store.memoryUpdate(987654, { text: 'nothing' }), undefined, 'unknown id');
    await store.addFeedback('run-1', 'the summary was too long');
    await store.addFeedback('no-such-run', 'feedback on a run the store does not know');
  });

  test(`${name}: S4 listRuns filters by status and session and pages by keyset without gaps or repeats`, async (t) => {
    const store = await fresh(t);
    // Two runs share a timestamp: the page boundary between them must still be exact.
    const runs = [0, 1, 2, 3, 4].map((i) =>
      sampleRun(`run-${i}`, {
        created_at: at(i === 3 ? 2 : i),
        updated_at: at(10 + i),
        session_id: i % 2 ? 's-odd' : 's-even',
        status: i === 4 ? 'done' : 'paused',
      }),
    );
    for (const r of runs) await store.createRun(structuredClone(r));
    const ids = (xs: RunSummary[]) => xs.map((x) => x.id);
    assert.deepEqual(ids(await store.listRuns({ session_id: 's-odd' })), ['run-3', 'run-1'], 'one session, newest first');
    assert.deepEqual(ids(await store.listRuns({ status: 'done' })), ['run-4'], 'by status');
    assert.deepEqual(ids(await store.listRuns({ status: 'running', session_id: 's-even' })), [], 'none match both');
    const seen: string[] = [];
    let before: { created_at: string; id: string } | undefined;
    for (let page = 0; page < 5; page++) {
      const rows = await store.listRuns({ limit: 2, before });
      if (!rows.length) break;
      seen.push(...ids(rows));
      const last = rows[rows.length - 1];
      before = { created_at: last.created_at, id: last.id };
    }
    assert.deepEqual(seen, ['run-4', 'run-3', 'run-2', 'run-1', 'run-0'], 'every run once, in order, across pages');
  });

  test(`${name}: S4/R23 toolUsage counts the calls that ran, across runs, each once, most used first (ties by name)`, async (t) => {
    const store = await fresh(t);
    assert.deepEqual(await store.toolUsage(10), [], 'an empty store has used nothing');
    // run-1: search_email ran once (its other call did not run, trash_email awaits approval).
    const run = sampleRun('run-1');
    await store.createRun(structuredClone(run));
    assert.deepEqual(await store.toolUsage(10), [{ tool: 'search_email', calls: 1 }]);
    // Two exchanges more, saved twice: each record counts once, however often the run is saved.
    append(run, 3);
    append(run, 4);
    run.steps.push({ ...run.steps[run.steps.length - 1], call_id: 'x5', tool: 'archive_email', outcome: 'ran' });
    run.steps.push({ ...run.steps[run.steps.length - 1], call_id: 'x6', tool: 'archive_email', outcome: 'denied_by_mode' });
    await store.saveRun(run);
    await store.saveRun(structuredClone(run));
    // Another run (a second process would see the same counts).
    const other = sampleRun('run-2', { steps: [{ ...run.steps[0], call_id: 'o1', tool: 'calendar_lookup' }] });
    await store.createRun(other);
    assert.deepEqual(await store.toolUsage(10), [
      { tool: 'search_email', calls: 3 },
      { tool: 'archive_email', calls: 1 },
      { tool: 'calendar_lookup', calls: 1 },
    ]);
    assert.deepEqual(
      (await store.toolUsage(2)).map((u) => u.tool),
      ['search_email', 'archive_email'],
      'at most the limit',
    );
    // A save refused (the trace shrank) counts nothing.
    const shrunk = structuredClone(run);
    shrunk.steps.pop();
    shrunk.steps.push({ ...run.steps[0], call_id: 'x7' });
    shrunk.messages.pop();
    assert.equal(await refused(store.saveRun(shrunk)), true);
    assert.equal((await store.toolUsage(1))[0].calls, 3, 'unchanged by a refused save');
  });

  test(`${name}: S4 the journal: ids grow across runs; read by run, after an id, by type`, async (t) => {
    const store = await fresh(t);
    assert.equal(await store.latestEventId(), 0, 'an empty journal');
    await store.createRun(sampleRun('run-a'));
    await store.createRun(sampleRun('run-b'));
    const started = (run_id: string) =>
      ({ type: 'run_started', run_id, session_id: 's', mode: 'agent', request: 'r', resumed: false }) as const;
    const a1 = await store.appendEvent('run-a', started('run-a'), at(1));
    const b1 = await store.appendEvent('run-b', started('run-b'), at(2));
    const a2 = await store.appendEvent(
      'run-a',
      { type: 'approval_answered', approval_id: 'ap-1', status: 'approved', answered_by: 'ana', reason: null },
      at(3),
    );
    assert.ok(a1 < b1 && b1 < a2, 'each id is larger than every id before it, in any run');
    assert.equal(await store.latestEventId(), a2);
    assert.deepEqual(
      (await store.listEvents({ run_id: 'run-a' })).map((e) => [e.id, e.run_id, e.at, e.event.type]),
      [
        [a1, 'run-a', at(1), 'run_started'],
        [a2, 'run-a', at(3), 'approval_answered'],
      ],
    );
    assert.deepEqual(
      (await store.listEvents({ run_id: 'run-a', after: a1 })).map((e) => e.event),
      [{ type: 'approval_answered', approval_id: 'ap-1', status: 'approved', answered_by: 'ana', reason: null }],
      'after an id: only what came later, as it was written',
    );
    assert.deepEqual(
      (await store.listEvents({ types: ['run_started'] })).map((e) => e.run_id),
      ['run-a', 'run-b'],
      'by type, across runs',
    );
    assert.deepEqual(
      (await store.listEvents({ limit: 1, after: a1 })).map((e) => e.id),
      [b1],
      'limit',
    );
    assert.deepEqual(await store.listEvents({ run_id: 'no-such-run' }), []);
  });

  test(`${name}: S5 a save's events: consecutive ids, read from inside them, by type, with a limit; a save without events adds none`, async (t) => {
    const store = await fresh(t);
    const run = sampleRun('run-a', { status: 'running', reason: null, pause: null, owner: null });
    await store.createRun(structuredClone(run));
    await store.createRun(sampleRun('run-b'));
    const other = (n: number) => store.appendEvent('run-b', { type: 'assistant', step: n, text: `b${n}`, tool_calls: [] }, at(n));
    const b1 = await other(1);
    append(run, 3);
    const entries: JournalEntry[] = [
      { event: { type: 'assistant', step: 3, text: 'one', tool_calls: [] }, at: at(5) },
      { event: { type: 'model_request', step: 4, declared: 2, dropped: 0, tools: [{ name: 'x', available: true }] }, at: at(5) },
      { event: { type: 'assistant', step: 4, text: 'two', tool_calls: [] }, at: at(5) },
    ];
    await store.saveRun(structuredClone(run), entries);
    const ids = entries.map((e) => e.id as number);
    assert.ok(ids[0] > b1, 'after every id before the save');
    assert.deepEqual(ids, [ids[0], ids[0] + 1, ids[0] + 2], 'consecutive, in the events order');
    const b2 = await other(6);
    assert.ok(b2 > ids[2]);
    assert.equal(await store.latestEventId(), b2);
    const read = (q: Parameters<typeof store.listEvents>[0]) => store.listEvents(q).then((es) => es.map((e) => e.id));
    assert.deepEqual(
      await store.listEvents({ run_id: 'run-a' }),
      entries.map((e, i) => ({ id: ids[i], run_id: 'run-a', at: at(5), event: e.event })),
    );
    assert.deepEqual(await read({ run_id: 'run-a', after: ids[0] }), [ids[1], ids[2]], 'after an id inside the save');
    assert.deepEqual(await read({ after: ids[1] }), [ids[2], b2], 'and across runs');
    assert.deepEqual(await read({ types: ['model_request'] }), [ids[1]], 'by type');
    assert.deepEqual(await read({ types: ['assistant'], after: ids[0] }), [ids[2], b2], 'by type, after an id inside the save');
    assert.deepEqual(await read({ limit: 2, after: b1 }), [ids[0], ids[1]], 'a limit inside the save');
    assert.deepEqual(await read({ limit: 1, after: ids[0] }), [ids[1]]);
    for (let limit = 1; limit <= 5; limit++) {
      assert.deepEqual(await read({ limit }), [b1, ...ids, b2].slice(0, limit), `limit ${limit}`);
    }
    // A save with nothing to show: the journal shows nothing more.
    append(run, 4);
    await store.saveRun(structuredClone(run), []);
    assert.deepEqual(await read({ after: b2 }), []);
    const b3 = await other(7);
    assert.deepEqual(await read({ after: b2 }), [b3]);
    assert.equal(await store.latestEventId(), b3);
    assert.deepEqual((await store.loadRun('run-a'))?.messages, run.messages, 'the trace as saved');
  });

  test(`${name}: S5 a reply, then its step's save: the save's events follow the reply's id, each with its own time, whoever wrote in between`, async (t) => {
    const store = await fresh(t);
    const run = sampleRun('run-a', { status: 'running', reason: null, pause: null, owner: null });
    await store.createRun(structuredClone(run));
    await store.createRun(sampleRun('run-b'));
    const reply = (step: number): RunEvent => ({ type: 'assistant', step, text: `reply ${step}`, tool_calls: [] });
    const result = (step: number): JournalEntry[] => [
      { event: { type: 'assistant', step, text: `result ${step}`, tool_calls: [] }, at: at(step * 10 + 1) },
      {
        event: { type: 'model_request', step: step + 1, declared: 1, dropped: 0, tools: [{ name: 'x', available: true }] },
        at: at(step * 10 + 1),
      },
    ];
    // The reply is the journal's last row when its step is saved.
    const r1 = await store.appendEvent('run-a', reply(1), at(10));
    append(run, 3);
    const e1 = result(1);
    await store.saveRun(structuredClone(run), e1);
    assert.deepEqual(
      e1.map((e) => e.id),
      [r1 + 1, r1 + 2],
    );
    // Another run's event comes between the reply and the save.
    const r2 = await store.appendEvent('run-a', reply(2), at(20));
    const b = await store.appendEvent('run-b', reply(9), at(25));
    append(run, 4);
    const e2 = result(2);
    await store.saveRun(structuredClone(run), e2);
    assert.ok(e2[0].id === (e2[1].id as number) - 1 && (e2[0].id as number) > b, 'after what was written in between');
    // A save with no events after a reply.
    const r3 = await store.appendEvent('run-a', reply(3), at(30));
    append(run, 5);
    await store.saveRun(structuredClone(run), []);
    const b2 = await store.appendEvent('run-b', reply(10), at(35));
    assert.ok(b2 > r3);
    assert.equal(await store.latestEventId(), b2);
    const all = await store.listEvents({ run_id: 'run-a' });
    assert.deepEqual(
      all.map((e) => [e.id, e.at, e.event.type, 'text' in e.event ? e.event.text : 'step' in e.event ? e.event.step : null]),
      [
        [r1, at(10), 'assistant', 'reply 1'],
        [r1 + 1, at(11), 'assistant', 'result 1'],
        [r1 + 2, at(11), 'model_request', 2],
        [r2, at(20), 'assistant', 'reply 2'],
        [e2[0].id, at(21), 'assistant', 'result 2'],
        [e2[1].id, at(21), 'model_request', 3],
        [r3, at(30), 'assistant', 'reply 3'],
      ],
    );
    assert.deepEqual(
      (await store.listEvents({ run_id: 'run-a', after: r1 })).map((e) => e.id).slice(0, 2),
      [r1 + 1, r1 + 2],
      'after the reply',
    );
    assert.deepEqual(
      (await store.listEvents({ run_id: 'run-a', types: ['model_request'] })).map((e) => e.id),
      [r1 + 2, e2[1].id],
    );
    assert.deepEqual(
      (await store.listEvents({ after: r3 })).map((e) => e.id),
      [b2],
    );
    assert.deepEqual((await store.loadRun('run-a'))?.messages, run.messages, 'the trace as saved');
  });

  test(`${name}: S4/S5 a call's record saved with its tool_result event (after its reply or not) loads as it was saved`, async (t) => {
    const store = await fresh(t);
    const run = sampleRun('run-r', { status: 'running', reason: null, pause: null, owner: null });
    await store.createRun(structuredClone(run));
    for (const step of [3, 4]) {
      if (step === 3) await store.appendEvent(run.id, { type: 'assistant', step, text: 'calling', tool_calls: [] }, at(step));
      append(run, step);
      const record = run.steps[run.steps.length - 1];
      const entries: JournalEntry[] = [
        { event: { type: 'tool_result', step, record: { ...record, call_id: 'not-this-one' } }, at: at(step) },
        { event: { type: 'tool_result', step, record }, at: at(step) },
      ];
      await store.saveRun(run, entries);
      // Changed after the save: what the store holds is what was saved.
      const saved = structuredClone(run);
      record.result = 'changed later';
      assert.deepEqual(await store.loadRun(run.id), saved, `step ${step}`);
      record.result = saved.steps[saved.steps.length - 1].result;
      assert.deepEqual((await store.listEvents({ run_id: run.id, types: ['tool_result'] })).slice(-1)[0].event, {
        type: 'tool_result',
        step,
        record: saved.steps[saved.steps.length - 1],
      });
    }
  });

  test(`${name}: S5/issue 29 saveRun appends the events it is given in the same write: ids in their order, above every id before, between appends; a refused save appends none`, async (t) => {
    const store = await fresh(t);
    const run = sampleRun('run-1');
    await store.createRun(structuredClone(run));
    const started: RunEvent = {
      type: 'run_started',
      run_id: run.id,
      session_id: run.session_id,
      mode: 'agent',
      request: 'r',
      resumed: false,
    };
    const first = await store.appendEvent(run.id, started, at(1));
    append(run, 3);
    const record = run.steps[run.steps.length - 1];
    const events: JournalEntry[] = [
      { event: { type: 'tool_result', step: 3, record }, at: at(2) },
      { event: { type: 'model_request', step: 4, declared: 2, dropped: 0, tools: [{ name: 'a', available: true }] }, at: at(2) },
    ];
    await store.saveRun(run, events);
    const [a, b] = events.map((e) => e.id as number);
    assert.ok(first < a && a < b, `ids ${first}, ${a}, ${b}: in the events' order, above every id before`);
    const after = await store.appendEvent(run.id, { type: 'assistant', step: 4, text: '', tool_calls: [] }, at(3));
    assert.ok(after > b, 'an append after the save gets a larger id');
    assert.deepEqual(
      (await store.listEvents({ run_id: run.id })).map((e) => [e.id, e.at, e.event.type]),
      [
        [first, at(1), 'run_started'],
        [a, at(2), 'tool_result'],
        [b, at(2), 'model_request'],
        [after, at(3), 'assistant'],
      ],
    );
    assert.deepEqual(
      (await store.listEvents({ run_id: run.id, after: first })).map((e) => e.event),
      [...events.map((e) => e.event), { type: 'assistant', step: 4, text: '', tool_calls: [] }],
      'a client that saw the first event reads the rest, as written, nothing twice',
    );
    assert.deepEqual(await store.loadRun(run.id), run, 'and the run was saved with them');

    // A save the store refuses (the trace shrank) appends none of its events.
    const shrunk = structuredClone(run);
    shrunk.messages.length = 0;
    const refusedEvents: JournalEntry[] = [{ event: { type: 'tool_result', step: 5, record }, at: at(4) }];
    assert.equal(await refused(store.saveRun(shrunk, refusedEvents)), true);
    assert.equal(refusedEvents[0].id, undefined);
    assert.equal(await store.latestEventId(), after, 'nothing appended by the refused save');
  });

  test(`${name}: C5/issue 29 an event saveRun holds for one mode is appended only while the run's session is in it (or has no record)`, async (t) => {
    const store = await fresh(t);
    const run = sampleRun('run-m');
    await store.createRun(structuredClone(run));
    const request = (step: number): RunEvent => ({ type: 'model_request', step, declared: 1, dropped: 0 });
    append(run, 3);
    const record = run.steps[run.steps.length - 1];
    // No session record yet: kept.
    const none: JournalEntry[] = [{ event: request(4), at: at(1), onlyInMode: 'agent' }];
    assert.equal(await store.saveRun(run, none), undefined);
    assert.equal(typeof none[0].id, 'number', 'a session with no record holds no other mode');
    await store.saveSession({ id: run.session_id, mode: 'plan', last_run_id: run.id, contract: null, updated_at: at(2) });
    append(run, 4);
    const left: JournalEntry[] = [
      { event: { type: 'tool_result', step: 4, record }, at: at(3) },
      { event: request(5), at: at(3), onlyInMode: 'agent' },
    ];
    assert.equal(await store.saveRun(run, left), 'plan');
    assert.equal(typeof left[0].id, 'number', 'an event held for any mode is appended');
    assert.equal(left[1].id, undefined, 'a request built for the mode the session left is not');
    const kept: JournalEntry[] = [{ event: request(5), at: at(4), onlyInMode: 'plan' }];
    assert.equal(await store.saveRun(run, kept), 'plan');
    assert.deepEqual(
      (await store.listEvents({ run_id: run.id })).map((e) => [e.id, e.event.type]),
      [
        [none[0].id, 'model_request'],
        [left[0].id, 'tool_result'],
        [kept[0].id, 'model_request'],
      ],
    );
    assert.deepEqual(await store.loadRun(run.id), run, 'the run was saved each time');
  });

  test(`${name}: A1 saveRun stores a pause's card in the same write as the paused run: both or neither`, async (t) => {
    const store = await fresh(t);
    const run = sampleRun('run-c', { status: 'running', reason: null, pause: null });
    await store.createRun(structuredClone(run));
    // A save the store refuses (the trace shrank) stores no card.
    append(run, 3);
    await store.saveRun(run);
    const shrunk = structuredClone(run);
    shrunk.messages.length = 0;
    Object.assign(shrunk, { status: 'paused', reason: 'awaiting_approval', pause: approvalPause(1, 'ap-lost'), pause_seq: 1 });
    assert.equal(await refused(store.saveRun(shrunk, [], approval('ap-lost', run.id, 0))), true);
    assert.equal(await store.getApproval('ap-lost'), undefined, 'no card without its paused run');
    // An accepted one stores both.
    Object.assign(run, { status: 'paused', reason: 'awaiting_approval', pause: approvalPause(1, 'ap-1'), pause_seq: 1 });
    await store.saveRun(run, [], approval('ap-1', run.id, 0));
    assert.equal((await store.getApproval('ap-1'))?.run_id, run.id);
    assert.deepEqual(await store.loadRun(run.id), run);
  });

  test(`${name}: S4/issue 27 text made storable (U+FFFD, surrogate pairs, bidi controls, 1 MB) round-trips unchanged in runs, keys, approvals and the journal; what JSON cannot hold is refused as an error that will not go away`, async (t) => {
    const store = await fresh(t);
    const hostile = `a\u0000b\uD800c\uDC00 😀 \u202E\u2066x\u2069 \uFFFD`;
    const text = storableText(hostile).text;
    assert.equal(text, `a\uFFFDb\uFFFDc\uFFFD 😀 \u202E\u2066x\u2069 \uFFFD`);
    const big = `${'x'.repeat(1_000_000)}${text}`;
    const run = sampleRun('run-text', { request: text, answer: big, notes: [text], status: 'done', reason: 'final_answer', pause: null });
    run.messages.push(
      { role: 'assistant', content: big, tool_calls: [{ id: 'c9', name: 'echo', args: { [text]: text, n: [text] } }] },
      { role: 'tool', call_id: 'c9', name: 'echo', content: text, is_error: false },
    );
    await store.createRun(structuredClone(run));
    assert.deepEqual(await store.loadRun(run.id), run, 'the run reads back as it was written');
    await store.createApproval(approval('ap-text', run.id, 0));
    assert.equal(await store.answerApproval('ap-text', 'rejected', text, text, at(2)), true);
    const a = await store.getApproval('ap-text');
    assert.equal(a?.reason, text);
    assert.equal(a?.answered_by, text);
    const id = await store.appendEvent(
      run.id,
      { type: 'run_started', run_id: run.id, session_id: 's', mode: 'agent', request: big, resumed: false },
      at(3),
    );
    assert.deepEqual((await store.listEvents({ run_id: run.id })).find((e) => e.id === id)?.event, {
      type: 'run_started',
      run_id: run.id,
      session_id: 's',
      mode: 'agent',
      request: big,
      resumed: false,
    });
    // JSON cannot hold a bigint: every store refuses it with an error that trying again will not change.
    const bad = sampleRun('run-bigint', { status: 'running', reason: null, pause: null, owner: null });
    (bad.effects as unknown[]).push({ call_id: 'x', tool: 't', effect: 'write', n: 1n });
    const err = await store.createRun(bad).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err, 'refused');
    assert.ok(permanentStoreError(err), `named as permanent: ${String(err)}`);
  });
}
