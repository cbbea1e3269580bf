/**
 * `keel mcp serve` with the MCP SDK's own client, over stdio and Streamable HTTP, and with the
 * official Inspector's CLI: tools listed with annotations from their declarations; a read runs; a
 * confirm-once write asked once by elicitation (accepted: runs; declined: does not), or without
 * elicitation one card per session and tool; a destructive call approved with `keel approvals
 * approve` while the client waits — runs once — or returning (inside the client's time-out) naming
 * its card, then the same call again gets the outcome; identical calls at once share one card and
 * one run; the HTTP token is the actor; a client gone closes its cards; plan mode refuses a write
 * with the tool still listed; an upstream MCP server's write tools are gated.
 */
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ensureBuilt, FIXTURES, json, KEEL_BIN, keel, ROOT, tempHome } from '../support/helpers.js';
import { type Card, cards, mcpEnv, textOf, trashed } from './clients.js';

const FILESYSTEM = join(ROOT, 'test', 'fixtures', 'mcp', 'filesystem');

const env = (home: string) => mcpEnv(home);

/** A client over stdio; `elicit` answers the server's questions (absent: the client cannot be asked). */
async function stdioClient(
  home: string,
  args: string[],
  elicit?: (message: string) => 'accept' | 'decline',
  extraEnv: Record<string, string> = {},
) {
  ensureBuilt();
  const asked: string[] = [];
  const client = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities: elicit ? { elicitation: {} } : {} });
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const message = String(req.params.message);
      asked.push(message);
      return { action: elicit(message), content: {} };
    });
  }
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [KEEL_BIN, 'mcp', 'serve', ...args],
    env: { ...env(home), ...extraEnv },
    cwd: ROOT,
    stderr: 'pipe',
  });
  await client.connect(transport);
  return { client, asked, close: () => client.close() };
}

const reminders = (home: string) =>
  existsSync(join(home, 'reminders.jsonl')) ? readFileSync(join(home, 'reminders.jsonl'), 'utf8').trim().split('\n') : [];

async function pendingApproval(home: string): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const list = json<{ id: string }[]>(await keel(['approvals', 'list', '--status', 'pending', '--json'], { KEEL_HOME: home }));
    if (list.length) return list[0].id;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no card appeared');
}

test('mcp serve (stdio): tools with annotations from their declarations; a read runs; a confirm-once write asked once by elicitation for two calls', async (t) => {
  const home = tempHome('keel-mcp-');
  const c = await stdioClient(home, ['--plugins', FIXTURES], () => 'accept');
  t.after(() => c.close());
  const { tools } = await c.client.listTools();
  const by = new Map(tools.map((x) => [x.name, x]));
  assert.equal(by.get('calendar_lookup')?.annotations?.readOnlyHint, true);
  assert.equal(by.get('calendar_lookup')?.annotations?.destructiveHint, false);
  assert.equal(by.get('trash_email')?.annotations?.destructiveHint, true);
  assert.equal(by.get('create_reminder')?.annotations?.readOnlyHint, false);
  assert.equal(by.get('create_reminder')?.annotations?.destructiveHint, false);
  assert.deepEqual(by.get('create_reminder')?.inputSchema.required, ['title']);
  assert.ok(!by.has('ask_user') && !by.has('memory_search'), "the core's own tools are the agent loop's, not offered");

  const read = await c.client.callTool({ name: 'calendar_lookup', arguments: { day: 'Friday' } });
  assert.equal(textOf(read), 'No events on Friday.');
  assert.equal(read.isError, undefined);

  const first = await c.client.callTool({ name: 'create_reminder', arguments: { title: 'pay rent' } });
  const second = await c.client.callTool({ name: 'create_reminder', arguments: { title: 'call mum' } });
  assert.match(textOf(first), /Reminder "pay rent" created/);
  assert.match(textOf(second), /Reminder "call mum" created/);
  assert.equal(c.asked.length, 1, 'asked once per session and tool');
  assert.match(c.asked[0], /create_reminder/);
  assert.equal(reminders(home).length, 2);
});

test('mcp serve (stdio): a declined confirm-once write does not run, and the result says so', async (t) => {
  const home = tempHome('keel-mcp-');
  const c = await stdioClient(home, ['--plugins', FIXTURES], () => 'decline');
  t.after(() => c.close());
  const r = await c.client.callTool({ name: 'create_reminder', arguments: { title: 'pay rent' } });
  assert.equal(r.isError, true);
  assert.match(textOf(r), /declined create_reminder/);
  assert.deepEqual(reminders(home), []);
});

