/**
 * A10: a card routed to groups (A9) is announced only to them. Web Push goes to the subscriptions of
 * tokens in one of its groups (an approver or admin outside them gets nothing); a webhook that names
 * `groups` gets the cards routed to one of them and every card routed to none; a webhook without
 * `groups` gets every card. The card's data carries `approvers` and `policy`. Driven through
 * Alerts — what `keel serve`, `keel worker` and `keel mcp serve` publish a leg's events with — on
 * a local push service that decrypts (test/support/webpush.ts) and local webhook receivers.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { ConfigSchema } from '../../src/config/config.js';
import { Tokens } from '../../src/server/access/tokens.js';
import { Alerts } from '../../src/server/alerts/alerts.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { ApprovalCard, LoopEvent } from '../../src/types/index.js';
import { tempHome } from '../support/helpers.js';
import { browserKeys, decryptPush, pushService } from '../support/webpush.js';

const PUSH_ENV = { KEEL_PUSH_SUBJECT: 'mailto:ops@example.com', KEEL_PUSH_TEST_ENDPOINTS: '1', KEEL_TEST_HOOK_SECRET: 's' };

function paused(id: string, approvers?: string[]): LoopEvent {
  const card: ApprovalCard = {
    title: `Pay ${id}`,
    request: 'pay the bills',
    items: [{ tool: 'pay', title: `Pay ${id}`, lines: [], undo: 'cannot be undone', call: 'pay({})' }],
    ...(approvers ? { approvers, policy: ['big-payment'] } : {}),
  };
  return {
    type: 'paused',
    pause: { kind: 'approval', seq: 1, approval_id: id, card, step: 1, items: [], results: [], calls: [] },
  } as LoopEvent;
}

/** Webhook receivers on 127.0.0.1: what each path got. */
async function hooks(t: TestContext) {
  const got: { path: string; type: string; data: Record<string, unknown> }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const b = JSON.parse(body);
      got.push({ path: req.url ?? '', type: b.type, data: b.data });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got };
}

async function until(what: string, f: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (f()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('A10: a card routed to finance is pushed only to finance tokens’ browsers and sent only to webhooks serving finance or every card; an unrouted card to all', async (t) => {
  const home = tempHome('keel-alerts-routed-');
  const store = new SqliteStore(join(home, 'keel.db'));
  const tokens = Tokens.at(home);
  tokens.create('ana', 'approver');
  tokens.create('fay', 'approver', new Date(), ['finance']);
  tokens.create('root', 'admin');
  tokens.create('otto', 'approver', new Date(), ['ops']);
  const svc = await pushService();
  t.after(() => svc.close());
  const rx = await hooks(t);
  const config = ConfigSchema().parse({
    notify: [
      { url: `${rx.url}/finance`, secret_env: 'KEEL_TEST_HOOK_SECRET', groups: ['finance'] },
      { url: `${rx.url}/ops`, secret_env: 'KEEL_TEST_HOOK_SECRET', groups: ['ops'] },
      { url: `${rx.url}/all`, secret_env: 'KEEL_TEST_HOOK_SECRET' },
    ],
  });
  const alerts = await Alerts.start({ config, store, tokens, env: PUSH_ENV, log: () => {} });
  t.after(async () => {
    await alerts.drain(1000);
    store.close();
  });
  const keys = { ana: browserKeys(), fay: browserKeys(), root: browserKeys(), otto: browserKeys() };
  for (const [name, k] of Object.entries(keys)) {
    const role = name === 'root' ? ('admin' as const) : ('approver' as const);
    await alerts.push.subscribe({ name, role }, { endpoint: `${svc.url}/${name}`, keys: k.keys });
  }

  alerts.event('run_1', paused('apr_fin', ['finance']));
  await until('the routed push', () => svc.to('/fay').length === 1);
  await until('the routed webhooks', () => rx.got.filter((g) => g.type === 'run_paused').length === 2);
  alerts.event('run_2', paused('apr_all'));
  await until('the unrouted pushes', () => svc.got.length === 5);
  await until('the unrouted webhooks', () => rx.got.length === 4 + 6);

  // Web Push: the routed card reached fay's browser only; the unrouted one every approver and admin.
  assert.equal(svc.got[0].path, '/fay');
  assert.equal(svc.to('/ana').length, 1);
  assert.equal(svc.to('/root').length, 1);
  assert.equal(svc.to('/otto').length, 1);
  assert.equal(svc.to('/fay').length, 2);
  assert.equal(JSON.parse(decryptPush(svc.to('/fay')[0].body, keys.fay)).tag, 'apr_fin');
  assert.equal(JSON.parse(decryptPush(svc.to('/ana')[0].body, keys.ana)).tag, 'apr_all', 'ana got only the unrouted card');

  // Webhooks: the routed card (and its run_paused) to /finance and /all, not /ops; the unrouted one everywhere.
  const where = (id: string) =>
    rx.got
      .filter((g) => g.data.approval_id === id)
      .map((g) => `${g.type} ${g.path}`)
      .sort();
  assert.deepEqual(where('apr_fin'), ['approval_created /all', 'approval_created /finance', 'run_paused /all', 'run_paused /finance']);
  assert.deepEqual(where('apr_all'), [
    'approval_created /all',
    'approval_created /finance',
    'approval_created /ops',
    'run_paused /all',
    'run_paused /finance',
    'run_paused /ops',
  ]);
  const created = rx.got.find((g) => g.type === 'approval_created' && g.data.approval_id === 'apr_fin');
  assert.deepEqual(created?.data.approvers, ['finance'], 'the card’s data says who may answer it');
  assert.deepEqual(created?.data.policy, ['big-payment'], 'and which policy asked');
});

test('A10: a webhook’s groups are group names, at least one', () => {
  const target = (groups: unknown) => ({ notify: [{ url: 'https://example.com/h', secret_env: 'S', groups }] });
  assert.equal(ConfigSchema().safeParse(target(['finance', 'ops'])).success, true);
  for (const bad of [['Finance'], [], ['fin ance'], 'finance']) {
    assert.equal(ConfigSchema().safeParse(target(bad)).success, false, JSON.stringify(bad));
  }
});
