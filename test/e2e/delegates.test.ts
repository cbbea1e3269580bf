/**
 * Issue 38 end to end on SQLite: a delegate is a run. Through `keel run` and `keel approvals
 * approve` (real CLI processes), through the API of `keel serve` (in process and as a CLI process
 * killed with -9 while the delegate waits on its card), and with the process driving the delegate
 * killed (-9) while it works: its destructive call waits on a card, runs exactly once, and the
 * parent finishes with the delegate's answer. (D1–D3, D6, A2, R18)
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { stringify } from 'yaml';
import type { ScriptEntry } from '../../src/models/script.js';
import { calls, FIXTURES, json, KEEL_BIN, keel, ROOT, script, tempHome } from '../support/helpers.js';
import { call, cliServer, testServer } from '../support/server.js';

const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));
const restored = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('restore_email'));

/** A home whose config names the delegate `cleaner`, scripted by `child`. */
function home(child: ScriptEntry[]): string {
  const h = tempHome('keel-delegates-');
  const config = {
    subagents: {
      delegates: [
        {
          name: 'cleaner',
          instructions: 'You tidy the inbox.',
          tools: ['search_inbox', 'trash_email', 'restore_email'],
          model: script(h, child, 'child.yaml'),
        },
      ],
    },
  };
  writeFileSync(join(h, 'config.yaml'), stringify(config));
  return h;
}

