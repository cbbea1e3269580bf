/**
 * The HTTP API of `keel serve` (JSON under /v1). Every route is declared once, in ROUTES' order,
 * with its role, its body and query schemas and its responses: the same declaration validates the
 * request, checks the caller's token and writes the OpenAPI document. Errors are RFC 9457
 * problem+json naming the field at fault. Nothing a model or a tool says can approve, answer or
 * switch a mode here: each of those is an authenticated call, audited with the token's name.
 *
 * This file builds the app: the middleware every request meets (CORS, the body limit, errors as
 * problem+json), the helpers the route groups share, then each group in ROUTES' order — status,
 * runs, events, approvals, sessions, plugins, tokens and push, the chat UI — the OpenAPI document,
 * the A2A agent's card and JSON-RPC binding, and the console. It never imports from src/server/serve.ts or src/server/index.ts (above it).
 */
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import type { z } from 'zod';
import type { Leg } from '../../loop/legs.js';
import { ModelError } from '../../models/types.js';
import type { RunSummary } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { A2A_PATH, mountA2a } from '../a2a/mount.js';
import { Push } from '../alerts/push.js';
import { mountConsole } from '../console/console.js';
import { STATUS_OF } from '../http/problems.js';
import type * as S from '../http/schemas.js';
import { approvalRoutes } from './approvals.js';
import { chatRoutes } from './chat.js';
import type { Api, ServerDeps } from './context.js';
import { eventRoutes } from './events.js';
import { openApi } from './openapi.js';
import { type AnyRoute, HttpProblem, problem, routeOn, SESSION_COOKIE, type Who } from './route.js';
import { runRoutes } from './runs.js';
import { sessionRoutes } from './sessions.js';
import { pluginRoutes, statusRoutes } from './status.js';
import { tokenRoutes } from './tokens.js';

export type { ServerDeps } from './context.js';
export { openApi } from './openapi.js';
export { problem, SESSION_COOKIE } from './route.js';

/** How long a client is asked to wait before trying again when the store cannot be reached (Retry-After, seconds). */
const RETRY_AFTER_S = 5;

/** The Hono app of `keel serve`: every route, the OpenAPI document and the console. */
export function createApp(d: ServerDeps): Hono {
  const app = new Hono();
  const { keel, store, tokens, hub, runner } = d;
  const push = d.push ?? Push.off({ store, tokens, env: {} });
  const routes: AnyRoute[] = [];
  const route = routeOn(app, routes, tokens, d.web);

  if (d.corsOrigins.length)
    app.use('/v1/*', cors({ origin: d.corsOrigins, allowHeaders: ['authorization', 'content-type', 'last-event-id'] }));
  // S3: every request that may carry a body — the API's calls and the console's forms, `POST /login`
  // first, before any other check — is refused with 413 past KEEL_MAX_BODY_BYTES before the body is
  // buffered: a declared length is refused unread, a chunked body as soon as it passes the limit.
  // Registered before every route, so it runs first; GET and HEAD pay only the method check.
  const tooLarge = (c: Context) =>
    c.req.path.startsWith('/v1/')
      ? problem(c, 413, `the request body is larger than ${d.maxBodyBytes} bytes (KEEL_MAX_BODY_BYTES)`)
      : c.req.path === A2A_PATH
        ? c.json(
            {
              jsonrpc: '2.0',
              id: null,
              error: { code: -32600, message: `the request body is larger than ${d.maxBodyBytes} bytes (KEEL_MAX_BODY_BYTES)` },
            },
            413,
          )
        : c.html(`<p>Refused: the form is larger than ${d.maxBodyBytes} bytes (KEEL_MAX_BODY_BYTES).</p>`, 413);
  const limitBody = bodyLimit({ maxSize: d.maxBodyBytes, onError: tooLarge });
  app.use('*', (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    // A declared length (not chunked) is judged as bodyLimit judges it, from the header alone:
    // bodyLimit first asks for the request's body stream, which costs @hono/node-server a whole
    // web Request per call (issue 49), and the route reads the body without it.
    const length = c.req.header('content-length');
    if (length !== undefined && c.req.header('transfer-encoding') === undefined)
      return Number.parseInt(length || '0', 10) > d.maxBodyBytes ? Promise.resolve(tooLarge(c)) : next();
    return limitBody(c, next);
  });
  app.onError((err, c) => {
    if (err instanceof HttpProblem) return problem(c, err.status, err.message, err.errors);
    if (err instanceof KeelError) {
      const res = problem(c, STATUS_OF[err.code], err.message);
      if (err.code === 'unavailable') res.headers.set('retry-after', String(RETRY_AFTER_S));
      return res;
    }
    if (err instanceof ModelError) return problem(c, 422, err.message);
    console.error(`keel serve: ${c.req.method} ${c.req.path}:`, err);
    return problem(c, 500, 'the server failed to handle this request; its log says why');
  });
  app.notFound((c) =>
    c.req.path.startsWith('/v1/')
      ? problem(c, 404, `no route ${c.req.method} ${c.req.path}`)
      : c.html('<p>Not found. <a href="/">Back to the inbox</a></p>', 404),
  );

  /**
   * A run's leg, taken by the runner (driven now, or queued): what the caller is told. For a leg
   * that continues a run, `events` starts after what the journal held before it: the leg's own events.
   */
  async function accepted(leg: Leg, fresh = false): Promise<z.infer<typeof S.LegAcceptedSchema>> {
    const after = fresh ? 0 : await store.latestEventId();
    const status = runner.submit(leg);
    return {
      run_id: leg.run_id,
      session_id: leg.session_id,
      status,
      events: `/v1/runs/${leg.run_id}/events${after ? `?after=${after}` : ''}`,
    };
  }

  /** A4: cards past their expiry are expired and their runs ended in one step, the ending legs on the runner. */
  const expire = () =>
    keel.expireApprovals({
      drive: (leg) => {
        runner.submit(leg);
        hub.wake(leg.run_id);
      },
    });

  /** A run in a listing: its id is `run_id`, as in every other response. */
  const summary = ({ id, ...r }: RunSummary) => ({ run_id: id, ...r, queued: runner.isQueued(id) });
  /** Every change made through the API is audited with the token's name. */
  const audit = async (who: Who, action: string, subject: string, detail: string) => {
    await store.audit({ at: new Date().toISOString(), actor: who.name, action, subject, detail });
  };

  const api: Api = { d, route, push, accepted, expire, summary, audit };
  statusRoutes(api);
  runRoutes(api);
  eventRoutes(api);
  approvalRoutes(api);
  sessionRoutes(api);
  pluginRoutes(api);
  tokenRoutes(api);
  chatRoutes(api);

  app.get('/v1/openapi.json', (c) => c.json(openApi(routes, d.version)));

  // Issue 48: Keel as an A2A agent (src/server/a2a/): its card, and the JSON-RPC binding over the same runs, answers and tokens.
  mountA2a(app, {
    keel,
    store,
    hub,
    runner,
    tokens,
    pluginDirs: d.pluginDirs,
    model: d.model,
    allowedModels: d.allowedModels,
    pollMs: d.pollMs,
    stopping: () => d.state() === 'stopping',
    version: d.version,
    publicUrl: d.publicUrl,
  });

  mountConsole(app, {
    keel,
    store,
    web: d.web,
    pluginDirs: d.pluginDirs,
    model: d.model,
    sessionCookie: SESSION_COOKIE,
    accepted,
    audit,
    isQueued: (id) => runner.isQueued(id),
    wake: (id) => hub.wake(id),
    push,
  });

  return app;
}