test('mcp serve (stdio): a destructive call waits for its card, approved with keel approvals approve — runs once', async (t) => {
  const home = tempHome('keel-mcp-');
  const c = await stdioClient(home, ['--plugins', FIXTURES, '--wait', '40']);
  t.after(() => c.close());
  const progress: string[] = [];
  const call = c.client.callTool({ name: 'trash_email', arguments: { ids: ['m1'] } }, undefined, {
    timeout: 60_000,
    onprogress: (p) => progress.push(String(p.message)),
  });
  const id = await pendingApproval(home);
  assert.equal(trashed(home).length, 0, 'nothing runs before the answer');
  const ok = await keel(['approvals', 'approve', id], { KEEL_HOME: home });
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /MCP session carries it out/);
  const r = await call;
  assert.match(textOf(r), /Moved 1 email/);
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m1"]}']);
  assert.ok(
    progress.some((m) => m.includes(`waiting for approval ${id}`)),
    'progress while it waited',
  );
});

test('mcp serve (stdio): a call that times out names its card; approved, a second call gets the outcome, and a third the recorded one — the call ran once (A2)', async (t) => {
  const home = tempHome('keel-mcp-');
  const c = await stdioClient(home, ['--plugins', FIXTURES, '--wait', '0.3']);
  t.after(() => c.close());
  const first = await c.client.callTool({ name: 'trash_email', arguments: { ids: ['m2'] } });
  assert.equal(first.isError, true);
  const id = /approval (apr_\w+)/.exec(textOf(first))?.[1];
  assert.ok(id, textOf(first));
  assert.match(textOf(first), /nothing has run/);
  assert.equal((await keel(['approvals', 'approve', id], { KEEL_HOME: home })).code, 0);
  const second = await c.client.callTool({ name: 'trash_email', arguments: { ids: ['m2'] } });
  assert.match(textOf(second), /Moved 1 email/);
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m2"]}'], 'once');
  const pending = json<unknown[]>(await keel(['approvals', 'list', '--status', 'pending', '--json'], { KEEL_HOME: home }));
  assert.equal(pending.length, 0, 'no second card for the call made again');
  // A1/A2: once run, the same call made again returns its recorded outcome — never a second card or run.
  const later = await c.client.callTool({ name: 'trash_email', arguments: { ids: ['m2'] } });
  assert.match(textOf(later), /Moved 1 email/);
  assert.equal(trashed(home).length, 1, 'still once');
  const all = json<unknown[]>(await keel(['approvals', 'list', '--json'], { KEEL_HOME: home }));
  assert.equal(all.length, 1, 'one card in all');
});

test('mcp serve --mode plan: a write stays listed and is refused with the mode’s denial; nothing runs', async (t) => {
  const home = tempHome('keel-mcp-');
  const c = await stdioClient(home, ['--plugins', FIXTURES, '--mode', 'plan'], () => 'accept');
  t.after(() => c.close());
  const { tools } = await c.client.listTools();
  assert.ok(
    tools.some((x) => x.name === 'create_reminder'),
    'still listed',
  );
  const r = await c.client.callTool({ name: 'create_reminder', arguments: { title: 'pay rent' } });
  assert.equal(r.isError, true);
  assert.match(textOf(r), /plan mode/);
  assert.equal(c.asked.length, 0, 'not even asked');
  assert.deepEqual(reminders(home), []);
  const read = await c.client.callTool({ name: 'calendar_lookup', arguments: { day: 'Monday' } });
  assert.equal(textOf(read), 'No events on Monday.');
});

test('mcp serve: an upstream MCP server (the reference filesystem server) behind Keel gets its write tools gated', async (t) => {
  const home = tempHome('keel-mcp-');
  mkdirSync(join(home, 'files'), { recursive: true });
  const c = await stdioClient(home, ['--plugins', FILESYSTEM, '--wait', '0.3']);
  t.after(() => c.close());
  const { tools } = await c.client.listTools();
  const write = tools.find((x) => x.name === 'write_file');
  assert.equal(write?.annotations?.destructiveHint, true, 'from Keel’s manifest, not the server’s own hints');
  const r = await c.client.callTool({ name: 'write_file', arguments: { path: join(home, 'files', 'a.txt'), content: 'hello' } });
  assert.equal(r.isError, true);
  assert.match(textOf(r), /Waiting for approval apr_/);
  assert.ok(!existsSync(join(home, 'files', 'a.txt')), 'nothing written before the owner approves');
  const list = await c.client.callTool({ name: 'list_directory', arguments: { path: join(home, 'files') } });
  assert.equal(list.isError, undefined, textOf(list));
});

