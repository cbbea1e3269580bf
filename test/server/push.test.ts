/**
 * Web Push (S7, issue 28) through a real `keel serve`, against a local push service (an HTTP server
 * on 127.0.0.1, allowed by KEEL_PUSH_TEST_ENDPOINTS=1) that decrypts what it gets with the
 * subscription's keys made here (RFC 8291, test/support/webpush.ts — not web-push's code) and
 * checks the VAPID signature against the key the server gives browsers.
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Tokens } from '../../src/server/access/tokens.js';
import {
  addressProblem,
  CARD_BODY,
  endpointProblem,
  keysProblem,
  type Lookup,
  MAX_SUBSCRIPTIONS_PER_OWNER,
  maskArguments,
  Push,
  plainTitle,
  pushMessage,
  pushSubject,
  QUESTION_TITLE,
} from '../../src/server/alerts/push.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Pause, Store } from '../../src/types/index.js';
import { calls, script, tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { type TestServer, testServer } from '../support/server.js';
import { browserKeys, checkVapid, decryptPush, pushService } from '../support/webpush.js';

after(() => dropSchemas());

const SUBJECT = 'mailto:ops@example.com';
const PUSH_ENV = { KEEL_PUSH_SUBJECT: SUBJECT, KEEL_PUSH_TEST_ENDPOINTS: '1' };
const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1'] } };
const SEND = {
  id: 's1',
  name: 'send_email',
  args: { to: 'bob@example.com', subject: 'Quarterly numbers for Bob', body: 'the secret figures are 41 and 42' },
};

async function until<T>(what: string, f: () => Promise<T | undefined> | T | undefined, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const v = await f();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function cardRun(
  s: TestServer,
  request: string,
  call: { id: string; name: string; args: Record<string, unknown> },
  name: string,
): Promise<{ run_id: string; approval_id: string }> {
  const model = script(s.home, [{ tool_calls: [call] }, { text: 'Done.' }], `${name}.yaml`);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request, model } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const run = await until('the card', async () => {
    const x = (await s.api('GET', `/v1/runs/${r.body.run_id}`, { token: s.viewer })).body;
    return x.approval ? x : undefined;
  });
  return { run_id: r.body.run_id, approval_id: run.approval.id };
}

const audits = async (s: TestServer, action: string) => ((await s.srv.keel.store?.listAudit()) ?? []).filter((a) => a.action === action);

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`S7 (${kind}): a new card is one encrypted push to each subscribed browser — its title and link, no argument; a revoked one gets nothing; a 410 one is dropped`, async (t) => {
    const env: Record<string, string> = { ...PUSH_ENV };
    if (kind === 'postgres') Object.assign(env, { KEEL_STORE: withSchema(await testPgUrl(), freshSchema()), KEEL_SERVE_WORK: '1' });
    const svc = await pushService((path) => (path === '/gone' ? 410 : 201));
    t.after(() => svc.close());
    const s = await testServer(env);
    t.after(() => s.close());

    // The VAPID key is made on first use and kept: asked twice, the same.
    const info = await s.api('GET', '/v1/push', { token: s.approver });
    assert.equal(info.status, 200, JSON.stringify(info.body));
    assert.equal(info.body.enabled, true);
    assert.equal(Buffer.from(info.body.public_key, 'base64url').length, 65);
    assert.equal((await s.api('GET', '/v1/push', { token: s.admin })).body.public_key, info.body.public_key);
    assert.equal((await s.srv.keel.store?.pushKeys())?.public_key, info.body.public_key, 'kept in the store');

    // A viewer cannot answer cards, so cannot subscribe.
    const phone = browserKeys();
    const sub = (token: string, path: string, keys = phone.keys, label?: string) =>
      s.api('POST', '/v1/push/subscriptions', { token, body: { endpoint: `${svc.url}${path}`, keys, expirationTime: null, label } });
    assert.equal((await sub(s.viewer, '/viewer')).status, 403);
    assert.equal((await s.api('GET', '/v1/push', { token: s.viewer })).status, 403);

    const added = await sub(s.approver, '/phone', phone.keys, 'phone');
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.deepEqual(Object.keys(added.body).sort(), ['created_at', 'id', 'label', 'owner', 'service'], 'never the endpoint nor the keys');
    assert.equal(added.body.service, svc.url);
    const again = await sub(s.approver, '/phone', phone.keys, 'phone');
    assert.equal(again.status, 200, 'the same endpoint again renews it');
    assert.equal(again.body.id, added.body.id);

    const old = browserKeys();
    const oldSub = await sub(s.approver, '/old', old.keys, 'old laptop');
    assert.equal(oldSub.status, 201);
    assert.equal((await s.api('DELETE', `/v1/push/subscriptions/${oldSub.body.id}`, { token: s.viewer })).status, 403);
    const revoked = await s.api('DELETE', `/v1/push/subscriptions/${oldSub.body.id}`, { token: s.approver });
    assert.equal(revoked.status, 200);
    assert.equal((await s.api('DELETE', `/v1/push/subscriptions/${oldSub.body.id}`, { token: s.approver })).status, 404);

    // The admin answers cards too; this browser's push service says it is gone.
    const gone = browserKeys();
    assert.equal((await sub(s.admin, '/gone', gone.keys)).status, 201);
    const mine = await s.api('GET', '/v1/push/subscriptions', { token: s.approver });
    assert.deepEqual(
      mine.body.subscriptions.map((x: { label: string }) => x.label),
      ['phone'],
      "the approver's own only",
    );
    assert.equal((await s.api('GET', '/v1/push/subscriptions?all=1', { token: s.admin })).body.subscriptions.length, 2);

    // A card: one push to /phone and to /gone, none to /old.
    const card = await cardRun(s, 'trash m1', TRASH, 'trash');
    await until('the pushes', () => svc.to('/phone').length >= 1 && svc.to('/gone').length >= 1);
    await until('the 410 subscription removed', async () => (await audits(s, 'push_subscription_removed')).length === 1 || undefined);
    const [p] = svc.to('/phone');
    assert.equal(p.headers['content-encoding'], 'aes128gcm');
    assert.equal(p.headers.urgency, 'high');
    const ttl = Number(p.headers.ttl);
    assert.ok(ttl > 0 && ttl <= 60 * 60 * 24, `TTL ${ttl}: as long as the card lasts`);
    const vapid = checkVapid(p.headers.authorization, svc.url);
    assert.equal(vapid.key, info.body.public_key, 'signed with the key browsers subscribe with');
    assert.equal(vapid.claims.sub, SUBJECT);
    const message = JSON.parse(decryptPush(p.body, phone));
    assert.deepEqual(message, {
      title: 'Move 1 email(s) to Trash',
      body: CARD_BODY,
      url: `/runs/${card.run_id}#card-${card.approval_id}`,
      tag: card.approval_id,
    });
    assert.ok(!decryptPush(p.body, phone).includes('m1'), 'no argument');
    assert.throws(() => decryptPush(p.body, old), 'only the subscription it was sent to can read it');
    assert.equal(JSON.parse(decryptPush(svc.to('/gone')[0].body, gone)).title, 'Move 1 email(s) to Trash');
    assert.equal(svc.to('/old').length, 0, 'a revoked subscription gets nothing');
    assert.equal(svc.to('/viewer').length, 0);
    assert.deepEqual(
      (await s.api('GET', '/v1/push/subscriptions?all=1', { token: s.admin })).body.subscriptions.map((x: { label: string }) => x.label),
      ['phone'],
      'the 410 subscription is gone',
    );

    // A card whose plugin title quotes the call: the push masks every argument value in it.
    const send = await cardRun(s, 'send an email to bob', SEND, 'send');
    await until('the second push', () => svc.to('/phone').length >= 2);
    const second = decryptPush(svc.to('/phone')[1].body, phone);
    assert.deepEqual(JSON.parse(second), {
      title: 'Send "…" to …',
      body: CARD_BODY,
      url: `/runs/${send.run_id}#card-${send.approval_id}`,
      tag: send.approval_id,
    });
    // (The ids in the link are random text: the short values are looked for where words are shown.)
    const shown = `${JSON.parse(second).title} ${JSON.parse(second).body}`;
    for (const v of ['bob', 'Quarterly', 'secret', '41']) assert.ok(!shown.includes(v), `no argument: ${v}`);
    for (const v of ['example.com', 'Quarterly', 'secret figures']) assert.ok(!second.includes(v), `no argument anywhere: ${v}`);

    // Exactly one push a card to each: nothing more comes, and the dropped one got nothing more.
    await until('both cards audited as sent', async () => ((await audits(s, 'push_sent')).length >= 2 ? true : undefined));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(svc.to('/phone').length, 2);
    assert.equal(svc.to('/gone').length, 1);
    assert.equal(svc.got.length, 3);
    assert.equal((await audits(s, 'push_subscribe')).length, 4);
    assert.equal((await audits(s, 'push_unsubscribe')).length, 1);
  });
}

test('S7: a question pushes Keel’s words, never the model’s question; a push service that never answers blocks no run', async (t) => {
  const svc = await pushService((path) => (path === '/hang' ? 'hang' : 201));
  t.after(() => svc.close());
  const s = await testServer(PUSH_ENV);
  t.after(() => s.close());
  const phone = browserKeys();
  const hang = browserKeys();
  for (const [path, keys] of [
    ['/hang', hang.keys],
    ['/phone', phone.keys],
  ] as const) {
    const r = await s.api('POST', '/v1/push/subscriptions', { token: s.approver, body: { endpoint: `${svc.url}${path}`, keys } });
    assert.equal(r.status, 201);
  }
  const model = script(s.home, [
    { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Wire the 9,000 EUR to account DE89 3704?' } }] },
    { tool_calls: [TRASH] },
    { text: 'Done.' },
  ]);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'trash m1 after asking', model } });
  const runId = r.body.run_id as string;
  await until('the question push', () => svc.to('/phone').length >= 1);
  const q = decryptPush(svc.to('/phone')[0].body, phone);
  const question = JSON.parse(q);
  assert.deepEqual(
    { ...question, tag: undefined },
    { title: QUESTION_TITLE, body: 'Answer it in Keel.', url: `/runs/${runId}`, tag: undefined },
  );
  assert.ok(question.tag.startsWith(`${runId}:`));
  assert.ok(!q.includes('Wire') && !q.includes('DE89'), 'never the question');
  assert.ok(svc.to('/hang').length >= 1, 'the hanging service was sent its push');

  // The run goes on while that push hangs: answered, it pauses on the card, which is approved, and it ends.
  assert.equal((await s.api('POST', `/v1/runs/${runId}/answer`, { token: s.approver, body: { text: 'yes' } })).status, 202);
  const card = await until('the card', async () => {
    const x = (await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer })).body;
    return x.approval?.id as string | undefined;
  });
  assert.equal((await s.api('POST', `/v1/approvals/${card}`, { token: s.approver, body: { decision: 'approve' } })).status, 200);
  await until('the run done', async () =>
    (await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer })).body.status === 'done' ? true : undefined,
  );
  assert.equal(calls(s.home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length, 1);
});

test('S7: push off without KEEL_PUSH_SUBJECT — the API and the Notifications page say how to turn it on; nothing is kept', async (t) => {
  const s = await testServer();
  t.after(() => s.close());
  const info = await s.api('GET', '/v1/push', { token: s.approver });
  assert.equal(info.status, 200);
  assert.equal(info.body.enabled, false);
  assert.equal(info.body.public_key, null);
  assert.match(info.body.why_off, /KEEL_PUSH_SUBJECT/);
  const r = await s.api('POST', '/v1/push/subscriptions', {
    token: s.approver,
    body: { endpoint: 'https://push.example.com/x', keys: browserKeys().keys },
  });
  assert.equal(r.status, 422);
  assert.match(r.body.detail, /KEEL_PUSH_SUBJECT/);
  assert.equal(await s.srv.keel.store?.pushKeys(), undefined, 'no key made while push is off');

  // The Notifications page, logged in as a browser would: it says the same, and offers no button.
  const login = await fetch(`${s.url}/login`);
  const nonce = /keel_login=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')?.[1] ?? '';
  const posted = await fetch(`${s.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `keel_login=${nonce}` },
    body: new URLSearchParams({ csrf: nonce, token: s.approver }).toString(),
  });
  const cookie = posted.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => !c.startsWith('keel_login=') && !c.endsWith('='));
  const page = await (await fetch(`${s.url}/push`, { headers: { cookie: cookie ?? '' } })).text();
  assert.match(page, /Web Push is off on this server: start keel serve with KEEL_PUSH_SUBJECT=/);
  assert.doesNotMatch(page, /data-push-key/);
  assert.equal(await s.srv.keel.store?.pushKeys(), undefined);
});

test('S7: subscriptions — endpoints must be push services, keys must be keys, and a token holds at most MAX_SUBSCRIPTIONS_PER_OWNER', async (t) => {
  const s = await testServer({ KEEL_PUSH_SUBJECT: SUBJECT });
  t.after(() => s.close());
  const keys = browserKeys().keys;
  const sub = (endpoint: string, k: object = keys) =>
    s.api('POST', '/v1/push/subscriptions', { token: s.approver, body: { endpoint, keys: k } });
  for (const bad of [
    'http://127.0.0.1:9/x', // loopback without KEEL_PUSH_TEST_ENDPOINTS
    'http://push.example.com/x',
    'https://10.0.0.7/x',
    'https://[::1]/x',
    'https://localhost/x',
    'https://push.example.com:8443/x',
    'https://user:pw@push.example.com/x',
    'ftp://push.example.com/x',
    'not a url',
    // This machine however its name is spelled (issue 40): a trailing dot, percent-encoded, upper case.
    'https://localhost./x',
    'https://foo.localhost./x',
    'https://localhost%2e/x',
    'https://LocalHost%2E%2E/x',
    'https://ＬＯＣＡＬＨＯＳＴ\u3002/x', // fullwidth letters and an ideographic full stop, mapped by IDNA
    `https://${hostname()}./x`,
    `https://${hostname().toUpperCase()}/x`,
    'https://0x7f.1/x',
    'https://[::ffff:127.0.0.1]/x',
    // Names of a local network or a cloud's own services, never a push service.
    'https://metadata.google.internal/x',
    'https://metadata.google.internal./x',
    'https://printer.local/x',
    'https://router.home.arpa/x',
  ]) {
    const r = await sub(bad);
    assert.equal(r.status, 400, `${bad}: ${JSON.stringify(r.body)}`);
    assert.match(r.body.detail, /endpoint/);
  }
  assert.equal((await sub('https://push.example.com/a', { p256dh: keys.p256dh.slice(0, 40), auth: keys.auth })).status, 400);
  assert.equal((await sub('https://push.example.com/a', { p256dh: keys.p256dh, auth: 'AAAA' })).status, 400);
  assert.equal((await sub('https://push.example.com/a', { p256dh: keys.p256dh })).status, 400);
  assert.equal((await sub('https://push.example.com/a', { ...keys, extra: 1 })).status, 400, 'nothing but the keys');
  for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_OWNER; i++) assert.equal((await sub(`https://push.example.com/s${i}`)).status, 201);
  const full = await sub('https://push.example.com/one-more');
  assert.equal(full.status, 409);
  assert.match(full.body.detail, /revoke one first/);
  assert.equal((await sub('https://push.example.com/s0')).status, 200, 'renewing one it has is not one more');
  assert.equal(
    (await s.api('GET', '/v1/push/subscriptions', { token: s.approver })).body.subscriptions.length,
    MAX_SUBSCRIPTIONS_PER_OWNER,
  );
});

test('S7: what a push may say — argument values masked, control and direction characters dropped, bounded', () => {
  assert.equal(maskArguments('Send "Hi Bob" to bob@example.com', [{ to: 'bob@example.com', subject: 'Hi Bob' }]), 'Send "…" to …');
  assert.equal(maskArguments('Move 3 email(s) to Trash', [{ ids: ['m1', 'm2', 'm3'] }]), 'Move 3 email(s) to Trash');
  assert.equal(maskArguments('Pay 4200 to ACME', [{ amount: 4200, payee: { name: ' acme ' } }]), 'Pay … to …');
  // Cut, or joined otherwise than the model wrote it: still masked.
  assert.equal(maskArguments('Send email to a@x.com, b@y.com', [{ to: 'a@x.com,b@y.com', subject: 'Hi' }]), 'Send email to … …');
  assert.equal(maskArguments('Reply to "Quarterly numb…"', [{ subject: 'Quarterly numbers for Bob' }]), 'Reply to "……"');
  assert.equal(maskArguments('Email Al', [{ to: 'Al' }, { note: 'also' }]), 'Email …', 'a short value as a whole word only');
  assert.equal(
    plainTitle('Pay\u202e evil\u0000\nnow'),
    'Pay evil\uFFFD now',
    'a NUL kept as U+FFFD, the override and the newline as spaces',
  );
  assert.equal(plainTitle('x'.repeat(500)).length, 121);
  assert.equal(endpointProblem('https://fcm.googleapis.com/fcm/send/abc', false), undefined);
  assert.equal(endpointProblem('http://127.0.0.1:8080/p', true), undefined);
  assert.notEqual(endpointProblem('http://127.0.0.1:8080/p', false), undefined);
  assert.notEqual(endpointProblem('http://10.1.2.3/p', true), undefined, 'the test switch allows loopback only');
  assert.notEqual(keysProblem({ p256dh: 'A'.repeat(87), auth: 'A'.repeat(22) }), undefined, 'not a point (no 0x04)');
  assert.equal(keysProblem(browserKeys().keys), undefined);
  assert.equal(pushSubject({ KEEL_PUSH_SUBJECT: 'https://example.com/contact' }), 'https://example.com/contact');
  assert.equal(pushSubject({}), undefined);
  assert.throws(() => pushSubject({ KEEL_PUSH_SUBJECT: 'ops@example.com' }), /mailto:/);
});

test('S7 (issue 47): the mask covers every value the title could quote — long arguments first, thousands of values, deep nesting, a title that spaces collapse', () => {
  const quoted = 'ACME-9931-PAYROLL';
  const title = `Delete ${quoted}`;
  // A long argument before the one the title quotes (arguments may be 1,000,000 characters).
  assert.equal(maskArguments(title, [{ note: 'x'.repeat(999_000), account: quoted }]), 'Delete …');
  assert.equal(maskArguments(title, [{ note: 'lorem ipsum '.repeat(80_000) }, { account: quoted.toLowerCase() }]), 'Delete …');
  // Past a thousand values, and deeper than ten levels.
  const many = Array.from({ length: 5_000 }, (_, i) => `tag-${i}`);
  assert.equal(maskArguments(title, [{ tags: many, account: quoted }]), 'Delete …');
  let deep: unknown = { account: quoted };
  for (let i = 0; i < 40; i++) deep = { next: deep };
  assert.equal(maskArguments(title, [deep]), 'Delete …');
  // What a push would carry: the title made plain and cut first, so the mask reads what the screen shows.
  const pause = (cardTitle: string, args: Record<string, unknown>) =>
    ({
      kind: 'approval',
      approval_id: 'apr_1',
      card: { title: cardTitle },
      items: [{ call_id: 'c1', tool: 'wipe', args }],
    }) as unknown as Pause;
  assert.equal(pushMessage('r1', pause(title, { note: 'y'.repeat(999_000), account: quoted }))?.title, 'Delete …');
  assert.equal(pushMessage('r1', pause(`Delete${' '.repeat(2_000)}${quoted}`, { account: quoted }))?.title, 'Delete …');
  assert.equal(pushMessage('r1', pause(`Delete\u200b${'\u202e'.repeat(1_500)}${quoted}`, { account: quoted }))?.title, 'Delete …');
  // Reading a million characters of arguments once stays cheap.
  const started = performance.now();
  maskArguments(`${title} now, as finance asked in last week’s ticket about the payroll account`, [
    { note: 'ø'.repeat(999_000), account: quoted },
  ]);
  assert.ok(performance.now() - started < 1_000, `masked in ${Math.round(performance.now() - started)} ms`);
});

test('S7: addresses a push never goes to — loopback, private, link-local, CGNAT, unspecified, multicast, metadata; the test switch lets loopback through, nothing else', () => {
  for (const ip of [
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.100.100.200',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    'fd00:ec2::254',
    'fc00::1',
    'fe80::1',
    'ff02::1',
    '::ffff:10.0.0.1',
    '::ffff:7f00:1',
    '64:ff9b::a9fe:a9fe',
  ])
    assert.ok(addressProblem(ip), `${ip} is refused`);
  for (const ip of ['8.8.8.8', '142.250.1.1', '172.32.0.1', '100.128.0.1', '2607:f8b0:4004:c07::5f', '2a00:1450::1'])
    assert.equal(addressProblem(ip), undefined, `${ip} is public`);
  assert.equal(addressProblem('127.0.0.1', true), undefined);
  assert.equal(addressProblem('::1', true), undefined);
  assert.match(addressProblem('10.0.0.1', true) ?? '', /private/);
  assert.match(addressProblem('169.254.169.254') ?? '', /link-local/);
  assert.match(addressProblem('fd00:ec2::254') ?? '', /metadata/);
  // A name is not checked for where it points when subscribed: that is done at each send.
  assert.equal(endpointProblem('https://10.0.0.1.nip.io/x', false), undefined);
});

const ANA = { name: 'ana', role: 'approver' as const };
const QUESTION = {
  type: 'paused' as const,
  pause: { kind: 'ask_user' as const, seq: 1, call_id: 'q1', question: '?', step: 1, results: [], calls: [] },
};

/** A Push on its own store and tokens, resolving names with `lookup`, and a way to read its audit. */
async function pushWith(env: Record<string, string>, lookup: Lookup) {
  const home = tempHome('keel-push-resolve-');
  const store = new SqliteStore(join(home, 'keel.db'));
  Tokens.at(home).create(ANA.name, ANA.role);
  const push = await Push.start({ store, tokens: Tokens.at(home), env, lookup, log: () => {} });
  const failed = async () =>
    (await store.listAudit()).filter((a) => a.action === 'push_failed').map((a) => JSON.parse(a.detail ?? '{}').status as string);
  const sent = async () => (await store.listAudit()).filter((a) => a.action === 'push_sent').length;
  return {
    push,
    store,
    failed,
    sent,
    close: async () => {
      await push.drain(1000);
      store.close();
    },
  };
}

