/**
 * Issue 48: the official `@a2a-js/sdk` client as the tests (and the README) use it against keel
 * serve — ClientFactory with a JSON-RPC transport whose fetch adds the bearer token — and small
 * readers of what it returns. Never a hand-written JSON-RPC call.
 */
import assert from 'node:assert/strict';
import { type Message, SendMessageRequest, type Task } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

/** A client of the agent at `url` (its card read from /.well-known/agent-card.json), calling with `token`. */
export function a2aClient(url: string, token: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })] }),
  );
  return factory.createFromUrl(url);
}

let n = 0;
/** A SendMessage request: text and/or a data part, on a task or in a context, choosing the model. */
export function a2aMessage(o: {
  text?: string;
  data?: Record<string, unknown>;
  taskId?: string;
  contextId?: string;
  model?: string;
  messageId?: string;
}): SendMessageRequest {
  const parts = [...(o.text !== undefined ? [{ text: o.text }] : []), ...(o.data ? [{ data: o.data }] : [])];
  return SendMessageRequest.fromJSON({
    message: {
      messageId: o.messageId ?? `m-${process.pid}-${++n}`,
      role: 'ROLE_USER',
      parts,
      ...(o.taskId ? { taskId: o.taskId } : {}),
      ...(o.contextId ? { contextId: o.contextId } : {}),
    },
    ...(o.model ? { metadata: { model: o.model } } : {}),
  });
}

export const asTask = (r: Message | Task): Task => {
  assert.ok('status' in r, `a task, not a message: ${JSON.stringify(r)}`);
  return r as Task;
};

/** A message's text parts. */
export const texts = (m: Pick<Message, 'parts'> | undefined): string[] =>
  (m?.parts ?? []).flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));

/** A message's first data part. */
// biome-ignore lint/suspicious/noExplicitAny: a data part is checked field by field
export const dataOf = (m: Pick<Message, 'parts'> | undefined): any => m?.parts.find((p) => p.content?.$case === 'data')?.content?.value;

/** The task's answer: its artifacts' text. */
export const answerOf = (t: Task): string[] => t.artifacts.flatMap((a) => texts(a));
