/**
 * Issue 47 (A9, PC9, S9): `chatHandler` in an application's own route, driven by the AI SDK's own
 * chat client (AbstractChat, DefaultChatTransport, what useChat runs) with a real Cedar policy file.
 * The application's sign-in gives the caller's groups: a card routed to finance (`@ask
 * @approvers("finance")`) that a user in support approves from the chat is refused (the chat says so,
 * audited, the card stays pending, nothing runs), and a user in finance approves it once; the runs a
 * user starts from the chat carry the user's groups, so a policy on `principal.groups` decides them.
 * On SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  AbstractChat,
  type ChatState,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import { Keel } from '../../src/keel/keel.js';
import { chatHandler } from '../../src/server/ui/handler.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { calls, script, tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { PAYMENTS } from '../support/policy.js';

after(() => dropSchemas());

class NodeState implements ChatState<UIMessage> {
  status: ChatState<UIMessage>['status'] = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[];
  constructor(messages: UIMessage[] = []) {
    this.messages = messages;
  }
  pushMessage = (m: UIMessage) => {
    this.messages = [...this.messages, m];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (i: number, m: UIMessage) => {
    this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)];
  };
  snapshot = <T>(t: T): T => structuredClone(t);
}

/** The chat useChat runs, talking to the handler in this process (its fetch calls the handler). */
class NodeChat extends AbstractChat<UIMessage> {
  constructor(handler: (req: Request) => Promise<Response>, user: string, id: string, messages: UIMessage[] = []) {
    super({
      id,
      state: new NodeState(messages),
      transport: new DefaultChatTransport({
        api: 'http://app.example/api/chat',
        headers: { 'x-user': user },
        fetch: (input, init) => handler(new Request(input, init)),
      }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
  }
}

// biome-ignore lint/suspicious/noExplicitAny: UI parts are checked field by field
type AnyPart = any;

async function settled(chat: NodeChat, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  await new Promise((r) => setTimeout(r, 50));
  while (chat.status === 'submitted' || chat.status === 'streaming') {
    if (Date.now() > deadline) throw new Error(`the chat is still ${chat.status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const POLICY = `@id("everything")
permit (principal, action == Keel::Action::"call", resource);

@id("finance-pays")
@ask
@approvers("finance")
permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay");

@id("support-never-wipes")
forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"wipe")
when { principal.groups.contains("support") };
`;

/** The application's own sign-in: a header names the user, whose account says which groups they are in. */
const USERS: Record<string, { name: string; groups: string[] }> = {
  sam: { name: 'sam', groups: ['support'] },
  fay: { name: 'fay', groups: ['finance'] },
};

const lastOf = (chat: NodeChat) => chat.messages[chat.messages.length - 1];
const partOf = (m: UIMessage, type: string): AnyPart => (m.parts as AnyPart[]).find((p) => p.type === type);

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`A9/PC9 (${kind}): chatHandler holds an app user's answer to the card's groups, and the run started from the chat carries the user's groups`, async (t) => {
    const home = tempHome('keel-chat-groups-');
    writeFileSync(join(home, 'policy.cedar'), POLICY);
    writeFileSync(join(home, 'config.yaml'), 'policy_file: policy.cedar\n');
    const store = kind === 'postgres' ? new PostgresStore(withSchema(await testPgUrl(), freshSchema())) : undefined;
    const keel = new Keel({
      home,
      env: { ...process.env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '' },
      ...(store ? { store } : {}),
    });
    t.after(() => keel.close());
    const model = script(home, [
      { text: 'I will pay it.', tool_calls: [{ id: 'p1', name: 'pay', args: { to: 'acme', amount: 120 } }] },
      { text: 'Paid Acme.' },
    ]);
    const handler = chatHandler(keel, {
      model,
      pluginDirs: [PAYMENTS],
      pollMs: 50,
      actor: (req) => USERS[req.headers.get('x-user') ?? ''],
    });
    const paid = () => calls(home, 'payments.log');

    // Sam (support) asks to pay: the policy puts it on a card routed to finance.
    const sam = new NodeChat(handler, 'sam', 'chat-pay');
    await sam.sendMessage({ text: 'pay the Acme bill' });
    await settled(sam);
    assert.equal(sam.error, undefined, String(sam.error));
    const carded = partOf(lastOf(sam), 'tool-pay');
    assert.equal(carded?.state, 'approval-requested', JSON.stringify(lastOf(sam).parts));
    const [card] = await keel.listApprovals({ status: 'pending' });
    assert.deepEqual(card.card.approvers, ['finance']);
    const run = await keel.getRun(card.run_id);
    assert.deepEqual(run.principal, { kind: 'app', name: 'sam', role: 'approver', groups: ['support'] }, 'PC9: the user’s groups');

    // Sam approves from the chat: refused as outside finance, said in the chat; nothing runs.
    await sam.addToolApprovalResponse({ id: carded.approval.id, approved: true });
    await settled(sam);
    const said = (lastOf(sam).parts as AnyPart[]).find((p) => p.type === 'data-keel-notice');
    assert.equal(said?.data?.kind, 'refused', JSON.stringify(lastOf(sam).parts));
    assert.match(said?.data?.message, /routed to the group finance: only a token in it may answer it, and sam is in support/);
    assert.equal((await keel.store?.getApproval(card.id))?.status, 'pending', 'the card still waits for finance');
    assert.deepEqual(paid(), [], 'nothing ran');
    const refused = (await keel.store?.listAudit(card.id)) ?? [];
    assert.deepEqual(
      refused.map((a) => [a.actor, a.action]),
      [['sam', 'approve_refused_forbidden']],
    );

    // Fay (finance) opens the same chat and approves: it runs once.
    const loaded = (
      (await (await handler(new Request('http://app.example/api/chat/chat-pay/messages', { headers: { 'x-user': 'fay' } }))).json()) as {
        messages: UIMessage[];
      }
    ).messages;
    const fay = new NodeChat(handler, 'fay', 'chat-pay', loaded);
    const pending = partOf(lastOf(fay), 'tool-pay');
    assert.equal(pending?.state, 'approval-requested');
    await fay.addToolApprovalResponse({ id: pending.approval.id, approved: true });
    await settled(fay);
    assert.equal(fay.error, undefined, String(fay.error));
    assert.deepEqual(paid(), ['pay {"to":"acme","amount":120}'], 'approved by finance, run once');
    assert.equal((await keel.store?.getApproval(card.id))?.answered_by, 'fay');
  });
}

test("PC9: a policy on principal.groups decides the runs an app's user starts from chatHandler", async (t) => {
  const home = tempHome('keel-chat-groups-');
  writeFileSync(join(home, 'policy.cedar'), POLICY);
  writeFileSync(join(home, 'config.yaml'), 'policy_file: policy.cedar\n');
  const keel = new Keel({ home, env: { ...process.env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '' } });
  t.after(() => keel.close());
  const model = script(home, [
    { tool_calls: [{ id: 'w1', name: 'wipe', args: { folder: '/srv/tickets' } }] },
    { text: 'I may not wipe it.' },
  ]);
  const handler = chatHandler(keel, { model, pluginDirs: [PAYMENTS], pollMs: 50, actor: (req) => USERS[req.headers.get('x-user') ?? ''] });
  const sam = new NodeChat(handler, 'sam', 'chat-wipe');
  await sam.sendMessage({ text: 'wipe the tickets folder' });
  await settled(sam);
  assert.equal(sam.error, undefined, String(sam.error));
  const wipe = partOf(lastOf(sam), 'tool-wipe');
  assert.notEqual(wipe?.state, 'approval-requested', 'no card: the policy forbids it for support');
  const [r] = await keel.listRuns({ limit: 1 });
  const step = (await keel.getRun(r.id)).steps.find((s) => s.call_id === 'w1');
  assert.equal(step?.outcome, 'denied_by_policy');
  assert.deepEqual(step?.policy, ['support-never-wipes']);
  assert.deepEqual(calls(home, 'payments.log'), []);
});

test('chatHandler: groups that are not group names are the application’s mistake (500), never an answer', async (t) => {
  const home = tempHome('keel-chat-groups-');
  const keel = new Keel({ home, env: { ...process.env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '' } });
  t.after(() => keel.close());
  const handler = chatHandler(keel, { model: script(home, [{ text: 'hi' }]), actor: () => ({ name: 'x', groups: ['Finance Team'] }) });
  const errors: unknown[] = [];
  const log = console.error;
  console.error = (...a: unknown[]) => errors.push(a);
  t.after(() => {
    console.error = log;
  });
  const res = await handler(
    new Request('http://app.example/api/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'c',
        messages: [{ id: 'm', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
        trigger: 'submit-message',
      }),
    }),
  );
  assert.equal(res.status, 500);
  assert.equal(errors.length, 1);
});
