/**
 * A9 from the CLI (bin/keel.js): `keel tokens create --group`, `keel tokens groups NAME --set|--add|--remove`,
 * groups in `keel tokens list` (a token file written before groups reads as in none); and a card
 * routed to finance answered with `--server`: refused (exit 2, the server's 403 naming the group)
 * until the token is put in finance — at once, on the running server — while the machine's own user
 * (the local CLI, no token) may answer a routed card.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { calls, json, keel, script, tempHome } from '../support/helpers.js';
import { byTool, routeCards } from '../support/routed.js';
import { type TestServer, testServer } from '../support/server.js';

test('A9: keel tokens create --group, tokens groups --set/--add/--remove, groups in tokens list; bad names are exit 2', async () => {
  const env = { KEEL_HOME: tempHome('keel-tokens-') };
  const made = await keel(
    ['tokens', 'create', '--name', 'fay', '--role', 'approver', '--group', 'finance', '--group', 'ops', '--json'],
    env,
  );
  assert.equal(made.code, 0, made.stderr);
  assert.deepEqual(json<{ groups: string[] }>(made).groups, ['finance', 'ops']);
  const plain = await keel(['tokens', 'create', '--name', 'ana'], env);
  assert.match(plain.stderr, /Token ana \(approver, tok_/);
  const bad = await keel(['tokens', 'create', '--name', 'x', '--group', 'Finance'], env);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /"Finance" is not a group name: use 1 to 40 of a-z, 0-9, _ and -/);

  const list = await keel(['tokens', 'list'], env);
  assert.match(list.stdout, /fay\s+approver\s+finance,ops\s+created/);
  assert.match(list.stdout, /ana\s+approver\s+-\s+created/);
  assert.deepEqual(
    json<{ name: string; groups: string[] }[]>(await keel(['tokens', 'list', '--json'], env)).map((t) => [t.name, t.groups]),
    [
      ['fay', ['finance', 'ops']],
      ['ana', []],
    ],
  );

  const removed = await keel(['tokens', 'groups', 'fay', '--remove', 'ops', '--add', 'legal'], env);
  assert.equal(removed.code, 0, removed.stderr);
  assert.match(removed.stdout, /Token fay \(tok_\w+\): groups finance, legal\./);
  assert.match((await keel(['tokens', 'groups', 'fay'], env)).stdout, /groups finance, legal\./, 'without a change it shows them');
  const set = await keel(['tokens', 'groups', 'fay', '--set', 'audit,finance', '--json'], env);
  assert.deepEqual(json<{ groups: string[] }>(set).groups, ['audit', 'finance']);
  assert.match((await keel(['tokens', 'groups', 'fay', '--set', ''], env)).stdout, /Token fay \(tok_\w+\): in no group\./);
  const both = await keel(['tokens', 'groups', 'fay', '--set', 'a', '--add', 'b'], env);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /give --set, or --add and --remove: not both/);
  const nobody = await keel(['tokens', 'groups', 'nobody', '--add', 'finance'], env);
  assert.equal(nobody.code, 2);
  assert.match(nobody.stderr, /no active token nobody/);
  const badAdd = await keel(['tokens', 'groups', 'ana', '--add', 'fin ance'], env);
  assert.equal(badAdd.code, 2);
  assert.match(badAdd.stderr, /is not a group name/);

  // A token file from before groups: its tokens are in none.
  const old = { KEEL_HOME: tempHome('keel-tokens-old-') };
  writeFileSync(
    join(old.KEEL_HOME, 'tokens.json'),
    JSON.stringify({
      tokens: [{ id: 'tok_old', name: 'old', role: 'approver', created_at: '2026-01-01T00:00:00.000Z', revoked_at: null, hash: 'x' }],
    }),
  );
  assert.deepEqual(json<{ groups: string[] }[]>(await keel(['tokens', 'list', '--json'], old))[0].groups, []);
  assert.match((await keel(['tokens', 'groups', 'old', '--add', 'finance'], old)).stdout, /groups finance\./);
});

async function routedCard(s: TestServer, name: string, ids: string[]): Promise<{ run: string; card: string }> {
  const model = script(s.home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids } }] }, { text: 'Trashed.' }], `${name}.yaml`);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: `trash ${ids}`, model } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  for (let i = 0; i < 400; i++) {
    const run = (await s.api('GET', `/v1/runs/${r.body.run_id}`, { token: s.viewer })).body;
    if (run.approval) return { run: r.body.run_id, card: run.approval.id };
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('the run never paused on its card');
}

test('A9: a routed card from the CLI — with --server an outsider token is refused (exit 2, 403 naming the group) until keel tokens groups adds it; the local user may answer', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const store = s.srv.keel.store;
  assert.ok(store);
  routeCards(store, byTool(['trash_email'], ['finance']));
  const a = await routedCard(s, 'a', ['m1']);
  const client = { KEEL_HOME: tempHome('keel-client-'), KEEL_TOKEN: s.approver };
  const refused = await keel(['--server', s.url, 'approvals', 'approve', a.card], client);
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /the server says \(403\): approval apr_\w+ is routed to the group finance/);
  assert.equal((await s.api('GET', `/v1/approvals/${a.card}`, { token: s.viewer })).body.status, 'pending');
  const trashed = () => calls(s.home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));
  assert.deepEqual(trashed(), []);

  // Put in finance on the server's machine: the running server lets it answer at once.
  const added = await keel(['tokens', 'groups', 'ana-phone', '--add', 'finance'], { KEEL_HOME: s.home });
  assert.equal(added.code, 0, added.stderr);
  const ok = await keel(['--server', s.url, 'approvals', 'approve', a.card, '--json'], client);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(trashed(), ['trash_email {"ids":["m1"]}']);

  // The machine's own user, at the store itself without a token, may answer a routed card (docs/rules.md A9).
  const b = await routedCard(s, 'b', ['m2']);
  const local = await keel(['approvals', 'reject', b.card, '--reason', 'not today'], { KEEL_HOME: s.home });
  assert.equal(local.code, 0, local.stderr);
  assert.equal((await s.api('GET', `/v1/approvals/${b.card}`, { token: s.viewer })).body.status, 'rejected');
});
