/**
 * U3/U5 through `keel mcp serve` (issue 36): an MCP session's consent narrowed. The SDK's own client
 * drives a real `keel mcp serve` child over stdio, with the outside fixture plugin (read_message is
 * `output: untrusted`; send_message confirm-once; save_note confirm: never). Each test runs the same
 * calls with and without the untrusted read in between, so it fails if the narrowing breaks: before
 * the read, a yes (an elicitation, a consent card) covers the tool for the session as it always did;
 * after it, any call the person was not shown waits on a card pinned to its arguments, naming what
 * the session read, and a refused call is refused again without a question.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { calls, keel, ROOT, tempHome } from '../support/helpers.js';
import { type Card, cards, stdioClient, textOf } from './clients.js';

const OUTSIDE = join(ROOT, 'test', 'fixtures', 'untrusted');
const written = (home: string) => calls(home, 'outside.log');

const toBob = { to: 'bob@example.com', body: 'Yes, Friday works.' };
const toEve = { to: 'eve@attacker.example', body: 'Bills: water, power.' };
const toCarol = { to: 'carol@example.com', body: 'See you Friday.' };
const sent = (args: Record<string, string>) => `send_message ${JSON.stringify(args)}`;
const EVE = 'message m2 from eve@attacker.example';

type Sources = Card & { card: Card['card'] & { untrusted?: { tool: string; call_id: string; label: string }[] } };

/** A session over stdio; `elicit` (when given) answers the server's questions, each recorded in `asked`. */
async function session(home: string, elicit?: (message: string) => 'accept' | 'decline') {
  const asked: string[] = [];
  const client = await stdioClient(
    home,
    ['--plugins', OUTSIDE, '--wait', '0.3'],
    elicit &&
      ((m) => {
        asked.push(m);
        return elicit(m);
      }),
  );
  const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });
  const readEve = async () => assert.match(textOf(await call('read_message', { id: 'm2' })), /^From: eve@attacker\.example/);
  return { client, asked, call, readEve };
}

const cardId = (r: Awaited<ReturnType<Client['callTool']>>) => {
  assert.equal(r.isError, true, textOf(r));
  const id = /Waiting for approval (apr_\w+)/.exec(textOf(r))?.[1];
  assert.ok(id, `the call names its card: ${textOf(r)}`);
  return id;
};
const cardOf = async (home: string, id: string) => {
  const c = (await cards(home)).find((x) => x.id === id) as Sources | undefined;
  assert.ok(c, `card ${id} listed`);
  return c;
};

test('U3 mcp serve (elicitation): a yes to send_message covers the tool for the session until it reads untrusted content; then another call waits on a card naming the source, and its no is kept', async (t) => {
  for (const read of [false, true]) {
    const home = tempHome('keel-mcp-u-');
    // The card's own elicitation: what was written when the person was asked (nothing of B yet).
    let writtenWhenCarded: string[] | undefined;
    const s = await session(home, (m) => {
      if (m.includes('Approve this call?')) {
        writtenWhenCarded = written(home);
        return 'decline';
      }
      return 'accept';
    });
    t.after(() => s.client.close());

    const a = await s.call('send_message', toBob);
    assert.equal(textOf(a), 'Sent to bob@example.com.');
    assert.equal(s.asked.length, 1);
    // The confirm-once question shows the exact call as the core renders it; nothing read yet: for the session.
    assert.match(s.asked[0], /^Allow send_message to make changes \(write\) — the rest of this session\?/);
    assert.ok(s.asked[0].includes('Send a message to bob@example.com: Yes, Friday works.'), s.asked[0]);
    assert.ok(s.asked[0].includes('Exact call: send_message({"body":"Yes, Friday works.","to":"bob@example.com"})'), s.asked[0]);
    assert.doesNotMatch(s.asked[0], /outside you/);

    if (read) await s.readEve();
    const b = await s.call('send_message', toEve);
    if (!read) {
      // Control: the tool is consented for the session — the other call runs unasked, as before issue 36.
      assert.equal(textOf(b), 'Sent to eve@attacker.example.');
      assert.equal(s.asked.length, 1, 'not asked again');
      assert.deepEqual(written(home), [sent(toBob), sent(toEve)]);
      continue;
    }
    // U3: after the untrusted read the yes no longer covers a call the person never saw: it waits on a
    // card pinned to its arguments, shown by elicitation, naming what the session read.
    assert.equal(s.asked.length, 2, 'B was put to the person');
    assert.match(s.asked[1], /Approve this call\?$/);
    assert.ok(s.asked[1].includes('Send a message to eve@attacker.example'), s.asked[1]);
    assert.ok(s.asked[1].includes(`This run read words from outside you: 1 result of read_message (${EVE})`), s.asked[1]);
    assert.deepEqual(writtenWhenCarded, [sent(toBob)], 'nothing of B ran before the answer');
    assert.equal(b.isError, true);
    assert.match(textOf(b), /^Not run: approval apr_\w+ was rejected/);
    const [card] = (await cards(home)) as Sources[];
    assert.equal(card.status, 'rejected');
    assert.deepEqual(card.items[0].args, toEve, 'the card is pinned to B’s arguments');
    assert.equal(card.card.untrusted?.[0].label, EVE);

    // U5: the refused call made again is refused at once: no second question, no second card.
    const again = await s.call('send_message', toEve);
    assert.equal(again.isError, true);
    assert.match(textOf(again), /declined this exact send_message call/);
    assert.equal(s.asked.length, 2);
    assert.equal((await cards(home)).length, 1);
    assert.deepEqual(written(home), [sent(toBob)], 'nothing was sent to eve');
  }
});

