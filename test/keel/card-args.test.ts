/**
 * Issue 40: a card in the library's RunResult gives each call as data — its id and structured
 * arguments, as the stored pause has them — beside the rendered `call` string, so an application
 * need not parse `pay({"amount":5,…})` nor read `getRun(id).pause.items`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import { FIXTURES, script, tempHome } from '../support/helpers.js';

test('issue 40: a paused result’s card items carry call_id and args, as the stored pause has them; the rendered call stays', async (t) => {
  const home = tempHome();
  const keel = new Keel({ home });
  t.after(() => keel.close());
  const first = { to: 'ana', subject: 'Lunch? "soon"', body: 'At 1, ok?' };
  const second = { to: 'ben', subject: 'Notes' };
  const model = script(home, [
    {
      tool_calls: [
        { id: 's1', name: 'send_email', args: first },
        { id: 's2', name: 'send_email', args: second },
      ],
    },
    { text: 'Sent both.' },
  ]);
  const r = await keel.run('send the email to ana and to ben', { model, pluginDirs: [FIXTURES] });
  assert.equal(r.status, 'paused');
  if (r.status !== 'paused' || r.reason !== 'awaiting_approval') return assert.fail(`not a card: ${r.reason}`);
  const items = r.approval.card.items;
  assert.deepEqual(
    items.map((i) => [i.call_id, i.tool, i.args]),
    [
      ['s1', 'send_email', first],
      ['s2', 'send_email', second],
    ],
  );
  assert.equal(items[0].original_args, undefined, 'not edited');
  assert.match(items[0].call, /^send_email\(\{"body":"At 1, ok\?"/, 'the rendered call is still there');
  // The same as the stored pause (what an app had to read before).
  const stored = await keel.getRun(r.run_id);
  assert.equal(stored.pause?.kind, 'approval');
  if (stored.pause?.kind !== 'approval') return;
  assert.deepEqual(
    items.map((i) => ({ call_id: i.call_id, args: i.args })),
    stored.pause.items.map((i) => ({ call_id: i.call_id, args: i.args })),
  );
  // The stored card itself is unchanged: the arguments are the pause's, not copied into it.
  const [card] = await keel.listApprovals({ run_id: r.run_id });
  assert.equal('args' in card.card.items[0], false);
});