test('mcp serve --http: Streamable HTTP on loopback with a bearer token; no token, no session', async (t) => {
  const home = tempHome('keel-mcp-');
  const made = await keel(['tokens', 'create', '--name', 'ide', '--role', 'approver', '--json'], { KEEL_HOME: home });
  const token = JSON.parse(made.stdout).token as string;
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [KEEL_BIN, 'mcp', 'serve', '--http', '0', '--plugins', FIXTURES], { env: env(home), cwd: ROOT });
  t.after(() => child.kill('SIGKILL'));
  const url = await new Promise<string>((res, rej) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) res(m[1]);
    });
    child.on('exit', (code) => rej(new Error(`exited ${code}`)));
  });
  const refused = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(refused.status, 401);

  const client = new Client({ name: 'http-client', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: {} }));
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  t.after(() => client.close());
  const { tools } = await client.listTools();
  assert.equal(tools.find((x) => x.name === 'trash_email')?.annotations?.destructiveHint, true);
  const read = await client.callTool({ name: 'calendar_lookup', arguments: { day: 'Sunday' } });
  assert.equal(textOf(read), 'No events on Sunday.');
  const w = await client.callTool({ name: 'create_reminder', arguments: { title: 'water plants' } });
  assert.match(textOf(w), /Reminder "water plants" created/);
  // With elicitation the card itself is shown to the client's user; accepted there, it runs once.
  const d = await client.callTool({ name: 'trash_email', arguments: { ids: ['m3'] } });
  assert.match(textOf(d), /Moved 1 email/);
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m3"]}']);
  const audit = json<unknown>(await keel(['approvals', 'list', '--json'], { KEEL_HOME: home })) as { answered_by: string }[];
  assert.equal(audit[0].answered_by, 'ide', 'the token’s name, not the client’s self-chosen one');
  // S3: every audit row of the session's answers names the token; the client's name is only a label.
  const { openStore } = await import('../../src/store/open.js');
  const store = openStore(home, { KEEL_HOME: home });
  t.after(() => store.close());
  const rows = (await store.listAudit()).filter((r) => r.action === 'confirm_once_yes' || r.action === 'approved');
  assert.deepEqual(rows.map((r) => `${r.action}:${r.actor}`).sort(), ['approved:ide', 'confirm_once_yes:ide']);
  assert.ok(!rows.some((r) => r.actor.includes('http-client')));
});

test('mcp serve: a plugin added while clients are connected: notifications/tools/list_changed, and the new tool is listed', async (t) => {
  const home = tempHome('keel-mcp-');
  const plugins = join(home, 'plugins');
  cpSync(join(FIXTURES, 'calendar'), join(plugins, 'calendar'), { recursive: true });
  const c = await stdioClient(home, ['--plugins', plugins]);
  t.after(() => c.close());
  let changed = 0;
  c.client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    changed++;
  });
  assert.ok(!(await c.client.listTools()).tools.some((x) => x.name === 'weather_now'));
  mkdirSync(join(plugins, 'weather'));
  writeFileSync(
    join(plugins, 'weather', 'index.js'),
    "export default (api) => api.registerTool({ name: 'weather_now', description: 'The weather now', parameters: { type: 'object', properties: {} }, execute: async () => 'Sunny.' });\n",
  );
  writeFileSync(
    join(plugins, 'weather', 'plugin.yaml'),
    'name: weather\nversion: 1.0.0\nprovides: [tool]\ntools:\n  weather_now:\n    effect: read\n    idempotent: true\n',
  );
  for (let i = 0; i < 100 && changed === 0; i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(changed >= 1, 'the client was told');
  const tool = (await c.client.listTools()).tools.find((x) => x.name === 'weather_now');
  assert.equal(tool?.annotations?.readOnlyHint, true);
  assert.equal(tool?.annotations?.idempotentHint, true, 'idempotentHint where the manifest says so');
  assert.equal(textOf(await c.client.callTool({ name: 'weather_now', arguments: {} })), 'Sunny.');
});