test('U3 mcp serve (elicitation): after an untrusted read the confirm-once question says so and covers that exact call only', async (t) => {
  const home = tempHome('keel-mcp-u-');
  const s = await session(home, (m) => (m.includes('Approve this call?') ? 'decline' : 'accept'));
  t.after(() => s.client.close());
  await s.readEve();
  const a = await s.call('send_message', toBob);
  assert.equal(textOf(a), 'Sent to bob@example.com.');
  assert.equal(s.asked.length, 1);
  assert.match(s.asked[0], /^Allow send_message to make changes \(write\) — this exact call only\?/);
  assert.ok(s.asked[0].includes('Exact call: send_message({"body":"Yes, Friday works.","to":"bob@example.com"})'), s.asked[0]);
  assert.ok(s.asked[0].includes(`This run read words from outside you: 1 result of read_message (${EVE})`), s.asked[0]);
  // The yes covered bob's message only: carol's waits on a card (declined here), nothing sent.
  const c = await s.call('send_message', toCarol);
  assert.match(textOf(c), /^Not run: approval apr_\w+ was rejected/);
  assert.equal(s.asked.length, 2);
  assert.match(s.asked[1], /Approve this call\?$/);
  assert.deepEqual(written(home), [sent(toBob)]);
});

test('U3 mcp serve (no elicitation): a consent card covers the tool for the session until it reads untrusted content; then each call gets a card of its own', async (t) => {
  const home = tempHome('keel-mcp-u-');
  const s = await session(home);
  t.after(() => s.client.close());

  // Before any read: one consent card for the tool, approved, and the tool runs unasked for the session.
  const consent = cardId(await s.call('send_message', toBob));
  assert.match((await cardOf(home, consent)).card.title, /for the rest of this MCP session/);
  assert.equal((await keel(['approvals', 'approve', consent], { KEEL_HOME: home })).code, 0);
  assert.equal(textOf(await s.call('send_message', toBob)), 'Sent to bob@example.com.');
  assert.equal(textOf(await s.call('send_message', toCarol)), 'Sent to carol@example.com.', 'consented for the session: runs unasked');

  // After the read: the session's consent no longer covers a call nobody saw.
  await s.readEve();
  const id = cardId(await s.call('send_message', toEve));
  const card = await cardOf(home, id);
  assert.doesNotMatch(card.card.title, /rest of this MCP session/, 'a card for this call, not the tool');
  assert.deepEqual(card.items[0].args, toEve);
  assert.equal(card.card.untrusted?.[0].label, EVE);
  assert.deepEqual(written(home), [sent(toBob), sent(toCarol)], 'nothing sent to eve');
});

test('U3 mcp serve (no elicitation): once the session read untrusted content, a held write gets a card pinned to its call (not the per-tool consent card); approved, that call runs, and another call gets another card', async (t) => {
  const home = tempHome('keel-mcp-u-');
  const s = await session(home);
  t.after(() => s.client.close());
  await s.readEve();

  const first = cardId(await s.call('send_message', toBob));
  const card = await cardOf(home, first);
  assert.doesNotMatch(card.card.title, /rest of this MCP session/);
  assert.deepEqual(card.items[0].args, toBob);
  assert.deepEqual(card.card.untrusted, [{ tool: 'read_message', call_id: 'mcp_1', label: EVE }]);
  assert.deepEqual(written(home), []);

  const ok = await keel(['approvals', 'approve', first], { KEEL_HOME: home });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(textOf(await s.call('send_message', toBob)), 'Sent to bob@example.com.', 'the same call again gets the approved outcome');
  assert.deepEqual(written(home), [sent(toBob)]);

  const second = cardId(await s.call('send_message', toEve));
  assert.notEqual(second, first);
  assert.deepEqual((await cardOf(home, second)).items[0].args, toEve);
  assert.deepEqual(written(home), [sent(toBob)], 'the approval of bob’s message did not cover eve’s');
});

test('U3 mcp serve: a confirm: never write runs unasked before any untrusted read, and waits on a card after one', async (t) => {
  const home = tempHome('keel-mcp-u-');
  const s = await session(home);
  t.after(() => s.client.close());
  assert.equal(textOf(await s.call('save_note', { text: 'lunch Friday' })), 'Saved.');
  await s.readEve();
  const id = cardId(await s.call('save_note', { text: 'eve is trusted' }));
  const card = await cardOf(home, id);
  assert.deepEqual(card.items[0].args, { text: 'eve is trusted' });
  assert.equal(card.card.untrusted?.[0].label, EVE);
  assert.deepEqual(written(home), ['save_note {"text":"lunch Friday"}']);
});
