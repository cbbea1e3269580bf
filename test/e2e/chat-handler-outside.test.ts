/**
 * Issue 41: the README's chatHandler server, run from an app folder outside the repository with Keel
 * installed from its tarball (S2): the AI SDK's own chat client (AbstractChat, DefaultChatTransport)
 * talks to the app's route; the app's own sign-in decides the actor, who is audited with the answer;
 * a card approved from the chat runs once and the run ends in the same message; no sign-in is 401.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  AbstractChat,
  type ChatState,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import { calls, FIXTURES, script, tempHome } from '../support/helpers.js';
import { installEnv } from '../support/installed.js';
import { readmeApp, readmeBlock, removeApp } from '../support/readme.js';

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

class NodeChat extends AbstractChat<UIMessage> {}

// biome-ignore lint/suspicious/noExplicitAny: UI parts are checked field by field
type AnyPart = any;

async function settled(chat: NodeChat, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  await new Promise((r) => setTimeout(r, 50));
  while (chat.status === 'submitted' || chat.status === 'streaming') {
    if (Date.now() > deadline) throw new Error(`the chat is still ${chat.status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("the README's chatHandler server from an app outside the repository, driven by the AI SDK's chat client", {
  timeout: 1_200_000,
}, async (t) => {
  const dir = await readmeApp('chat-app-');
  t.after(() => removeApp(dir));
  const home = tempHome('keel-chat-handler-');
  t.after(() => rmSync(home, { recursive: true, force: true }));
  writeFileSync(join(dir, 'server.mjs'), readmeBlock('chat-handler'));
  mkdirSync(join(dir, 'plugins'));
  cpSync(join(FIXTURES, 'mail'), join(dir, 'plugins', 'mail'), { recursive: true });
  const args = { to: 'ana', subject: 'hi' };
  const model = script(home, [
    { text: 'I will send it.', tool_calls: [{ id: 't1', name: 'send_email', args }] },
    { text: 'Sent it to ana.' },
  ]);
  const child: ChildProcess = spawn(process.execPath, ['server.mjs'], {
    cwd: dir,
    env: { ...installEnv(), KEEL_HOME: home, APP_TOKEN: 'app-secret', KEEL_MODEL: model, PORT: '0', KEEL_PLUGINS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill());
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  const url = await new Promise<string>((res, rej) => {
    let out = '';
    const timer = setTimeout(() => rej(new Error(`the app did not start:\n${out}\n${err}`)), 60_000);
    child.stdout?.on('data', (d) => {
      out += d;
      const m = /chat on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        res(m[1]);
      }
    });
    child.on('exit', (code) => rej(new Error(`the app exited (${code}):\n${out}\n${err}`)));
  });

  // Not signed in: refused, nothing starts.
  const anon = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'c', messages: [] }),
  });
  assert.equal(anon.status, 401);

  const chat = new NodeChat({
    id: 'kitchen',
    state: new NodeState(),
    transport: new DefaultChatTransport({ api: url, headers: { authorization: 'Bearer app-secret' } }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  await chat.sendMessage({ text: 'send hi to ana' });
  await settled(chat);
  assert.equal(chat.error, undefined, `${chat.error}\n${err}`);
  const msg = () => chat.messages[chat.messages.length - 1];
  const part = () => (msg().parts as AnyPart[]).find((p) => p.type === 'tool-send_email');
  assert.equal(part().state, 'approval-requested');
  assert.equal(part().approval.descriptor.item.title, 'Send "hi" to ana');
  assert.equal(calls(home, 'mail-calls.log').length, 0);
  await chat.addToolApprovalResponse({ id: part().approval.id, approved: true });
  await settled(chat);
  assert.equal(chat.error, undefined, `${chat.error}\n${err}`);
  assert.equal(part().state, 'output-available');
  assert.deepEqual(
    (msg().parts as AnyPart[]).filter((p) => p.type === 'text').map((p) => p.text),
    ['I will send it.', 'Sent it to ana.'],
  );
  // The app's own sign-in named who answered.
  assert.equal((msg().parts as AnyPart[]).find((p) => p.type === 'data-keel-approval')?.data.answered_by, 'ana');
  assert.deepEqual(calls(home, 'mail-calls.log'), [`send_email ${JSON.stringify(args)}`]);
  // A reload: the session as UI messages, from the app's route.
  const reload = await (await fetch(`${url}/kitchen/messages`, { headers: { authorization: 'Bearer app-secret' } })).json();
  assert.equal(reload.messages.length, 2);
  assert.equal((reload.messages[1].parts as AnyPart[]).find((p) => p.type === 'tool-send_email').state, 'output-available');
});
