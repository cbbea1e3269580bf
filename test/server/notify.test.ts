/**
 * Webhook notifications (src/server/alerts/notify.ts) against a real HTTP receiver on 127.0.0.1, and the
 * `notify:` section of config.yaml.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { ConfigSchema, loadConfig, type NotifyTarget } from '../../src/config/config.js';
import { MAX_QUEUE, MAX_STRING_CHARS, type Notification, Notifier, verifySignature } from '../../src/server/alerts/notify.js';
import type { AuditRecord } from '../../src/types/store.js';
import { tempHome } from '../support/helpers.js';

interface Got {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  body: string;
  /** Set when the client went away before an answer. */
  aborted: boolean;
}

type Answer = number | 'hang' | { status: number; delayMs: number };

/** A receiver: `answer(request, n)` says how to answer the n-th request (1-based). */
async function receiver(t: TestContext, answer: (g: Got, n: number) => Answer = () => 200) {
  const got: Got[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const g: Got = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        raw,
        body: raw.toString('utf8'),
        aborted: false,
      };
      got.push(g);
      res.on('close', () => {
        if (!res.writableEnded) g.aborted = true;
      });
      const a = answer(g, got.length);
      if (a === 'hang') return;
      const reply = (status: number) => res.writeHead(status, { 'content-type': 'text/plain' }).end(`answer ${status}`);
      if (typeof a === 'number') reply(a);
      else setTimeout(() => reply(a.status), a.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url, got };
}

/** A target as loadConfig would give it (defaults filled in by the real schema). */
function target(fields: Record<string, unknown>): NotifyTarget {
  const parsed = ConfigSchema().parse({ notify: [{ secret_env: 'KEEL_WEBHOOK_SECRET', ...fields }] });
  return (parsed.notify ?? [])[0];
}

const SECRET = 'whsec_test_0123456789';

function notifier(targets: NotifyTarget[], over: Partial<ConstructorParameters<typeof Notifier>[1]> = {}) {
  const audits: AuditRecord[] = [];
  const warnings: string[] = [];
  const n = new Notifier(targets, {
    audit: async (row) => {
      audits.push(row);
    },
    env: { KEEL_WEBHOOK_SECRET: SECRET },
    warn: (line) => warnings.push(line),
    ...over,
  });
  return { n, audits, warnings };
}

const event = (type: Notification['type'], data: Record<string, unknown> = {}): Notification => ({
  type,
  run_id: 'run_abc123',
  at: '2026-01-02T03:04:05.000Z',
  data,
});

const detailOf = (row: AuditRecord) =>
  JSON.parse(row.detail) as { url: string; type: string; run_id: string; attempts: number; status: number | string };

test('notify: a delivery is a signed POST the receiver can verify, audited once as delivered', async (t) => {
  const r = await receiver(t, () => 204);
  const { n, audits } = notifier([target({ url: `${r.url}/hook?token=tok_should_not_be_logged&x=1` })]);
  const before = Math.floor(Date.now() / 1000);
  n.publish(event('approval_created', { approval_id: 'apr_1', tool: 'send_email' }));
  await n.drain(5000);

  assert.equal(r.got.length, 1);
  const g = r.got[0];
  assert.equal(g.method, 'POST');
  assert.equal(g.path, '/hook?token=tok_should_not_be_logged&x=1');
  assert.equal(g.headers['content-type'], 'application/json');
  assert.equal(g.headers['user-agent'], 'keel-webhook');
  assert.equal(g.headers['x-keel-event'], 'approval_created');
  const body = JSON.parse(g.body);
  assert.deepEqual(Object.keys(body), ['id', 'type', 'at', 'run_id', 'data']);
  assert.match(body.id, /^dlv_[0-9a-f]{24}$/);
  assert.equal(g.headers['x-keel-delivery'], body.id);
  assert.equal(body.type, 'approval_created');
  assert.equal(body.at, '2026-01-02T03:04:05.000Z');
  assert.equal(body.run_id, 'run_abc123');
  assert.deepEqual(body.data, { approval_id: 'apr_1', tool: 'send_email' });

  const ts = String(g.headers['x-keel-timestamp']);
  assert.match(ts, /^\d+$/);
  assert.ok(Math.abs(Number(ts) - before) <= 5, `timestamp ${ts} is now-ish`);
  const sig = String(g.headers['x-keel-signature']);
  assert.match(sig, /^sha256=[0-9a-f]{64}$/);
  assert.equal(verifySignature(SECRET, ts, g.raw, sig), true);
  assert.equal(verifySignature(SECRET, ts, g.body, sig), true, 'the body as a string verifies too');
  assert.equal(verifySignature(SECRET, ts, g.raw, sig, { toleranceSeconds: 300 }), true);
  assert.equal(verifySignature('another secret', ts, g.raw, sig), false);
  assert.equal(verifySignature(SECRET, String(Number(ts) + 1), g.raw, sig), false, 'the timestamp is signed');
  assert.equal(verifySignature(SECRET, ts, g.body.replace('apr_1', 'apr_2'), sig), false, 'the body is signed');
  assert.equal(verifySignature(SECRET, ts, g.raw, sig.slice(0, -1)), false);
  assert.equal(verifySignature(SECRET, ts, g.raw, undefined), false);
  assert.equal(
    verifySignature(SECRET, ts, g.raw, sig, { toleranceSeconds: 300, now: new Date((Number(ts) + 3600) * 1000) }),
    false,
    'a stale timestamp fails with a tolerance',
  );

  assert.equal(audits.length, 1);
  assert.equal(audits[0].action, 'webhook_delivered');
  assert.equal(audits[0].actor, 'keel');
  assert.equal(audits[0].subject, body.id);
  const d = detailOf(audits[0]);
  assert.deepEqual(d, {
    url: `${r.url}/hook?token=[redacted]&x=[redacted]`,
    type: 'approval_created',
    run_id: 'run_abc123',
    attempts: 1,
    status: 204,
  });
  assert.doesNotMatch(audits[0].detail, /tok_should_not_be_logged/);
});

