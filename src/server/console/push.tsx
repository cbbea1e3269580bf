/**
 * The console as an installable web app, and its Web Push subscriptions (S7).
 *
 * Public (no login; nothing private in them): the web app manifest, the icons (drawn in code,
 * app-icons.ts), the service worker and the script that registers it. The service worker caches
 * nothing — it has no fetch handler, so every page and API answer comes from the server as
 * without it — and only shows the pushes Keel sends and opens their link, on this origin only.
 *
 * Behind a session: the Notifications page (`/push`), where an approver or admin turns push on for
 * the browser in hand (the script subscribes with the server's VAPID key, then posts the
 * subscription as a form, with the session's CSRF token) and lists and revokes their subscriptions;
 * an admin sees and may revoke everyone's. A viewer is told why not (they cannot answer cards).
 */
import type { Context, Hono } from 'hono';
import type { Child, FC } from 'hono/jsx';
import { allows, type Role } from '../access/tokens.js';
import { MAX_LABEL_CHARS, type Push, type PushSubscriptionView } from '../alerts/push.js';
import { iconPng } from './icons.js';

interface Who {
  name: string;
  role: Role;
}

export interface PushConsoleDeps {
  push?: Push;
  page(c: Context, status: number, title: string, body: Child, who?: Who, csrf?: string): Response | Promise<Response>;
  session(c: Context): { who: Who; csrf: string } | undefined;
  /** A form post: session, CSRF and role checked; a KeelError is shown as a page. */
  post(path: string, needed: Role, handle: (c: Context, who: Who, data: Record<string, string>) => Promise<Response>): void;
  audit(who: Who, action: string, subject: string, detail: string): Promise<void>;
}

export const ICON_SIZES = [192, 512] as const;

/** The web app manifest: what makes the console installable (standalone, its own icon). */
export const APP_MANIFEST = {
  name: 'Keel',
  short_name: 'Keel',
  description: "Keel's approval inbox: cards and questions from your agent's runs",
  id: '/',
  start_url: '/',
  scope: '/',
  display: 'standalone',
  background_color: '#ffffff',
  theme_color: '#0b5cad',
  icons: ICON_SIZES.flatMap((n) =>
    (['any', 'maskable'] as const).map((purpose) => ({ src: `/assets/icon-${n}.png`, sizes: `${n}x${n}`, type: 'image/png', purpose })),
  ),
};

/**
 * The service worker. No fetch handler: it caches nothing, so nothing private is ever kept by it.
 * A push's JSON is read defensively (any field missing or odd is replaced), shown as text by the
 * browser, and its link is opened only when it is on this origin.
 */
export const SERVICE_WORKER_JS = `
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
const text = (v, max) => (typeof v === 'string' ? v.slice(0, max) : '');
const here = (v) => {
  try {
    const u = new URL(typeof v === 'string' ? v : '/', self.location.origin);
    return u.origin === self.location.origin ? u.href : self.location.origin + '/';
  } catch {
    return self.location.origin + '/';
  }
};
self.addEventListener('push', (event) => {
  let m = {};
  try {
    m = event.data ? event.data.json() : {};
  } catch {
    m = {};
  }
  if (!m || typeof m !== 'object') m = {};
  const tag = text(m.tag, 100);
  event.waitUntil(
    self.registration.showNotification(text(m.title, 120) || 'Keel', {
      body: text(m.body, 200),
      tag: tag || undefined,
      icon: '/assets/icon-192.png',
      badge: '/assets/icon-192.png',
      data: { url: here(m.url) },
    }),
  );
});
self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = here(event.notification.data && event.notification.data.url);
  event.waitUntil(
    (async () => {
      const open = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      for (const c of open) {
        if (new URL(c.url).origin === self.location.origin && 'navigate' in c) {
          await c.focus();
          return c.navigate(url);
        }
      }
      return self.clients.openWindow(url);
    })(),
  );
});
`;

/**
 * On every page: registers the service worker (the console is an installable app). On the
 * Notifications page: the button that subscribes this browser and posts the subscription as a form.
 */
