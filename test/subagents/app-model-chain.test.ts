/**
 * Issue 47 (D1, S2): an app whose parent run uses a model of its own (a ModelClient) starts a
 * delegate; the delegate's destructive call waits on a card; the process goes. A new process approves
 * the card with the app's model: the delegate runs its call once, and the parent — which waits for it
 * and was started with the same model — goes on with it too, to its answer. On both stores.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { Keel } from '../../src/keel/keel.js';
import type { ModelClient, ModelEvent, ModelRequest } from '../../src/models/types.js';
import { PostgresStore } from '../../src/store/postgres.js';
import type { Store, ToolCall } from '../../src/types/index.js';
import { calls, FIXTURES, tempHome } from '../support/helpers.js';
import { freshSchema, testPgUrl, withSchema } from '../support/pg.js';

const CHILD = 'TRASH-THE-DEALS: move email m1 to Trash.';
type Reply = { text: string } | { calls: ToolCall[] };

/**
 * The application's own model: one object answers the parent and its delegate (a delegate with no
 * model of its own uses its parent's), each from its own list, told apart by the run's request.
 */
class AppModel implements ModelClient {
  readonly spec = 'acc-parent:v1';
  constructor(private readonly replies: { parent: Reply[]; child: Reply[] }) {}
  async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    const first = req.messages[0];
    const list = first?.role === 'user' && first.content === CHILD ? this.replies.child : this.replies.parent;
    const r = list.shift();
    if (!r) throw new Error('the app model ran out of replies');
    yield { type: 'done', reply: 'text' in r ? { text: r.text, tool_calls: [] } : { text: '', tool_calls: r.calls } };
  }
}

async function chain(t: test.TestContext, makeStore: (() => Promise<Store>) | undefined): Promise<void> {
  const home = tempHome();
  writeFileSync(
    join(home, 'config.yaml'),
    stringify({
      subagents: {
        delegates: [{ name: 'cleaner', description: 'tidies the inbox', instructions: 'You tidy the inbox.', tools: ['trash_email'] }],
      },
    }),
  );
  const open = async () => new Keel({ home, defaultPluginDirs: [FIXTURES], ...(makeStore ? { store: await makeStore() } : {}) });

  const first = await open();
  const r = await first.run('Clean up my inbox', {
    model: new AppModel({
      parent: [
        { calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: CHILD } }] },
        { calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      ],
      child: [{ calls: [{ id: 'd1', name: 'trash_email', args: { ids: ['m1'] } }] }],
    }),
  });
  await first.close();
  assert.equal(r.status, 'paused');
  assert.equal(r.reason, 'awaiting_task', JSON.stringify(r));
  if (r.status !== 'paused' || r.reason !== 'awaiting_task') return;
  const card = r.task.waiting?.reason === 'awaiting_approval' ? r.task.waiting.approval : undefined;
  assert.ok(card, "the parent shows its delegate's card");

  // The process is gone; a new one approves the delegate's card with the app's model.
  const later = await open();
  t.after(() => later.close());
  assert.equal((await later.getRun(r.task.run_id)).model, 'acc-parent:v1', "the delegate works with its parent's model");
  const done = await later.approve(card.id, {
    actor: 'ana',
    model: new AppModel({ parent: [{ text: 'Your inbox is clean: the deals email is in Trash.' }], child: [{ text: 'Trashed m1.' }] }),
  });
  assert.equal(done.run_id, r.run_id, "the parent's result");
  assert.equal(done.status, 'done', JSON.stringify(done));
  assert.equal(done.answer, 'Your inbox is clean: the deals email is in Trash.');
  assert.deepEqual(
    calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')),
    ['trash_email {"ids":["m1"]}'],
    'the approved call ran once',
  );
  assert.equal((await later.getRun(r.task.run_id)).status, 'done');
}

test("D1: a delegate's card approved in a new process with the app's own model: the delegate and its parent both go on with it (SQLite)", (t) =>
  chain(t, undefined));

test("D1: a delegate's card approved in a new process with the app's own model: the delegate and its parent both go on with it (PostgreSQL)", async (t) => {
  const url = withSchema(await testPgUrl(), freshSchema());
  await chain(t, async () => new PostgresStore(url));
});
