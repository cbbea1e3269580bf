/**
 * S5 on a shared PostgreSQL store (S4): the live stream of a server follows a run that another
 * process carries on — every journal append notifies (LISTEN/NOTIFY), the server reads what is new
 * from the journal. Polling is turned off here, so only the notification can deliver the events.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { calls, keel, script } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { events, readUntil, testServer } from '../support/server.js';

after(() => dropSchemas());

test("S5/S4: on PostgreSQL, a run approved and carried on by another process reaches this server's SSE stream, in order, once", async (t) => {
  const url = withSchema(await testPgUrl(), freshSchema());
  // The server queues legs and works them itself (--work); the CLI below is the other process.
  const s = await testServer({ KEEL_STORE: url, KEEL_SERVE_POLL_MS: '600000', KEEL_SERVE_WORK: '1' });
  t.after(() => s.close());
  assert.equal(s.srv.keel.store?.kind, 'postgres');
  const model = script(s.home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed it.' }]);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'trash m1', model } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const stream = await events(s.url, r.body.events, s.viewer);
  t.after(() => stream.close());
  const first = await readUntil(stream, (e) => e.event === 'run_finished');
  const approvalId = JSON.parse(first.find((e) => e.event === 'paused')?.data ?? '{}').pause.approval_id as string;
  assert.ok(approvalId);

  // Another process — the CLI, on the same database — answers the card and carries the run on.
  const cli = await keel(['approvals', 'approve', approvalId, '--store', url], { KEEL_HOME: s.home });
  assert.equal(cli.code, 0, cli.stderr);
  const rest = await readUntil(stream, (e) => e.event === 'run_finished' && JSON.parse(e.data).result.status !== 'paused', 30_000);
  const finished = JSON.parse(rest.at(-1)?.data ?? '{}');
  assert.equal(finished.result.status, 'done');
  assert.equal(finished.result.answer, 'Trashed it.');
  assert.ok(rest.some((e) => e.event === 'tool_result' && JSON.parse(e.data).record.outcome === 'ran'));
  const got = [...first, ...rest].filter((e) => e.id).map((e) => Number(e.id));
  const journal = (await s.srv.keel.store?.listEvents({ run_id: r.body.run_id }))?.map((e) => e.id);
  assert.deepEqual(got, journal, 'every stored event exactly once, in order');
  assert.equal(calls(s.home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length, 1);
});
