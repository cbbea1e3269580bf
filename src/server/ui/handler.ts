/**
 * Issue 41: the chat endpoint as a handler an application mounts in its own route (a `Request` in,
 * a `Response` out: Next.js route handlers, Hono, anything with the Fetch API), behind the useChat
 * page it already has. The application's own authentication decides who calls (`actor`: a name, a
 * role, groups); the rest is keel serve's endpoint: the same module (UiChat), the same answer path
 * (A9: a routed card only by a caller in its groups), the same stream.
 */

import type { Keel } from '../../keel/keel.js';
import { type ModelClient, ModelError } from '../../models/types.js';
import { GROUP_NAME } from '../../policy/principal.js';
import type { AppTool } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { allows, type Role } from '../access/tokens.js';
import { STATUS_OF } from '../http/problems.js';
import { UiChatBody } from '../http/schemas.js';
import { Hub, LegRunner } from '../workers/runner.js';
import { type ChatActor, problemResponse, UiChat } from './chat.js';

/** Who calls a chat, as the application's own authentication says (see `ChatHandlerOptions.actor`). */
export interface ChatHandlerActor {
  name: string;
  /** `viewer` may only read the chat; `approver` (the default) and `admin` start runs and answer cards. */
  role?: 'viewer' | 'approver' | 'admin';
  /**
   * The groups the user is in (names of a-z, 0-9, _ and -): a card a policy routes with
   * `@approvers("finance")` is answered only by a user in finance, and the runs the user starts carry
   * them for the policy's `principal.groups`. None: in no group.
   */
  groups?: readonly string[];
}

export interface ChatHandlerOptions {
  /**
   * Who is calling, by the application's own authentication: a name (an approver in no group: may
   * start runs and answer cards not routed to a group), `{ name, role, groups }`, or nothing (refused,
   * 401). The name is what the audit log records for each answer; each answer is held to the card's
   * groups as any other answer is, and the runs the caller starts have them as their principal.
   */
  actor(req: Request): string | ChatHandlerActor | null | undefined | Promise<string | ChatHandlerActor | null | undefined>;
  /** The model the chat's runs use: a spec (`openai:gpt-4o`, `script:FILE`) or a client of the application's own. A request may not choose another. */
  model?: string | ModelClient;
  /** Plugin folders the chat's runs use (default: the Keel's). */
  pluginDirs?: string[];
  /** Tools declared in code for the chat's runs, beside the Keel's own. */
  tools?: readonly AppTool[];
  /** How many runs the handler drives at once in this process (default 8); more wait in order. */
  concurrency?: number;
  /** How often a stream looks at the store for work another process does, in ms (default 500). */
  pollMs?: number;
}

/**
 * The chat endpoint for an application's own route: POST (the AI SDK chat request) streams the
 * run; GET `…/{id}/messages` gives the session as UI messages; GET `…/{id}/stream` resumes it
 * (DefaultChatTransport's reconnect). Mount it at a path and its sub-paths, e.g. `/api/chat` and
 * `/api/chat/*`.
 */
export function chatHandler(keel: Keel, o: ChatHandlerOptions): (req: Request) => Promise<Response> {
  const store = keel.store;
  if (!store) throw new KeelError('bad_input', 'chatHandler needs a Keel with a store: a chat pauses for its cards and continues later');
  if (typeof o.actor !== 'function')
    throw new KeelError('bad_input', 'chatHandler: actor must be a function (req) => the caller, from your own authentication');
  const hub = new Hub();
  const runner = new LegRunner({
    limit: o.concurrency ?? 8,
    onEvent: (runId, e) => (e.type === 'text_delta' ? hub.delta(runId, e.text) : hub.wake(runId)),
    onError: (runId, err) => {
      console.error(`keel chatHandler: run ${runId}:`, err);
      hub.wake(runId);
    },
  });
  const own = {
    ...(o.model !== undefined ? { model: o.model } : {}),
    ...(o.pluginDirs ? { pluginDirs: o.pluginDirs } : {}),
    ...(o.tools ? { tools: o.tools } : {}),
  };
  const chat = new UiChat({
    keel,
    store,
    hub,
    runner,
    pollMs: o.pollMs ?? 500,
    startOptions: async (body) => {
      if (body.model !== undefined && body.model !== (typeof o.model === 'string' ? o.model : undefined))
        throw new KeelError('bad_input', 'this chat does not let a request choose its model (chatHandler({ model }) sets it)');
      return own;
    },
    continueOptions: own,
  });

  async function who(req: Request): Promise<ChatActor | undefined> {
    const a = await o.actor(req);
    if (a === null || a === undefined || a === '') return undefined;
    if (typeof a === 'string') return { name: a, role: 'approver', groups: [], kind: 'app' };
    if (typeof a.name !== 'string' || !a.name) return undefined;
    const role: Role = a.role === 'viewer' || a.role === 'admin' ? a.role : 'approver';
    // A9/PC9: the caller's groups, checked as a token's are: the application's mistake is its own (500), never a wider answer.
    const groups = a.groups ?? [];
    if (!Array.isArray(groups) || groups.some((g) => typeof g !== 'string' || !GROUP_NAME.test(g)))
      throw new Error(
        `chatHandler: actor(req) gave groups ${JSON.stringify(groups)}: a list of group names (a-z, 0-9, _ and -, at most 40)`,
      );
    return { name: a.name, role, groups: [...groups], kind: 'app' };
  }

  return async (req) => {
    const path = new URL(req.url).pathname;
    try {
      const caller = await who(req);
      if (!caller) return problemResponse(401, 'who is calling is not known (the application did not authenticate this request)', path);
      if (req.method === 'POST') {
        if (!allows(caller.role, 'approver'))
          return problemResponse(403, `${caller.name} is a ${caller.role}: starting runs and answering cards needs an approver`, path);
        let raw: unknown;
        try {
          raw = await req.json();
        } catch {
          return problemResponse(400, 'the body is not valid JSON', path);
        }
        const body = UiChatBody.safeParse(raw);
        if (!body.success)
          return problemResponse(
            400,
            `the body is not an AI SDK chat request: ${body.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
            path,
          );
        return await chat.post(body.data, caller);
      }
      const m = /\/([A-Za-z0-9_.:%-]+)\/(messages|stream)\/?$/.exec(path);
      if (req.method === 'GET' && m) {
        const id = decodeURIComponent(m[1]);
        if (m[2] === 'messages') return Response.json(await chat.messages(id));
        return await chat.stream(id);
      }
      return problemResponse(404, `no chat route ${req.method} ${path} (POST, GET …/{id}/messages, GET …/{id}/stream)`, path);
    } catch (err) {
      if (err instanceof KeelError) return problemResponse(STATUS_OF[err.code], err.message, path);
      if (err instanceof ModelError) return problemResponse(422, err.message, path);
      console.error(`keel chatHandler: ${req.method} ${path}:`, err);
      return problemResponse(500, 'the chat failed to handle this request; the server log says why', path);
    }
  };
}
