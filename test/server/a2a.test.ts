/**
 * Issue 48 (S10–S13): keel serve as an A2A v1.0 agent, driven with the official `@a2a-js/sdk`
 * client (ClientFactory, JsonRpcTransportFactory with a fetch that adds the bearer token) — never a
 * hand-written JSON-RPC call. The card is public and names the skills; a message starts a run and
 * the task is the run; a destructive call makes the task input-required with the card in words and
 * as data; a viewer's answer is refused and runs nothing; the approver's answer runs the call once
 * and completes the task; the same answer again changes nothing; a routed card is answered only by
 * its group; a question and a confirmation are answered on the task; CancelTask cancels the run
 * and closes its card; a card answered elsewhere moves a subscribed task on.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type StreamResponse, TaskState } from '@a2a-js/sdk';
import { stringify } from 'yaml';
import { a2aClient, answerOf, asTask, dataOf, a2aMessage as msg, texts } from '../support/a2a.js';
import { calls, ROOT, script, tempHome } from '../support/helpers.js';
import { readmeBlock } from '../support/readme.js';
import { byTool, routeCards } from '../support/routed.js';
import { type TestServer, testServer } from '../support/server.js';

let s: TestServer;
let finance: string;
before(async () => {
  s = await testServer();
  // A9: send_email's cards are routed to the finance group (as a Cedar policy's @approvers would route them).
  routeCards(s.srv.keel.store as never, byTool(['send_email'], ['finance'], ['big-mail']));
  finance = (await s.api('POST', '/v1/tokens', { token: s.admin, body: { name: 'fin', role: 'approver', groups: ['finance'] } })).body
    .token;
});
after(() => s.close());

const a2a = (token: string) => a2aClient(s.url, token);
const trashed = (id: string) => calls(s.home, 'mail-calls.log').filter((l) => l === `trash_email {"ids":["${id}"]}`).length;
const trashScript = (id: string, name: string) =>
  script(s.home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: [id] } }] }, { text: `Trashed ${id}.` }] as never, name);

test('S10: the agent card is public: skills from the plugins, the JSON-RPC interface, a bearer scheme, no secrets', async () => {
  const res = await fetch(`${s.url}/.well-known/agent-card.json`);
  assert.equal(res.status, 200);
  const text = await res.text();
  const card = JSON.parse(text);
  assert.equal(card.name, 'Keel');
  assert.deepEqual(card.supportedInterfaces, [{ url: `${s.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]);
  assert.equal(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme, 'Bearer');
  assert.deepEqual(card.capabilities, { streaming: true, pushNotifications: false });
  const mail = card.skills.find((k: { id: string }) => k.id === 'mail');
  assert.match(mail.description, /trash_email \(destructive; each call waits for a person to approve its card/);
  assert.match(mail.description, /search_inbox \(read; runs without asking\): Search the inbox/);
  assert.ok(mail.tags.includes('send_email'));
  assert.ok(!text.includes(s.home), 'no folder of the deployment');
  assert.ok(!text.includes(s.admin) && !/keel_[A-Za-z0-9_-]{20,}/.test(text), 'no token');
  // The official client reads it and picks the interface it names.
  const client = await a2a(s.viewer);
  assert.equal((await client.getAgentCard()).name, 'Keel');
});

test('S11: a message starts a run — the task is the run, its context the session; a second message in the context continues the session', async () => {
  const client = await a2a(s.approver);
  const model = script(s.home, [{ text: 'First answer.' }, { text: 'Second answer.' }] as never, 'two-turns.yaml');
  const first = asTask(await client.sendMessage(msg({ text: 'hello', model, contextId: 'ctx-a2a-1' })));
  assert.equal(first.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.match(first.id, /^run_/);
  assert.equal(first.contextId, 'ctx-a2a-1');
  assert.deepEqual(answerOf(first), ['First answer.']);
  const run = (await s.api('GET', `/v1/runs/${first.id}`, { token: s.viewer })).body;
  assert.equal(run.session_id, 'ctx-a2a-1');
  assert.equal(run.answer, 'First answer.');
  const second = asTask(await client.sendMessage(msg({ text: 'and again', model, contextId: first.contextId })));
  assert.deepEqual(answerOf(second), ['Second answer.'], 'the scripted model went on from the session');
  assert.notEqual(second.id, first.id);
  const runs = (await s.api('GET', '/v1/runs?session=ctx-a2a-1', { token: s.viewer })).body.runs;
  assert.equal(runs.length, 2);
  // GetTask and ListTasks read it (a viewer may).
  const viewer = await a2a(s.viewer);
  const got = await viewer.getTask({ tenant: '', id: first.id });
  assert.equal(got.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.deepEqual(answerOf(got), ['First answer.']);
  const listed = await viewer.listTasks({
    tenant: '',
    contextId: 'ctx-a2a-1',
    status: 0,
    pageToken: '',
    statusTimestampAfter: undefined,
    includeArtifacts: true,
  });
  assert.deepEqual(listed.tasks.map((t) => t.id).sort(), [first.id, second.id].sort());
  // A resent message (same messageId) starts nothing again.
  await assert.rejects(
    client
      .sendMessage(msg({ text: 'hello', model, messageId: 'fixed-1' }))
      .then(() => client.sendMessage(msg({ text: 'hello', model, messageId: 'fixed-1' }))),
    /started task run_\w+ already/,
  );
});

test('S11: SendStreamingMessage streams the task working, its progress, the answer as an artifact, then completed', async () => {
  const client = await a2a(s.approver);
  const model = script(
    s.home,
    [{ tool_calls: [{ id: 'r1', name: 'search_inbox', args: { query: 'x' } }] }, { text: 'Found three.' }] as never,
    'stream.yaml',
  );
  const events: StreamResponse[] = [];
  for await (const e of client.sendMessageStream(msg({ text: 'search', model }))) events.push(e);
  const kinds = events.map((e) => e.payload?.$case);
  assert.deepEqual(kinds, ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate']);
  const task = events[0].payload?.$case === 'task' ? events[0].payload.value : undefined;
  assert.equal(task?.status?.state, TaskState.TASK_STATE_WORKING);
  // Progress: the reply that calls a tool, which tool — not its arguments nor its result.
  const progress = events[1].payload?.$case === 'statusUpdate' ? events[1].payload.value : undefined;
  assert.equal(progress?.status?.state, TaskState.TASK_STATE_WORKING);
  assert.deepEqual(dataOf(progress?.status?.message), { calls: [{ tool: 'search_inbox', call_id: 'r1' }] });
  const art = events[2].payload?.$case === 'artifactUpdate' ? events[2].payload.value : undefined;
  assert.deepEqual(texts(art?.artifact), ['Found three.']);
  const end = events[3].payload?.$case === 'statusUpdate' ? events[3].payload.value : undefined;
  assert.equal(end?.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(end?.taskId, task?.id);
});

test('S12: a destructive call makes the task input-required with the card in words and as data; a viewer is refused; the approver runs it once; the same answer again changes nothing', async () => {
  const approver = await a2a(s.approver);
  const viewer = await a2a(s.viewer);
  const waiting = asTask(await approver.sendMessage(msg({ text: 'trash m1', model: trashScript('m1', 'trash-m1.yaml') })));
  assert.equal(waiting.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const words = texts(waiting.status?.message).join('\n');
  assert.match(words, /^Approval needed \(apr_\w+\): Move 1 email\(s\) to Trash/);
  assert.match(words, /exact call: trash_email\(\{"ids":\["m1"\]\}\)/);
  const data = dataOf(waiting.status?.message);
  assert.match(data.approval, /^apr_/);
  assert.equal(data.items.length, 1);
  assert.equal(data.items[0].tool, 'trash_email');
  assert.deepEqual(data.items[0].args, { ids: ['m1'] });
  assert.deepEqual(data.items[0].describe, { title: 'Move 1 email(s) to Trash', lines: ['Your weekly deals'] });
  assert.equal(data.items[0].undo, 'reversible with restore_email');
  assert.deepEqual(data.untrusted, []);
  // The same card, read by the API, is the one the task names.
  assert.equal((await s.api('GET', `/v1/approvals/${data.approval}`, { token: s.viewer })).body.status, 'pending');

  // A viewer may read the task, not answer it: refused, nothing runs, the card stays pending.
  assert.equal((await viewer.getTask({ tenant: '', id: waiting.id })).status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  await assert.rejects(
    viewer.sendMessage(msg({ taskId: waiting.id, data: { approval: data.approval, decision: 'approve' } })),
    /vic is a viewer/,
  );
  assert.equal(trashed('m1'), 0);
  assert.equal((await s.api('GET', `/v1/approvals/${data.approval}`, { token: s.viewer })).body.status, 'pending');

  // The approver's answer runs the call once and completes the task.
  const done = asTask(await approver.sendMessage(msg({ taskId: waiting.id, data: { approval: data.approval, decision: 'approve' } })));
  assert.equal(done.id, waiting.id);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.deepEqual(answerOf(done), ['Trashed m1.']);
  assert.equal(trashed('m1'), 1);
  const audit = (await s.srv.keel.store?.listAudit(data.approval)) ?? [];
  assert.ok(
    audit.some((a) => a.action === 'approved' && a.actor === 'ana-phone'),
    JSON.stringify(audit),
  );

  // The same answer again: refused, nothing more runs.
  await assert.rejects(
    approver.sendMessage(msg({ taskId: waiting.id, data: { approval: data.approval, decision: 'approve' } })),
    /has ended|answered already|nothing changed/,
  );
  assert.equal(trashed('m1'), 1);
});

test('S12: an answer replayed while its run still works, or one for a card answered from the API, changes nothing; a subscribed task moves on when the card is answered elsewhere', async () => {
  const approver = await a2a(s.approver);
  const model = script(
    s.home,
    [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m2'] } }] }, { delay_ms: 400, text: 'Trashed m2.' }] as never,
    'trash-m2.yaml',
  );
  const waiting = asTask(await approver.sendMessage(msg({ text: 'trash m2', model })));
  const approval = dataOf(waiting.status?.message).approval;
  // Someone subscribes; the card is answered from the API (the console's and the CLI's path): the task moves on.
  const sub = (async () => {
    const seen: StreamResponse[] = [];
    for await (const e of approver.resubscribeTask({ tenant: '', id: waiting.id })) seen.push(e);
    return seen;
  })();
  await new Promise((r) => setTimeout(r, 200));
  assert.equal((await s.api('POST', `/v1/approvals/${approval}`, { token: s.approver, body: { decision: 'approve' } })).status, 200);
  // The A2A answer to the same card: refused (answered already), nothing runs twice.
  await assert.rejects(
    approver.sendMessage(msg({ taskId: waiting.id, data: { approval, decision: 'approve' } })),
    /answered already|nothing changed|is working/,
  );
  const seen = await sub;
  assert.equal(seen[0].payload?.$case, 'task');
  const last = seen[seen.length - 1].payload;
  assert.equal(last?.$case === 'statusUpdate' ? last.value.status?.state : undefined, TaskState.TASK_STATE_COMPLETED);
  assert.equal(trashed('m2'), 1);
});

test('S12 (A9): a routed card is answered only by a token of its group, through the one answer path', async () => {
  const approver = await a2a(s.approver);
  const fin = await a2a(finance);
  const model = script(
    s.home,
    [{ tool_calls: [{ id: 's1', name: 'send_email', args: { to: 'bob', subject: 'invoice' } }] }, { text: 'Sent.' }] as never,
    'routed.yaml',
  );
  const waiting = asTask(await approver.sendMessage(msg({ text: 'mail bob the invoice', model })));
  const data = dataOf(waiting.status?.message);
  assert.deepEqual(data.approvers, ['finance']);
  assert.match(texts(waiting.status?.message).join('\n'), /Only FINANCE may answer this card/);
  await assert.rejects(
    approver.sendMessage(msg({ taskId: waiting.id, data: { approval: data.approval, decision: 'approve' } })),
    /routed to the group finance/,
  );
  assert.equal((await s.api('GET', `/v1/approvals/${data.approval}`, { token: s.viewer })).body.status, 'pending');
  // Sent without its task, the card's answer is the answer on the card's task.
  const done = asTask(await fin.sendMessage(msg({ data: { approval: data.approval, decision: 'approve' } })));
  assert.equal(done.id, waiting.id);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(calls(s.home, 'mail-calls.log').filter((l) => l.startsWith('send_email')).length, 1);
});

test('S12: a question and a confirmation of held writes are input-required too, answered on the task with text and { confirm }', async () => {
  const approver = await a2a(s.approver);
  const model = script(
    s.home,
    [
      { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Which day?' } }] },
      { tool_calls: [{ id: 'c1', name: 'create_reminder', args: { title: 'dentist', due: 'monday' } }] },
      { tool_calls: [{ id: 'q2', name: 'ask_user', args: { question: 'Create the reminder "dentist" on Monday?' } }] },
      { tool_calls: [{ id: 'c2', name: 'create_reminder', args: { title: 'dentist', due: 'monday' } }] },
      { text: 'Reminder set.' },
    ] as never,
    'question.yaml',
  );
  const asked = asTask(await approver.sendMessage(msg({ text: 'remind me', model })));
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  assert.deepEqual(dataOf(asked.status?.message), { question: 'Which day?' });
  assert.deepEqual(texts(asked.status?.message), ['Which day?']);
  // A decision where a question waits is refused; the text answers it.
  await assert.rejects(approver.sendMessage(msg({ taskId: asked.id, data: { confirm: true } })), /asks a question/);
  const confirm = asTask(await approver.sendMessage(msg({ taskId: asked.id, text: 'Monday' })));
  assert.equal(confirm.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const held = dataOf(confirm.status?.message);
  assert.deepEqual(held.confirm.tools, ['create_reminder']);
  assert.equal(held.confirm.items[0].tool, 'create_reminder');
  assert.deepEqual(held.confirm.items[0].args, { title: 'dentist', due: 'monday' });
  // R16: words are not a decision.
  await assert.rejects(approver.sendMessage(msg({ taskId: asked.id, text: 'yes' })), /a free-text answer is not a decision/);
  const done = asTask(await approver.sendMessage(msg({ taskId: asked.id, data: { confirm: true } })));
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.deepEqual(answerOf(done), ['Reminder set.']);
  // The history holds the question and its answer.
  const history = (await approver.getTask({ tenant: '', id: asked.id })).history.map((m) => texts(m).join(''));
  assert.deepEqual(history.slice(0, 3), ['remind me', 'Which day?', 'Monday']);
});

test('S13: CancelTask cancels the waiting run (audited), its card closes and can run nothing; a viewer cannot cancel', async () => {
  const approver = await a2a(s.approver);
  const viewer = await a2a(s.viewer);
  const waiting = asTask(await approver.sendMessage(msg({ text: 'trash m3', model: trashScript('m3', 'trash-m3.yaml') })));
  const approval = dataOf(waiting.status?.message).approval;
  await assert.rejects(viewer.cancelTask({ tenant: '', id: waiting.id, metadata: undefined }), /vic is a viewer/);
  const cancelled = await approver.cancelTask({ tenant: '', id: waiting.id, metadata: { reason: 'changed my mind' } });
  assert.equal(cancelled.status?.state, TaskState.TASK_STATE_CANCELED);
  assert.match(texts(cancelled.status?.message).join(''), /cancelled by ana-phone: changed my mind/);
  const card = (await s.api('GET', `/v1/approvals/${approval}`, { token: s.viewer })).body;
  assert.equal(card.status, 'rejected');
  assert.equal(card.reason, 'the run was cancelled');
  await assert.rejects(
    approver.sendMessage(msg({ taskId: waiting.id, data: { approval, decision: 'approve' } })),
    /has ended \(cancelled\)/,
  );
  assert.equal((await s.api('POST', `/v1/approvals/${approval}`, { token: s.approver, body: { decision: 'approve' } })).status, 409);
  assert.equal(trashed('m3'), 0);
  const audit = (await s.srv.keel.store?.listAudit(waiting.id)) ?? [];
  assert.ok(audit.some((a) => a.action === 'cancel_run' && a.actor === 'ana-phone'));
  // Cancelling again says what it is.
  assert.equal(
    (await approver.cancelTask({ tenant: '', id: waiting.id, metadata: undefined })).status?.state,
    TaskState.TASK_STATE_CANCELED,
  );
});

test('S10: a call without a token, or with one the server does not know, is refused (401); the version is checked', async () => {
  const res = await fetch(`${s.url}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }),
  });
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('www-authenticate'), 'Bearer');
  assert.equal((await res.json()).error.code, -32040);
  await assert.rejects(
    (await a2a('keel_not-a-token')).listTasks({ tenant: '', contextId: '', status: 0, pageToken: '', statusTimestampAfter: undefined }),
    /not valid/,
  );
});

test("S12 (A7): an edit on the answer is checked as everywhere — refused, the card stays pending; a rejection runs nothing and the task completes with the model's words", async () => {
  const approver = await a2a(s.approver);
  const model = script(
    s.home,
    [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m3'] } }] }, { text: 'Left it alone.' }] as never,
    'edit.yaml',
  );
  const waiting = asTask(await approver.sendMessage(msg({ text: 'trash m3 again', model })));
  const approval = dataOf(waiting.status?.message).approval;
  await assert.rejects(
    approver.sendMessage(msg({ taskId: waiting.id, data: { approval, decision: 'approve', arguments: { ids: ['nope'] } } })),
    /no email with id nope/,
  );
  assert.equal((await s.api('GET', `/v1/approvals/${approval}`, { token: s.viewer })).body.status, 'pending');
  const done = asTask(await approver.sendMessage(msg({ taskId: waiting.id, data: { approval, decision: 'reject', reason: 'not now' } })));
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.deepEqual(answerOf(done), ['Left it alone.']);
  const card = (await s.api('GET', `/v1/approvals/${approval}`, { token: s.viewer })).body;
  assert.equal(card.status, 'rejected');
  assert.equal(card.reason, 'not now');
  assert.equal(trashed('m3'), 0);
});

test("S10: KEEL_PUBLIC_URL is the origin the card names (behind a proxy); the README's A2A client runs as written against the server", async () => {
  const home = tempHome('keel-a2a-readme-');
  const model = script(home, [
    { tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m2'] } }] },
    { text: 'Trashed m2.' },
  ] as never);
  const other = await testServer({ KEEL_MODEL: model, KEEL_PUBLIC_URL: 'https://keel.example.com/' }, home);
  try {
    const card = await (await fetch(`${other.url}/.well-known/agent-card.json`)).json();
    assert.equal(card.supportedInterfaces[0].url, 'https://keel.example.com/a2a');
    await assert.rejects(
      testServer({ KEEL_PUBLIC_URL: 'ftp://keel.example.com' }),
      /KEEL_PUBLIC_URL=ftp:\/\/keel.example.com is not an http\(s\) URL/,
    );
    // The README's client, in a folder of its own that finds @a2a-js/sdk as an app's node_modules would.
    const dir = tempHome('keel-a2a-client-');
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'a2a-client.mjs'), readmeBlock('a2a-client'));
    // The card names the public URL, which this test cannot reach: the client is pointed at the server through its own card path.
    const local = await testServer({ KEEL_MODEL: model }, tempHome('keel-a2a-readme2-'));
    try {
      const child = spawn(process.execPath, ['a2a-client.mjs', 'trash m2'], {
        cwd: dir,
        env: { ...process.env, KEEL_URL: local.url, KEEL_TOKEN: local.approver },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stderr.on('data', (d) => (err += d));
      child.stdout.on('data', (d) => {
        out += d;
        // A person reads the card, then types y.
        if (out.endsWith('> ')) child.stdin.write('y\n');
      });
      const code = await new Promise<number | null>((r) => child.on('close', r));
      assert.equal(code, 0, err);
      assert.match(out, /Approval needed \(apr_\w+\): Move 1 email\(s\) to Trash/);
      assert.match(out, /Trashed m2\.\n$/);
      assert.equal(calls(local.home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length, 1);
    } finally {
      await local.close();
    }
  } finally {
    await other.close();
  }
});

test("S12 (D1): a task whose run waits for a delegate shows the delegate's card as its own; answered on the task, the delegate's call runs once and the task completes with the run's answer", async () => {
  const home = tempHome('keel-a2a-delegate-');
  const child = script(
    home,
    [{ tool_calls: [{ id: 'd1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed the deals.' }] as never,
    'child.yaml',
  );
  const asker = script(
    home,
    [{ tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Keep the report draft?' } }] }, { text: 'Kept it.' }] as never,
    'asker.yaml',
  );
  writeFileSync(
    join(home, 'config.yaml'),
    stringify({
      subagents: {
        delegates: [
          {
            name: 'cleaner',
            description: 'tidies the inbox',
            instructions: 'You tidy things up.',
            tools: ['search_inbox', 'trash_email'],
            model: child,
          },
          { name: 'asker', description: 'asks what to keep', instructions: 'You ask first.', tools: ['search_inbox'], model: asker },
        ],
      },
    }),
  );
  const srv = await testServer({}, home);
  try {
    const approver = await a2aClient(srv.url, srv.approver);
    const model = script(
      home,
      [
        { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Trash the promotion m1.' } }] },
        { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
        { text: 'The cleaner trashed the deals.' },
      ] as never,
      'parent.yaml',
    );
    const waiting = asTask(await approver.sendMessage(msg({ text: 'Clean up my inbox', model })));
    assert.equal(waiting.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED, JSON.stringify(waiting.status));
    const data = dataOf(waiting.status?.message);
    assert.equal(data.items[0].tool, 'trash_email');
    assert.equal(data.chain.delegate, 'cleaner');
    assert.match(data.run_id, /^run_/);
    assert.notEqual(data.run_id, waiting.id, "the delegate's run, named beside the card");
    assert.equal((await approver.getTask({ tenant: '', id: waiting.id })).status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const done = asTask(await approver.sendMessage(msg({ taskId: waiting.id, data: { approval: data.approval, decision: 'approve' } })));
    assert.equal(done.id, waiting.id);
    assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(done.status));
    assert.deepEqual(answerOf(done), ['The cleaner trashed the deals.']);
    assert.equal(calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length, 1);

    // A delegate's question is the task's question too, answered with text on the task.
    const parent = script(
      home,
      [
        { tool_calls: [{ id: 't', name: 'task', args: { agent: 'asker', prompt: 'Ask what to keep.' } }] },
        { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
        { text: 'The report draft stays.' },
      ] as never,
      'parent2.yaml',
    );
    const asked = asTask(await approver.sendMessage(msg({ text: 'Ask me what to keep in my inbox', model: parent })));
    assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED, JSON.stringify(asked.status));
    const q = dataOf(asked.status?.message);
    assert.equal(q.question, 'Keep the report draft?');
    assert.match(q.run_id, /^run_/);
    const answered = asTask(await approver.sendMessage(msg({ taskId: asked.id, text: 'Yes, keep it' })));
    assert.equal(answered.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(answered.status));
    assert.deepEqual(answerOf(answered), ['The report draft stays.']);
  } finally {
    await srv.close();
  }
});

test("S11: a failed run is a failed task with Keel's reason and words", async () => {
  const approver = await a2a(s.approver);
  // The scripted model has one reply and is asked for a second: the run fails (model_error).
  const model = script(s.home, [{ tool_calls: [{ id: 'x1', name: 'search_inbox', args: { query: 'x' } }] }] as never, 'fails.yaml');
  const failed = asTask(await approver.sendMessage(msg({ text: 'hello there', model })));
  assert.equal(failed.status?.state, TaskState.TASK_STATE_FAILED);
  assert.deepEqual(dataOf(failed.status?.message), { status: 'failed', reason: 'model_error' });
  assert.match(texts(failed.status?.message).join(''), /I stopped before finishing: the model failed/);
  assert.deepEqual(answerOf(failed), []);
});

test('S12 (A7): an edit on the answer runs the edited call, once, instead of the model’s', async () => {
  const approver = await a2a(s.approver);
  const model = script(
    s.home,
    [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m3'] } }] }, { text: 'Done as you said.' }] as never,
    'edit-ok.yaml',
  );
  const waiting = asTask(await approver.sendMessage(msg({ text: 'trash email m3', model })));
  const approval = dataOf(waiting.status?.message).approval;
  const before = trashed('m1');
  const done = asTask(
    await approver.sendMessage(msg({ taskId: waiting.id, data: { approval, decision: 'approve', arguments: { ids: ['m1'] } } })),
  );
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(trashed('m3'), 0, "the model's call did not run");
  assert.equal(trashed('m1'), before + 1, 'the edited call ran once');
  const card = (await s.api('GET', `/v1/approvals/${approval}`, { token: s.viewer })).body;
  assert.deepEqual(card.items[0].args, { ids: ['m1'] });
  assert.deepEqual(card.items[0].original_args, { ids: ['m3'] });
  assert.equal(card.items[0].edited_by, 'ana-phone');
});

test('S10 (S3): a JSON-RPC body past KEEL_MAX_BODY_BYTES is refused (413) before it is read, as a JSON-RPC error', async () => {
  const res = await fetch(`${s.url}/a2a`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.approver}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { parts: [{ text: 'x'.repeat(1_100_000) }] } },
    }),
  });
  assert.equal(res.status, 413);
  const body = await res.json();
  assert.equal(body.error.code, -32600);
  assert.match(body.error.message, /KEEL_MAX_BODY_BYTES/);
});
