/**
 * Issue 41: keel serve behind the AI SDK's chat UIs. Driven with the AI SDK's own client code
 * (AbstractChat and DefaultChatTransport from `ai`, what useChat runs), in Node, against
 * POST /v1/ui/chat: text streams; a destructive call arrives as an approval part carrying the card's
 * words; addToolApprovalResponse answers it through the one answer path (A3: once, audited with the
 * token's name) and the run ends in the same chat; a rejection ends as a denied tool part; a viewer
 * is refused; a resent request runs nothing twice; a card approved elsewhere shows up in the chat.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  AbstractChat,
  type ChatState,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import { calls, script } from '../support/helpers.js';
import { type TestServer, testServer } from '../support/server.js';

class NodeState implements ChatState<UIMessage> {
  status: ChatState<UIMessage>['status'] = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
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

/** The chat useChat runs, with Node's own state. */
class NodeChat extends AbstractChat<UIMessage> {
  constructor(s: TestServer, token: string, id: string, model: string) {
    super({
      id,
      state: new NodeState(),
      transport: new DefaultChatTransport({ api: `${s.url}/v1/ui/chat`, headers: { authorization: `Bearer ${token}` }, body: { model } }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
  }
}

let s: TestServer;
before(async () => {
  s = await testServer();
});
after(() => s.close());

// biome-ignore lint/suspicious/noExplicitAny: UI parts are checked field by field
type AnyPart = any;

async function settled(chat: NodeChat, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  // Let an automatic send (after an approval response) begin first.
  await new Promise((r) => setTimeout(r, 50));
  while (chat.status === 'submitted' || chat.status === 'streaming') {
    if (Date.now() > deadline) throw new Error(`the chat is still ${chat.status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const last = (chat: NodeChat) => chat.messages[chat.messages.length - 1];
const texts = (m: UIMessage) => (m.parts as AnyPart[]).filter((p) => p.type === 'text').map((p) => p.text);
const toolPart = (m: UIMessage, name: string): AnyPart => (m.parts as AnyPart[]).find((p) => p.type === `tool-${name}`);
const SEND = { to: 'ana', subject: 'hi' };
const sendScript = (name: string) =>
  script(
    s.home,
    [{ text: 'I will send it.', tool_calls: [{ id: 't1', name: 'send_email', args: SEND }] }, { text: 'Sent it to ana.' }],
    name,
  );
const sent = () => calls(s.home, 'mail-calls.log').filter((l) => l === `send_email ${JSON.stringify(SEND)}`).length;

/** POSTs a chat request as a page would resend it, and reads the stream's chunks. */
async function post(body: unknown, token = s.approver): Promise<{ status: number; chunks: AnyPart[]; header: string | null }> {
  const res = await fetch(`${s.url}/v1/ui/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const chunks = text
    .split('\n\n')
    .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
    .map((l) => JSON.parse(l.slice(6)));
  return { status: res.status, chunks, header: res.headers.get('x-vercel-ai-ui-message-stream') };
}

test('issue 41: text streams into the chat, in the protocol version the client reads', async () => {
  const chat = new NodeChat(s, s.approver, 'chat-text', script(s.home, [{ text: 'Hello from Keel.' }], 'text.yaml'));
  await chat.sendMessage({ text: 'say hello' });
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  assert.equal(chat.messages.length, 2);
  assert.deepEqual(texts(last(chat)), ['Hello from Keel.']);
  // The chat's id is the session.
  const runs = (await s.api('GET', '/v1/runs?session=chat-text', { token: s.viewer })).body.runs;
  assert.equal(runs.length, 1);
  assert.equal(runs[0].status, 'done');
  const raw = await post({
    id: 'chat-text',
    messages: [{ id: 'm-x', role: 'user', parts: [{ type: 'text', text: 'again' }] }],
    trigger: 'submit-message',
    model: script(s.home, [{ text: 'Again.' }], 'text2.yaml'),
  });
  assert.equal(raw.header, 'v1');
  const types = raw.chunks.map((c) => c.type);
  assert.equal(types[0], 'start');
  assert.match(raw.chunks[0].messageId, /^run_\w+-a$/);
  assert.deepEqual(
    types.filter((t) => t.startsWith('text-')),
    ['text-start', 'text-delta', 'text-end'],
  );
  assert.equal(raw.chunks.find((c) => c.type === 'text-delta').delta, 'Again.');
  assert.equal(types[types.length - 1], 'finish');
});

test('issue 41: a destructive call arrives as an approval part with the card; approving it from the chat runs it once and the run ends in the same message; a resend runs nothing twice', async () => {
  const chat = new NodeChat(s, s.approver, 'chat-approve', sendScript('approve.yaml'));
  await chat.sendMessage({ text: 'send hi to ana' });
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  const asked = toolPart(last(chat), 'send_email');
  assert.equal(asked.state, 'approval-requested');
  assert.match(asked.approval.id, /^apr_/);
  // The card's own words travel with the part.
  assert.equal(asked.approval.descriptor.item.title, 'Send "hi" to ana');
  assert.equal(asked.approval.descriptor.item.undo, 'cannot be undone');
  assert.equal(asked.approval.descriptor.item.call, 'send_email({"subject":"hi","to":"ana"})');
  assert.deepEqual(asked.input, SEND);
  assert.equal(sent(), 0);
  const card = asked.approval.id as string;
  const pending = (await s.api('GET', `/v1/approvals/${card}`, { token: s.viewer })).body;
  assert.equal(pending.status, 'pending');

  const messagesBefore = structuredClone(chat.messages);
  await chat.addToolApprovalResponse({ id: card, approved: true, reason: 'yes, send it' });
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  assert.equal(chat.messages.length, 2, 'the run ends in the same assistant message');
  const ran = toolPart(last(chat), 'send_email');
  assert.equal(ran.state, 'output-available');
  assert.equal(ran.output, 'Sent "hi" to ana.');
  assert.deepEqual(texts(last(chat)), ['I will send it.', 'Sent it to ana.']);
  assert.equal(sent(), 1);
  // The one answer path: the card is approved by the token's name, audited once.
  const answered = (await s.api('GET', `/v1/approvals/${card}`, { token: s.viewer })).body;
  assert.equal(answered.status, 'approved');
  assert.equal(answered.answered_by, 'ana-phone');
  assert.equal(answered.reason, 'yes, send it');
  const audit = (await s.srv.keel.store?.listAudit(card)) ?? [];
  assert.deepEqual(
    audit.filter((a) => a.action === 'approved').map((a) => a.actor),
    ['ana-phone'],
  );

  // The page resends its approval (a retry): reported as answered already; nothing runs again.
  const responded = messagesBefore.map((m) => ({
    ...m,
    parts: (m.parts as AnyPart[]).map((p) =>
      p.approval?.id === card ? { ...p, state: 'approval-responded', approval: { ...p.approval, approved: true } } : p,
    ),
  }));
  const again = await post({ id: 'chat-approve', messages: responded, trigger: 'submit-message', messageId: responded[1].id });
  assert.equal(again.status, 200);
  const notice = again.chunks.find((c) => c.type === 'data-keel-notice');
  assert.equal(notice?.data.kind, 'conflict');
  assert.match(notice.data.message, /already approved by ana-phone/);
  assert.ok(
    again.chunks.some((c) => c.type === 'tool-output-available' && c.toolCallId === 't1'),
    'the truth follows the notice',
  );
  // The first message resent as it was: replayed, no second run.
  const first = await post({ id: 'chat-approve', messages: [messagesBefore[0]], trigger: 'submit-message' });
  assert.ok(first.chunks.some((c) => c.type === 'tool-output-available'));
  assert.equal(sent(), 1);
  const runs = (await s.api('GET', '/v1/runs?session=chat-approve', { token: s.viewer })).body.runs;
  assert.equal(runs.length, 1);

  // A reload shows the truth.
  const reload = (await s.api('GET', '/v1/ui/chat/chat-approve/messages', { token: s.viewer })).body;
  assert.equal(reload.messages.length, 2);
  const reloaded = toolPart(reload.messages[1], 'send_email');
  assert.equal(reloaded.state, 'output-available');
  assert.equal(reloaded.approval.id, card);
});

test('issue 41: a rejection from the chat ends as a denied tool part and nothing runs', async () => {
  const before = sent();
  const chat = new NodeChat(
    s,
    s.approver,
    'chat-reject',
    script(s.home, [{ tool_calls: [{ id: 't1', name: 'send_email', args: SEND }] }, { text: 'Not sent.' }], 'reject.yaml'),
  );
  await chat.sendMessage({ text: 'send hi to ana' });
  await settled(chat);
  const card = toolPart(last(chat), 'send_email').approval.id;
  await chat.addToolApprovalResponse({ id: card, approved: false, reason: 'not now' });
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  assert.equal(toolPart(last(chat), 'send_email').state, 'output-denied');
  assert.deepEqual(texts(last(chat)), ['Not sent.']);
  assert.equal(sent(), before);
  assert.equal((await s.api('GET', `/v1/approvals/${card}`, { token: s.viewer })).body.status, 'rejected');
});

test('issue 41: a viewer cannot start a run or answer a card from the chat', async () => {
  const chat = new NodeChat(s, s.viewer, 'chat-viewer', script(s.home, [{ text: 'no' }], 'viewer.yaml'));
  await chat.sendMessage({ text: 'hello' });
  await settled(chat);
  assert.equal(chat.status, 'error');
  assert.match(String(chat.error), /vic is a viewer/);
  assert.equal((await s.api('GET', '/v1/runs?session=chat-viewer', { token: s.viewer })).body.runs.length, 0);
  // The viewer may read a chat (a reload), not answer it.
  assert.equal((await s.api('GET', '/v1/ui/chat/chat-approve/messages', { token: s.viewer })).status, 200);
});

test('issue 41: a card approved elsewhere while the page waits shows up in the chat (stream resumption, and the page answering late)', async () => {
  const before = sent();
  const chat = new NodeChat(s, s.approver, 'chat-elsewhere', sendScript('elsewhere.yaml'));
  await chat.sendMessage({ text: 'send hi to ana' });
  await settled(chat);
  const card = toolPart(last(chat), 'send_email').approval.id;
  // Approved in the API (as the console does), by another token.
  const yes = await s.api('POST', `/v1/approvals/${card}`, { token: s.admin, body: { decision: 'approve' } });
  assert.equal(yes.status, 200, JSON.stringify(yes.body));
  // The page reconnects (the AI SDK's resumeStream): the rest of the run arrives in the same message.
  await chat.resumeStream();
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  assert.equal(chat.messages.length, 2);
  assert.equal(toolPart(last(chat), 'send_email').state, 'output-available');
  assert.deepEqual(texts(last(chat)), ['I will send it.', 'Sent it to ana.']);
  const answered = (last(chat).parts as AnyPart[]).find((p) => p.type === 'data-keel-approval');
  assert.equal(answered?.data.answered_by, 'admin');
  assert.equal(sent(), before + 1);

  // Another page still showing the card answers it late: told, and shown the truth; nothing runs twice.
  const late = new NodeChat(s, s.approver, 'chat-late', sendScript('late.yaml'));
  await late.sendMessage({ text: 'send hi to ana' });
  await settled(late);
  const card2 = toolPart(last(late), 'send_email').approval.id;
  assert.equal((await s.api('POST', `/v1/approvals/${card2}`, { token: s.admin, body: { decision: 'approve' } })).status, 200);
  await late.addToolApprovalResponse({ id: card2, approved: true });
  await settled(late);
  assert.equal(late.error, undefined, String(late.error));
  const notice = (last(late).parts as AnyPart[]).find((p) => p.type === 'data-keel-notice');
  assert.equal(notice?.data.kind, 'conflict');
  assert.equal(toolPart(last(late), 'send_email').state, 'output-available');
  assert.equal(sent(), before + 2);
});

test("issue 41: a response for another session's card is reported and answers nothing", async () => {
  const chat = new NodeChat(s, s.approver, 'chat-a', sendScript('a.yaml'));
  await chat.sendMessage({ text: 'send hi to ana' });
  await settled(chat);
  const card = toolPart(last(chat), 'send_email').approval.id;
  const forged = structuredClone(chat.messages).map((m) => ({
    ...m,
    parts: (m.parts as AnyPart[]).map((p) =>
      p.approval ? { ...p, state: 'approval-responded', approval: { ...p.approval, approved: true } } : p,
    ),
  }));
  const r = await post({ id: 'chat-b', messages: forged, trigger: 'submit-message', messageId: forged[1].id });
  assert.equal(r.chunks.find((c) => c.type === 'data-keel-notice')?.data.kind, 'other_session');
  assert.equal((await s.api('GET', `/v1/approvals/${card}`, { token: s.viewer })).body.status, 'pending');
});

test('issue 41: a confirmation of held writes arrives as approval parts with the held calls; approving it from the chat says yes and the write runs', async () => {
  const reminder = { title: 'dentist', due: 'monday' };
  const chat = new NodeChat(
    s,
    s.approver,
    'chat-confirm',
    script(
      s.home,
      [
        { tool_calls: [{ id: 'c1', name: 'create_reminder', args: reminder }] },
        { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Create the dentist reminder?' } }] },
        { tool_calls: [{ id: 'c2', name: 'create_reminder', args: reminder }] },
        { text: 'Reminder made.' },
      ],
      'confirm.yaml',
    ),
  );
  await chat.sendMessage({ text: 'remind me of the dentist' });
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  const held = toolPart(last(chat), 'create_reminder');
  assert.equal(held.state, 'approval-requested');
  assert.match(held.approval.id, /^confirm:run_\w+:\d+$/);
  assert.equal(held.approval.descriptor.kind, 'confirmation');
  assert.equal(held.approval.descriptor.question, 'Create the dentist reminder?');
  assert.deepEqual(texts(last(chat)), ['Create the dentist reminder?']);
  await chat.addToolApprovalResponse({ id: held.approval.id, approved: true });
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  const parts = (last(chat).parts as AnyPart[]).filter((p) => p.type === 'tool-create_reminder');
  assert.deepEqual(
    parts.map((p) => [p.toolCallId, p.state]),
    [
      ['c1', 'output-available'],
      ['c2', 'output-available'],
    ],
  );
  assert.equal(parts[1].toolMetadata.keel_outcome, 'ran');
  assert.deepEqual(texts(last(chat)), ['Create the dentist reminder?', 'Reminder made.']);
  const runs = (await s.api('GET', '/v1/runs?session=chat-confirm', { token: s.viewer })).body.runs;
  assert.equal(runs[0].status, 'done');
  // Said again (a resend): answered already, nothing runs twice.
  const again = await post({
    id: 'chat-confirm',
    messages: chat.messages.map((m) => ({
      ...m,
      parts: (m.parts as AnyPart[]).map((p) =>
        p.toolCallId === 'c1' ? { ...p, state: 'approval-responded', approval: { ...held.approval, approved: true } } : p,
      ),
    })),
    messageId: last(chat).id,
  });
  assert.equal(again.chunks.find((c) => c.type === 'data-keel-notice')?.data.kind, 'conflict');
});

test("issue 41: an ask_user question is the assistant's text with a data-keel-question part; the user's next message answers it and the run goes on", async () => {
  const chat = new NodeChat(
    s,
    s.approver,
    'chat-question',
    script(
      s.home,
      [{ tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Which day?' } }] }, { text: 'Monday it is.' }],
      'question.yaml',
    ),
  );
  await chat.sendMessage({ text: 'book something' });
  await settled(chat);
  assert.deepEqual(texts(last(chat)), ['Which day?']);
  const q = (last(chat).parts as AnyPart[]).find((p) => p.type === 'data-keel-question');
  assert.equal(q?.data.question, 'Which day?');
  await chat.sendMessage({ text: 'monday' });
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  assert.equal(chat.messages.length, 4);
  assert.deepEqual(texts(last(chat)), ['Monday it is.']);
  const runs = (await s.api('GET', '/v1/runs?session=chat-question', { token: s.viewer })).body.runs;
  assert.equal(runs.length, 1, 'the answer continued the run; it started none');
  assert.equal(runs[0].status, 'done');
  const reload = (await s.api('GET', '/v1/ui/chat/chat-question/messages', { token: s.viewer })).body.messages;
  assert.deepEqual(
    reload.map((m: UIMessage) => [m.role, texts(m).join(' ')]),
    [
      ['user', 'book something'],
      ['assistant', 'Which day?'],
      ['user', 'monday'],
      ['assistant', 'Monday it is.'],
    ],
  );
});

test('issue 41: a reply with a read and a destructive call: the read shows its output, the card its approval, and approving sends automatically', async () => {
  const chat = new NodeChat(
    s,
    s.approver,
    'chat-mixed',
    script(
      s.home,
      [
        {
          tool_calls: [
            { id: 'r1', name: 'search_inbox', args: { query: 'promo' } },
            { id: 't1', name: 'trash_email', args: { ids: ['m1'] } },
          ],
        },
        { text: 'Trashed.' },
      ],
      'mixed.yaml',
    ),
  );
  await chat.sendMessage({ text: 'trash the promo' });
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  const trash = toolPart(last(chat), 'trash_email');
  assert.equal(trash.state, 'approval-requested');
  await chat.addToolApprovalResponse({ id: trash.approval.id, approved: true });
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  assert.equal(toolPart(last(chat), 'search_inbox').state, 'output-available');
  assert.equal(toolPart(last(chat), 'trash_email').state, 'output-available');
  assert.deepEqual(texts(last(chat)), ['Trashed.']);
});

test('issue 41: a page that drops its connection while the run streams resumes it (GET …/stream) and loses nothing', async () => {
  const model = script(
    s.home,
    [
      { text: 'Looking.', tool_calls: [{ id: 'r1', name: 'search_inbox', args: { query: 'bills' } }] },
      { delay_ms: 1500, text: 'Found them.' },
    ],
    'resume.yaml',
  );
  const ac = new AbortController();
  const res = await fetch(`${s.url}/v1/ui/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.approver}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      id: 'chat-drop',
      model,
      messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'find the bills' }] }],
    }),
    signal: ac.signal,
  });
  const reader = res.body?.getReader();
  const first = await reader?.read();
  assert.match(new TextDecoder().decode(first?.value), /"type":"start"/);
  ac.abort(); // the phone's connection drops
  const chat = new NodeChat(s, s.approver, 'chat-drop', model);
  await chat.resumeStream();
  await settled(chat);
  assert.equal(chat.error, undefined, String(chat.error));
  assert.equal(chat.messages.length, 1);
  assert.deepEqual(texts(last(chat)), ['Looking.', 'Found them.']);
  assert.equal(toolPart(last(chat), 'search_inbox').state, 'output-available');
  // Nothing is running now: a reconnect replays the finished message; a chat with no run is 204.
  assert.equal((await fetch(`${s.url}/v1/ui/chat/no-such-chat/stream`, { headers: { authorization: `Bearer ${s.viewer}` } })).status, 204);
});
