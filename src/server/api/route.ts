/**
 * How the HTTP API declares a route: its method and path, the least role that may call it, its body
 * and query schemas and its responses — one declaration that checks the caller's token, validates the
 * request and feeds the OpenAPI document (openapi.ts). Errors are RFC 9457 problem+json naming the
 * field at fault. Never runs a handler for a caller without the role, nor with input that did not
 * validate or holds text no store can hold.
 */
import type { Context, Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import type { z } from 'zod';
import { storableText } from '../../util/text.js';
import { allows, type Role, type Tokens, type WebSessions } from '../access/tokens.js';
import { problemBody } from '../http/problems.js';
import type * as S from '../http/schemas.js';

export interface Who {
  name: string;
  role: Role;
  groups: readonly string[];
}

export type Method = 'get' | 'post' | 'put' | 'delete';
export type Schema = z.ZodType;

export interface RouteSpec<B extends Schema | undefined, Q extends Schema | undefined> {
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

export type Input<B, Q> = {
  body: B extends Schema ? z.output<B> : undefined;
  query: Q extends Schema ? z.output<Q> : undefined;
  who: Who;
};

/** The console's session cookie. */
export const SESSION_COOKIE = 'keel_session';

export type AnyRoute = RouteSpec<Schema | undefined, Schema | undefined>;

/** RFC 9457 problem details. */
export function problem(c: Context, status: number, detail: string, errors?: { field: string; message: string }[]): Response {
  const body: z.infer<typeof S.ProblemSchema> = { ...problemBody(status, detail, c.req.path, errors), instance: c.req.path };
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/problem+json' } });
}

export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors?: { field: string; message: string }[],
  ) {
    super(message);
  }
}

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

export const json = (c: Context, status: number, body: unknown) => c.json(body as object, status as 200);

/** Declares one route on the app (see RouteSpec): the checks run in order — token, body, query, stored text — then the handler. */
export type Route = <B extends Schema | undefined = undefined, Q extends Schema | undefined = undefined>(
  spec: RouteSpec<B, Q>,
  handler: (c: Context, input: Input<B, Q>) => Response | Promise<Response>,
) => void;

/** The `route` of `app`: each route declared is also pushed to `routes`, in order, for the OpenAPI document. */
export function routeOn(app: Hono, routes: AnyRoute[], tokens: Tokens, web: WebSessions): Route {
  return function route<B extends Schema | undefined = undefined, Q extends Schema | undefined = undefined>(
    spec: RouteSpec<B, Q>,
    handler: (c: Context, input: Input<B, Q>) => Response | Promise<Response>,
  ): void {
    routes.push(spec as AnyRoute);
    const handle = async (c: Context): Promise<Response> => {
      let who: Who = { name: 'anonymous', role: 'viewer', groups: [] };
      if (spec.role) {
        const token = bearer(c);
        // The console's session cookie reads (the live streams an EventSource opens); it never writes here.
        const viaCookie = !token && spec.method === 'get' ? web.get(getCookie(c, SESSION_COOKIE))?.who : undefined;
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
  };
}