const resolver =
  (answers: Record<string, string[]>, asked: string[] = []): Lookup =>
  async (host) => {
    asked.push(host);
    return (answers[host] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

test('S7: at send time the name is resolved, and a push to a loopback, private, link-local, CGNAT or metadata address is not sent but audited', async (t) => {
  const answers: Record<string, string[]> = {
    'push.example.com': ['10.0.0.7'],
    '169.254.169.254.nip.io': ['169.254.169.254'],
    // One address of a name's several is enough to refuse it: which one a connection takes is not ours.
    'rebind.example.com': ['93.184.216.34', '127.0.0.1'],
    'v6.example.com': ['fd00:ec2::254'],
    'mapped.example.com': ['::ffff:192.168.0.1'],
    'cgnat.example.com': ['100.100.100.200'],
  };
  const asked: string[] = [];
  const p = await pushWith({ KEEL_PUSH_SUBJECT: SUBJECT }, resolver(answers, asked));
  t.after(p.close);
  for (const host of Object.keys(answers))
    assert.equal((await p.push.subscribe(ANA, { endpoint: `https://${host}/p`, keys: browserKeys().keys })).status, 'added', host);
  p.push.publish('run_1', QUESTION);
  const failed = await until('every push refused', async () => {
    const f = await p.failed();
    return f.length >= Object.keys(answers).length ? f : undefined;
  });
  assert.deepEqual(asked.sort(), Object.keys(answers).sort(), 'each name resolved when its push was sent');
  assert.deepEqual(failed.sort(), [
    'not sent: 169.254.169.254.nip.io resolves to 169.254.169.254, a link-local address (where cloud metadata services answer)',
    'not sent: cgnat.example.com resolves to 100.100.100.200, a shared (CGNAT) address',
    'not sent: mapped.example.com resolves to ::ffff:192.168.0.1, a private address',
    'not sent: push.example.com resolves to 10.0.0.7, a private address',
    'not sent: rebind.example.com resolves to 127.0.0.1, a loopback address',
    'not sent: v6.example.com resolves to fd00:ec2::254, a private address (where cloud metadata services answer too)',
  ]);
  assert.equal(await p.sent(), 0);
});

test('S7: a push connects to the address that was checked (never resolved twice), with the name as Host; the test switch allows loopback only', async (t) => {
  // The push service listens on 127.0.0.2 only: a connection that resolved "localhost" again by itself
  // (127.0.0.1 or ::1) would be refused.
  const svc = await pushService(() => 201, '127.0.0.2');
  t.after(() => svc.close());
  const port = new URL(svc.url).port;
  const answers: Record<string, string[]> = { localhost: ['127.0.0.2'] };
  const asked: string[] = [];
  const p = await pushWith({ KEEL_PUSH_SUBJECT: SUBJECT, KEEL_PUSH_TEST_ENDPOINTS: '1' }, resolver(answers, asked));
  t.after(p.close);
  const phone = browserKeys();
  assert.equal((await p.push.subscribe(ANA, { endpoint: `http://localhost.:${port}/pinned`, keys: phone.keys })).status, 'added');
  p.push.publish('run_1', QUESTION);
  await until('the push', () => svc.to('/pinned').length === 1);
  await until('audited as sent', async () => ((await p.sent()) === 1 ? true : undefined));
  assert.deepEqual(asked, ['localhost'], 'resolved once, by Keel');
  assert.equal(svc.to('/pinned')[0].headers.host, `localhost:${port}`, 'the name, not the address');
  assert.equal(JSON.parse(decryptPush(svc.to('/pinned')[0].body, phone)).title, QUESTION_TITLE);

  // The name now points into the private network: the next push is not sent, even with the test switch.
  answers.localhost = ['10.9.9.9'];
  p.push.publish('run_2', { ...QUESTION, pause: { ...QUESTION.pause, seq: 2 } });
  const failed = await until('the refusal', async () => ((await p.failed()).length === 1 ? p.failed() : undefined));
  assert.deepEqual(failed, ['not sent: localhost resolves to 10.9.9.9, a private address']);
  assert.equal(svc.to('/pinned').length, 1);
});

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`S7 (${kind} store): the first VAPID key pair kept wins; a token's subscriptions stay within the bound when added all at once`, async (t) => {
    const store: Store =
      kind === 'sqlite'
        ? new SqliteStore(join(tempHome('keel-push-store-'), 'keel.db'))
        : new PostgresStore(withSchema(await testPgUrl(), freshSchema()));
    t.after(() => store.close());
    assert.equal(await store.pushKeys(), undefined);
    const pair = (n: number) => ({ public_key: `pub${n}`, private_key: `priv${n}`, created_at: `2026-01-0${n}T00:00:00.000Z` });
    const kept = await Promise.all([1, 2, 3].map((n) => store.pushKeys(pair(n))));
    assert.ok(
      kept.every((k) => k?.public_key === kept[0]?.public_key),
      'every caller is given the one kept',
    );
    assert.deepEqual(await store.pushKeys(pair(4)), kept[0]);

    const row = (i: number, owner = 'tok_a') => ({
      id: `psub_${owner}_${i}`,
      owner: 'ana',
      owner_id: owner,
      endpoint: `https://push.example.com/${i}`,
      p256dh: 'k',
      auth: 'a',
      label: null,
      created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    });
    const results = await Promise.all(Array.from({ length: 25 }, (_, i) => store.addPushSubscription(row(i), 10)));
    assert.equal(results.filter((r) => r.status === 'added').length, 10);
    assert.equal(results.filter((r) => r.status === 'full').length, 15);
    assert.equal((await store.listPushSubscriptions('tok_a')).length, 10);
    const renewed = await store.addPushSubscription({ ...row(0), id: 'psub_other', p256dh: 'k2' }, 10);
    assert.equal(renewed.status, 'updated');
    assert.equal(renewed.subscription?.id, 'psub_tok_a_0', 'the same endpoint keeps its id');
    assert.equal(renewed.subscription?.p256dh, 'k2');
    assert.equal((await store.addPushSubscription(row(0, 'tok_b'), 10)).status, 'added', 'the bound is per token');
    assert.equal((await store.listPushSubscriptions()).length, 11);
    assert.equal(await store.removePushSubscription('psub_tok_a_0'), true);
    assert.equal(await store.removePushSubscription('psub_tok_a_0'), false);
    assert.equal((await store.listPushSubscriptions('tok_a')).length, 9);
  });
}
