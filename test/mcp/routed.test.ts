/**
 * A9 on `keel mcp serve` over HTTP (in this process, so its cards can be routed as the gate will
 * route them: test/support/routed.ts): an MCP client answers a card by elicitation, as its token.
 * A card routed to finance is not asked of a client whose token is outside finance — the card waits
 * for the group, nothing runs — and is asked of, and answered by, a client whose token is in it.
 * A confirm-once write a real Cedar policy routes (a plain `@approvers` permit) is never asked by
 * elicitation of a client outside the group either: it waits on its routed card (issue 47).
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Keel } from '../../src/keel/keel.js';
import { Tokens } from '../../src/server/access/tokens.js';
import { serveMcpHttp } from '../../src/server/mcp/mcp.js';
import { calls, FIXTURES, tempHome } from '../support/helpers.js';
import { PAYMENTS } from '../support/policy.js';
import { byTool, routeCards } from '../support/routed.js';

test('A9 (MCP over HTTP): a card routed to finance is not elicited from a client whose token is outside finance, and nothing runs; a finance client is asked and its yes runs the call once', async (t) => {
  const home = tempHome('keel-mcp-routed-');
  const keel = new Keel({
    env: { ...process.env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '', KEEL_CONFIRM_ONCE_TOOLS: '' },
  });
  const store = keel.store;
  assert.ok(store);
  routeCards(store, byTool(['trash_email'], ['finance']));
  const tokens = Tokens.at(home);
  const ide = tokens.create('ide', 'approver').token;
  const fin = tokens.create('fin-ide', 'approver', new Date(), ['finance']).token;
  const srv = await serveMcpHttp({
    keel,
    pluginDirs: [FIXTURES],
    mode: 'agent',
    waitMs: 1500,
    pollMs: 50,
    version: 'test',
    tokens,
    port: 0,
  });
  t.after(async () => {
    await srv.close();
    rmSync(home, { recursive: true, force: true });
  });
  const asked: string[] = [];
  const connect = async (name: string, token: string) => {
    const client = new Client({ name, version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(`${name}: ${String(req.params.message).split('\n')[0]}`);
      return { action: 'accept', content: {} };
    });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    t.after(() => client.close());
    return client;
  };
  const trashed = () => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

  const outsider = await connect('outsider', ide);
  const waited = (await outsider.callTool({ name: 'trash_email', arguments: { ids: ['m1'] } })) as CallToolResult;
  const said = (waited.content[0] as { text: string }).text;
  assert.match(said, /apr_\w+/, 'the call returns naming its card');
  assert.deepEqual(asked, [], 'a client outside finance is not asked');
  assert.deepEqual(trashed(), [], 'nothing ran');
  const [card] = await store.listApprovals({ status: 'pending' });
  assert.deepEqual(card.card.approvers, ['finance']);

  const member = await connect('member', fin);
  const ran = (await member.callTool({ name: 'trash_email', arguments: { ids: ['m2'] } })) as CallToolResult;
  assert.equal(asked.length, 1, JSON.stringify(asked));
  assert.match(asked[0], /^member: /);
  assert.ok(!ran.isError, JSON.stringify(ran));
  assert.deepEqual(trashed(), ['trash_email {"ids":["m2"]}'], 'the finance client’s yes ran its call, once');
  const answered = (await store.listApprovals({ status: 'approved' }))[0];
  assert.equal(answered.answered_by, 'fin-ide');
  assert.equal((await store.getApproval(card.id))?.status, 'pending', 'the outsider’s card still waits for finance');
});

test('A9/PC8 (MCP over HTTP, issue 47): a confirm-once write a plain @approvers permit routes is not elicited from a client outside the group — it waits on a card routed to finance, and nothing runs', async (t) => {
  const home = tempHome('keel-mcp-routed-');
  writeFileSync(
    join(home, 'policy.cedar'),
    'permit (principal, action == Keel::Action::"call", resource);\n\n@id("finance-pays")\n@approvers("finance")\npermit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay");\n',
  );
  writeFileSync(join(home, 'config.yaml'), 'policy_file: policy.cedar\n');
  const keel = new Keel({
    home,
    env: { ...process.env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '', KEEL_CONFIRM_ONCE_TOOLS: '' },
  });
  const store = keel.store;
  assert.ok(store);
  const tokens = Tokens.at(home);
  const ops = tokens.create('ops-ide', 'approver', new Date(), ['ops']).token;
  const srv = await serveMcpHttp({
    keel,
    pluginDirs: [PAYMENTS],
    mode: 'agent',
    waitMs: 1500,
    pollMs: 50,
    version: 'test',
    tokens,
    port: 0,
  });
  t.after(async () => {
    await srv.close();
    rmSync(home, { recursive: true, force: true });
  });
  const asked: string[] = [];
  const client = new Client({ name: 'ops', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(String(req.params.message).split('\n')[0]);
    return { action: 'accept', content: {} };
  });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: { authorization: `Bearer ${ops}` } } }),
  );
  t.after(() => client.close());
  const waited = (await client.callTool({ name: 'pay', arguments: { to: 'acme', amount: 120 } })) as CallToolResult;
  assert.match((waited.content[0] as { text: string }).text, /apr_\w+/, 'the call returns naming its card');
  assert.deepEqual(asked, [], 'no confirmation by elicitation: the client is outside finance');
  assert.deepEqual(calls(home, 'payments.log'), [], 'nothing ran');
  const [card] = await store.listApprovals({ status: 'pending' });
  assert.deepEqual(card.card.approvers, ['finance']);
  assert.deepEqual(card.items[0].args, { to: 'acme', amount: 120 }, 'pinned to its arguments');
});