test('notify: credentials in the URL go as Basic authorization and never into the audit', async (t) => {
  const r = await receiver(t);
  const url = r.url.replace('http://', 'http://hookuser:p%40ss@');
  const { n, audits } = notifier([target({ url: `${url}/in`, secret: 'literal-secret', secret_env: undefined })]);
  n.publish(event('run_failed', { error: 'boom' }));
  await n.drain(5000);
  assert.equal(r.got.length, 1);
  assert.equal(r.got[0].headers.authorization, `Basic ${Buffer.from('hookuser:p@ss').toString('base64')}`);
  const g = r.got[0];
  assert.ok(verifySignature('literal-secret', String(g.headers['x-keel-timestamp']), g.raw, String(g.headers['x-keel-signature'])));
  assert.equal(audits.length, 1);
  assert.equal(audits[0].action, 'webhook_delivered');
  assert.doesNotMatch(audits[0].detail, /hookuser|p%40ss|p@ss/);
  assert.equal(detailOf(audits[0]).url, `${r.url.replace('http://', 'http://[redacted]@')}/in`);
});

test('notify: a target gets only the events it subscribes to', async (t) => {
  const r = await receiver(t);
  const { n, audits } = notifier([target({ url: `${r.url}/only-failed`, events: ['run_failed'] }), target({ url: `${r.url}/all` })]);
  n.publish(event('approval_created'));
  n.publish(event('run_paused'));
  n.publish(event('run_failed'));
  await n.drain(5000);

  const onlyFailed = r.got.filter((g) => g.path === '/only-failed');
  const all = r.got.filter((g) => g.path === '/all');
  assert.deepEqual(
    onlyFailed.map((g) => g.headers['x-keel-event']),
    ['run_failed'],
  );
  assert.deepEqual(
    all.map((g) => g.headers['x-keel-event']),
    ['approval_created', 'run_paused', 'run_failed'],
    'one target’s deliveries arrive in order',
  );
  assert.equal(audits.length, 4);
  assert.ok(audits.every((a) => a.action === 'webhook_delivered'));
  assert.equal(new Set(audits.map((a) => a.subject)).size, 4, 'each delivery has its own id');
});

test('notify: two 500s are retried with doubling backoff, then the 200 is audited as delivered after 3 attempts', async (t) => {
  const r = await receiver(t, (_g, i) => (i <= 2 ? 500 : 200));
  const delays: number[] = [];
  const { n, audits } = notifier([target({ url: r.url, backoff_ms: 20 })], {
    sleep: (ms) => {
      delays.push(ms);
      return new Promise((res) => setTimeout(res, ms));
    },
  });
  n.publish(event('run_paused', { question: 'which file?' }));
  await n.drain(5000);

  assert.equal(r.got.length, 3);
  assert.equal(new Set(r.got.map((g) => g.headers['x-keel-delivery'])).size, 1, 'the same delivery id on every attempt');
  assert.equal(new Set(r.got.map((g) => g.body)).size, 1, 'the same body bytes on every attempt');
  for (const g of r.got)
    assert.ok(verifySignature(SECRET, String(g.headers['x-keel-timestamp']), g.raw, String(g.headers['x-keel-signature'])));
  assert.equal(delays.length, 2);
  assert.ok(delays[0] >= 20 && delays[0] <= 22, `first wait ${delays[0]} is 20 ms plus at most 10% jitter`);
  assert.ok(delays[1] >= 40 && delays[1] <= 44, `second wait ${delays[1]} doubles`);
  assert.equal(audits.length, 1);
  assert.equal(audits[0].action, 'webhook_delivered');
  assert.deepEqual(detailOf(audits[0]), { url: `${r.url}/`, type: 'run_paused', run_id: 'run_abc123', attempts: 3, status: 200 });
});

