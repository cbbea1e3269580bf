/**
 * Issue 47 (R18): an application's run with tools declared in code is never carried on by a process
 * that lacks them. Its card approved from the CLI (`keel approvals approve`) is recorded and the run
 * waits for the app; `keel resume` and a confirmation answered from the CLI are refused with nothing
 * claimed; `keel serve`'s API records it the same way and does not carry the run on. The
 * app then carries the run on and the approved call runs exactly once. On both stores, through the
 * real CLI.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import { defineTool } from '../../src/tools/define.js';
import { keel, script, tempHome } from '../support/helpers.js';
import { freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { testServer } from '../support/server.js';

/** The app's own tools: a destructive one (a card for every call) and a confirm-once write. */
function appTools() {
  const done: string[] = [];
  const tools = [
    defineTool({
      name: 'wipe_folder',
      description: 'Delete every file in a folder',
      parameters: { type: 'object', properties: { folder: { type: 'string' } }, required: ['folder'] },
      effect: 'destructive',
      describe: ({ folder }) => ({ title: `Wipe ${String(folder)}`, lines: [] }),
      execute: ({ folder }) => {
        done.push(`wipe ${String(folder)}`);
        return `Wiped ${String(folder)}.`;
      },
    }),
    defineTool({
      name: 'file_note',
      description: 'File a note',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      effect: 'write',
      execute: ({ text }) => {
        done.push(`note ${String(text)}`);
        return 'Filed.';
      },
    }),
  ];
  return { done, tools };
}

async function cardFromTheCli(t: test.TestContext, storeEnv: Record<string, string>): Promise<void> {
  const home = tempHome('keel-app-run-');
  const env = { ...process.env, ...storeEnv };
  const cli = (args: string[]) => keel(args, { KEEL_HOME: home, ...storeEnv });
  const { done, tools } = appTools();
  const model = script(home, [{ tool_calls: [{ id: 'c1', name: 'wipe_folder', args: { folder: 'tmp' } }] }, { text: 'Wiped tmp.' }]);
  let runId: string;
  let approvalId: string;
  {
    await using app = new Keel({ home, tools, env });
    const r = await app.run('wipe the tmp folder', { model });
    assert.ok(r.status === 'paused' && r.reason === 'awaiting_approval', JSON.stringify(r));
    runId = r.run_id;
    approvalId = r.approval.id;
    assert.deepEqual((await app.getRun(runId)).app_tools, ['wipe_folder', 'file_note'], 'the run records its tools in code');
  }

  const approved = await cli(['approvals', 'approve', approvalId]);
  assert.equal(approved.code, 0, approved.stdout + approved.stderr);
  assert.match(approved.stdout, new RegExp(`Approval ${approvalId}: approved\\. Run ${runId} belongs to an application`));
  assert.match(approved.stdout, /tools declared in code that this process does not have \(wipe_folder, file_note\)/);
  assert.match(approved.stdout, /the run continues when that application resumes it/);
  assert.doesNotMatch(approved.stdout + approved.stderr, /no longer available/);
  assert.deepEqual(done, [], 'nothing ran in the CLI');

  // The run waits for its app: the CLI does not carry it on either.
  const resumed = await cli(['resume', runId]);
  assert.equal(resumed.code, 2, resumed.stdout + resumed.stderr);
  assert.match(resumed.stderr, /needs its tools declared in code \(wipe_folder, file_note\), which this process does not have/);
  const shown = JSON.parse((await cli(['runs', 'show', runId, '--json'])).stdout) as { status: string; reason: string };
  assert.deepEqual([shown.status, shown.reason], ['paused', 'awaiting_approval'], 'still waiting, its card approved');

  await using app = new Keel({ home, tools, env });
  t.after(() => app.close());
  const end = await app.resume(runId);
  assert.equal(end.status, 'done', JSON.stringify(end));
  assert.equal(end.answer, 'Wiped tmp.');
  assert.deepEqual(done, ['wipe tmp'], 'the approved call ran once, in the app');
  assert.deepEqual(
    end.steps.map((s) => [s.tool, s.outcome]),
    [['wipe_folder', 'ran']],
  );
}

test("R18: an app's card approved from the CLI is recorded and waits for the app's tools; the app's resume runs the call once (SQLite)", (t) =>
  cardFromTheCli(t, {}));

test("R18: an app's card approved from the CLI is recorded and waits for the app's tools; the app's resume runs the call once (PostgreSQL)", async (t) =>
  cardFromTheCli(t, { KEEL_STORE: withSchema(await testPgUrl(), freshSchema()) }));

