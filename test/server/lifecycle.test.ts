/**
 * `keel serve` as a process: kill -9 while a run waits on its card, restart, approve — the call runs
 * exactly once; kill -9 mid-call, restart — the run is taken over and the started call is reported,
 * never re-run; SIGTERM — running legs pause at a safe point, the server exits 0, and the next start
 * carries them on; the first start prints an admin token once and keeps only its hash (0600).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { calls, keel, script, tempHome } from '../support/helpers.js';
import { call, cliServer, events, readUntil } from '../support/server.js';

const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1', 'm2'] } };

async function approverToken(home: string): Promise<string> {
  const r = await keel(['tokens', 'create', '--name', 'ana-phone', '--role', 'approver', '--json'], { KEEL_HOME: home });
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout).token;
}

async function waitFor(cond: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('S3/A2: kill -9 the server while a run waits on its card; restart; approve; the call runs exactly once', async (t) => {
  const home = tempHome('keel-serve-');
  const first = await cliServer(home);
  t.after(() => first.child.kill('SIGKILL'));
  const admin = /admin token: (keel_\S+)/.exec(first.stdout())?.[1];
  assert.ok(admin, 'the first start prints an admin token');
  const tokens = readFileSync(join(home, 'tokens.json'), 'utf8');
  assert.ok(!tokens.includes(admin), 'only its hash is kept');
  assert.equal(statSync(join(home, 'tokens.json')).mode & 0o777, 0o600);
  const token = await approverToken(home);
  const model = script(home, [{ tool_calls: [TRASH] }, { text: 'Moved both to Trash.' }]);
  const r = await call(first.url, 'POST', '/v1/runs', { token, body: { request: 'trash the promotions', model } });
  assert.equal(r.status, 202);
  const s1 = await events(first.url, r.body.events, token);
  const paused = JSON.parse((await readUntil(s1, (e) => e.event === 'paused')).at(-1)?.data ?? '{}');
  s1.close();
  first.child.kill('SIGKILL');
  await first.exited;

  const second = await cliServer(home);
  t.after(() => second.child.kill('SIGKILL'));
  assert.ok(!/admin token/.test(second.stdout()), 'a token is shown once, on the first start only');
  const s2 = await events(second.url, r.body.events, token);
  const ok = await call(second.url, 'POST', `/v1/approvals/${paused.pause.approval_id}`, { token, body: { decision: 'approve' } });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  const rest = await readUntil(s2, (e) => e.event === 'run_finished' && JSON.parse(e.data).result.status === 'done');
  s2.close();
  assert.deepEqual(
    rest.filter((e) => e.event === 'tool_result').map((e) => JSON.parse(e.data).record.outcome),
    ['ran'],
  );
  assert.deepEqual(
    calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')),
    ['trash_email {"ids":["m1","m2"]}'],
  );
  second.child.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});

test('S3/R29: kill -9 mid-call; the next start takes the run over, reports the started call as of unknown outcome, never runs it again', async (t) => {
  const home = tempHome('keel-serve-');
  const env = { KEEL_CONFIRM_ONCE_TOOLS: 'none' };
  const first = await cliServer(home, { ...env, KEEL_TEST_HANG_IN_REMINDER: '1' });
  t.after(() => first.child.kill('SIGKILL'));
  const token = await approverToken(home);
  const model = script(home, [
    { tool_calls: [{ id: 'r1', name: 'create_reminder', args: { title: 'pay rent' } }] },
    { text: 'I could not tell whether the reminder was made.' },
  ]);
  const r = await call(first.url, 'POST', '/v1/runs', { token, body: { request: 'remind me to pay rent', model } });
  await waitFor(() => existsSync(join(home, 'reminder-started')));
  first.child.kill('SIGKILL');
  await first.exited;

  const second = await cliServer(home, env);
  t.after(() => second.child.kill('SIGKILL'));
  const s2 = await events(second.url, r.body.events, token);
  const rest = await readUntil(s2, (e) => e.event === 'run_finished' && JSON.parse(e.data).result.status === 'done');
  s2.close();
  assert.match(second.stderr(), /carrying on 1 run/);
  const reported = rest.filter((e) => e.event === 'tool_result').map((e) => JSON.parse(e.data).record);
  assert.equal(reported.length, 1);
  assert.equal(reported[0].call_id, 'r1');
  assert.match(reported[0].result, /unknown|not known|may have/i);
  assert.ok(!existsSync(join(home, 'reminders.jsonl')), 'the reminder was never made twice (nor once after the crash)');
  second.child.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});

test('S3: SIGTERM stops taking work, pauses running legs at a safe point, leaves cards pending, exits 0; the next start carries the legs on', async (t) => {
  const home = tempHome('keel-serve-');
  const first = await cliServer(home);
  t.after(() => first.child.kill('SIGKILL'));
  const token = await approverToken(home);
  const slow = script(
    home,
    [
      ...[1, 2, 3, 4].map((i) => ({ delay_ms: 250, tool_calls: [{ id: `c${i}`, name: 'calendar_lookup', args: { day: `d${i}` } }] })),
      { text: 'All clear.' },
    ],
    'slow.yaml',
  );
  const carded = script(home, [{ tool_calls: [TRASH] }, { text: 'Trashed.' }], 'card.yaml');
  const c = await call(first.url, 'POST', '/v1/runs', { token, body: { request: 'trash them', model: carded } });
  const cs = await events(first.url, c.body.events, token);
  await readUntil(cs, (e) => e.event === 'paused');
  cs.close();
  const r = await call(first.url, 'POST', '/v1/runs', { token, body: { request: 'check my week', model: slow } });
  const s1 = await events(first.url, r.body.events, token);
  await readUntil(s1, (e) => e.event === 'tool_result');
  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0, first.stderr());
  s1.close();
  const stopped = await keel(['runs', 'show', r.body.run_id, '--json'], { KEEL_HOME: home });
  const run = JSON.parse(stopped.stdout);
  assert.equal(run.status, 'paused');
  assert.equal(run.reason, 'interrupted');
  const card = JSON.parse((await keel(['runs', 'show', c.body.run_id, '--json'], { KEEL_HOME: home })).stdout);
  assert.equal(card.status, 'paused');
  assert.equal(card.reason, 'awaiting_approval', 'a run waiting for its owner stays paused');

  const second = await cliServer(home);
  t.after(() => second.child.kill('SIGKILL'));
  const s2 = await events(second.url, r.body.events, token);
  const rest = await readUntil(s2, (e) => e.event === 'run_finished' && JSON.parse(e.data).result.status === 'done');
  s2.close();
  assert.equal(JSON.parse(rest.at(-1)?.data ?? '{}').result.answer, 'All clear.');
  const after = await call(second.url, 'GET', `/v1/runs/${c.body.run_id}`, { token });
  assert.equal(after.body.status, 'paused', 'the card is still waiting');
  second.child.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});
