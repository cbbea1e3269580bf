/**
 * The HTTP API of `keel serve` (JSON under /v1). Every route is declared once, in ROUTES' order,
 * with its role, its body and query schemas and its responses: the same declaration validates the
 * request, checks the caller's token and writes the OpenAPI document. Errors are RFC 9457
 * problem+json naming the field at fault. Nothing a model or a tool says can approve, answer or
 * switch a mode here: each of those is an authenticated call, audited with the token's name.
 */
import { resolve } from 'node:path';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie } from 'hono/cookie';
import { cors } from 'hono/cors';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { Answerer } from '../../approvals/who.js';
import type { Keel } from '../../keel/keel.js';
import type { Leg } from '../../loop/legs.js';
import { toResult } from '../../loop/result.js';
import { allowedModel } from '../../models/index.js';
import { SCRIPT_MAX_BYTES } from '../../models/script.js';
import { ModelError } from '../../models/types.js';
import type { RunEvent, RunSummary, Store, StoredEvent } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { storableText } from '../../util/text.js';
import { allows, type Role, type Tokens, tokenPrincipal, type WebSessions } from '../access/tokens.js';
import {
  MAX_SUBSCRIPTIONS_PER_OWNER as MAX_SUBSCRIPTIONS,
  Push,
  PushInfoSchema,
  PushSubscribeBody,
  PushSubscriptionSchema,
} from '../alerts/push.js';
import { mountConsole } from '../console/console.js';
import { PROBLEM_TITLES, problemBody, STATUS_OF } from '../http/problems.js';
import * as S from '../http/schemas.js';
import { UiChat } from '../ui/chat.js';
import type { Hub, LegRunner } from '../workers/runner.js';

export interface ServerDeps {
  keel: Keel;
  store: Store;
  tokens: Tokens;
  /** The console's logins (a cookie may read the API; only the console's forms write with it). */
  web: WebSessions;
  hub: Hub;
  runner: LegRunner;
  /** The plugin folders the server was started with: a run may name only these. */
  pluginDirs: string[];
  /** The model runs use unless they name one. */
  model?: string;
  /** Model specs a request may name besides the default: each a prefix (`script:`, `openai:gpt-4o`). */
  allowedModels: string[];
  /** Origins allowed to call the API from a browser on another origin; none by default. */
  corsOrigins: string[];
  maxBodyBytes: number;
  version: string;
  state(): 'starting' | 'ok' | 'stopping';
  /** How often a live stream looks at the journal without a wake-up (runs worked by another process). */
  pollMs: number;
  /** Web Push (S7); off when not given. */
  push?: Push;
}

interface Who {
  name: string;
  role: Role;
  groups: readonly string[];
}

/** A9: a token as the one who answers a card (its groups decide a routed card). */
const answerer = (who: Who): Answerer => ({ name: who.name, role: who.role, groups: who.groups, kind: 'token' });

type Method = 'get' | 'post' | 'put' | 'delete';
type Schema = z.ZodType;

interface RouteSpec<B extends Schema | undefined, Q extends Schema | undefined> {
  method: Method;
  /** Hono's form: /v1/runs/:id */
  path: string;
  summary: string;
  /** The least role that may call it; null: no token needed. */
  role: Role | null;
  body?: B;
  query?: Q;
  ok: { status: number; description: string; schema?: Schema; sse?: true };
  errors: number[];
}

type Input<B, Q> = {
  body: B extends Schema ? z.output<B> : undefined;
  query: Q extends Schema ? z.output<Q> : undefined;
  who: Who;
};

/** The console's session cookie. */
export const SESSION_COOKIE = 'keel_session';

type AnyRoute = RouteSpec<Schema | undefined, Schema | undefined>;

/** RFC 9457 problem details. */
export function problem(c: Context, status: number, detail: string, errors?: { field: string; message: string }[]): Response {
  const body: z.infer<typeof S.ProblemSchema> = { ...problemBody(status, detail, c.req.path, errors), instance: c.req.path };
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/problem+json' } });
}

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors?: { field: string; message: string }[],
  ) {
    super(message);
  }
}

/** How long a client is asked to wait before trying again when the store cannot be reached (Retry-After, seconds). */
const RETRY_AFTER_S = 5;

const UNSTORABLE_WHAT = 'text no store can hold (a NUL character, or half of a UTF-16 surrogate pair)';