export const PUSH_JS = `
const root = document.documentElement;
const ready = 'serviceWorker' in navigator
  ? navigator.serviceWorker.register('/sw.js', { scope: '/' }).then((r) => { root.dataset.sw = 'registered'; return r; }, (e) => { root.dataset.sw = 'failed'; return undefined; })
  : Promise.resolve(undefined);
const box = document.querySelector('[data-push-key]');
if (box) {
  const status = box.querySelector('[data-push-status]');
  const say = (t) => { status.textContent = t; };
  const form = box.querySelector('form[data-push-form]');
  const bytes = (s) => {
    const b = s.replace(/-/g, '+').replace(/_/g, '/');
    return Uint8Array.from(atob(b + '='.repeat((4 - (b.length % 4)) % 4)), (ch) => ch.charCodeAt(0));
  };
  const same = (a, b) => a && b && a.byteLength === b.byteLength && new Uint8Array(a).every((x, i) => x === b[i]);
  if (!('PushManager' in window) || !('Notification' in window)) {
    say('This browser cannot receive Web Push here (on an iPhone or iPad, add Keel to the Home Screen and open it from there).');
  }
  box.querySelector('[data-push-on]').addEventListener('click', async () => {
    try {
      const reg = await ready;
      if (!reg || !reg.pushManager) return say('This browser cannot receive Web Push here.');
      if ((await Notification.requestPermission()) !== 'granted') return say('Notifications are blocked for this site: allow them in the browser settings, then try again.');
      const key = bytes(box.dataset.pushKey);
      let sub = await reg.pushManager.getSubscription();
      if (sub && !same(sub.options.applicationServerKey, key)) {
        await sub.unsubscribe();
        sub = null;
      }
      sub = sub || (await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }));
      const j = sub.toJSON();
      form.elements.endpoint.value = j.endpoint;
      form.elements.p256dh.value = j.keys.p256dh;
      form.elements.auth.value = j.keys.auth;
      form.submit();
    } catch (e) {
      say('Could not subscribe: ' + String((e && e.message) || e).slice(0, 200));
    }
  });
}
`;

/** What the console's <head> adds for the app: the manifest, the theme colour, the script that registers the worker. */
export const AppHead: FC = () => (
  <>
    <link rel="manifest" href="/manifest.webmanifest" />
    <meta name="theme-color" content={APP_MANIFEST.theme_color} />
    <link rel="apple-touch-icon" href="/assets/icon-192.png" />
    <script type="module" src="/assets/push.js" />
  </>
);

const DONE: Record<string, string> = {
  added: 'This browser is subscribed: a new card or question will buzz it.',
  updated: 'This browser was subscribed already: its keys are renewed.',
  revoked: 'The subscription is revoked: nothing more is sent to it.',
};

