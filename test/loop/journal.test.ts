/**
 * The run's journal: every event a leg emits (but text deltas) is stored before it is emitted, with
 * an id, in the compact form live clients receive; an approval's answer joins it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { journaledKept, journaledOf, keepJournaled, toRunEvent } from '../../src/loop/journal.js';
import { eventJson, readEvents } from '../../src/store/trace.js';
import type { LoopEvent, RunEvent } from '../../src/types/index.js';
import { Harness } from '../support/keel.js';

const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1'] } };

test('R14: every emitted event but a text delta carries the id of its journal row, and the journal holds them in order', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 's1', name: 'search_inbox', args: { query: 'deals' } }] }, { text: 'Found one.' }]);
  t.after(() => h.close());
  const r = await h.run('find the deals');
  assert.equal(r.status, 'done');
  const durable = h.events.filter((e) => e.type !== 'text_delta');
  assert.ok(durable.length >= 6);
  assert.ok(
    durable.every((e) => typeof e.id === 'number'),
    'each has an id',
  );
  const stored = await h.keel.store!.listEvents({ run_id: r.run_id });
  assert.deepEqual(
    stored.map((s) => s.id),
    durable.map((e) => e.id),
    'the same ids, in the same order',
  );
  assert.deepEqual(
    stored.map((s) => s.event),
    JSON.parse(JSON.stringify(durable.map((e) => toRunEvent(e)))),
    'the journal keeps the compact form of each',
  );
  const request = stored.find((s) => s.event.type === 'model_request')?.event;
  assert.ok(request?.type === 'model_request' && request.tools?.some((x) => x.name === 'search_inbox'));
  assert.equal(request.declared, request.tools?.length);
  assert.ok(request.dropped > 0, 'the pool tools left off the menu are counted');
  assert.ok(!('system' in request), 'a request is kept without its prompt');
  const finished = stored.at(-1)?.event;
  assert.ok(finished?.type === 'run_finished' && finished.result.answer === 'Found one.' && !('steps' in finished.result));
  assert.ok(
    h.events.filter((e) => e.type === 'text_delta').every((e) => e.id === undefined),
    'text deltas are live only',
  );
});

test('A3: an answered card joins the run journal between the pause and the continuation', async (t) => {
  const h = new Harness([{ tool_calls: [TRASH] }, { text: 'Done.' }]);
  t.after(() => h.close());
  const r = await h.run('trash the deals');
  await h.keel.respondToApproval(r.approval!.id, 'approve', 'ana', null, (e) => h.events.push(e));
  const types = (await h.keel.store!.listEvents({ run_id: r.run_id })).map((s) => s.event.type);
  const paused = types.indexOf('paused');
  assert.equal(types[paused + 1], 'run_finished');
  assert.equal(types[paused + 2], 'approval_answered');
  assert.equal(types[paused + 3], 'run_started');
  const answered = (await h.keel.store!.listEvents({ run_id: r.run_id, types: ['approval_answered'] }))[0].event;
  assert.deepEqual(answered, {
    type: 'approval_answered',
    approval_id: r.approval!.id,
    status: 'approved',
    answered_by: 'ana',
    reason: null,
  });
  const ran = h.events.filter((e): e is Extract<LoopEvent, { type: 'tool_result' }> => e.type === 'tool_result');
  assert.deepEqual(
    ran.map((e) => e.record.outcome),
    ['ran'],
    'the continuation reports the call it ran',
  );
});

test('S5/issue 29: a step is one save — its last result and the next request are journaled by it; only the start, the first request and each reply are appended on their own', async (t) => {
  const h = new Harness([
    { tool_calls: [{ id: 's1', name: 'search_inbox', args: { query: 'deals' } }] },
    { tool_calls: [{ id: 's2', name: 'search_inbox', args: { query: 'offers' } }] },
    { text: 'Found two.' },
  ]);
  t.after(() => h.close());
  const store = h.keel.store!;
  const appended: string[] = [];
  const saved: string[][] = [];
  const append = store.appendEvent.bind(store);
  const save = store.saveRun.bind(store);
  store.appendEvent = (runId, event, at) => {
    appended.push(event.type);
    return append(runId, event, at);
  };
  store.saveRun = (run, events) => {
    saved.push((events ?? []).map((e) => e.event.type));
    return save(run, events);
  };
  const r = await h.run('find the deals and offers');
  assert.equal(r.status, 'done');
  assert.deepEqual(appended, ['run_started', 'model_request', 'assistant', 'assistant', 'assistant'], 'appended on their own');
  assert.deepEqual(
    saved,
    [['tool_result', 'model_request'], ['tool_result', 'model_request'], ['run_finished']],
    'one save per step, carrying its events',
  );
  const stored = await store.listEvents({ run_id: r.run_id });
  const shown = h.events.filter((e) => e.type !== 'text_delta');
  assert.deepEqual(
    stored.map((s) => [s.id, s.event.type]),
    shown.map((e) => [e.id, e.type]),
    'shown in the order stored, each with its id, none twice',
  );
});

test('S5: the journal gives back each event as it was written; a request menu is kept once, as a blob, and put back', () => {
  const tools = ['a', 'b"quoted"', 'ünï'].map((name, i) => ({ name, description: 'd', parameters: {}, available: i !== 1 }));
  const events: LoopEvent[] = [
    { type: 'model_request', step: 1, system: 's', tools, dropped: [] },
    { type: 'model_request', step: 2, system: 's', tools, dropped: ['x', 'y'] },
    { type: 'model_request', step: 3, system: 's', tools: [], dropped: [] },
    { type: 'assistant', step: 1, text: 'hi "there"', tool_calls: [] },
  ];
  const blobs = new Map<string, string>();
  const keep = (b: { body: string; hash: string }) => {
    blobs.set(b.hash, b.body);
    return b.hash;
  };
  const stored = events.map((e) => eventJson(toRunEvent(e) as RunEvent, keep));
  assert.equal(blobs.size, 2, 'one blob per menu (the empty one included), however many requests send it');
  assert.ok(!stored[1].includes('quoted'), 'the names are not in the event row');
  const read = readEvents(`[${stored.join(',')}]`, (h) => blobs.get(h) as string);
  assert.deepEqual(read, events.map(toRunEvent));
  assert.deepEqual(
    readEvents(stored[0], (h) => blobs.get(h) as string),
    [toRunEvent(events[0])],
    'a row of one event',
  );
  assert.deepEqual(
    readEvents(JSON.stringify(toRunEvent(events[0])), () => assert.fail('no blob')),
    [toRunEvent(events[0])],
    'a menu written inline',
  );
});

test('S5/issue 49: a process that serves no live streams keeps nothing of what its events were journaled as', async (t) => {
  assert.equal(journaledKept(), false, 'off unless a server asks (this file turns it on only in the next test)');
  const h = new Harness([{ text: 'Done.' }]);
  t.after(() => h.close());
  const r = await h.run('hello');
  assert.equal(r.status, 'done');
  assert.ok(h.events.length > 0);
  assert.ok(
    h.events.every((e) => journaledOf(e) === undefined),
    'nothing noted',
  );
});

test('S5/issue 49: each event tells what a read of the journal gives for it, and the run event just before it only when its writer knows', async (t) => {
  // What `keel serve` turns on for its live streams (SQLite).
  keepJournaled();
  const h = new Harness([
    { tool_calls: [{ id: 's1', name: 'search_inbox', args: { query: 'deals' } }] },
    { tool_calls: [TRASH] },
    { tool_calls: [{ id: 's2', name: 'search_inbox', args: { query: 'offers' } }] },
    { text: 'Done.' },
  ]);
  t.after(() => h.close());
  const r = await h.run('find and trash the deals');
  assert.equal(r.status, 'paused');
  await h.keel.respondToApproval(r.approval!.id, 'approve', 'ana', null, (e) => h.events.push(e));
  const stored = await h.keel.store!.listEvents({ run_id: r.run_id });
  const durable = h.events.filter((e) => e.type !== 'text_delta');
  const told = durable.map((e) => journaledOf(e));
  assert.ok(
    told.every((j) => j !== undefined),
    'every journaled event is noted',
  );
  const byId = new Map(stored.map((e, i) => [e.id, { row: e, before: i ? stored[i - 1].id : 0 }]));
  for (const j of told) {
    const s = byId.get(j!.id);
    assert.ok(s, `event ${j!.id} is in the journal`);
    // What a read gives: the same run, time and journal form (compared as the stream sends them).
    assert.equal(
      JSON.stringify({ id: j!.id, run_id: j!.run_id, at: j!.at, ...j!.event }),
      JSON.stringify({ id: s.row.id, run_id: s.row.run_id, at: s.row.at, ...s.row.event }),
    );
    if (j!.prev !== undefined) assert.equal(j!.prev, s.before, `event ${j!.id}: prev is the run's event just before it`);
  }
  assert.equal(told[0]?.prev, 0, "a new run's first event: nothing before it");
  // The card's answer was journaled by no leg: the continuation's first event does not claim to follow the pause.
  const answered = stored.findIndex((e) => e.event.type === 'approval_answered');
  const next = told.find((j) => j!.id === stored[answered + 1].id);
  assert.ok(next, 'the continuation journaled the event after the answer');
  assert.equal(next.prev, undefined);
  assert.ok(told.filter((j) => j!.prev !== undefined).length >= told.length - 2, 'the rest are chained');
});