test('notify: 429 is retried; retries run out on 503 and the last status is audited', async (t) => {
  let limited = 0;
  const r = await receiver(t, (g) => (g.path === '/limited' ? (++limited === 1 ? 429 : 200) : 503));
  const { n, audits } = notifier(
    [target({ url: `${r.url}/limited`, backoff_ms: 1 }), target({ url: `${r.url}/down`, backoff_ms: 1, retries: 2 })],
    {
      sleep: async () => {},
    },
  );
  n.publish(event('run_failed'));
  await n.drain(5000);

  assert.equal(r.got.filter((g) => g.path === '/limited').length, 2);
  assert.equal(r.got.filter((g) => g.path === '/down').length, 3, 'the first attempt and 2 retries');
  const byUrl = new Map(audits.map((a) => [detailOf(a).url, a]));
  assert.equal(byUrl.get(`${r.url}/limited`)?.action, 'webhook_delivered');
  assert.equal(detailOf(byUrl.get(`${r.url}/limited`) as AuditRecord).attempts, 2);
  const down = byUrl.get(`${r.url}/down`) as AuditRecord;
  assert.equal(down.action, 'webhook_failed');
  assert.equal(detailOf(down).attempts, 3);
  assert.equal(detailOf(down).status, 503);
});

test('notify: a 400 is not retried and is audited as failed', async (t) => {
  const r = await receiver(t, () => 400);
  const { n, audits } = notifier([target({ url: r.url, backoff_ms: 1 })], { sleep: async () => {} });
  n.publish(event('run_failed', { error: 'x' }));
  await n.drain(5000);
  assert.equal(r.got.length, 1);
  assert.equal(audits.length, 1);
  assert.equal(audits[0].action, 'webhook_failed');
  assert.equal(audits[0].subject, JSON.parse(r.got[0].body).id);
  assert.deepEqual(detailOf(audits[0]), { url: `${r.url}/`, type: 'run_failed', run_id: 'run_abc123', attempts: 1, status: 400 });
});

test('notify: a receiver that hangs hits timeout_ms and the delivery is retried', async (t) => {
  const r = await receiver(t, (_g, i) => (i === 1 ? 'hang' : 200));
  const { n, audits } = notifier([target({ url: r.url, timeout_ms: 200, backoff_ms: 1 })]);
  const started = Date.now();
  n.publish(event('approval_created'));
  await n.drain(5000);
  const took = Date.now() - started;

  assert.equal(r.got.length, 2);
  assert.ok(took >= 190, `the first attempt waited for its timeout (took ${took} ms)`);
  assert.ok(took < 3000, `and no longer (took ${took} ms)`);
  await new Promise((res) => setTimeout(res, 20));
  assert.equal(r.got[0].aborted, true, 'the timed-out request was abandoned by the sender');
  assert.equal(audits.length, 1);
  assert.equal(audits[0].action, 'webhook_delivered');
  assert.equal(detailOf(audits[0]).attempts, 2);
});

test('notify: a timeout on every attempt is audited with the timeout as its status', async (t) => {
  const r = await receiver(t, () => 'hang');
  const { n, audits } = notifier([target({ url: r.url, timeout_ms: 50, retries: 1, backoff_ms: 1 })]);
  n.publish(event('run_failed'));
  await n.drain(5000);
  assert.equal(r.got.length, 2);
  assert.equal(audits.length, 1);
  assert.equal(audits[0].action, 'webhook_failed');
  assert.deepEqual(detailOf(audits[0]), {
    url: `${r.url}/`,
    type: 'run_failed',
    run_id: 'run_abc123',
    attempts: 2,
    status: 'timed out after 50 ms',
  });
});

test('notify: a refused connection is a network error, retried, then audited as failed', async () => {
  // A port that was just free: nothing listens on it.
  const s = createServer();
  await new Promise<void>((res) => s.listen(0, '127.0.0.1', res));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((res) => s.close(() => res()));
  const { n, audits } = notifier([target({ url: `http://127.0.0.1:${port}/`, retries: 1, backoff_ms: 1 })]);
  n.publish(event('run_failed'));
  await n.drain(5000);
  assert.equal(audits.length, 1);
  assert.equal(audits[0].action, 'webhook_failed');
  assert.equal(detailOf(audits[0]).attempts, 2);
  assert.match(String(detailOf(audits[0]).status), /^network error: ECONNREFUSED/);
});