const PARENT: ScriptEntry[] = [
  { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Trash m1.' } }] },
  { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
  { text: 'The cleaner trashed m1.' },
];
const CHILD_TRASH: ScriptEntry[] = [{ tool_calls: [{ id: 'd1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed m1.' }];

async function until<T>(what: string, f: () => T | undefined | Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const v = await f();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A console session for `token`, as a browser gets one (the login form's nonce, then its post): the cookie header. */
async function consoleLogin(url: string, token: string): Promise<string> {
  const form = await fetch(`${url}/login`);
  const nonceCookie = form.headers.getSetCookie().map((c) => c.split(';')[0]);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const r = await fetch(`${url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: nonceCookie.join('; '), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, csrf }).toString(),
  });
  return r.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

test("D1-D3 CLI: keel run shows the delegate's card on its waiting parent; keel approvals approve runs the call once and prints the parent's answer; keel runs show links them", async () => {
  const h = home(CHILD_TRASH);
  const env = { KEEL_HOME: h };
  const model = script(h, PARENT);
  const r = await keel(['run', '--model', model, '--plugins', FIXTURES, 'Clean up my inbox'], env);
  assert.equal(r.code, 3, `paused: ${r.stderr}`);
  assert.match(r.stdout, /Delegate cleaner, started by run run_\w+ for: Clean up my inbox/);
  assert.match(r.stdout, /Its task: Trash m1\./);
  assert.match(r.stderr, /waits for its delegate cleaner \(task tk_1, run run_\w+\)/);
  const id = /keel approvals approve (apr_\w+)/.exec(r.stderr)?.[1];
  assert.ok(id, r.stderr);
  assert.deepEqual(trashed(h), []);

  const approved = await keel(['approvals', 'approve', id], env);
  assert.equal(approved.code, 0, approved.stderr);
  assert.equal(approved.stdout, 'The cleaner trashed m1.\n', "the parent's answer");
  assert.equal(trashed(h).length, 1, 'exactly once');

  const parentId = /started by run (run_\w+)/.exec(r.stdout)?.[1] as string;
  const shown = await keel(['runs', 'show', parentId], env);
  assert.match(shown.stdout, /task tk_1: delegate cleaner, run (run_\w+) \(done\)/);
  const childId = /task tk_1: delegate cleaner, run (run_\w+)/.exec(shown.stdout)?.[1] as string;
  const child = json<{ parent_run: string; children: unknown[] }>(await keel(['runs', 'show', childId, '--json'], env));
  assert.equal(child.parent_run, parentId);
  assert.match(
    (await keel(['runs', 'show', childId], env)).stdout,
    new RegExp(`delegate cleaner \\(task tk_1, depth 1\\), started by run ${parentId}`),
  );
});

test("D3 keel chat: a delegate's card is shown inline on its waiting parent and answered there; the parent finishes in the chat", async () => {
  const h = home(CHILD_TRASH);
  const model = script(h, PARENT);
  const r = await keel(['chat', '--model', model, '--plugins', FIXTURES], { KEEL_HOME: h }, 'Clean up my inbox\ny\n/quit\n');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Delegate cleaner, started by run run_\w+ for: Clean up my inbox/);
  assert.match(r.stdout, /approve\? \[y\/N, e = edit the arguments\]/);
  assert.match(r.stdout, /The cleaner trashed m1\./);
  assert.equal(trashed(h).length, 1, 'exactly once');
});

test('D1-D3 API (keel serve, SQLite): the delegate card is approved through the API; the call runs once; GET /v1/runs lists children and the parent', async () => {
  const h = home(CHILD_TRASH);
  const s = await testServer({}, h);
  try {
    const model = script(h, PARENT, 'parent.yaml');
    const started = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'Clean up my inbox', model } });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const runId = started.body.run_id as string;
    const waiting = await until('the parent to wait for its delegate', async () => {
      const r = await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer });
      return r.body.reason === 'awaiting_task' ? r.body : undefined;
    });
    assert.equal(waiting.task.id, 'tk_1');
    const childId = waiting.task.run_id as string;
    const card = await until('the delegate card', async () => {
      const r = await s.api('GET', `/v1/approvals?status=pending&run=${childId}`, { token: s.viewer });
      return r.body.approvals?.[0] ?? (Array.isArray(r.body) ? r.body[0] : undefined);
    });
    assert.deepEqual(card.card.chain, { delegate: 'cleaner', parent_run: runId, request: 'Clean up my inbox' });
    const approved = await s.api('POST', `/v1/approvals/${card.id}`, { token: s.approver, body: { decision: 'approve' } });
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    const done = await until('the parent to finish', async () => {
      const r = await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer });
      return r.body.status === 'done' ? r.body : undefined;
    });
    assert.equal(done.answer, 'The cleaner trashed m1.');
    assert.equal(done.parent_run, null);
    assert.deepEqual(
      done.children.map((c: { task_id: string; delegate: string; status: string }) => [c.task_id, c.delegate, c.status]),
      [['tk_1', 'cleaner', 'done']],
    );
    const child = (await s.api('GET', `/v1/runs/${childId}`, { token: s.viewer })).body;
    assert.equal(child.parent_run, runId);
    assert.equal(trashed(h).length, 1, 'exactly once');
    // D6: the console's run pages link parent and delegate.
    const cookie = await consoleLogin(s.url, s.viewer);
    const parentPage = await (await fetch(`${s.url}/runs/${runId}`, { headers: { cookie } })).text();
    assert.match(parentPage, new RegExp(`tk_1 cleaner: <a href="/runs/${childId}">`));
    const childPage = await (await fetch(`${s.url}/runs/${childId}`, { headers: { cookie } })).text();
    assert.match(childPage, new RegExp(`started by run <a href="/runs/${runId}">`));
  } finally {
    await s.close();
  }
});

test('D2 kill -9 of keel serve while the delegate waits on its card: a new server takes the approval; the call runs once and the parent finishes', async () => {
  const h = home(CHILD_TRASH);
  const first = await cliServer(h);
  const admin = /admin token: (\S+)/.exec(first.stdout())?.[1] as string;
  const api = (url: string, method: string, path: string, body?: unknown) => call(url, method, path, { token: admin, body });
  const started = await api(first.url, 'POST', '/v1/runs', { request: 'Clean up my inbox', model: script(h, PARENT, 'parent.yaml') });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const runId = started.body.run_id as string;
  const card = await until('the delegate card', async () => {
    const r = await api(first.url, 'GET', '/v1/approvals?status=pending');
    return (r.body.approvals ?? r.body)[0];
  });
  first.child.kill('SIGKILL');
  await first.exited;
  const second = await cliServer(h);
  try {
    const approved = await api(second.url, 'POST', `/v1/approvals/${card.id}`, { decision: 'approve' });
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    const done = await until('the parent to finish', async () => {
      const r = await api(second.url, 'GET', `/v1/runs/${runId}`);
      return r.body.status === 'done' ? r.body : undefined;
    });
    assert.equal(done.answer, 'The cleaner trashed m1.');
    assert.equal(trashed(h).length, 1, '0 lost, 0 duplicated');
  } finally {
    second.child.kill('SIGTERM');
    await second.exited;
  }
});

test('D2 kill -9 of keel run while the delegate works (after its write ran): keel resume of the parent carries the delegate on; the write ran once and the parent finishes', async () => {
  const h = home([{ tool_calls: [{ id: 'd1', name: 'restore_email', args: { ids: ['m1'] } }] }, { delay_ms: 4000, text: 'Restored m1.' }]);
  const env: NodeJS.ProcessEnv = { ...process.env, KEEL_HOME: h };
  delete env.KEEL_PLUGINS;
  const model = script(h, [...PARENT.slice(0, 2), { text: 'The cleaner restored m1.' }]);
  const child = spawn(process.execPath, [KEEL_BIN, 'run', '--model', model, '--plugins', FIXTURES, 'Restore m1'], {
    cwd: ROOT,
    env,
    stdio: 'ignore',
  });
  const exited = new Promise((r) => child.on('exit', r));
  // The delegate's write has run; its process is killed while the delegate's model works.
  await until('the delegate to run its write', () => (restored(h).length ? true : undefined));
  await new Promise((r) => setTimeout(r, 300));
  child.kill('SIGKILL');
  await exited;
  const list = json<{ run_id: string; status: string; parent_run: string | null }[]>(
    await keel(['runs', 'list', '--json'], { KEEL_HOME: h }),
  );
  const parent = list.find((r) => r.parent_run === null);
  const delegate = list.find((r) => r.parent_run !== null);
  assert.equal(parent?.status, 'paused', 'the parent waits for its delegate, stored');
  assert.equal(delegate?.status, 'running', 'the delegate was left running by the dead process');
  const resumed = await keel(['resume', parent.run_id], { KEEL_HOME: h });
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.equal(resumed.stdout, 'The cleaner restored m1.\n');
  assert.equal(restored(h).length, 1, 'the write ran once: 0 lost, 0 duplicated');
});
