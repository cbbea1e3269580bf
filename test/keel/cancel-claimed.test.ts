/**
 * R18, A3 (issue 38's intermittent failure): a cancel never takes a run from a leg of the same
 * process. In one server, an approve claims the run and its leg is about to be driven (or, on
 * PostgreSQL, is being handed to the queue) when a cancel of the same run comes in. Both carry this
 * process's owner, so the store alone cannot tell the approve's live leg from a leg of its own that
 * failed: the cancel must be refused (409), and the approved call runs once.
 *
 * - a claimed leg not yet driven: the cancel is refused, on both stores;
 * - PostgreSQL, the hand-over between the cancel's check and its claim: the approve's leg is handed
 *   to the queue (no owner) after the cancel loaded the run and before it claims it; the cancel's
 *   claim is conditional on the state it checked, so it is refused instead of taking the handed run.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import { legHere } from '../../src/loop/run.js';
import { handToQueue } from '../../src/server/workers/worker.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/types/index.js';
import { KeelError } from '../../src/util/errors.js';
import { calls, FIXTURES, script, tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';

after(() => dropSchemas());

const STORES: [string, (home: string) => Promise<Store>][] = [
  ['sqlite', async (home) => new SqliteStore(join(home, 'keel.db'))],
  ['postgres', async () => new PostgresStore(withSchema(await testPgUrl(), freshSchema()))],
];

const ARGS = { to: 'ana', subject: 'the note' };

async function pausedOnCard(home: string, store: Store) {
  const keel = new Keel({ home, store });
  const model = script(home, [{ tool_calls: [{ id: 't1', name: 'send_email', args: ARGS }] }, { text: 'Sent.' }]);
  const r = await keel.run('send the note to ana', { model, pluginDirs: [FIXTURES] });
  assert.equal(r.status, 'paused');
  if (r.status !== 'paused' || r.reason !== 'awaiting_approval') throw new Error(`not a card: ${r.reason}`);
  return { keel, runId: r.run_id, card: r.approval.id, model };
}

const conflict = (err: unknown) => err instanceof KeelError && err.code === 'conflict';

for (const [kind, open] of STORES) {
  test(`R18/A3 (${kind}): a cancel is refused while an approve's leg of the same process holds the run; the call runs once`, async (t) => {
    const home = tempHome();
    const { keel, runId, card, model } = await pausedOnCard(home, await open(home));
    t.after(() => keel.close());
    const { leg } = await keel.answerApproval(card, 'approve', { actor: 'ana-phone', model });
    assert.ok(leg, 'the approve claimed the run');
    await assert.rejects(keel.cancel(runId, { actor: 'ben' }), conflict, 'the cancel takes nothing from a live leg here');
    let result: unknown;
    for (const gen = leg.drive(); ; ) {
      const n = await gen.next();
      if (n.done) {
        result = n.value;
        break;
      }
    }
    assert.equal((result as { status: string }).status, 'done');
    assert.equal(calls(home, 'mail-calls.log').filter((l) => l === `send_email ${JSON.stringify(ARGS)}`).length, 1);
    const run = await keel.getRun(runId);
    assert.equal(run.status, 'done');
    // Once the leg is over, the run is no longer held here: a cancel now says it is done already.
    await assert.rejects(keel.cancel(runId, { actor: 'ben' }), (err: unknown) => err instanceof KeelError && err.code === 'not_paused');
  });
}

test('R18/A3 (postgres): an approve handed to the queue between the cancel’s check and its claim wins; the cancel is refused', async (t) => {
  const home = tempHome();
  const store = new PostgresStore(withSchema(await testPgUrl(), freshSchema()));
  const { keel, runId, card, model } = await pausedOnCard(home, store);
  t.after(() => keel.close());
  const { leg } = await keel.answerApproval(card, 'approve', { actor: 'ana-phone', model });
  assert.ok(leg);
  // The moment the failing round met: the cancel has loaded the run (running, held by this
  // process's approve), and the approve's leg is handed to the queue before the cancel claims it.
  const load = store.loadRun.bind(store);
  let loads = 0;
  store.loadRun = async (id: string) => {
    const s = await load(id);
    if (id === runId && ++loads === 2) assert.equal(await store.handOff(runId, s?.owner ?? '', leg.job), true);
    return s;
  };
  await assert.rejects(keel.cancel(runId, { actor: 'ben' }), conflict);
  store.loadRun = load;
  const run = await keel.getRun(runId);
  assert.equal(run.status, 'running', 'handed to the queue, for a worker to carry the approve out');
  assert.equal(run.owner, null);
  const decisions = (await store.listAudit(card)).filter((row) => row.action === 'approved' || row.action === 'rejected');
  assert.deepEqual(
    decisions.map((d) => `${d.action} by ${d.actor}`),
    ['approved by ana-phone'],
  );
});

test('R18 (postgres): a leg handed to the queue is no longer held by this process; the cancel is still refused (a worker carries the answer out)', async (t) => {
  const home = tempHome();
  const store = new PostgresStore(withSchema(await testPgUrl(), freshSchema()));
  const { keel, runId, card, model } = await pausedOnCard(home, store);
  t.after(() => keel.close());
  const { leg } = await keel.answerApproval(card, 'approve', { actor: 'ana-phone', model });
  assert.ok(leg);
  assert.equal(legHere(runId), true, 'the approve’s leg holds the run');
  assert.equal(await handToQueue(store, leg), true);
  assert.equal(legHere(runId), false, 'handed over: a server that queues every leg keeps no entry per run');
  await assert.rejects(keel.cancel(runId, { actor: 'ben' }), conflict);
  assert.equal((await store.getApproval(card))?.status, 'approved');
});
