/**
 * The console's shell: who is logged in, what the server hands the console (`ConsoleDeps`), the
 * helpers mountConsole hands each page's routes (`ConsoleRoutes`), the layout every page is drawn in
 * (header, navigation, the log-out form) and the small pieces the pages share (a table's head, a
 * badge, a time). Never renders a value unescaped (every string goes through Hono JSX), and never
 * reads a request or changes anything itself.
 */
import type { Context } from 'hono';
import type { Child, FC } from 'hono/jsx';
import type { Keel } from '../../keel/keel.js';
import type { Leg } from '../../loop/legs.js';
import type { Store } from '../../types/index.js';
import { allows, type Role, type WebSessions } from '../access/tokens.js';
import type { Push } from '../alerts/push.js';
import { AppHead } from './push.js';

export interface Who {
  name: string;
  role: Role;
  groups: readonly string[];
}

export interface ConsoleDeps {
  keel: Keel;
  store: Store;
  web: WebSessions;
  pluginDirs: string[];
  model?: string;
  sessionCookie: string;
  /** Hands a leg to the server's runner (the same path the API takes). */
  accepted(leg: Leg): Promise<unknown>;
  audit(who: Who, action: string, subject: string, detail: string): Promise<void>;
  isQueued(runId: string): boolean;
  wake(runId: string): void;
  /** Web Push (S7): the Notifications page; off when not given. */
  push?: Push;
}

/** What mountConsole hands each page's routes: the server's deps and the shell's page, session and form helpers. */
export interface ConsoleRoutes {
  d: ConsoleDeps;
  /** A page drawn in the layout, as a standards-mode document (S8). */
  page(c: Context, status: number, title: string, body: Child, who?: Who, csrf?: string): Response | Promise<Response>;
  /** The logged-in user, if any. */
  session(c: Context): { who: Who; csrf: string } | undefined;
  /** A form post that changes something: session, CSRF token and role checked, mistakes shown as a page. */
  post(path: string, needed: Role, handle: (c: Context, who: Who, data: Record<string, string>) => Promise<Response>): void;
  /** A user's mistake (an answered card, an unknown run) shown as a page, not a stack. */
  guarded(c: Context, who: Who, csrf: string, f: () => Promise<Response>): Promise<Response>;
}

export const Layout: FC<{ title: string; who?: Who; csrf?: string; children?: Child }> = ({ title, who, csrf, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{`${title} · Keel`}</title>
      <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
      <link rel="icon" href="/favicon.ico" sizes="32x32" />
      <link rel="stylesheet" href="/assets/console.css" />
      <script type="module" src="/assets/console.js" />
      <AppHead />
    </head>
    <body>
      <header>
        <a class="brand" href="/">
          <span class="word">Keel</span>
        </a>
        {who && (
          <nav aria-label="Main">
            <a href="/">Inbox</a>
            <a href="/runs">Runs</a>
            <a href="/plugins">Plugins</a>
            {allows(who.role, 'approver') && <a href="/push">Alerts</a>}
          </nav>
        )}
        {who && csrf && (
          <form method="post" action="/logout" class="who">
            <input type="hidden" name="csrf" value={csrf} />
            {/* S8: on a phone the header stays one line — the name is cut short (its title has it whole), the role hidden. */}
            <span class="name" title={`${who.name} (${who.role})`}>
              {who.name} <span class="role">({who.role})</span>
            </span>
            <button type="submit">Log out</button>
          </form>
        )}
      </header>
      <main id="main">{children}</main>
    </body>
  </html>
);

/** A table's header row. */
export const Head: FC<{ cols: string[] }> = ({ cols }) => (
  <thead>
    <tr>
      {cols.map((c) => (
        <th scope="col">{c}</th>
      ))}
    </tr>
  </thead>
);

export const Badge: FC<{ kind: string; children?: Child }> = ({ kind, children }) => <span class={`badge b-${kind}`}>{children}</span>;

/**
 * A moment: its ISO time in `datetime`, a readable UTC text that the console script turns into the
 * viewer's local time with the relative time ("in 42 min (2:09 PM)"); without the script the UTC text stays.
 */
export const Time: FC<{ iso: string }> = ({ iso }) => {
  const d = new Date(iso);
  return <time datetime={iso}>{Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`}</time>;
};