async function confirmationFromTheCli(t: test.TestContext, storeEnv: Record<string, string>): Promise<void> {
  const home = tempHome('keel-app-run-');
  const env = { ...process.env, ...storeEnv };
  const cli = (args: string[]) => keel(args, { KEEL_HOME: home, ...storeEnv });
  const { done, tools } = appTools();
  const model = script(home, [
    { tool_calls: [{ id: 'n1', name: 'file_note', args: { text: 'call Bo' } }] },
    { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'File the note "call Bo"?' } }] },
    { tool_calls: [{ id: 'n2', name: 'file_note', args: { text: 'call Bo' } }] },
    { text: 'Filed.' },
  ]);
  let runId: string;
  {
    await using app = new Keel({ home, tools, env });
    const r = await app.run('note: call Bo', { model });
    assert.ok(r.status === 'paused' && r.reason === 'awaiting_user_input' && r.confirm, JSON.stringify(r));
    runId = r.run_id;
  }
  const yes = await cli(['resume', runId, '--yes']);
  assert.equal(yes.code, 2, yes.stdout + yes.stderr);
  assert.match(yes.stderr, /needs its tools declared in code .*which this process does not have/);
  assert.deepEqual(done, []);

  // A server's answer path (the API's and the console's) with no tools of the app's: recorded, no leg.
  const server = new Keel({ home, env });
  t.after(() => server.close());
  assert.equal((await server.getRun(runId)).status, 'paused', 'the question is still open');
  await assert.rejects(() => server.answerRun(runId, { text: 'yes', confirm: true }), /needs its tools declared in code/);

  await using app = new Keel({ home, tools, env });
  t.after(() => app.close());
  const end = await app.confirm(runId, true);
  assert.equal(end.status, 'done', JSON.stringify(end));
  assert.deepEqual(done, ['note call Bo'], 'the confirmed write ran once, in the app');
}

test('R18: a confirmation of an app run answered from the CLI is refused, nothing claimed; the app answers it (SQLite)', (t) =>
  confirmationFromTheCli(t, {}));

test('R18: a confirmation of an app run answered from the CLI is refused, nothing claimed; the app answers it (PostgreSQL)', async (t) =>
  confirmationFromTheCli(t, { KEEL_STORE: withSchema(await testPgUrl(), freshSchema()) }));

async function cardFromAServer(t: test.TestContext, storeEnv: Record<string, string>): Promise<void> {
  const home = tempHome('keel-app-run-');
  const env = { ...process.env, ...storeEnv };
  const { done, tools } = appTools();
  const model = script(home, [{ tool_calls: [{ id: 'c1', name: 'wipe_folder', args: { folder: 'logs' } }] }, { text: 'Wiped logs.' }]);
  let approvalId: string;
  let runId: string;
  {
    await using app = new Keel({ home, tools, env });
    const r = await app.run('wipe the logs folder', { model });
    assert.ok(r.status === 'paused' && r.reason === 'awaiting_approval');
    approvalId = r.approval.id;
    runId = r.run_id;
  }
  // keel serve on the app's store: its API answers the card (as its console does, through answerApproval).
  const s = await testServer(storeEnv, home);
  t.after(() => s.close());
  const answered = await s.api('POST', `/v1/approvals/${approvalId}`, { token: s.approver, body: { decision: 'approve' } });
  assert.equal(answered.status, 200, JSON.stringify(answered.body));
  assert.equal(answered.body.approval.status, 'approved');
  assert.equal(answered.body.run, null, 'the server does not carry the run on');
  assert.deepEqual(answered.body.waits_for_app, { tools: ['wipe_folder', 'file_note'] });
  const carried = await s.api('POST', `/v1/runs/${runId}/continue`, { token: s.approver });
  assert.equal(carried.status, 422, JSON.stringify(carried.body));
  assert.match(carried.body.detail, /needs its tools declared in code/);
  assert.deepEqual(done, [], 'nothing ran in the server');

  await using app = new Keel({ home, tools, env });
  const end = await app.resume(runId);
  assert.equal(end.status, 'done');
  assert.deepEqual(done, ['wipe logs'], 'the approved call ran once, in the app');
}

test("R18: an app's card answered through keel serve's API waits for the app; the server does not carry it on (SQLite)", (t) =>
  cardFromAServer(t, {}));

test("R18: an app's card answered through keel serve's API waits for the app; the server does not carry it on (PostgreSQL)", async (t) =>
  cardFromAServer(t, { KEEL_STORE: withSchema(await testPgUrl(), freshSchema()) }));

test("S2/R18: approve() in a Keel without the run's tools keeps the answer and names the tools option; given them, the call runs once", async () => {
  const home = tempHome('keel-app-run-');
  const { done, tools } = appTools();
  const model = script(home, [{ tool_calls: [{ id: 'c1', name: 'wipe_folder', args: { folder: 'cache' } }] }, { text: 'Wiped cache.' }]);
  let id: string;
  let runId: string;
  {
    await using app = new Keel({ home, tools });
    const r = await app.run('wipe the cache folder', { model });
    assert.ok(r.status === 'paused' && r.reason === 'awaiting_approval');
    id = r.approval.id;
    runId = r.run_id;
  }
  {
    await using bare = new Keel({ home });
    await assert.rejects(
      () => bare.approve(id, { actor: 'ana' }),
      /approval .* is recorded \(approved\); run .* needs its tools declared in code \(wipe_folder, file_note\), which this Keel does not have: pass them again \(the `tools` option/,
    );
    assert.deepEqual(done, []);
    // The run's own tools, given to the continuation rather than the Keel, are enough.
    const end = await bare.resume(runId, { tools });
    assert.equal(end.status, 'done');
  }
  assert.deepEqual(done, ['wipe cache'], 'the approved call ran once');
});
