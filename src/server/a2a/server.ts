/**
 * Issue 48 (S10): the A2A surface of `keel serve` over HTTP — the agent card, and the JSON-RPC binding
 * served with the SDK's own transport handler (JsonRpcTransportHandler) from Keel's Hono app, as the
 * SDK's express adapter serves it: one JSON response, or server-sent events for the streaming
 * methods. Keel's tokens authenticate (A9: a viewer reads — GetTask, ListTasks, SubscribeToTask —
 * and an approver also sends messages and cancels); a call without a valid token, or beyond its
 * role, is refused before the SDK sees it. Loaded on the first A2A request (mount.ts), so a server
 * no agent calls never loads the SDK. Never lets a request choose who it is, nor skip its role.
 */
import { A2A_VERSION_HEADER, AgentCard, Extensions, HTTP_EXTENSION_HEADER } from '@a2a-js/sdk';
import { defaultServerCallContextBuilder, JsonRpcTransportHandler, type ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import { allows, type Role, type Tokens } from '../access/tokens.js';
import { agentCardJson } from './card.js';
import { type A2aDeps, CODES, KeelRequestHandler, STATE, TokenUser } from './handler.js';

export interface A2aServerDeps extends A2aDeps {
  tokens: Tokens;
  version: string;
  /** The origin clients reach this server at (KEEL_PUBLIC_URL), when not the one a request names. */
  publicUrl?: string;
}

/** The least role each method needs; anything else (reads, and what the SDK refuses) needs a viewer. */
const NEEDS: Record<string, Role> = {
  SendMessage: 'approver',
  SendStreamingMessage: 'approver',
  CancelTask: 'approver',
  CreateTaskPushNotificationConfig: 'approver',
  DeleteTaskPushNotificationConfig: 'approver',
};

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};
const KEEP_ALIVE_MS = 15_000;
const INTERNAL_ERROR = -32603;

type RpcResponse = { jsonrpc: string; id: string | number | null; result?: unknown; error?: { code: number; message: string } };

function rpcError(status: number, id: unknown, code: number, message: string, headers: Record<string, string> = {}): Response {
  const body = { jsonrpc: '2.0', id: typeof id === 'string' || typeof id === 'number' ? id : null, error: { code, message } };
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** A response's error with Keel's code for it (a routed card's refusal), and the HTTP status it goes with. */
function finish(res: RpcResponse, ctx: ServerCallContext): { status: number; body: RpcResponse } {
  const code = ctx.state.get(STATE.code) as number | undefined;
  if (res.error && code !== undefined) res.error.code = code;
  const status = (ctx.state.get(STATE.status) as number | undefined) ?? (res.error?.code === INTERNAL_ERROR ? 500 : 200);
  return { status: res.error ? status : 200, body: res };
}

/** A stream of JSON-RPC responses as server-sent events, with a comment now and then so an idle stream stays open. */
function sse(first: RpcResponse | undefined, it: AsyncIterator<RpcResponse>, ctx: ServerCallContext, id: unknown): Response {
  const enc = new TextEncoder();
  let pending: Promise<IteratorResult<RpcResponse>> | undefined;
  let sentFirst = first === undefined;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sentFirst) {
        sentFirst = true;
        controller.enqueue(enc.encode(`data: ${JSON.stringify(first)}\n\n`));
        return;
      }
      try {
        pending ??= it.next();
        let timer: NodeJS.Timeout | undefined;
        const tick = new Promise<'tick'>((r) => {
          timer = setTimeout(() => r('tick'), KEEP_ALIVE_MS);
        });
        const n = await Promise.race([pending, tick]);
        clearTimeout(timer);
        if (n === 'tick') {
          controller.enqueue(enc.encode(': keep-alive\n\n'));
          return;
        }
        pending = undefined;
        if (n.done) controller.close();
        else controller.enqueue(enc.encode(`data: ${JSON.stringify(n.value)}\n\n`));
      } catch (err) {
        const error = finish({ jsonrpc: '2.0', id: null, error: JsonRpcTransportHandler.mapToJSONRPCError(err) }, ctx).body.error;
        controller.enqueue(enc.encode(`event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error })}\n\n`));
        controller.close();
      }
    },
    async cancel() {
      await it.return?.(undefined);
    },
  });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}

