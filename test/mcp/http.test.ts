/**
 * S3: `keel mcp serve --http` as a server on a network: a client that vanishes without a goodbye
 * (no DELETE, its connections dropped) is gone once its session has been idle past the timeout
 * (`--idle-timeout`, `KEEL_MCP_IDLE_TIMEOUT_SECONDS`) — its pending cards closed as `client_gone`,
 * audited, exactly as for a DELETE; approving one answers 409 saying the client left and nothing
 * ran — or kept with `--keep-cards`. And `KEEL_MAX_BODY_BYTES` bounds the endpoint as it bounds
 * `keel serve`: a POST past it is refused with 413 before it is read whole.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FIXTURES, keel, tempHome } from '../support/helpers.js';
import { oversized } from '../support/oversized.js';
import { webhookReceiver } from '../support/webhooks.js';
import { cards, httpServe, textOf, trashed, until } from './clients.js';

/** A call that waits on a card and returns naming it (--wait is short). */
async function cardFromCall(srv: Awaited<ReturnType<typeof httpServe>>, ids: string[]) {
  const { client, transport } = await srv.connect();
  const r = await client.callTool({ name: 'trash_email', arguments: { ids } });
  const id = /approval (apr_\w+)/.exec(textOf(r))?.[1];
  assert.ok(id, textOf(r));
  return { client, transport, id, sessionId: transport.sessionId as string };
}

test('S3: an HTTP client that vanishes without a DELETE: after the idle timeout its pending card is closed as client_gone (audited), approving it answers that the client left and nothing ran, and its session is gone (404)', async (t) => {
  const home = tempHome('keel-mcp-http-');
  const srv = await httpServe(home, ['--plugins', FIXTURES, '--wait', '0.3', '--idle-timeout', '1']);
  t.after(() => srv.close());
  const { client, id, sessionId } = await cardFromCall(srv, ['m1']);
  assert.equal((await cards(home, 'pending')).length, 1);
  // Its connections dropped, no goodbye: the SDK client's close sends no DELETE.
  await client.close();
  const [card] = await until(
    'the card closed',
    () => cards(home),
    (c) => c[0]?.status !== 'pending',
  );
  assert.equal(card.id, id);
  assert.equal(card.status, 'rejected');
  assert.equal(card.reason, 'client_gone');
  assert.match(srv.stderr(), new RegExp(`session ${sessionId} idle for \\d+ s: its client is gone`));
  const { openStore } = await import('../../src/store/open.js');
  const store = openStore(home, { KEEL_HOME: home });
  t.after(() => store.close());
  const rows = (await store.listAudit()).filter((r) => r.subject === id);
  assert.deepEqual(
    rows.map((r) => `${r.action}:${r.actor}`),
    ['rejected:system'],
  );
  // A3, one conflict sentence for every surface: the CLI, and the HTTP API's 409.
  const cli = await keel(['approvals', 'approve', id], { KEEL_HOME: home });
  assert.notEqual(cli.code, 0);
  assert.match(cli.stderr, /closed because the MCP client that made the call left \(client_gone\), and nothing ran/);
  const { testServer } = await import('../support/server.js');
  const api = await testServer({}, home);
  t.after(() => api.close());
  const approve = await api.api('POST', `/v1/approvals/${id}`, { token: srv.token, body: { decision: 'approve' } });
  assert.equal(approve.status, 409, JSON.stringify(approve.body));
  assert.match(JSON.stringify(approve.body), /the MCP client that made the call left.*nothing ran/);
  assert.deepEqual(trashed(home), [], 'nothing ran');
  // The session is closed: the same session id is answered 404 (the client starts a new one).
  const again = await fetch(srv.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${srv.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  assert.equal(again.status, 404);
});

test('S3: a connected client (its event stream open) is not idle however long it is quiet; with --keep-cards a vanished client’s card stays for the owner', async (t) => {
  const home = tempHome('keel-mcp-http-');
  const srv = await httpServe(home, ['--plugins', FIXTURES, '--wait', '0.3', '--keep-cards'], { KEEL_MCP_IDLE_TIMEOUT_SECONDS: '1' });
  t.after(() => srv.close());
  const { client, id } = await cardFromCall(srv, ['m2']);
  // Quiet for longer than the timeout, but still there (the SDK client holds its GET stream open).
  await new Promise((r) => setTimeout(r, 2_500));
  assert.equal(textOf(await client.callTool({ name: 'calendar_lookup', arguments: { day: 'Monday' } })), 'No events on Monday.');
  assert.doesNotMatch(srv.stderr(), /its client is gone/);
  assert.equal((await cards(home, 'pending')).length, 1);
  await client.close();
  await until(
    'the session closed',
    async () => srv.stderr(),
    (e) => /its client is gone/.test(e),
  );
  const c = (await cards(home)).find((x) => x.id === id);
  assert.equal(c?.status, 'pending', '--keep-cards: the owner still answers it');
});

test('S3: KEEL_MAX_BODY_BYTES bounds the MCP endpoint: a declared or chunked POST past it gets 413 before it is read whole; a small one works', async (t) => {
  const home = tempHome('keel-mcp-http-');
  const LIMIT = 64 * 1024;
  const srv = await httpServe(home, ['--plugins', FIXTURES], { KEEL_MAX_BODY_BYTES: String(LIMIT) });
  t.after(() => srv.close());
  // 1 MB: under the MCP SDK's own 4 MiB bound, so only KEEL_MAX_BODY_BYTES refuses it.
  for (const declared of [1_000_000, 60_000_000, 'chunked'] as const) {
    const r = await oversized(srv.url, {
      declared,
      upTo: 4 * LIMIT,
      headers: { authorization: `Bearer ${srv.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    }).catch((e) => {
      throw new Error(`${declared}: ${e.message}`);
    });
    assert.equal(r.status, 413, `${declared}: ${r.body}`);
    assert.match(r.body, /larger than 65536 bytes \(KEEL_MAX_BODY_BYTES\)/);
  }
  // Under the limit: a session, its tools, a read.
  const { client } = await srv.connect();
  t.after(() => client.close());
  assert.ok((await client.listTools()).tools.length > 0);
  assert.equal(textOf(await client.callTool({ name: 'calendar_lookup', arguments: { day: 'Friday' } })), 'No events on Friday.');
  // A bad limit is refused at the start, naming it.
  const bad = await keel(['mcp', 'serve', '--http', '0', '--plugins', FIXTURES], { KEEL_HOME: home, KEEL_MAX_BODY_BYTES: 'lots' });
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /KEEL_MAX_BODY_BYTES=lots is not a positive whole number/);
});

test('S7/A1: a card an MCP session makes is announced to the owner as any other — its webhooks (config.yaml notify) go out once, from the MCP server', async (t) => {
  const home = tempHome();
  const hooks = await webhookReceiver(t);
  const srv = await httpServe(home, ['--plugins', FIXTURES, '--wait', '0.3'], hooks.env);
  t.after(() => srv.close());
  const { client, id } = await cardFromCall(srv, ['m1']);
  t.after(() => client.close());
  const [card] = await cards(home, 'pending');
  assert.equal(card.id, id);
  await until(
    'the webhooks',
    async () => hooks.got.length,
    (n) => n >= 2,
  );
  assert.deepEqual(
    hooks.got.map((h) => [h.type, h.run_id]),
    [
      ['approval_created', card.run_id],
      ['run_paused', card.run_id],
    ],
  );
  assert.equal(hooks.got[0].data.approval_id, id);
});