/** The first field of `value` (a string, or an object's or array's value or key, nested) holding text no store can hold. */
function unstorableField(value: unknown, where: string): string | undefined {
  if (typeof value === 'string') return storableText(value).replaced ? where : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [k, v] of Object.entries(value)) {
    if (storableText(k).replaced) return where;
    const found = unstorableField(v, `${where}.${k}`);
    if (found) return found;
  }
  return undefined;
}

function fieldErrors(where: string, err: z.ZodError): { field: string; message: string }[] {
  return err.issues.map((i) => ({ field: [where, ...i.path.map(String)].join('.'), message: i.message }));
}

function bearer(c: Context): string | undefined {
  const h = c.req.header('authorization');
  const m = h && /^Bearer\s+(\S+)$/i.exec(h);
  return m ? m[1] : undefined;
}

const encodeCursor = (r: RunSummary) => Buffer.from(JSON.stringify([r.created_at, r.id])).toString('base64url');
function decodeCursor(cursor: string): { created_at: string; id: string } {
  try {
    const [created_at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof created_at === 'string' && typeof id === 'string') return { created_at, id };
  } catch {
    // falls through to the problem below
  }
  throw new HttpProblem(400, 'the cursor is not one this server gave out', [{ field: 'query.cursor', message: 'unknown cursor' }]);
}

/** The inbox's events: cards and questions as they come and go, runs as they start and end. */
const INBOX_TYPES: RunEvent['type'][] = ['run_started', 'paused', 'run_finished', 'approval_answered'];

function inboxName(e: RunEvent): string {
  if (e.type === 'paused') return e.pause.kind === 'approval' ? 'approval_created' : 'run_paused';
  return e.type;
}

function isFinal(e: RunEvent): boolean {
  return e.type === 'run_finished' && (e.result.status === 'done' || e.result.status === 'failed');
}

/** A model a request may not choose: one refusal, byte for byte, whatever the reason (issue 40). */
function modelRefused(): HttpProblem {
  return new HttpProblem(403, 'this server does not let a run choose that model', [
    {
      field: 'body.model',
      message: `not allowed here (keel serve --allow-model PREFIX allows a provider, and --allow-model script:DIR/ the scripts inside DIR: regular files of at most ${SCRIPT_MAX_BYTES} bytes that load)`,
    },
  ]);
}

