/**
 * `chatHandler` as the library's entry exports it: its options checked at once, as before, and the
 * chat endpoint itself (handler.ts: the AI SDK stream, the request schemas, the run queue) loaded on
 * the first request. An application that never mounts a chat never loads it (issue 49: the schemas
 * alone bring zod, ~95 modules, into every process that imports Keel).
 */
import type { Keel } from '../../keel/keel.js';
import { KeelError } from '../../util/errors.js';
import type { ChatHandlerOptions } from './handler.js';

export type { ChatHandlerActor, ChatHandlerOptions } from './handler.js';

/**
 * The chat endpoint for an application's own route: POST (the AI SDK chat request) streams the
 * run; GET `…/{id}/messages` gives the session as UI messages; GET `…/{id}/stream` resumes it
 * (DefaultChatTransport's reconnect). Mount it at a path and its sub-paths, e.g. `/api/chat` and
 * `/api/chat/*`.
 */
export function chatHandler(keel: Keel, o: ChatHandlerOptions): (req: Request) => Promise<Response> {
  if (!keel.store)
    throw new KeelError('bad_input', 'chatHandler needs a Keel with a store: a chat pauses for its cards and continues later');
  if (typeof o?.actor !== 'function')
    throw new KeelError('bad_input', 'chatHandler: actor must be a function (req) => the caller, from your own authentication');
  let handler: Promise<(req: Request) => Promise<Response>> | undefined;
  return async (req) => {
    handler ??= import('./handler.js').then((m) => m.chatHandler(keel, o));
    return (await handler)(req);
  };
}
