/**
 * The web console of `keel serve`, at `/`: the approval inbox, runs and their traces, the plugins'
 * drift panel, sessions. Server-rendered (Hono JSX: every value is escaped), a small client script
 * for live updates (EventSource on the API, which re-renders the live region), plain forms that work
 * without it. A token is exchanged for an HttpOnly, SameSite=Strict session cookie; every form post
 * carries the session's CSRF token; roles apply (a viewer sees no buttons, and is refused anyway).
 *
 * This file is the console's frame: its assets and headers, logging in and out, the session gate,
 * and the checks every form post passes (session, CSRF token, role) before a page's handler sees it;
 * the pages are inbox.tsx, runs.tsx, trace.tsx, answers.tsx, plugins.tsx, sessions.tsx and push.tsx.
 * Never takes a form post without those checks, and never serves a script or style from outside Keel.
 */
import type { Context, Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { html } from 'hono/html';
import type { Child } from 'hono/jsx';
import { KeelError } from '../../util/errors.js';
import { allows, type Role } from '../access/tokens.js';
import { mountAnswers } from './answers.js';
import { CONSOLE_CSS, CONSOLE_JS, FAVICON_SVG, faviconIco } from './assets.js';
import { mountInbox } from './inbox.js';
import { mountPlugins } from './plugins.js';
import { mountPushConsole } from './push.js';
import { mountRuns } from './runs.js';
import { mountSessions } from './sessions.js';
import { type ConsoleDeps, Layout, type Who } from './shell.js';
import { mountTrace } from './trace.js';

export type { ConsoleDeps } from './shell.js';

const LOGIN_COOKIE = 'keel_login';

export function mountConsole(app: Hono, d: ConsoleDeps): void {
  const { web } = d;

  app.get('/assets/console.css', (c) =>
    c.body(CONSOLE_CSS, 200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'max-age=300' }),
  );
  app.get('/assets/console.js', (c) =>
    c.body(CONSOLE_JS, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'max-age=300' }),
  );
  // The icon, drawn in code (assets.ts): an SVG for browsers that take one, an ICO at the path every browser asks for.
  app.get('/favicon.svg', (c) => c.body(FAVICON_SVG, 200, { 'content-type': 'image/svg+xml', 'cache-control': 'max-age=86400' }));
  app.get('/favicon.ico', (c) =>
    c.body(faviconIco() as Uint8Array<ArrayBuffer>, 200, { 'content-type': 'image/x-icon', 'cache-control': 'max-age=86400' }),
  );

  // Pages: a strict policy (only Keel's own script and style), never framed, no sniffing.
  app.use('*', async (c, next) => {
    await next();
    if (c.req.path.startsWith('/v1/')) return;
    c.header('content-security-policy', "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'");
    c.header('x-content-type-options', 'nosniff');
    c.header('referrer-policy', 'same-origin');
  });

  // S8: every page is a standards-mode document (a doctype first: without it Chromium lays it out in quirks mode).
  const page = (c: Context, status: number, title: string, body: Child, who?: Who, csrf?: string) =>
    c.html(
      html`<!DOCTYPE html>${(
        <Layout title={title} who={who} csrf={csrf}>
          {body}
        </Layout>
      )}`,
      status as 200,
    );

  /** The logged-in user, or a redirect to the login page. */
  function session(c: Context): { who: Who; csrf: string } | undefined {
    return web.get(getCookie(c, d.sessionCookie));
  }

  /** A form post: a session, its CSRF token, and a role that may make it. */
  async function form(c: Context, needed: Role): Promise<{ who: Who; csrf: string; data: Record<string, string> } | Response> {
    const s = session(c);
    if (!s)
      return page(
        c,
        401,
        'Log in',
        <p>
          Your session has ended. <a href="/login">Log in</a> again.
        </p>,
      );
    const raw = await c.req.parseBody();
    const data = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, typeof v === 'string' ? v : '']));
    if (data.csrf !== s.csrf)
      return page(c, 403, 'Refused', <p>This form is stale or was not sent by the console: refused.</p>, s.who, s.csrf);
    if (!allows(s.who.role, needed)) {
      return page(c, 403, 'Refused', <p>{`${s.who.name} is a ${s.who.role}: this needs an ${needed}.`}</p>, s.who, s.csrf);
    }
    return { who: s.who, csrf: s.csrf, data };
  }

  /** A form post that changes something: session, CSRF token and role checked, mistakes shown as a page. */
  function post(path: string, needed: Role, handle: (c: Context, who: Who, data: Record<string, string>) => Promise<Response>): void {
    app.post(path, async (c) => {
      const f = await form(c, needed);
      if (f instanceof Response) return f;
      return guarded(c, f.who, f.csrf, () => handle(c, f.who, f.data));
    });
  }

  /** A user's mistake (an answered card, an unknown run) shown as a page, not a stack. */
  async function guarded(c: Context, who: Who, csrf: string, f: () => Promise<Response>): Promise<Response> {
    try {
      return await f();
    } catch (err) {
      if (!(err instanceof KeelError)) throw err;
      const status = {
        not_found: 404,
        bad_input: 400,
        expired: 410,
        config: 422,
        conflict: 409,
        not_paused: 409,
        unavailable: 503,
        forbidden: 403,
      }[err.code];
      return page(c, status, 'Not done', <p class="error">{err.message}</p>, who, csrf);
    }
  }

  app.get('/login', (c) => {
    const nonce = crypto.randomUUID();
    setCookie(c, LOGIN_COOKIE, nonce, { httpOnly: true, sameSite: 'Strict', path: '/login', secure: secure(c) });
    return page(
      c,
      200,
      'Log in',
      <form method="post" action="/login" class="login">
        <h1>Log in</h1>
        <input type="hidden" name="csrf" value={nonce} />
        <label>
          Token <input type="password" name="token" autocomplete="current-password" required />
        </label>
        <button type="submit">Log in</button>
        <p class="hint">
          A token comes from <code>keel tokens create</code>.
        </p>
      </form>,
    );
  });

  app.post('/login', async (c) => {
    const body = await c.req.parseBody();
    const nonce = getCookie(c, LOGIN_COOKIE);
    if (!nonce || body.csrf !== nonce)
      return page(
        c,
        403,
        'Refused',
        <p>
          This login form is stale: <a href="/login">try again</a>.
        </p>,
      );
    const s = typeof body.token === 'string' ? web.create(body.token.trim()) : undefined;
    if (!s) {
      return page(
        c,
        401,
        'Log in',
        <p class="error">
          That token is not valid (unknown or revoked). <a href="/login">Try again</a>.
        </p>,
      );
    }
    deleteCookie(c, LOGIN_COOKIE, { path: '/login' });
    setCookie(c, d.sessionCookie, s.id, { httpOnly: true, sameSite: 'Strict', path: '/', secure: secure(c), maxAge: 12 * 3600 });
    return c.redirect('/', 303);
  });

  app.post('/logout', async (c) => {
    const f = await form(c, 'viewer');
    if (f instanceof Response) return f;
    web.end(getCookie(c, d.sessionCookie));
    deleteCookie(c, d.sessionCookie, { path: '/' });
    return c.redirect('/login', 303);
  });

  // Every page below needs a session.
  const pages = ['/', '/runs', '/runs/:id', '/plugins', '/sessions/:id'];
  for (const p of pages) {
    app.get(p, async (c, next) => {
      if (!session(c)) return c.redirect('/login', 303);
      await next();
    });
  }

  // The pages, in the order their routes are registered (a batch answer before /approvals/:id).
  const routes = { d, page, session, post, guarded };
  mountInbox(app, routes);
  mountRuns(app, routes);
  mountTrace(app, routes);
  mountAnswers(routes);
  mountPlugins(app, routes);
  mountSessions(app, routes);

  // S7: the installable app (manifest, icons, service worker) and the Notifications page.
  mountPushConsole(app, { push: d.push, page, session, post, audit: d.audit });
}

/** Behind TLS (directly or through a proxy that says so), cookies are marked Secure. */
function secure(c: Context): boolean {
  return new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';
}