export function createApp(d: ServerDeps): Hono {
  const app = new Hono();
  const { keel, store, tokens, hub, runner } = d;
  const push = d.push ?? Push.off({ store, tokens, env: {} });
  const serverDirs = d.pluginDirs.map((p) => resolve(p));
  const routes: AnyRoute[] = [];

  if (d.corsOrigins.length)
    app.use('/v1/*', cors({ origin: d.corsOrigins, allowHeaders: ['authorization', 'content-type', 'last-event-id'] }));
  // S3: every request that may carry a body — the API's calls and the console's forms, `POST /login`
  // first, before any other check — is refused with 413 past KEEL_MAX_BODY_BYTES before the body is
  // buffered: a declared length is refused unread, a chunked body as soon as it passes the limit.
  // Registered before every route, so it runs first; GET and HEAD pay only the method check.
  const limitBody = bodyLimit({
    maxSize: d.maxBodyBytes,
    onError: (c) =>
      c.req.path.startsWith('/v1/')
        ? problem(c, 413, `the request body is larger than ${d.maxBodyBytes} bytes (KEEL_MAX_BODY_BYTES)`)
        : c.html(`<p>Refused: the form is larger than ${d.maxBodyBytes} bytes (KEEL_MAX_BODY_BYTES).</p>`, 413),
  });
  app.use('*', (c, next) => (c.req.method === 'GET' || c.req.method === 'HEAD' ? next() : limitBody(c, next)));
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

  function route<B extends Schema | undefined = undefined, Q extends Schema | undefined = undefined>(
    spec: RouteSpec<B, Q>,
    handler: (c: Context, input: Input<B, Q>) => Response | Promise<Response>,
  ): void {
    routes.push(spec as AnyRoute);
    const handle = async (c: Context): Promise<Response> => {
      let who: Who = { name: 'anonymous', role: 'viewer', groups: [] };
      if (spec.role) {
        const token = bearer(c);
        // The console's session cookie reads (the live streams an EventSource opens); it never writes here.
        const viaCookie = !token && spec.method === 'get' ? d.web.get(getCookie(c, SESSION_COOKIE))?.who : undefined;
        if (!token && !viaCookie) {
          return problem(c, 401, 'this call needs a token: send Authorization: Bearer TOKEN (keel tokens create makes one)');
        }
        const found = viaCookie ?? tokens.verify(token);
        if (!found) return problem(c, 401, 'the token is not valid (unknown or revoked)');
        if (!allows(found.role, spec.role)) {
          return problem(
            c,
            403,
            `token ${found.name} is a ${found.role}; this call needs ${spec.role === 'viewer' ? 'a viewer' : `an ${spec.role}`}`,
          );
        }
        who = found;
      }
      let body: unknown;
      if (spec.body) {
        const type = c.req.header('content-type') ?? '';
        if (!/^application\/json\b/i.test(type)) return problem(c, 415, 'send the body as JSON (Content-Type: application/json)');
        let raw: unknown;
        try {
          raw = await c.req.json();
        } catch {
          return problem(c, 400, 'the body is not valid JSON', [{ field: 'body', message: 'not valid JSON' }]);
        }
        const parsed = spec.body.safeParse(raw);
        if (!parsed.success) return problem(c, 400, 'the body does not match what this call takes', fieldErrors('body', parsed.error));
        body = parsed.data;
      }
      let query: unknown;
      if (spec.query) {
        const parsed = spec.query.safeParse(c.req.query());
        if (!parsed.success) return problem(c, 400, 'the query does not match what this call takes', fieldErrors('query', parsed.error));
        query = parsed.data;
      }
      // Issue 27: text no store can hold is refused by name, the same on every store (PostgreSQL
      // would fail on it with a 500; SQLite would keep something else than was sent).
      const bad = unstorableField(c.req.param(), 'path') ?? unstorableField(query, 'query') ?? unstorableField(body, 'body');
      if (bad) return problem(c, 400, `${bad} holds ${UNSTORABLE_WHAT}: send it without`, [{ field: bad, message: UNSTORABLE_WHAT }]);
      return handler(c, { body, query, who } as Input<B, Q>);
    };
    app.on(spec.method.toUpperCase(), spec.path, handle);
  }

  const json = (c: Context, status: number, body: unknown) => c.json(body as object, status as 200);

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

  route(
    {
      method: 'get',
      path: '/v1/health',
      summary: 'Liveness: the process answers',
      role: null,
      ok: { status: 200, description: 'alive', schema: S.HealthSchema },
      errors: [],
    },
    (c) => json(c, 200, { status: d.state(), version: d.version }),
  );

  route(
    {
      method: 'get',
      path: '/v1/ready',
      summary: 'Readiness: the store answers and the server takes work',
      role: null,
      ok: { status: 200, description: 'ready', schema: S.ReadySchema },
      errors: [503],
    },
    async (c) => {
      let storeOk = true;
      try {
        await store.listRuns({ limit: 1 });
      } catch {
        storeOk = false;
      }
      const ready = storeOk && d.state() === 'ok';
      return json(c, ready ? 200 : 503, {
        ready,
        store: storeOk ? store.kind : `${store.kind} (not answering)`,
        running: runner.running,
        queued: runner.queued,
        limit: runner.limit,
      });
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/whoami',
      summary: "The calling token's name and role",
      role: 'viewer',
      ok: { status: 200, description: 'the token', schema: S.WhoAmISchema },
      errors: [401],
    },
    (c, { who }) => json(c, 200, who),
  );

  route(
    {
      method: 'post',
      path: '/v1/runs',
      summary: 'Start a run (worked now, or queued when KEEL_MAX_CONCURRENT_RUNS are running)',
      role: 'approver',
      body: S.StartRunBody,
      ok: { status: 202, description: 'the run is stored and taken', schema: S.LegAcceptedSchema },
      errors: [400, 401, 403, 404, 409, 415, 422, 503],
    },
    async (c, { body, who }) => {
      if (d.state() !== 'ok') throw new HttpProblem(503, 'the server is stopping: it takes no new runs');
      const model = body.model ?? d.model;
      // One refusal, byte for byte, whatever the reason (outside the allowed folder, missing, not a
      // regular file, too large, not a script): it never tells an approver which paths exist nor
      // what a file holds, so it does not repeat the path either (issue 40).
      const chosen = body.model !== undefined && body.model !== d.model;
      const refused = modelRefused;
      if (chosen && !(await allowedModel(body.model as string, d.allowedModels))) throw refused();
      let dirs = d.pluginDirs;
      if (body.plugins) {
        const errors = body.plugins.flatMap((p, i) =>
          serverDirs.includes(resolve(p))
            ? []
            : [{ field: `body.plugins.${i}`, message: `not one of this server's plugin folders (${serverDirs.join(', ') || 'none'})` }],
        );
        if (errors.length) throw new HttpProblem(400, 'a run may use only the plugin folders the server was started with', errors);
        dirs = body.plugins.map((p) => resolve(p));
      }
      const leg = await keel
        .startRun(body.request, { model, pluginDirs: dirs, mode: body.mode, session: body.session, principal: tokenPrincipal(who) })
        .catch((err: unknown) => {
          // A chosen script changed between the check and the run's start: still the one refusal.
          throw chosen && body.model?.trim().startsWith('script:') && err instanceof ModelError ? refused() : err;
        });
      await audit(who, 'start_run', leg.run_id, JSON.stringify({ mode: body.mode ?? null, session: body.session ?? null }));
      return json(c, 202, await accepted(leg, true));
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/runs',
      summary: 'List runs, newest first (filters; cursor paging)',
      role: 'viewer',
      query: S.RunsQuery,
      ok: { status: 200, description: 'a page of runs', schema: S.RunListSchema },
      errors: [400, 401],
    },
    async (c, { query }) => {
      const rows = await store.listRuns({
        limit: query.limit + 1,
        status: query.status,
        session_id: query.session,
        before: query.cursor ? decodeCursor(query.cursor) : undefined,
      });
      const page = rows.slice(0, query.limit);
      const next = rows.length > query.limit ? encodeCursor(page[page.length - 1]) : null;
      return json(c, 200, { runs: page.map(summary), next_cursor: next });
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/runs/:id',
      summary: "One run: keel run --json's shape, and its session, model and times",
      role: 'viewer',
      ok: { status: 200, description: 'the run', schema: S.RunSchema },
      errors: [401, 404],
    },
    async (c) => {
      const run = await keel.getRun(c.req.param('id') as string);
      const result = toResult(run);
      return json(c, 200, {
        ...result,
        status: run.status,
        session_id: run.session_id,
        queued: runner.isQueued(run.id),
        request: run.request,
        model: run.model,
        contract: run.contract,
        created_at: run.created_at,
        updated_at: run.updated_at,
        parent_run: run.parent?.run_id ?? null,
        children: await keel.children(run.id),
      });
    },
  );

  route(
    {
      method: 'post',
      path: '/v1/runs/:id/answer',
      summary: "Answer a paused run's question (a confirmation needs confirm: true or false)",
      role: 'approver',
      body: S.AnswerBody,
      ok: { status: 202, description: 'the answer is taken; the run goes on', schema: S.LegAcceptedSchema },
      errors: [400, 401, 403, 404, 409, 415],
    },
    async (c, { body, who }) => {
      const runId = c.req.param('id') as string;
      const leg = await keel.answerRun(runId, { text: body.text, ...(body.confirm !== undefined ? { confirm: body.confirm } : {}) });
      await audit(who, 'answer_question', runId, JSON.stringify({ confirm: body.confirm ?? null }));
      return json(c, 202, await accepted(leg));
    },
  );

  route(
    {
      method: 'post',
      path: '/v1/runs/:id/continue',
      summary: 'Carry on a run that waits for no one: its card answered, interrupted, or left by a server that stopped',
      role: 'approver',
      ok: { status: 202, description: 'the run goes on', schema: S.LegAcceptedSchema },
      errors: [400, 401, 403, 404, 409],
    },
    async (c, { who }) => {
      const runId = c.req.param('id') as string;
      if (runner.isQueued(runId) || runner.isActive(runId))
        throw new HttpProblem(409, `run ${runId} is being worked by this server already`);
      const leg = await keel.continueLeg(runId);
      await audit(who, 'continue_run', runId, '');
      return json(c, 202, await accepted(leg));
    },
  );

  route(
    {
      method: 'post',
      path: '/v1/runs/:id/cancel',
      summary: 'End a paused or stalled run for good (its pending card is rejected)',
      role: 'approver',
      body: S.CancelBody,
      ok: { status: 200, description: 'the run, cancelled', schema: S.RunSchema.pick({ run_id: true, status: true, reason: true }) },
      errors: [400, 401, 403, 404, 409],
    },
    async (c, { body, who }) => {
      const runId = c.req.param('id') as string;
      if (runner.isQueued(runId) || runner.isActive(runId)) {
        throw new HttpProblem(409, `run ${runId} is being worked by this server: wait until it pauses or ends`);
      }
      const r = await keel.cancel(runId, { actor: who.name, reason: body.reason ?? null });
      hub.wake(runId);
      return json(c, 200, { run_id: r.run_id, status: r.status, reason: r.reason });
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/runs/:id/events',
      summary:
        "A run's events as Server-Sent Events, each with an id: reconnect with Last-Event-ID to get what you missed, then the live stream",
      role: 'viewer',
      ok: { status: 200, description: 'text/event-stream', sse: true },
      errors: [400, 401, 404],
    },
    async (c) => {
      const runId = c.req.param('id') as string;
      const run = await keel.getRun(runId);
      const after = lastEventId(c) ?? 0;
      if (run.status === 'done' || run.status === 'failed') {
        const rest = await store.listEvents({ run_id: runId, after, limit: 1 });
        // Nothing more will come: 204 tells an EventSource not to reconnect.
        if (!rest.length) return c.body(null, 204);
      }
      return streamSSE(c, (stream) => follow(stream, runId, after));
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/events',
      summary: 'Inbox events as Server-Sent Events: cards created and answered, questions, runs started and finished',
      role: 'viewer',
      ok: { status: 200, description: 'text/event-stream', sse: true },
      errors: [400, 401],
    },
    async (c) => {
      // Without Last-Event-ID the inbox starts now (the lists say what is pending already).
      const after = lastEventId(c) ?? (await store.latestEventId());
      return streamSSE(c, (stream) => follow(stream, '*', after));
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/approvals',
      summary: 'Approval cards, by status and run (pending ones past their expiry are marked expired first)',
      role: 'viewer',
      query: S.ApprovalsQuery,
      ok: { status: 200, description: 'the cards', schema: S.ApprovalListSchema },
      errors: [400, 401],
    },
    async (c, { query }) => {
      await expire();
      return json(c, 200, { approvals: await store.listApprovals({ status: query.status, run_id: query.run }) });
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/approvals/:id',
      summary: 'One approval card',
      role: 'viewer',
      ok: { status: 200, description: 'the card', schema: S.ApprovalSchema },
      errors: [401, 404],
    },
    async (c) => {
      const id = c.req.param('id') as string;
      await expire(); // a card past its expiry reads as expired, and its run is ended
      const a = await store.getApproval(id);
      if (!a) throw new KeelError('not_found', `no approval ${id}`);
      return json(c, 200, a);
    },
  );

  route(
    {
      method: 'post',
      path: '/v1/approvals/answer',
      summary:
        'Answer several cards in one action (A8): each on its own, once, audited; a card answered meanwhile is reported as a conflict and the others go on',
      role: 'approver',
      body: S.BatchApprovalBody,
      ok: { status: 200, description: 'one result per card, in the order given', schema: S.BatchAnsweredSchema },
      errors: [400, 401, 403, 404, 415],
    },
    async (c, { body, who }) => {
      if (!body.ids.length && body.run === undefined)
        throw new HttpProblem(400, 'give ids, or a run whose pending cards to answer', [
          { field: 'body.ids', message: 'give ids, or a run whose pending cards to answer' },
        ]);
      const answers = await keel.answerApprovals(body.ids, body.decision, {
        actor: who.name,
        reason: body.reason ?? null,
        run: body.run,
        who: answerer(who),
      });
      const results = [];
      for (const { leg, ...a } of answers) {
        if (a.approval) hub.wake(a.approval.run_id);
        results.push(a.approval ? { ...a, run: leg ? await accepted(leg) : null } : a);
      }
      return json(c, 200, { results });
    },
  );

  route(
    {
      method: 'post',
      path: '/v1/approvals/:id',
      summary: 'Approve or reject a card (once): the run goes on, running exactly the approved calls',
      role: 'approver',
      body: S.ApprovalBody,
      ok: { status: 200, description: 'the answer is recorded; the run goes on', schema: S.ApprovalAnsweredSchema },
      errors: [400, 401, 403, 404, 409, 410, 415],
    },
    async (c, { body, who }) => {
      const id = c.req.param('id') as string;
      const { approval, leg } = await keel
        .answerApproval(id, body.decision, {
          actor: who.name,
          reason: body.reason ?? null,
          consentWrites: body.consent_writes,
          arguments: body.arguments,
          who: answerer(who),
        })
        .catch((err: unknown) => {
          // A7: a refused edit names the field (`arguments`, or `arguments.<call_id>` on a card of several calls).
          const field = err instanceof KeelError && err.code === 'bad_input' ? /^(arguments(?:\.[^:\s]+)?): /.exec(err.message) : null;
          throw field
            ? new HttpProblem(400, err instanceof Error ? err.message : String(err), [
                { field: `body.${field[1]}`, message: err instanceof Error ? err.message : '' },
              ])
            : err;
        });
      hub.wake(approval.run_id);
      // An MCP session's card: the MCP server holding the call carries it out; no leg runs here.
      const run = leg ? await accepted(leg) : null;
      if (approval.status === 'expired') {
        // The run ends (nothing runs); the caller is told the card had expired.
        return problem(c, 410, `approval ${id} expired at ${approval.expires_at} before it was answered; nothing ran`);
      }
      return json(c, 200, { approval, run });
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/sessions/:id',
      summary: 'A session: its mode, approved contract and runs',
      role: 'viewer',
      ok: { status: 200, description: 'the session', schema: S.SessionSchema },
      errors: [401, 404],
    },
    async (c) => json(c, 200, await sessionView(c.req.param('id') as string)),
  );

  route(
    {
      method: 'put',
      path: '/v1/sessions/:id/mode',
      summary: "Switch a session's mode (a paused run continues in it; a running one from its next step)",
      role: 'approver',
      body: S.ModeBody,
      ok: { status: 200, description: 'the session', schema: S.SessionSchema },
      errors: [400, 401, 403, 404, 415],
    },
    async (c, { body, who }) => {
      const id = c.req.param('id') as string;
      await keel.setMode(id, body.mode);
      await audit(who, 'set_mode', id, JSON.stringify(body));
      return json(c, 200, await sessionView(id));
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/plugins',
      summary: "The server's plugins: status, tools with effect and gate, drift, refused registrations with reasons",
      role: 'viewer',
      ok: { status: 200, description: 'the plugins', schema: S.PluginsSchema },
      errors: [401],
    },
    async (c) => {
      const reg = await keel.registry(d.pluginDirs);
      return json(c, 200, {
        plugins: reg.plugins,
        builtins: reg.pool.filter((t) => t.plugin === 'core').map((t) => ({ name: t.name, effect: t.declaration.effect, gate: t.gate })),
        policy_unmatched: reg.policy?.unmatched ?? [],
      });
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/tokens',
      summary: 'The API tokens (never the tokens themselves)',
      role: 'admin',
      ok: { status: 200, description: 'the tokens', schema: S.TokenListSchema },
      errors: [401, 403],
    },
    (c) => json(c, 200, { tokens: tokens.list() }),
  );

  route(
    {
      method: 'post',
      path: '/v1/tokens',
      summary: 'Make a token (shown once)',
      role: 'admin',
      body: S.TokenBody,
      ok: { status: 201, description: 'the token, shown this once', schema: S.TokenCreatedSchema },
      errors: [400, 401, 403, 409, 415],
    },
    async (c, { body, who }) => {
      const t = tokens.create(body.name, body.role, new Date(), body.groups ?? []);
      await audit(who, 'create_token', t.id, JSON.stringify(body));
      return json(c, 201, t);
    },
  );

  route(
    {
      method: 'delete',
      path: '/v1/tokens/:id',
      summary: 'Revoke a token (by id or name): it stops working at once',
      role: 'admin',
      ok: { status: 200, description: 'the revoked token', schema: S.TokenSchema },
      errors: [401, 403, 404],
    },
    async (c, { who }) => {
      const t = tokens.revoke(c.req.param('id') as string);
      await audit(who, 'revoke_token', t.id, t.name);
      return json(c, 200, t);
    },
  );

  // S7: Web Push. Subscriptions are an approver's or admin's own (they answer cards); src/server/alerts/push.ts says what is sent.
  route(
    {
      method: 'get',
      path: '/v1/push',
      summary: 'Web Push: whether it is on, and the VAPID public key a browser subscribes with (made on first use)',
      role: 'approver',
      ok: { status: 200, description: 'push on this server', schema: PushInfoSchema },
      errors: [401, 403],
    },
    async (c) => json(c, 200, await push.info()),
  );

  route(
    {
      method: 'get',
      path: '/v1/push/subscriptions',
      summary: "The caller's push subscriptions (an admin with ?all=1: everyone's); never their endpoints whole nor their keys",
      role: 'approver',
      query: z.object({ all: z.enum(['0', '1']).optional() }),
      ok: { status: 200, description: 'the subscriptions', schema: z.object({ subscriptions: z.array(PushSubscriptionSchema) }) },
      errors: [400, 401, 403],
    },
    async (c, { query, who }) => json(c, 200, { subscriptions: await push.list(who, query.all === '1') }),
  );

  route(
    {
      method: 'post',
      path: '/v1/push/subscriptions',
      summary: `Subscribe a browser (its PushSubscription.toJSON(), and a label) to a push for each new card or question; at most ${MAX_SUBSCRIPTIONS} a token`,
      role: 'approver',
      body: PushSubscribeBody,
      ok: { status: 201, description: 'subscribed (200 when the endpoint was already: its keys renewed)', schema: PushSubscriptionSchema },
      errors: [400, 401, 403, 409, 415, 422],
    },
    async (c, { body, who }) => {
      const r = await push.subscribe(who, body);
      await audit(
        who,
        'push_subscribe',
        r.subscription.id,
        JSON.stringify({ service: r.subscription.service, label: r.subscription.label, status: r.status }),
      );
      return json(c, r.status === 'added' ? 201 : 200, r.subscription);
    },
  );

  route(
    {
      method: 'delete',
      path: '/v1/push/subscriptions/:id',
      summary: "Revoke a push subscription: the caller's own (an admin: anyone's); nothing more is sent to it",
      role: 'approver',
      ok: { status: 200, description: 'the revoked subscription', schema: PushSubscriptionSchema },
      errors: [401, 403, 404],
    },
    async (c, { who }) => {
      const gone = await push.revoke(who, c.req.param('id') as string);
      await audit(who, 'push_unsubscribe', gone.id, JSON.stringify({ service: gone.service, owner: gone.owner }));
      return json(c, 200, gone);
    },
  );

  // Issue 41: the AI SDK's chat UIs (useChat): the chat's id is a session; src/server/ui/ holds the logic the library's chatHandler shares.
  const uiChat = new UiChat({
    keel,
    store,
    hub,
    submit: (leg) => {
      runner.submit(leg);
      hub.wake(leg.run_id);
    },
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

  app.get('/v1/openapi.json', (c) => c.json(openApi(routes, d.version)));

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

  async function sessionView(id: string) {
    const rec = await store.getSession(id);
    if (!rec) throw new KeelError('not_found', `no session ${id}`);
    const runs = await store.listRuns({ session_id: id, limit: 200 });
    return { ...rec, runs: runs.map(summary) };
  }

  /**
   * Streams journal rows after `after` — of one run, or the inbox's of every run ('*') — then
   * follows: each wake-up (or every pollMs, for runs another process works) reads what is new from
   * the store, so an event is sent once, in order, whatever the timing. Text deltas are live only.
   */
  async function follow(stream: SSEStreamingApi, runId: string, after: number): Promise<void> {
    let last = after;
    let closed = false;
    let wake: (() => void) | undefined;
    const deltas: string[] = [];
    let streaming = false;
    /** Set by a wake-up that came while the stream was busy: the next read must not wait. */
    let dirty = false;
    const poke = () => {
      dirty = true;
      wake?.();
      wake = undefined;
    };
    const unsubscribe = hub.subscribe(runId, (m) => {
      if (m.delta !== undefined) {
        if (deltas.length < 1000) deltas.push(m.delta);
      }
      poke();
    });
    stream.onAbort(() => {
      closed = true;
      poke();
    });
    const query = runId === '*' ? { types: INBOX_TYPES } : { run_id: runId };
    let idleSince = Date.now();
    try {
      while (!closed) {
        const rows: StoredEvent[] = await store.listEvents({ ...query, after: last, limit: 200 });
        // One write per wake-up: a step's events (and its deltas) go out together.
        let out = '';
        let final = false;
        for (const r of rows) {
          const name = runId === '*' ? inboxName(r.event) : r.event.type;
          out += `id: ${r.id}\nevent: ${name}\ndata: ${JSON.stringify({ id: r.id, run_id: r.run_id, at: r.at, ...r.event })}\n\n`;
          last = r.id;
          if (r.event.type === 'model_request') streaming = true;
          if (r.event.type === 'assistant' || r.event.type === 'run_finished') streaming = false;
          if (runId !== '*' && isFinal(r.event)) final = true;
        }
        // A delta belongs to the reply being streamed: one that comes after its reply is dropped.
        for (const text of deltas.splice(0)) {
          if (streaming && !final) out += `event: text_delta\ndata: ${JSON.stringify({ run_id: runId, text })}\n\n`;
        }
        if (out) {
          await stream.write(out);
          idleSince = Date.now();
        }
        if (final || closed) break;
        if (rows.length === 200) continue;
        if (Date.now() - idleSince > 15_000) {
          await stream.write(': keep-alive\n\n');
          idleSince = Date.now();
        }
        if (!dirty) {
          await new Promise<void>((res) => {
            const timer = setTimeout(poke, d.pollMs);
            wake = () => {
              clearTimeout(timer);
              res();
            };
          });
        }
        dirty = false;
        // Let the rest of a burst land first: one read and one write for all of it.
        await new Promise((res) => setImmediate(res));
      }
    } finally {
      unsubscribe();
    }
  }

  return app;
}

/** Last-Event-ID (or ?after=, for clients that cannot set headers): the id of the last event seen. */
function lastEventId(c: Context): number | undefined {
  const raw = c.req.header('last-event-id') ?? c.req.query('after');
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d{1,15}$/.test(raw)) {
    throw new HttpProblem(400, 'Last-Event-ID must be the id of an event this server sent', [
      { field: 'header.last-event-id', message: 'not an event id' },
    ]);
  }
  return Number(raw);
}

/** OpenAPI 3.1, from the same declarations and schemas the routes validate with. */
export function openApi(routes: readonly AnyRoute[], version: string): Record<string, unknown> {
  const toSchema = (s: Schema, io: 'input' | 'output') =>
    z.toJSONSchema(s, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  const problemRef = { $ref: '#/components/schemas/Problem' };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:(\w+)/g, '{$1}');
    const params = [...r.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    if (r.query) {
      const qs = toSchema(r.query, 'input') as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, schema] of Object.entries(qs.properties ?? {})) {
        params.push({ name, in: 'query', required: qs.required?.includes(name) ?? false, schema: schema as { type: string } });
      }
    }
    const responses: Record<string, unknown> = {
      [r.ok.status]: {
        description: r.ok.description,
        content: r.ok.sse
          ? { 'text/event-stream': { schema: { type: 'string' } } }
          : r.ok.schema
            ? { 'application/json': { schema: toSchema(r.ok.schema, 'output') } }
            : undefined,
      },
    };
    // Issue 27: a route that reads the store may find it out of reach (503); one with input may refuse text no store can hold (400).
    const withInput = r.path.includes(':') || r.body || r.query;
    for (const e of new Set([...r.errors, ...(withInput ? [400] : []), ...(r.role ? [503] : [])])) {
      responses[e] = { description: PROBLEM_TITLES[e] ?? 'Error', content: { 'application/problem+json': { schema: problemRef } } };
    }
    (paths[path] ??= {})[r.method] = {
      summary: r.summary,
      operationId: `${r.method}${path.replace(/[{}]/g, '').replace(/\/(\w)/g, (_m, ch: string) => ch.toUpperCase())}`,
      ...(r.role ? { security: [{ bearer: [] }], 'x-keel-role': r.role } : { security: [] }),
      ...(params.length ? { parameters: params } : {}),
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: toSchema(r.body, 'input') } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Keel', version, description: 'The HTTP API of keel serve.' },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a token from keel tokens create' } },
      schemas: { Problem: toSchema(S.ProblemSchema, 'output') },
    },
    paths,
  };
}
