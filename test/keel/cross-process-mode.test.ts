/**
 * Issue 27, item 1 (C1, C2, C5): a mode switch made through one Keel reaches a run another Keel
 * drives over the same store — two Keels stand for two processes (a server and a worker, a CLI
 * run and the console). The run learns the session's mode as stored from its next save, on both
 * stores, so a switch to Plan during step 1 denies step 2's write (C2).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, type TestContext, test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Mode, Store } from '../../src/types/index.js';
import { script, tempHome } from '../support/helpers.js';
import { modeTools } from '../support/mode-tools.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';

after(() => dropSchemas());

type Opener = () => Promise<[Store, Store]>;

const STORES: [string, Opener][] = [
  [
    'sqlite',
    async () => {
      const file = join(tempHome(), 'keel.db');
      return [new SqliteStore(file), new SqliteStore(file)];
    },
  ],
  [
    'postgres',
    async () => {
      const url = withSchema(await testPgUrl(), freshSchema());
      return [new PostgresStore(url), new PostgresStore(url)];
    },
  ],
];

/**
 * Keel A drives the run; `probe` (a read) switches the session's mode through Keel B while step 1
 * works. Both are closed when the test ends.
 */
async function twoKeels(t: TestContext, open: Opener, switchTo: Mode) {
  const stores = await open();
  const home = tempHome();
  let other: Keel | undefined;
  const { tools, stamped } = modeTools(async (runId) => {
    const run = await other!.getRun(runId);
    await other!.setMode(run.session_id, switchTo);
  });
  const a = new Keel({ home, store: stores[0], tools });
  const b = new Keel({ home, store: stores[1], tools });
  other = b;
  t.after(async () => {
    await a.close();
    await b.close();
  });
  return { home, a, b, stamped, stores };
}

for (const [name, open] of STORES) {
  test(`${name}: C2/C5 a switch to Plan made through another Keel during step 1 denies step 2's write (issue 27.1)`, async (t) => {
    const { home, a, b, stamped, stores } = await twoKeels(t, open, 'plan');
    const model = script(home, [
      { tool_calls: [{ id: 'p', name: 'probe', args: {} }] },
      { tool_calls: [{ id: 's', name: 'stamp', args: { doc: 'contract' } }] },
      { text: 'I could not stamp it in plan mode.' },
    ]);
    const r = await a.run('stamp the contract', { model, pluginDirs: [] });
    assert.equal(r.status, 'done');
    const step = r.steps.find((s) => s.call_id === 's');
    assert.equal(step?.outcome, 'denied_by_mode', `step 2's write must be denied by mode, was ${step?.outcome}: ${step?.result}`);
    assert.match(step.result, /stamp is unavailable in plan mode/);
    assert.deepEqual(stamped, [], 'the write never ran');
    assert.equal(r.mode, 'plan');
    const stored = await b.getRun(r.run_id);
    assert.ok(
      stored.notes.some((n) => n === 'mode switched from agent to plan during the run'),
      `the run records the switch: ${JSON.stringify(stored.notes)}`,
    );
    // The request of step 2 already declared the write as unavailable (C3 labels follow the mode).
    assert.equal(r.requests[1].tools.find((x) => x.name === 'stamp')?.available ?? false, false);
    // Issue 29: the step's save found the switch, so step 2's request was built again in Plan mode —
    // its submit tool declared — and the journal holds that request only, once per step.
    assert.ok(
      r.requests[1].tools.some((x) => x.name === 'submit_plan'),
      `step 2 declares submit_plan: ${r.requests[1].tools.map((x) => x.name).join(', ')}`,
    );
    const journal = await stores[0].listEvents({ run_id: r.run_id, types: ['model_request'] });
    assert.deepEqual(
      journal.map((e) => (e.event as { step: number }).step),
      [1, 2, 3],
      'one model_request event per step, none for a request built in the mode the session left',
    );
    const second = journal[1].event as { tools: { name: string }[] };
    assert.ok(
      second.tools.some((x) => x.name === 'submit_plan'),
      "the journal's step-2 request is the one the model was sent",
    );
  });

  test(`${name}: C7 a switch back to Agent made through another Keel lets the next step's write run`, async (t) => {
    const { home, a, stamped } = await twoKeels(t, open, 'agent');
    const model = script(home, [
      { tool_calls: [{ id: 'p', name: 'probe', args: {} }] },
      { tool_calls: [{ id: 's', name: 'stamp', args: { doc: 'memo' } }] },
      { text: 'Stamped.' },
    ]);
    const r = await a.run('stamp the memo', { model, pluginDirs: [], mode: 'plan' });
    assert.equal(r.steps.find((s) => s.call_id === 's')?.outcome, 'ran');
    assert.deepEqual(stamped, ['memo']);
    assert.equal(r.mode, 'agent');
  });

  test(`${name}: C1/C2 a run paused in one Keel, switched to Plan through another, continues in Plan: its write is denied`, async (t) => {
    const { home, a, b, stamped } = await twoKeels(t, open, 'plan');
    const model = script(home, [
      { tool_calls: [{ id: 'q', name: 'ask_user', args: { question: 'Which document?' } }] },
      { tool_calls: [{ id: 's', name: 'stamp', args: { doc: 'lease' } }] },
      { text: 'Not in plan mode.' },
    ]);
    const p = await a.run('stamp a document', { model, pluginDirs: [] });
    assert.equal(p.status, 'paused');
    await b.setMode((await b.getRun(p.run_id)).session_id, 'plan');
    const r = await a.answer(p.run_id, 'the lease');
    assert.equal(r.steps.find((s) => s.call_id === 's')?.outcome, 'denied_by_mode');
    assert.deepEqual(stamped, []);
  });
}
