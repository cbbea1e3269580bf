/**
 * The CLI against a server (`--server URL` or KEEL_SERVER, with KEEL_TOKEN): run, approvals
 * list|approve, resume and runs list talk to the API and print what the local commands print.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { calls, json, keel, script, tempHome } from '../support/helpers.js';
import { cliServer } from '../support/server.js';

test('remote CLI: a run pauses on its card; approvals list and approve over HTTP; the call runs once; answers and lists too', async (t) => {
  const home = tempHome('keel-serve-');
  const srv = await cliServer(home);
  t.after(() => srv.child.kill('SIGKILL'));
  const made = await keel(['tokens', 'create', '--name', 'ana-phone', '--role', 'approver', '--json'], { KEEL_HOME: home });
  const token = JSON.parse(made.stdout).token as string;
  // The client has a home of its own: nothing it does touches the server's store but through the API.
  const client = { KEEL_HOME: tempHome('keel-client-'), KEEL_TOKEN: token };
  const model = script(home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed it.' }]);

  const r = await keel(['--server', srv.url, 'run', '--model', model, 'trash the deals'], client);
  assert.equal(r.code, 3, r.stderr); // paused for the user
  assert.match(r.stderr, /paused for approval/);
  const id = /keel approvals approve (apr_\w+)/.exec(r.stderr)?.[1];
  assert.ok(id, r.stderr);

  const list = await keel(['approvals', 'list', '--status', 'pending', '--json'], { ...client, KEEL_SERVER: srv.url });
  assert.deepEqual(
    json<{ id: string }[]>(list).map((a) => a.id),
    [id],
  );
  const ok = await keel(['--server', srv.url, 'approvals', 'approve', id, '--json'], client);
  assert.equal(ok.code, 0, ok.stderr);
  const done = json<{ status: string; answer: string; steps: { outcome: string }[] }>(ok);
  assert.equal(done.status, 'done');
  assert.equal(done.answer, 'Trashed it.');
  assert.equal(calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length, 1);
  const again = await keel(['--server', srv.url, 'approvals', 'approve', id], client);
  assert.equal(again.code, 2);
  assert.match(again.stderr, /409.*already approved by ana-phone/);

  const asked = script(
    home,
    [{ tool_calls: [{ id: 'q', name: 'ask_user', args: { question: 'Which day?' } }] }, { text: 'Booked Friday.' }],
    'q.yaml',
  );
  const q = await keel(['--server', srv.url, 'run', '--json', '--model', asked, 'book it'], client);
  const paused = json<{ run_id: string; question: string }>(q);
  assert.equal(paused.question, 'Which day?');
  const answered = await keel(['--server', srv.url, 'resume', paused.run_id, '--answer', 'Friday', '--json'], client);
  assert.equal(json<{ answer: string }>(answered).answer, 'Booked Friday.');

  const runs = await keel(['runs', 'list', '--json'], { ...client, KEEL_SERVER: srv.url });
  assert.deepEqual(
    json<{ run_id: string }[]>(runs)
      .map((x) => x.run_id)
      .includes(paused.run_id),
    true,
  );
  const noToken = await keel(['--server', srv.url, 'runs', 'list'], { KEEL_HOME: client.KEEL_HOME });
  assert.equal(noToken.code, 2);
  assert.match(noToken.stderr, /KEEL_TOKEN/);
  const viewer = JSON.parse(
    (await keel(['tokens', 'create', '--name', 'vic', '--role', 'viewer', '--json'], { KEEL_HOME: home })).stdout,
  ).token;
  const refused = await keel(['--server', srv.url, 'run', '--model', model, 'trash'], { ...client, KEEL_TOKEN: viewer });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /403.*vic is a viewer/);
});