test('notify: drain() waits for a delivery in flight', async (t) => {
  const r = await receiver(t, () => ({ status: 200, delayMs: 300 }));
  const { n, audits } = notifier([target({ url: r.url })]);
  n.publish(event('run_paused'));
  assert.equal(audits.length, 0, 'publish does not wait');
  const started = Date.now();
  await n.drain(5000);
  assert.ok(Date.now() - started >= 250, 'drain waited for the slow receiver');
  assert.equal(audits.length, 1);
  assert.equal(audits[0].action, 'webhook_delivered');
});

test('notify: drain() gives up at its bound; what was cut short is audited as failed', async (t) => {
  const r = await receiver(t, () => 'hang');
  const { n, audits } = notifier([target({ url: r.url, timeout_ms: 60_000 })]);
  n.publish(event('run_paused'));
  n.publish(event('run_failed'));
  const started = Date.now();
  await n.drain(200);
  const took = Date.now() - started;
  assert.ok(took >= 190 && took < 2000, `drain took ${took} ms`);
  assert.equal(r.got.length, 1, 'the queued delivery was not sent');
  assert.equal(audits.length, 2);
  assert.ok(audits.every((a) => a.action === 'webhook_failed'));
  const [inFlight, queued] = audits.map(detailOf);
  assert.equal(inFlight.type, 'run_paused');
  assert.equal(inFlight.attempts, 1);
  assert.match(String(inFlight.status), /shut down/);
  assert.equal(queued.type, 'run_failed');
  assert.equal(queued.attempts, 0);
  assert.match(String(queued.status), /^not sent: .*shut down/);

  n.publish(event('run_failed'));
  await new Promise((res) => setTimeout(res, 20));
  assert.equal(r.got.length, 1, 'nothing is sent after drain');
});

test('notify: a full queue drops the notification with an audit row', async (t) => {
  const r = await receiver(t, () => 'hang');
  const { n, audits } = notifier([target({ url: r.url, timeout_ms: 60_000 })]);
  for (let i = 0; i < MAX_QUEUE + 3; i++) n.publish(event('run_failed', { i }));
  await new Promise((res) => setTimeout(res, 50));
  // One in flight, MAX_QUEUE waiting, two dropped.
  assert.equal(audits.length, 2);
  for (const a of audits) {
    assert.equal(a.action, 'webhook_failed');
    assert.equal(detailOf(a).attempts, 0);
    assert.match(String(detailOf(a).status), /^dropped: 100 deliveries already wait/);
  }
  await n.drain(50);
  assert.equal(audits.length, MAX_QUEUE + 3, 'every delivery’s outcome is audited once');
  assert.equal(new Set(audits.map((a) => a.subject)).size, MAX_QUEUE + 3);
});

test('notify: an unset secret_env sends nothing, audits each delivery as failed, and warns once', async (t) => {
  const r = await receiver(t);
  const { n, audits, warnings } = notifier([target({ url: r.url })], { env: {} });
  n.publish(event('run_failed'));
  n.publish(event('run_paused'));
  await n.drain(5000);
  assert.equal(r.got.length, 0, 'never sent unsigned');
  assert.equal(audits.length, 2);
  for (const a of audits) {
    assert.equal(a.action, 'webhook_failed');
    assert.equal(detailOf(a).attempts, 0);
    assert.match(String(detailOf(a).status), /KEEL_WEBHOOK_SECRET \(secret_env\) is not set/);
  }
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /KEEL_WEBHOOK_SECRET/);
});

