/**
 * The AI SDK's chat UIs on `keel serve` (issue 41, S9): `POST /v1/ui/chat` and a chat's messages and
 * stream, over the logic in src/server/ui/ the library's chatHandler shares. A chat chooses a model
 * only as `POST /v1/runs` allows; approval responses are answered as the calling token, once.
 */
import { allowedModel } from '../../models/index.js';
import * as S from '../http/schemas.js';
import { UiChat } from '../ui/chat.js';
import type { Api } from './context.js';
import { HttpProblem, json } from './route.js';
import { modelRefused } from './runs.js';

/** Declares the chat-UI routes on the app. */
export function chatRoutes(api: Api): void {
  const { d, route } = api;
  const { keel, store, hub, runner } = d;

  // Issue 41: the AI SDK's chat UIs (useChat): the chat's id is a session; src/server/ui/ holds the logic the library's chatHandler shares.
  const uiChat = new UiChat({
    keel,
    store,
    hub,
    runner,
    pollMs: d.pollMs,
    startOptions: async (body) => {
      if (d.state() !== 'ok') throw new HttpProblem(503, 'the server is stopping: it takes no new runs');
      // The model as POST /v1/runs allows it; a script that changed since the check still fails the one refusal.
      if (body.model !== undefined && body.model !== d.model && !(await allowedModel(body.model, d.allowedModels))) throw modelRefused();
      return { model: body.model ?? d.model, pluginDirs: d.pluginDirs };
    },
  });

  route(
    {
      method: 'post',
      path: '/v1/ui/chat',
      summary:
        "The AI SDK's chat request (useChat, DefaultChatTransport): `id` is the session; a message starts a run or answers its question, approval responses answer cards (once, audited); answered with a UI message stream",
      role: 'approver',
      body: S.UiChatBody,
      ok: { status: 200, description: 'a UI message stream (x-vercel-ai-ui-message-stream: v1)', sse: true },
      errors: [400, 401, 403, 415, 422, 503],
    },
    (_c, { body, who }) => uiChat.post(body, who),
  );

  route(
    {
      method: 'get',
      path: '/v1/ui/chat/:id/messages',
      summary: "A chat's session as the AI SDK's UI messages (pending cards still approval-requested): what a page reloads",
      role: 'viewer',
      ok: { status: 200, description: 'the messages', schema: S.UiMessagesSchema },
      errors: [401],
    },
    async (c) => json(c, 200, await uiChat.messages(c.req.param('id') as string)),
  );

  route(
    {
      method: 'get',
      path: '/v1/ui/chat/:id/stream',
      summary:
        "Resume a chat's stream (the AI SDK's reconnect): its current assistant message replayed, then live until the run pauses or ends; 204 when it has no run",
      role: 'viewer',
      ok: { status: 200, description: 'a UI message stream', sse: true },
      errors: [401],
    },
    (c) => uiChat.stream(c.req.param('id') as string),
  );
}