/** The A2A surface: the agent card, and the JSON-RPC endpoint. */
export function a2aServer(d: A2aServerDeps): { card(req: Request): Promise<Response>; rpc(req: Request): Promise<Response> } {
  let handler: Promise<{ rpc: JsonRpcTransportHandler; card: AgentCard }> | undefined;
  const cardJson = async (origin: string) =>
    agentCardJson(await d.keel.registry(d.pluginDirs), { baseUrl: d.publicUrl ?? origin, version: d.version });
  const made = (origin: string) =>
    (handler ??= cardJson(origin)
      .then((json) => {
        const card = AgentCard.fromJSON(json);
        return { card, rpc: new JsonRpcTransportHandler(new KeelRequestHandler(card, d)) };
      })
      .catch((err: unknown) => {
        handler = undefined;
        throw err;
      }));

  return {
    async card(req) {
      return new Response(JSON.stringify(await cardJson(new URL(req.url).origin)), {
        status: 200,
        headers: { 'content-type': 'application/json', 'cache-control': 'no-cache' },
      });
    },

    async rpc(req) {
      const m = /^Bearer\s+(\S+)$/i.exec(req.headers.get('authorization') ?? '');
      const found = m ? d.tokens.verify(m[1]) : undefined;
      const text = await req.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined; // the SDK answers a body that is not JSON with its parse error
      }
      const rpcId = body && typeof body === 'object' ? (body as { id?: unknown }).id : undefined;
      if (!found)
        return rpcError(
          401,
          rpcId,
          CODES.unauthenticated,
          m
            ? 'the token is not valid (unknown or revoked)'
            : 'this call needs a token: send Authorization: Bearer TOKEN (keel tokens create makes one)',
          { 'www-authenticate': 'Bearer' },
        );
      const method = body && typeof body === 'object' ? String((body as { method?: unknown }).method ?? '') : '';
      const needs = NEEDS[method] ?? 'viewer';
      if (!allows(found.role, needs))
        return rpcError(
          403,
          rpcId,
          CODES.forbidden,
          `token ${found.name} is a ${found.role}: ${method} needs an approver (a viewer reads tasks: GetTask, ListTasks, SubscribeToTask)`,
        );
      const { rpc, card } = await made(new URL(req.url).origin);
      const ctx = defaultServerCallContextBuilder({
        extensions: Extensions.parseServiceParameter(req.headers.get(HTTP_EXTENSION_HEADER) ?? undefined),
        user: new TokenUser(found),
        headers: {},
        requestedVersion: req.headers.get(A2A_VERSION_HEADER) ?? undefined,
      });
      ctx.state.set(STATE.signal, req.signal);
      try {
        validateVersion(ctx.requestedVersion, card, 'JSONRPC');
      } catch (err) {
        return Response.json({ jsonrpc: '2.0', id: rpcId ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(err) });
      }
      const out = await rpc.handle(body === undefined ? text : (body as Record<string, unknown>), ctx);
      if (typeof (out as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function') {
        const { status, body: res } = finish(out as RpcResponse, ctx);
        return Response.json(res, { status });
      }
      const it = (out as AsyncGenerator<RpcResponse>)[Symbol.asyncIterator]();
      let first: IteratorResult<RpcResponse>;
      try {
        first = await it.next();
      } catch (err) {
        // Refused before anything was streamed (a replayed answer, a routed card): one JSON-RPC error, as the SDK's adapter answers it.
        const { status, body: res } = finish(
          { jsonrpc: '2.0', id: (rpcId as string | number) ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(err) },
          ctx,
        );
        return Response.json(res, { status });
      }
      return sse(first.done ? undefined : first.value, it, ctx, rpcId);
    },
  };
}
