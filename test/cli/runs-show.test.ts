/**
 * `keel runs show` on a run paused for the user (issue 47): a confirmation lists the held calls in
 * the tools' own words (`describe`), with their exact calls, and says it waits for a yes or a no and
 * how to give it; the question the run waits on is shown waiting — never "user answered: " with
 * nothing after it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { json, keel, ROOT, script, tempHome } from '../support/helpers.js';
import { testServer } from '../support/server.js';

const OUTSIDE = join(ROOT, 'test', 'fixtures', 'untrusted');

async function pausedRun(home: string, entries: unknown[]): Promise<string> {
  const model = script(home, entries as never);
  const r = await keel(['run', '--json', '--model', model, '--plugins', OUTSIDE, 'Tell ana lunch is at noon'], { KEEL_HOME: home });
  assert.equal(r.code, 3, r.stderr);
  return json<{ run_id: string }>(r).run_id;
}

test('issue 47: keel runs show on a confirmation lists the held calls in their own words and waits for a yes or a no', async () => {
  const home = tempHome('keel-runs-show-');
  const id = await pausedRun(home, [
    { tool_calls: [{ id: 'c1', name: 'send_message', args: { to: 'ana', body: 'Lunch is at noon.' } }] },
    { tool_calls: [{ id: 'c2', name: 'ask_user', args: { question: 'Send it?' } }] },
    { text: 'Sent.' },
  ]);
  const shown = await keel(['runs', 'show', id], { KEEL_HOME: home, NO_COLOR: '1' });
  assert.equal(shown.code, 0, shown.stderr);
  const out = shown.stdout;
  assert.doesNotMatch(out, /user answered/, 'the question has no answer yet');
  assert.match(out, /→ ask_user\(\{"question":"Send it\?"\}\) {2}⏸ waiting\n/);
  assert.match(out, /paused: waiting for a yes or a no to "Send it\?"\n/);
  assert.match(
    out,
    /Held until you confirm \(send_message\):\n {4}• Send a message to ana\n {8}Lunch is at noon\.\n {8}exact call: send_message\(\{"body":"Lunch is at noon\.","to":"ana"\}\)\n/,
  );
  assert.match(out, new RegExp(`keel resume ${id} --yes +or +keel resume ${id} --no`));
});

test('issue 47: keel runs show on a question shows it waiting, with no empty answer', async () => {
  const home = tempHome('keel-runs-show-');
  const id = await pausedRun(home, [{ tool_calls: [{ id: 'c1', name: 'ask_user', args: { question: 'Which ana?' } }] }, { text: 'Ok.' }]);
  const shown = await keel(['runs', 'show', id], { KEEL_HOME: home, NO_COLOR: '1' });
  assert.equal(shown.code, 0, shown.stderr);
  assert.doesNotMatch(shown.stdout, /user answered/);
  assert.match(shown.stdout, /→ ask_user\(\{"question":"Which ana\?"\}\) {2}⏸ waiting\n/);
  assert.match(shown.stdout, /paused: waiting for an answer to "Which ana\?"\n/);
});

test('issue 47: keel --server URL runs show on a confirmation lists the held calls and how to answer yes or no', async (t) => {
  const s = await testServer({}, tempHome('keel-runs-show-serve-'), [OUTSIDE]);
  t.after(() => s.close());
  const model = script(s.home, [
    { tool_calls: [{ id: 'c1', name: 'send_message', args: { to: 'ana', body: 'Lunch is at noon.' } }] },
    { tool_calls: [{ id: 'c2', name: 'ask_user', args: { question: 'Send it?' } }] },
    { text: 'Sent.' },
  ] as never);
  const started = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'Tell ana lunch is at noon', model } });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const id = started.body.run_id as string;
  for (let i = 0; i < 200 && (await s.api('GET', `/v1/runs/${id}`, { token: s.viewer })).body.status !== 'paused'; i++)
    await new Promise((r) => setTimeout(r, 50));
  const shown = await keel(['--server', s.url, 'runs', 'show', id], { KEEL_TOKEN: s.viewer, NO_COLOR: '1' });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /• Send a message to ana\n {8}Lunch is at noon\.\n/);
  assert.match(shown.stdout, new RegExp(`keel resume ${id} --yes +or +keel resume ${id} --no`));
});