test('A1/A2: three identical destructive calls at once share one card; approved, the tool runs once and all three get its result', async (t) => {
  const home = tempHome('keel-mcp-');
  const c = await stdioClient(home, ['--plugins', FIXTURES, '--wait', '40']);
  t.after(() => c.close());
  const three = [1, 2, 3].map(() => c.client.callTool({ name: 'trash_email', arguments: { ids: ['m1', 'm2'] } }));
  const id = await pendingApproval(home);
  await new Promise((r) => setTimeout(r, 300)); // the other two calls have arrived
  assert.equal((await cards(home)).length, 1, 'one card for three identical calls');
  assert.equal((await keel(['approvals', 'approve', id], { KEEL_HOME: home })).code, 0);
  for (const r of await Promise.all(three)) assert.match(textOf(r), /Moved 2 email/);
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m1","m2"]}'], 'one execution');
  // The arguments in another key order are the same call (canonical JSON): the recorded outcome again.
  const again = await c.client.callTool({ name: 'trash_email', arguments: { ids: ['m1', 'm2'] } });
  assert.match(textOf(again), /Moved 2 email/);
  assert.equal(trashed(home).length, 1);
  assert.equal((await cards(home)).length, 1);
});

test('A1: a waiting call returns before the client’s time-out naming its card, what it asks (with the manifest’s undo), where to answer it, and that calling again gets the outcome; cards expire after KEEL_APPROVAL_TTL_MINUTES', async (t) => {
  const home = tempHome('keel-mcp-');
  const c = await stdioClient(home, ['--plugins', FIXTURES, '--wait', '0.5'], undefined, {
    KEEL_APPROVAL_TTL_MINUTES: '7',
    KEEL_SERVER: 'http://127.0.0.1:7373',
  });
  t.after(() => c.close());
  // The SDK client's own default request time-out (60 s), no options: the call comes back.
  const r = await c.client.callTool({ name: 'trash_email', arguments: { ids: ['m3'] } });
  const said = textOf(r);
  const id = /approval (apr_\w+)/.exec(said)?.[1];
  assert.ok(id, said);
  assert.match(said, /nothing has run/);
  assert.match(said, /reversible with restore_email/, 'the manifest’s undo');
  assert.match(said, new RegExp(`keel approvals approve ${id}`));
  assert.match(said, /console at http:\/\/127\.0\.0\.1:7373\//);
  assert.match(said, /again with the same arguments/);
  const [card] = await cards(home);
  assert.equal(Date.parse(card.expires_at) - Date.parse(card.requested_at), 7 * 60_000, 'KEEL_APPROVAL_TTL_MINUTES');
  assert.equal(card.card.items[0].undo, 'reversible with restore_email');
});

test('--wait above 50 seconds is refused, naming the flag and the clients’ 60 s time-out', async () => {
  const home = tempHome('keel-mcp-');
  const r = await keel(['mcp', 'serve', '--plugins', FIXTURES, '--wait', '90'], { KEEL_HOME: home });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--wait 90 is too long: at most 50 seconds/);
  assert.match(r.stderr, /60 seconds/);
});

test('R15/R16: three confirm-once calls without elicitation in one session: one card, for the tool; approved, they run, and later calls run unasked', async (t) => {
  const home = tempHome('keel-mcp-');
  const c = await stdioClient(home, ['--plugins', FIXTURES, '--wait', '40']);
  t.after(() => c.close());
  const titles = ['pay rent', 'call mum', 'water plants'];
  const three = titles.map((title) => c.client.callTool({ name: 'create_reminder', arguments: { title } }));
  const id = await pendingApproval(home);
  await new Promise((r) => setTimeout(r, 300));
  const [card] = await cards(home);
  assert.equal((await cards(home)).length, 1, 'one card per session and tool');
  assert.match(card.card.title, /create_reminder .*rest of this MCP session/);
  assert.equal(card.card.items[0].undo, 'the manifest declares no undo for create_reminder', 'not "cannot be undone"');
  assert.deepEqual(reminders(home), [], 'nothing before the answer');
  assert.equal((await keel(['approvals', 'approve', id], { KEEL_HOME: home })).code, 0);
  const results = await Promise.all(three);
  for (const [i, title] of titles.entries()) assert.match(textOf(results[i]), new RegExp(`Reminder "${title}" created`));
  const fourth = await c.client.callTool({ name: 'create_reminder', arguments: { title: 'feed cat' } });
  assert.match(textOf(fourth), /Reminder "feed cat" created/, 'consented for the session');
  assert.equal(reminders(home).length, 4);
  assert.equal((await cards(home)).length, 1, 'no second card');
});

