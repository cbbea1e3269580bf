/**
 * Issue 49: a run's live stream sends the events this server journals as it is told of them,
 * without reading them back from the store — and what it sends is, byte for byte, what a stream
 * read from the store sends (R14, S5): the same ids, the same JSON, the same order, every event
 * once, whoever else journaled events of the run in between (a card's answer). The writer's chain
 * (each event's `prev`) is what lets it; test/loop/journal.test.ts checks the chain itself.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { startServer } from '../../src/server/serve.js';
import type { EventQuery, StoredEvent } from '../../src/types/index.js';
import { FIXTURES, script, tempHome } from '../support/helpers.js';
import { events, readUntil, type TestServer, testServer } from '../support/server.js';

const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1', 'm2'] } };
const steps = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    delay_ms: 40,
    tool_calls: [{ id: `c${i + 1}`, name: 'calendar_lookup', args: { day: `2025-03-0${i + 1}` } }],
  }));

/** A stream's whole text, until the server ends it (a run that finished done or failed). */
async function wholeStream(s: TestServer, path: string, lastEventId?: string): Promise<string> {
  const headers: Record<string, string> = { authorization: `Bearer ${s.viewer}`, accept: 'text/event-stream' };
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const res = await fetch(`${s.url}${path}`, { headers });
  assert.equal(res.status, 200);
  return res.text();
}

/** Counts the store's journal reads for one run while `f` runs. */
async function readsOf<T>(s: TestServer, runId: () => string | undefined, f: () => Promise<T>): Promise<{ out: T; reads: number }> {
  const store = s.srv.keel.store as NonNullable<typeof s.srv.keel.store>;
  const listEvents = store.listEvents;
  let reads = 0;
  store.listEvents = (q?: EventQuery): Promise<StoredEvent[]> => {
    if (q?.run_id !== undefined && q.run_id === runId()) reads++;
    return listEvents.call(store, q);
  };
  try {
    return { out: await f(), reads };
  } finally {
    store.listEvents = listEvents;
  }
}

test('R14/S5: a live stream sends, byte for byte, what a stream read from the store sends, mostly without reading it', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const model = script(s.home, [...steps(5), { delay_ms: 40, text: 'Your week is free.' }]);
  let runId: string | undefined;
  const { out: live, reads } = await readsOf(
    s,
    () => runId,
    async () => {
      const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'what is on this week?', model } });
      runId = r.body.run_id;
      return wholeStream(s, r.body.events);
    },
  );
  const id = runId as string;
  const stored = await wholeStream(s, `/v1/runs/${id}/events`);
  assert.equal(live, stored, 'the same text, whether told live or read from the store');
  const ids = [...live.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  const journal = (await s.srv.keel.store!.listEvents({ run_id: id })).map((e) => e.id);
  assert.deepEqual(ids, journal, 'every stored event once, in order');
  assert.match(live, /event: run_finished\ndata: \{"id":\d+,"run_id":"run_\w+","at":"[^"]+","type":"run_finished"/);
  // Six model calls, each waking the stream: it read the store at most once (the leg's events so far are kept while it works).
  assert.ok(reads <= 1, `the live stream read the journal ${reads} times`);

  // Reconnecting mid-run with Last-Event-ID (here: after the third event) gives the rest, the same bytes.
  const third = String(ids[2]);
  const rest = await wholeStream(s, `/v1/runs/${id}/events`, third);
  assert.equal(live.slice(live.indexOf(`id: ${ids[3]}\n`)), rest);
});

test('R14: a stream opened mid-run with Last-Event-ID, while the leg works, gets exactly the rest, the same bytes', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const model = script(s.home, [...steps(6), { delay_ms: 40, text: 'Your week is free.' }]);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'what is on this week?', model } });
  const whole = wholeStream(s, r.body.events);
  await new Promise((res) => setTimeout(res, 130));
  const sofar = await s.srv.keel.store!.listEvents({ run_id: r.body.run_id });
  assert.ok(sofar.length >= 4, `${sofar.length} events so far`);
  const from = sofar[2].id;
  const rest = await wholeStream(s, r.body.events, String(from));
  const live = await whole;
  assert.equal(live.slice(live.indexOf(`id: ${sofar[3].id}\n`)), rest);
  const ids = [...live.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  assert.deepEqual(
    ids,
    (await s.srv.keel.store!.listEvents({ run_id: r.body.run_id })).map((e) => e.id),
  );
});

test('A3/R14: a run continued after its card is answered: the answer and the new leg come in journal order, the same bytes', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const model = script(s.home, [{ tool_calls: [TRASH] }, ...steps(2), { text: 'Moved both to Trash.' }]);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'trash the two promotions', model } });
  const runId = r.body.run_id as string;
  const stream = await events(s.url, r.body.events, s.viewer);
  const first = await readUntil(stream, (e) => e.event === 'paused');
  const approvalId = JSON.parse(first.at(-1)?.data ?? '{}').pause.approval_id as string;
  const ok = await s.api('POST', `/v1/approvals/${approvalId}`, { token: s.approver, body: { decision: 'approve' } });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  const rest = await readUntil(stream, (e) => e.event === 'run_finished' && JSON.parse(e.data).result.status === 'done');
  stream.close();
  const got = [...first, ...rest].filter((e) => e.id);
  const journal = await s.srv.keel.store!.listEvents({ run_id: runId });
  assert.deepEqual(
    got.map((e) => Number(e.id)),
    journal.map((e) => e.id),
    'every stored event once, in order: the answer (journaled by no leg) included',
  );
  for (let i = 0; i < got.length; i++) {
    const j = journal[i];
    assert.equal(got[i].data, JSON.stringify({ id: j.id, run_id: j.run_id, at: j.at, ...j.event }), `event ${j.id} as stored`);
  }
  assert.ok(got.some((e) => e.event === 'approval_answered'));
});

test('S2: a live stream written straight to the response keeps the app’s headers (CORS) and its event-stream head', async (t) => {
  const home = tempHome('keel-serve-');
  const srv = await startServer({
    port: 0,
    pluginDirs: [FIXTURES],
    allowedModels: ['script:'],
    corsOrigins: ['https://app.example'],
    env: { ...process.env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '', KEEL_CONFIRM_ONCE_TOOLS: '' },
    log: () => {},
  });
  t.after(async () => {
    await srv.close();
    rmSync(home, { recursive: true, force: true });
  });
  const admin = srv.adminToken as string;
  const model = script(home, [...steps(2), { delay_ms: 20, text: 'Free.' }]);
  const headers = { authorization: `Bearer ${admin}`, 'content-type': 'application/json', origin: 'https://app.example' };
  const started = await fetch(`${srv.url}/v1/runs`, { method: 'POST', headers, body: JSON.stringify({ request: 'this week?', model }) });
  const { events: path, run_id } = (await started.json()) as { events: string; run_id: string };
  const res = await fetch(`${srv.url}${path}`, { headers: { authorization: `Bearer ${admin}`, origin: 'https://app.example' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  assert.equal(res.headers.get('cache-control'), 'no-cache');
  const text = await res.text();
  const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  assert.deepEqual(
    ids,
    (await srv.keel.store!.listEvents({ run_id })).map((e) => e.id),
  );
});
