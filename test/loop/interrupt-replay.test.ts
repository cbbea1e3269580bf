/**
 * R18/P2: a model call cut short by an interruption (Ctrl-C, SIGTERM, an abort signal) gave no
 * reply, so resuming asks again: the scripted model replays that entry, as it does after kill -9
 * (issue 27, item 14). It is still counted as a model call (R30), and a session's next run goes on
 * from the entry after the last reply.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import type { ScriptEntry } from '../../src/models/script.js';
import { FIXTURES, script, tempHome } from '../support/helpers.js';

const DUES = { tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: { within_days: 15 } }] };

test('R18/P2: an interrupted model call is asked again on resume — the scripted model replays its entry, and the session goes on after it', async (t) => {
  const home = tempHome();
  t.after(() => rmSync(home, { recursive: true, force: true }));
  // Entry 2 is slow: the interruption comes while the model works on it.
  const model = script(home, [DUES, { delay_ms: 60_000, text: 'too slow' }, { text: 'the entry after' }] as ScriptEntry[]);
  const first = new Keel({ home });
  const ac = new AbortController();
  let session = '';
  const r = await first.run('what is due?', {
    model,
    pluginDirs: [FIXTURES],
    signal: ac.signal,
    onEvent: (e) => {
      if (e.type === 'run_started') session = e.session_id;
      if (e.type === 'model_request' && e.step === 2) setImmediate(() => ac.abort('the user pressed Ctrl-C'));
    },
  });
  await first.close();
  assert.equal(r.status, 'paused');
  assert.equal(r.reason, 'interrupted');
  assert.equal(r.model_calls, 2, 'R30: the call cut short is counted');

  // The slow entry now answers at once, as a model asked again would; the one after must stay unread.
  script(home, [DUES, { text: 'Two bills are due.' }, { text: 'the entry after' }, { text: 'one too far' }] as ScriptEntry[]);
  const second = new Keel({ home });
  t.after(() => second.close());
  const done = await second.resume(r.run_id);
  assert.equal(done.status, 'done');
  assert.equal(done.answer, 'Two bills are due.', 'the interrupted entry is replayed, not skipped');
  assert.equal(done.model_calls, 3);

  // The session's next run continues the script from the entry after the last reply.
  const next = await second.run('and then?', { model, pluginDirs: [FIXTURES], session });
  assert.equal(next.status, 'done');
  assert.equal(next.answer, 'the entry after');
});