const Subscriptions: FC<{ rows: PushSubscriptionView[]; csrf: string; owners: boolean }> = ({ rows, csrf, owners }) =>
  rows.length ? (
    <table class="push-subscriptions">
      <thead>
        <tr>
          <th scope="col">Device</th>
          {owners && <th scope="col">Token</th>}
          <th scope="col">Push service</th>
          <th scope="col">Added</th>
          <th scope="col">Revoke</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((s) => (
          <tr>
            <td data-label="Device">{s.label ?? 'unnamed'}</td>
            {owners && <td data-label="Token">{s.owner}</td>}
            <td data-label="Push service">
              <code>{s.service}</code>
            </td>
            <td data-label="Added">
              <time datetime={s.created_at}>{`${s.created_at.slice(0, 16).replace('T', ' ')} UTC`}</time>
            </td>
            <td data-label="Revoke">
              <form method="post" action={`/push/${encodeURIComponent(s.id)}/revoke`}>
                <input type="hidden" name="csrf" value={csrf} />
                <button type="submit" class="reject">
                  Revoke
                </button>
              </form>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  ) : (
    <p>No subscriptions.</p>
  );

export function mountPushConsole(app: Hono, d: PushConsoleDeps): void {
  const manifest = JSON.stringify(APP_MANIFEST);
  app.get('/manifest.webmanifest', (c) =>
    c.body(manifest, 200, { 'content-type': 'application/manifest+json; charset=utf-8', 'cache-control': 'max-age=300' }),
  );
  app.get('/sw.js', (c) =>
    c.body(SERVICE_WORKER_JS, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' }),
  );
  app.get('/assets/push.js', (c) =>
    c.body(PUSH_JS, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'max-age=300' }),
  );
  for (const n of ICON_SIZES) {
    app.get(`/assets/icon-${n}.png`, (c) =>
      c.body(new Uint8Array(iconPng(n)), 200, { 'content-type': 'image/png', 'cache-control': 'max-age=86400' }),
    );
  }

  app.get('/push', async (c) => {
    const s = d.session(c);
    if (!s) return c.redirect('/login', 303);
    const { who, csrf } = s;
    const can = allows(who.role, 'approver');
    const push = d.push;
    const info = push ? await push.info() : undefined;
    const rows = push && can ? await push.list(who, who.role === 'admin') : [];
    const done = DONE[c.req.query('done') ?? ''];
    return d.page(
      c,
      200,
      'Notifications',
      <div>
        <h1>Notifications</h1>
        {done && (
          <p class="done" role="status">
            {done}
          </p>
        )}
        <p>
          A new card or question can buzz your phone or browser even when the console is closed. Each push carries the card's title — with
          any argument value in it masked — and a link here; never the call's arguments, its details or a model's words. It travels
          encrypted through your browser's push service.
        </p>
        {!can ? (
          <p class="warning">{`${who.name} is a ${who.role}: notifications go to approvers and admins, who answer cards.`}</p>
        ) : !info?.enabled ? (
          <p class="warning">{info?.why_off ?? 'Web Push is off on this server.'}</p>
        ) : (
          <section id="push-device" data-push-key={info.public_key ?? ''} aria-labelledby="h-device">
            <h2 id="h-device">This browser</h2>
            <form method="post" action="/push/subscribe" class="start" data-push-form>
              <input type="hidden" name="csrf" value={csrf} />
              <input type="hidden" name="endpoint" value="" />
              <input type="hidden" name="p256dh" value="" />
              <input type="hidden" name="auth" value="" />
              <label>
                Name it (optional) <input type="text" name="label" maxlength={MAX_LABEL_CHARS} placeholder="phone" />
              </label>
              <button type="button" data-push-on>
                Turn on notifications
              </button>
            </form>
            <p class="hint" data-push-status role="status" />
            <noscript>
              <p class="hint">Turning notifications on needs JavaScript.</p>
            </noscript>
          </section>
        )}
        {can && (
          <section aria-labelledby="h-subs">
            <h2 id="h-subs">{who.role === 'admin' ? 'Subscriptions (every token)' : 'Your subscriptions'}</h2>
            <Subscriptions rows={rows} csrf={csrf} owners={who.role === 'admin'} />
          </section>
        )}
      </div>,
      who,
      csrf,
    );
  });

  d.post('/push/subscribe', 'approver', async (c, who, data) => {
    const push = need(d.push);
    const r = await push.subscribe(who, {
      endpoint: data.endpoint ?? '',
      keys: { p256dh: data.p256dh ?? '', auth: data.auth ?? '' },
      label: data.label?.trim() ? data.label : undefined,
    });
    await d.audit(
      who,
      'push_subscribe',
      r.subscription.id,
      JSON.stringify({ service: r.subscription.service, label: r.subscription.label, status: r.status, via: 'console' }),
    );
    return c.redirect(`/push?done=${r.status}`, 303);
  });

  d.post('/push/:id/revoke', 'approver', async (c, who) => {
    const gone = await need(d.push).revoke(who, c.req.param('id') as string);
    await d.audit(who, 'push_unsubscribe', gone.id, JSON.stringify({ service: gone.service, owner: gone.owner, via: 'console' }));
    return c.redirect('/push?done=revoked', 303);
  });
}

function need(push: Push | undefined): Push {
  if (!push) throw new Error('the server was started without push');
  return push;
}