test('S3: a client that disconnects with a pending card: the card is closed (rejected as client_gone, audited); approving it answers 409 and nothing runs', async (t) => {
  const home = tempHome('keel-mcp-');
  const c = await stdioClient(home, ['--plugins', FIXTURES, '--wait', '0.3']);
  t.after(() => c.close());
  const r = await c.client.callTool({ name: 'trash_email', arguments: { ids: ['m1'] } });
  const id = /approval (apr_\w+)/.exec(textOf(r))?.[1] as string;
  assert.ok(id, textOf(r));
  // Issue 47: without --keep-cards the call's text says the card lives as long as the client stays.
  assert.match(textOf(r), /while this client stays connected: if it disconnects first, the card is closed and nothing runs/);
  assert.match(textOf(r), /again with the same arguments in this session to get the outcome/);
  assert.doesNotMatch(textOf(r), /stays open|new one/);
  await c.close();
  let card: Card | undefined;
  for (let i = 0; i < 100; i++) {
    card = (await cards(home)).find((x) => x.id === id);
    if (card?.status !== 'pending') break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(card?.status, 'rejected');
  assert.equal(card?.reason, 'client_gone');
  const { testServer } = await import('../support/server.js');
  const srv = await testServer({}, home);
  t.after(() => srv.close());
  const approve = await srv.api('POST', `/v1/approvals/${id}`, { token: srv.approver, body: { decision: 'approve' } });
  assert.equal(approve.status, 409, JSON.stringify(approve.body));
  assert.match(JSON.stringify(approve.body), /already rejected/);
  // A3: the one conflict sentence says why the card is closed and that nothing ran.
  assert.match(JSON.stringify(approve.body), /closed because the MCP client that made the call left \(client_gone\), and nothing ran/);
  const cli = await keel(['approvals', 'approve', id], { KEEL_HOME: home });
  assert.notEqual(cli.code, 0);
  assert.match(cli.stderr, /the MCP client that made the call left/);
  assert.deepEqual(trashed(home), [], 'nothing ran');
});

/**
 * The official MCP Inspector's CLI (a client people run), one connection per command as a user
 * types them. Its build reads its own package.json relative to the working folder (`../package.json`),
 * so it runs from a folder one below the repository's root (the README says so, and
 * test/e2e/readme-outside.test.ts runs the README's commands as written).
 */
async function inspector(
  home: string,
  serveArgs: string[],
  method: string[],
): Promise<{ code: number | null; out: unknown; stderr: string }> {
  ensureBuilt();
  const { spawn } = await import('node:child_process');
  const bin = join(ROOT, 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build', 'cli.js');
  const child = spawn(
    process.execPath,
    [bin, '--cli', process.execPath, KEEL_BIN, 'mcp', 'serve', '--plugins', FIXTURES, ...serveArgs, ...method],
    { cwd: join(ROOT, 'test'), env: env(home) },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  const start = stdout.indexOf('{');
  return { code, out: start >= 0 ? JSON.parse(stdout.slice(start)) : undefined, stderr };
}

test('S3: the MCP Inspector CLI — tools/list with annotations, a read, a destructive call returning (inside the client’s time-out) naming its card; approved with keel approvals approve, the same call again returns the result, and the tool ran once', async () => {
  const home = tempHome('keel-mcp-');
  const serve = ['--wait', '1', '--keep-cards'];
  const list = await inspector(home, serve, ['--method', 'tools/list']);
  assert.equal(list.code, 0, list.stderr);
  const tools = new Map((list.out as { tools: { name: string; annotations: Record<string, boolean> }[] }).tools.map((x) => [x.name, x]));
  assert.equal(tools.get('trash_email')?.annotations.destructiveHint, true);
  assert.equal(tools.get('calendar_lookup')?.annotations.readOnlyHint, true);

  const read = await inspector(home, serve, ['--method', 'tools/call', '--tool-name', 'calendar_lookup', '--tool-arg', 'day=Friday']);
  assert.equal(read.code, 0, read.stderr);
  assert.equal(textOf(read.out), 'No events on Friday.');

  const trash = ['--method', 'tools/call', '--tool-name', 'trash_email', '--tool-arg', 'ids=["m2"]'];
  // The Inspector's client keeps the SDK's 60 s request time-out: a result at all means it came back in time.
  const first = await inspector(home, serve, trash);
  assert.equal(first.code, 0, first.stderr);
  const id = /approval (apr_\w+)/.exec(textOf(first.out))?.[1];
  assert.ok(id, textOf(first.out));
  assert.match(textOf(first.out), new RegExp(`keel approvals approve ${id}`));
  // Issue 47: with --keep-cards the text says the card outlives the connection, and a new one gets the outcome.
  assert.match(textOf(first.out), /the card stays open for the owner if this client disconnects/);
  assert.match(textOf(first.out), /again with the same arguments, from this session or a new one, to get the outcome/);
  assert.doesNotMatch(textOf(first.out), /card is closed/);
  assert.deepEqual(trashed(home), []);
  // --keep-cards: the Inspector's connection is gone, its card is still the owner's to answer.
  assert.equal((await cards(home, 'pending')).length, 1);
  assert.equal((await keel(['approvals', 'approve', id], { KEEL_HOME: home })).code, 0);

  const second = await inspector(home, serve, trash);
  assert.match(textOf(second.out), /Moved 1 email/);
  const third = await inspector(home, serve, trash);
  assert.match(textOf(third.out), /Moved 1 email/, 'the recorded outcome');
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m2"]}'], 'the tool ran once');
  assert.equal((await cards(home)).length, 1, 'one card in all');
});

test('issue 40: with --keep-cards, a confirm-once write’s card answers its own call from the Inspector CLI (a new connection per command): approved, the same call again runs once', async () => {
  const home = tempHome('keel-mcp-');
  const serve = ['--wait', '0.5', '--keep-cards'];
  const remind = [
    '--method',
    'tools/call',
    '--tool-name',
    'create_reminder',
    '--tool-arg',
    'title=Pay water',
    '--tool-arg',
    'due=2026-09-23',
  ];
  const first = await inspector(home, serve, remind);
  assert.equal(first.code, 0, first.stderr);
  const id = /approval (apr_\w+)/.exec(textOf(first.out))?.[1];
  assert.ok(id, textOf(first.out));
  assert.match(textOf(first.out), /Call create_reminder again with the same arguments/);
  assert.deepEqual(reminders(home), []);
  // Another connection makes the same call while the card waits: the same card, not a second one.
  const again = await inspector(home, serve, remind);
  assert.match(textOf(again.out), new RegExp(`approval ${id}`));
  assert.equal((await cards(home, 'pending')).length, 1);
  assert.equal((await keel(['approvals', 'approve', id], { KEEL_HOME: home })).code, 0);
  const ran = await inspector(home, serve, remind);
  assert.match(textOf(ran.out), /Reminder "Pay water" created/);
  const later = await inspector(home, serve, remind);
  assert.match(textOf(later.out), /Reminder "Pay water" created/, 'the recorded outcome');
  assert.equal(reminders(home).length, 1, 'the write ran once');
  assert.equal((await cards(home)).length, 1, 'one card in all');
});

test('S3 (issue 40): the words an MCP client shows — an elicited card without box drawing nor "You asked: MCP session"; a consent card waited on, in sentences; a session its client left ends as session_closed', async (t) => {
  const home = tempHome('keel-mcp-');
  const c = await stdioClient(home, ['--plugins', FIXTURES], () => 'accept');
  const d = await c.client.callTool({ name: 'trash_email', arguments: { ids: ['m3'] } });
  assert.match(textOf(d), /Moved 1 email/);
  const card = c.asked.find((m) => /trash_email/.test(m)) ?? '';
  assert.match(card, /^Approval needed \(apr_\w+\): /, card);
  assert.doesNotMatch(card, /[┌│└•]/, 'no terminal box drawing in a client’s window');
  assert.doesNotMatch(card, /You asked: MCP session/);
  await c.close();

  const plain = await stdioClient(home, ['--plugins', FIXTURES, '--wait', '0.3']);
  t.after(() => plain.close());
  const w = await plain.client.callTool({ name: 'create_reminder', arguments: { title: 'pay rent' } });
  assert.match(textOf(w), /as a yes would; the manifest declares no undo for create_reminder/, textOf(w));
  assert.doesNotMatch(textOf(w), /\.,/);
  await plain.close();

  let reasons: string[] = [];
  for (let i = 0; i < 100; i++) {
    reasons = json<{ reason: string; status: string }[]>(await keel(['runs', 'list', '--json'], { KEEL_HOME: home })).map(
      (r) => `${r.status} ${r.reason}`,
    );
    if (reasons.length === 2 && !reasons.some((r) => r.startsWith('running') || r.startsWith('paused'))) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(reasons, ['done session_closed', 'done session_closed'], 'not "done final_answer": no answer was given');
});