test('notify: untrusted data is bounded and publish never throws', async (t) => {
  const r = await receiver(t);
  const { n, audits } = notifier([target({ url: r.url })]);
  const cyclic: Record<string, unknown> = { name: 'loop' };
  cyclic.self = cyclic;
  const hostile = {
    get boom() {
      throw new Error('getter throws');
    },
  };
  const data: Record<string, unknown> = {
    huge: 'x'.repeat(200_000),
    many: Array.from({ length: 1000 }, (_, i) => i),
    cyclic,
    hostile,
    big: 10n,
    fn: () => 1,
    when: new Date('2026-01-01T00:00:00Z'),
  };
  assert.doesNotThrow(() => n.publish(event('run_failed', data)));
  assert.doesNotThrow(() => n.publish({ type: 'nope', run_id: 'r', at: 'x', data: {} } as unknown as Notification));
  assert.doesNotThrow(() => n.publish(null as unknown as Notification));
  await n.drain(5000);

  assert.equal(r.got.length, 1);
  assert.ok(r.got[0].body.length < 20_000, `body is ${r.got[0].body.length} characters`);
  const sent = JSON.parse(r.got[0].body).data;
  assert.ok(sent.huge.startsWith('xxxx'));
  assert.ok(sent.huge.length < MAX_STRING_CHARS + 100);
  assert.match(sent.huge, /more characters cut by Keel/);
  assert.equal(sent.many.length, 101);
  assert.match(sent.many[100], /900 more items cut by Keel/);
  assert.equal(sent.cyclic.self.self.name, 'loop');
  assert.deepEqual(sent.hostile, { boom: '[unreadable value]' });
  assert.equal(sent.big, '10');
  assert.equal('fn' in sent, false);
  assert.equal(sent.when, '2026-01-01T00:00:00.000Z');
  assert.equal(audits.length, 1);
  assert.equal(audits[0].action, 'webhook_delivered');
  assert.ok(Object.keys(data).length === 7 && data.huge === 'x'.repeat(200_000), 'the caller’s data is unchanged');
});

// ── config ──────────────────────────────────────────────────────────────────────────────────────

function configError(yaml: string): string {
  const home = tempHome('keel-notify-');
  writeFileSync(join(home, 'config.yaml'), yaml);
  try {
    loadConfig(home, {});
  } catch (err) {
    return (err as Error).message;
  }
  assert.fail(`expected loadConfig to refuse:\n${yaml}`);
}

test('notify config: a full target loads, and defaults fill in what is left out', () => {
  const home = tempHome('keel-notify-');
  writeFileSync(
    join(home, 'config.yaml'),
    [
      'notify:',
      '  - url: https://example.com/hook',
      '    events: [approval_created, run_failed]',
      '    secret_env: KEEL_WEBHOOK_SECRET',
      '    retries: 2',
      '    backoff_ms: 100',
      '    timeout_ms: 1000',
      '  - url: http://127.0.0.1:9000/x',
      '    secret: literal',
      '',
    ].join('\n'),
  );
  const { config } = loadConfig(home, {});
  assert.deepEqual(config.notify, [
    {
      url: 'https://example.com/hook',
      events: ['approval_created', 'run_failed'],
      secret_env: 'KEEL_WEBHOOK_SECRET',
      retries: 2,
      backoff_ms: 100,
      timeout_ms: 1000,
    },
    {
      url: 'http://127.0.0.1:9000/x',
      events: ['approval_created', 'run_paused', 'run_failed'],
      secret: 'literal',
      retries: 5,
      backoff_ms: 500,
      timeout_ms: 5000,
    },
  ]);
});

test('notify config: errors name the field and say what is wrong', () => {
  const file = (s: string) => `notify:\n  - url: https://example.com/hook\n    secret_env: S\n${s}`;
  let m = configError('notify:\n  - url: ftp://example.com/hook\n    secret_env: S\n');
  assert.match(m, /config\.yaml:2:10: notify\.0\.url: must be an http:\/\/ or https:\/\/ URL/);
  m = configError('notify:\n  - url: not a url\n    secret_env: S\n');
  assert.match(m, /notify\.0\.url: must be an http/);
  m = configError(file('    events: [run_failed, run_exploded]\n'));
  assert.match(m, /notify\.0\.events\.1: .*approval_created.*run_paused.*run_failed/);
  m = configError(file('    events: []\n'));
  assert.match(m, /notify\.0\.events: list at least one event/);
  m = configError('notify:\n  - url: https://example.com/hook\n');
  assert.match(m, /notify\.0\.secret_env: a webhook target needs a signing secret: set secret_env .* or secret/);
  m = configError('notify:\n  - url: https://example.com/hook\n    secret_env: S\n    secret: literal\n');
  assert.match(m, /notify\.0\.secret: give secret_env or secret, not both/);
  m = configError('notify:\n  - url: https://example.com/hook\n    secret_env: "sk-live abc"\n');
  assert.match(m, /notify\.0\.secret_env: the name of an environment variable/);
  m = configError(file('    retries: -1\n'));
  assert.match(m, /notify\.0\.retries: /);
  m = configError(file('    timeout_ms: 0\n'));
  assert.match(m, /notify\.0\.timeout_ms: /);
  m = configError(file('    secrets: x\n'));
  assert.match(m, /config\.yaml:4:5: unknown key 'notify\.0\.secrets' \(did you mean 'notify\.0\.secret'\?\)/);
});
