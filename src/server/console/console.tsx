/**
 * The web console of `keel serve`, at `/`: the approval inbox, runs and their traces, the plugins'
 * drift panel, sessions. Server-rendered (Hono JSX: every value is escaped), a small client script
 * for live updates (EventSource on the API, which re-renders the live region), plain forms that work
 * without it. A token is exchanged for an HttpOnly, SameSite=Strict session cookie; every form post
 * carries the session's CSRF token; roles apply (a viewer sees no buttons, and is refused anyway).
 */
import type { Context, Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { html } from 'hono/html';
import type { Child, FC } from 'hono/jsx';
import { groupSources } from '../../approvals/card.js';
import { type Answerer, mayAnswer, onlyGroups } from '../../approvals/who.js';
import { isMcpSession, type Keel } from '../../keel/keel.js';
import type { Leg } from '../../loop/legs.js';
import { untrustedRead } from '../../loop/result.js';
import type { Registry } from '../../plugin-host/host.js';
import type {
  ApprovalRecord,
  CallRecord,
  Message,
  Mode,
  RunState,
  RunSummary,
  Store,
  ToolSpec,
  UntrustedSource,
} from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { allows, type Role, tokenPrincipal, type WebSessions } from '../access/tokens.js';
import type { Push } from '../alerts/push.js';
import { CONSOLE_CSS, CONSOLE_JS, FAVICON_SVG, faviconIco } from './assets.js';
import { BatchCheck, BatchForm, BatchResults, batchSelection, EditForm, editedArguments } from './edit.js';
import { AppHead, mountPushConsole } from './push.js';

interface Who {
  name: string;
  role: Role;
  groups: readonly string[];
}

/** A9: the logged-in token as the one who answers a card. */
const answerer = (who: Who): Answerer => ({ name: who.name, role: who.role, groups: who.groups, kind: 'token' });

/** A9: may the logged-in token answer this card (its role, and its groups for a routed card)? */
const mayAnswerCard = (who: Who, a: ApprovalRecord): boolean => allows(who.role, 'approver') && mayAnswer(a.card, answerer(who));

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

const LOGIN_COOKIE = 'keel_login';
const OUTCOME_TEXT: Record<CallRecord['outcome'], string> = {
  ran: 'ran',
  held_for_confirmation: 'held',
  awaiting_approval: 'awaiting approval',
  denied_by_mode: 'denied by mode',
  denied_by_policy: 'denied by policy',
  repeat: 'repeat',
  unknown_tool: 'unknown tool',
  invalid_arguments: 'invalid arguments',
  rejected: 'rejected',
  error: 'error',
};

const Layout: FC<{ title: string; who?: Who; csrf?: string; children?: Child }> = ({ title, who, csrf, children }) => (
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

/** One line of a plugin's report: a refused registration or a drift. */
const ReportRow: FC<{ row: { kind: string; tool?: string; message: string }; kind: 'refused' | 'drift' }> = ({ row, kind }) => (
  <p class={`row ${kind}`}>
    <Badge kind={kind}>{row.kind.replaceAll('_', ' ')}</Badge> {row.tool && <code>{row.tool}</code>} {row.message}
  </p>
);

/** A table's header row. */
const Head: FC<{ cols: string[] }> = ({ cols }) => (
  <thead>
    <tr>
      {cols.map((c) => (
        <th scope="col">{c}</th>
      ))}
    </tr>
  </thead>
);

const Badge: FC<{ kind: string; children?: Child }> = ({ kind, children }) => <span class={`badge b-${kind}`}>{children}</span>;

/**
 * A moment: its ISO time in `datetime`, a readable UTC text that the console script turns into the
 * viewer's local time with the relative time ("in 42 min (2:09 PM)"); without the script the UTC text stays.
 */
const Time: FC<{ iso: string }> = ({ iso }) => {
  const d = new Date(iso);
  return <time datetime={iso}>{Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`}</time>;
};

/**
 * U6: what a run read from outside the user — from the run's own record, never the model's words —
 * counted by tool, each result with its label (others' words: JSX escapes them).
 */
const ReadFromOutside: FC<{ untrusted: readonly UntrustedSource[] | undefined }> = ({ untrusted }) => {
  if (!untrusted?.length) return null;
  const groups = groupSources(untrusted);
  return (
    <section class="untrusted" aria-label="What this run read from outside">
      <p class="warning">
        <strong>This run read:</strong> {groups.map((g) => `${g.count} result${g.count === 1 ? '' : 's'} of ${g.tool}`).join(', ')} — words
        from outside you. Approve only what you asked for.
      </p>
      <ul class="sources">
        {groups.flatMap((g) =>
          g.labels.map((l) => (
            <li>
              <code>{g.tool}</code> {l}
            </li>
          )),
        )}
      </ul>
    </section>
  );
};

/** One title per card: a card of one call is titled by that call (its tool beside it), not twice. */
/** A pending card's answer may edit its calls (A7: `tools`, the run's pool) and join a batch (A8: `batch`). */
const Card: FC<{ a: ApprovalRecord; canAnswer: boolean; csrf: string; tools?: ReadonlyMap<string, ToolSpec>; batch?: boolean }> = ({
  a,
  canAnswer,
  csrf,
  tools,
  batch,
}) => {
  const single = a.card.items.length === 1 ? a.card.items[0] : undefined;
  return (
    <article class="card" id={`card-${a.id}`} aria-labelledby={`t-${a.id}`}>
      <h3 id={`t-${a.id}`}>
        {single ? single.title : a.card.title} {single && <Badge kind="destructive">{single.tool}</Badge>}
      </h3>
      <p class="request">
        Asked: <q>{a.card.request}</q> · <a href={`/runs/${a.run_id}`}>run {a.run_id}</a>
      </p>
      <ReadFromOutside untrusted={a.card.untrusted} />
      {a.card.policy?.length ? <p class="policy">{`Asked by policy ${a.card.policy.join(', ')}`}</p> : null}
      {a.status === 'pending' && a.card.approvers?.length ? <p class="routed">{onlyGroups(a.card)}</p> : null}
      {a.card.items.map((i) => (
        <section class="item">
          {!single && (
            <h4>
              {i.title} <Badge kind="destructive">{i.tool}</Badge>
            </h4>
          )}
          <ul>
            {i.lines.map((l) => (
              <li>{l}</li>
            ))}
          </ul>
          <p class="undo">{i.undo}</p>
          <code class="call">{i.call}</code>
          {i.original && (
            // A7 (issue 40): the card words the edited call; what the model asked for stays beside it.
            <p class="edited">
              {`Edited by ${i.edited_by ?? 'the approver'}; was: ${i.original.title} `}
              <code>{i.original.call}</code>
            </p>
          )}
        </section>
      ))}
      {a.items
        // A card stored before its words followed an edit: the edited call is said here.
        .filter((i, n) => i.original_args && !a.card.items[n]?.original)
        .map((i) => (
          <p class="edited">
            {`Edited by ${i.edited_by ?? 'the approver'}: ran as `}
            <code>{`${i.tool}(${JSON.stringify(i.args)})`}</code>
          </p>
        ))}
      {a.status === 'pending' && canAnswer && batch && <BatchCheck id={a.id} title={single ? single.title : a.card.title} />}
      {a.status === 'pending' ? (
        <p class="meta">
          Expires <Time iso={a.expires_at} />
        </p>
      ) : a.status === 'expired' ? (
        <p class="meta status-expired">
          Expired <Time iso={a.expires_at} />: nothing ran.
        </p>
      ) : (
        <p class={`meta status-${a.status}`}>
          {`${a.status === 'approved' ? 'Approved' : 'Rejected'} by ${a.answered_by ?? 'someone'}${a.reason ? `: ${a.reason}` : ''}`}
          {a.answered_at && [' · ', <Time iso={a.answered_at} />]}
        </p>
      )}
      {a.status === 'pending' && canAnswer && (
        <form method="post" action={`/approvals/${a.id}`} class="answer">
          <input type="hidden" name="csrf" value={csrf} />
          <label>
            Reason (optional) <input type="text" name="reason" maxlength={4000} />
          </label>
          {a.card.offers_write_consent && (
            <label class="check">
              <input type="checkbox" name="consent_writes" value="1" /> Also let its writes run without asking
            </label>
          )}
          <div class="buttons">
            <button type="submit" name="decision" value="approve" class="approve">
              Approve
            </button>
            <button type="submit" name="decision" value="reject" class="reject">
              Reject
            </button>
          </div>
        </form>
      )}
      {a.status === 'pending' && canAnswer && tools && <EditForm a={a} tools={tools} csrf={csrf} />}
    </article>
  );
};

const Question: FC<{ run: RunState; canAnswer: boolean; csrf: string }> = ({ run, canAnswer, csrf }) => {
  const p = run.pause?.kind === 'ask_user' ? run.pause : undefined;
  if (!p) return null;
  return (
    <article class="card question">
      <h3>{p.question}</h3>
      <p class="request">
        Asked while working on <q>{run.request}</q> · <a href={`/runs/${run.id}`}>run {run.id}</a>
      </p>
      {p.confirm && <p>Held until you confirm: {p.confirm.tools.join(', ')}</p>}
      {canAnswer && (
        <form method="post" action={`/runs/${run.id}/answer`} class="answer">
          <input type="hidden" name="csrf" value={csrf} />
          <label>
            Answer <input type="text" name="text" maxlength={100000} />
          </label>
          <div class="buttons">
            {p.confirm ? (
              [
                <button type="submit" name="confirm" value="yes" class="approve">
                  Yes
                </button>,
                <button type="submit" name="confirm" value="no" class="reject">
                  No
                </button>,
              ]
            ) : (
              <button type="submit">Answer</button>
            )}
          </div>
        </form>
      )}
    </article>
  );
};

const RunRows: FC<{ runs: (RunSummary & { queued: boolean })[] }> = ({ runs }) =>
  runs.length ? (
    <table class="runs">
      <Head cols={['Run', 'Status', 'Request', 'Model calls', 'Updated']} />
      <tbody>
        {runs.map((r) => (
          <tr>
            <td data-label="Run">
              <a href={`/runs/${r.id}`}>{r.id}</a>
            </td>
            <td data-label="Status">
              <Badge kind={r.status}>{r.queued ? 'queued' : r.status}</Badge> {r.reason ?? ''}
            </td>
            <td data-label="Request">{r.request.length > 120 ? `${r.request.slice(0, 120)}…` : r.request}</td>
            <td data-label="Model calls">{r.model_calls}</td>
            <td data-label="Updated">
              <Time iso={r.updated_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  ) : (
    <p>No runs.</p>
  );

const Transcript: FC<{ messages: readonly Message[] }> = ({ messages }) => (
  <ol class="transcript">
    {messages.map((m) =>
      m.role === 'user' ? (
        <li class="m-user">
          <strong>User</strong> {m.content}
        </li>
      ) : m.role === 'assistant' ? (
        <li class="m-assistant">
          <strong>Model</strong> {m.content}
          {m.tool_calls.map((c) => (
            <div class="m-call">
              calls <code>{c.name}</code> <code class="id">{c.id}</code>
            </div>
          ))}
        </li>
      ) : (
        <li class={m.is_error ? 'm-tool err' : 'm-tool'}>
          <strong>{m.name}</strong> <code class="id">{m.call_id}</code> <pre>{m.content}</pre>
        </li>
      ),
    )}
  </ol>
);

export function mountConsole(app: Hono, d: ConsoleDeps): void {
  const { keel, store, web } = d;

  app.get('/assets/console.css', (c) =>
    c.body(CONSOLE_CSS, 200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'max-age=300' }),
  );
  app.get('/assets/console.js', (c) =>
    c.body(CONSOLE_JS, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'max-age=300' }),
  );
  // The icon, drawn in code (console-assets.ts): an SVG for browsers that take one, an ICO at the path every browser asks for.
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

  /** A7: the tools of each card's run (its pool), for the edit form; a run whose plugins no longer mount gets none. */
  async function cardTools(cards: readonly ApprovalRecord[]): Promise<Map<string, ReadonlyMap<string, ToolSpec>>> {
    const byDirs = new Map<string, ReadonlyMap<string, ToolSpec> | undefined>();
    const out = new Map<string, ReadonlyMap<string, ToolSpec>>();
    for (const a of cards) {
      const run = await store.loadRun(a.run_id);
      // An MCP session's card: its client made the call, and its arguments are not the owner's to change (A7).
      if (!run || isMcpSession(run)) continue;
      const key = JSON.stringify(run.plugin_dirs);
      if (!byDirs.has(key))
        byDirs.set(
          key,
          await keel.registry(run.plugin_dirs).then(
            (r) => r.byName,
            () => undefined,
          ),
        );
      const tools = byDirs.get(key);
      if (tools) out.set(a.id, tools);
    }
    return out;
  }

  async function inbox(who: Who, csrf: string) {
    // A4: a card past its expiry is expired and its run ended, through the server's runner.
    await keel.expireApprovals({ drive: (leg) => void d.accepted(leg).catch(() => {}) });
    const pending = await store.listApprovals({ status: 'pending' });
    const day = Date.now() - 24 * 3600_000;
    const closed = (await store.listApprovals())
      .filter((a) => a.status !== 'pending' && Date.parse(a.answered_at ?? a.expires_at) > day)
      .reverse()
      .slice(0, 10);
    const questions: RunState[] = [];
    for (const r of await store.listRuns({ status: 'paused', limit: 100 })) {
      const run = await store.loadRun(r.id);
      if (run?.pause?.kind === 'ask_user') questions.push(run);
    }
    const can = allows(who.role, 'approver');
    const tools = can ? await cardTools(pending) : new Map<string, ReadonlyMap<string, ToolSpec>>();
    // A8: several cards may be answered in one action; a run with several pending cards (an MCP session's) offers them all.
    const perRun = new Map<string, number>();
    for (const a of pending) perRun.set(a.run_id, (perRun.get(a.run_id) ?? 0) + 1);
    // A9: a card routed to groups this token is not in shows without buttons, and joins no batch.
    const mine = pending.filter((a) => mayAnswerCard(who, a));
    const batch = can && mine.length > 1;
    return (
      <div>
        <h1>Inbox</h1>
        <section aria-labelledby="h-cards">
          <h2 id="h-cards">Waiting for approval ({pending.length})</h2>
          {batch && <BatchForm csrf={csrf} runs={[...perRun].filter(([, n]) => n > 1).map(([id, count]) => ({ id, count }))} />}
          {pending.length ? (
            pending.map((a) => <Card a={a} canAnswer={mayAnswerCard(who, a)} csrf={csrf} tools={tools.get(a.id)} batch={batch} />)
          ) : (
            <p>Nothing waits for approval.</p>
          )}
        </section>
        <section aria-labelledby="h-q">
          <h2 id="h-q">Questions ({questions.length})</h2>
          {questions.length ? questions.map((r) => <Question run={r} canAnswer={can} csrf={csrf} />) : <p>No questions.</p>}
        </section>
        {closed.length > 0 && (
          <section aria-labelledby="h-closed">
            <h2 id="h-closed">Answered or expired today</h2>
            {closed.map((a) => (
              <Card a={a} canAnswer={false} csrf={csrf} />
            ))}
          </section>
        )}
      </div>
    );
  }

  /**
   * After an answer (a card's Approve or Reject, a question's answer) the owner lands on the next
   * pending card, oldest first, or on the inbox when none is left; the inbox says what was answered.
   */
  async function nextCard(c: Context, answered: string): Promise<Response> {
    const now = Date.now();
    const next = (await store.listApprovals({ status: 'pending' })).find((a) => Date.parse(a.expires_at) > now);
    return c.redirect(`/?answered=${encodeURIComponent(answered)}${next ? `#card-${next.id}` : ''}`, 303);
  }

  /** The line that says what the owner just answered (an approval or a run's question), with its run. */
  async function answeredNote(id: string | undefined): Promise<Child> {
    if (!id || !/^(apr|run)_[A-Za-z0-9-]{1,40}$/.test(id)) return null;
    if (id.startsWith('run_')) {
      const run = await store.loadRun(id);
      return (
        run && (
          <p class="notice" role="status">
            Answered · <a href={`/runs/${run.id}`}>run {run.id}</a>
          </p>
        )
      );
    }
    const a = await store.getApproval(id);
    if (!a || a.status === 'pending') return null;
    const done = { approved: 'Approved', rejected: 'Rejected', expired: 'Expired' }[a.status] ?? a.status;
    return (
      <p class="notice" role="status">
        {done}: {a.card.title} · <a href={`/runs/${a.run_id}`}>run {a.run_id}</a>
      </p>
    );
  }

  app.get('/', async (c) => {
    const s = session(c) as { who: Who; csrf: string };
    // The live stream starts where this page's view of the journal ends: nothing falls between.
    const after = await store.latestEventId();
    const body = await inbox(s.who, s.csrf);
    if (c.req.query('fragment')) return c.html(body);
    return page(
      c,
      200,
      'Inbox',
      <>
        {await answeredNote(c.req.query('answered'))}
        <div data-live={`/v1/events?after=${after}`} data-fragment="/?fragment=1">
          {body}
        </div>
      </>,
      s.who,
      s.csrf,
    );
  });

  app.get('/runs', async (c) => {
    const s = session(c) as { who: Who; csrf: string };
    const status = c.req.query('status');
    const valid = status === 'running' || status === 'paused' || status === 'done' || status === 'failed' ? status : undefined;
    const runs = (await store.listRuns({ status: valid, limit: 100 })).map((r) => ({ ...r, queued: d.isQueued(r.id) }));
    return page(
      c,
      200,
      'Runs',
      <div>
        <h1>Runs</h1>
        <form method="get" action="/runs" class="filters">
          <label>
            Status{' '}
            <select name="status">
              <option value="">any</option>
              {['running', 'paused', 'done', 'failed'].map((v) => (
                <option value={v} selected={v === valid}>
                  {v}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Filter</button>
        </form>
        <RunRows runs={runs} />
        {allows(s.who.role, 'approver') && (
          <form method="post" action="/runs" class="start">
            <h2>Start a run</h2>
            <input type="hidden" name="csrf" value={s.csrf} />
            <label>
              Request <textarea name="request" required maxlength={100000} />
            </label>
            <label>
              Mode{' '}
              <select name="mode">
                <option value="agent">Agent</option>
                <option value="plan">Plan</option>
                <option value="goal">Goal</option>
              </select>
            </label>
            <label>
              Session (optional) <input type="text" name="session" />
            </label>
            <button type="submit">Start</button>
          </form>
        )}
      </div>,
      s.who,
      s.csrf,
    );
  });

  post('/runs', 'approver', async (c, who, data) => {
    const mode = (['agent', 'plan', 'goal'] as Mode[]).find((m) => m === data.mode);
    if (!data.request?.trim()) throw new KeelError('bad_input', 'say what you want done');
    const leg = await keel.startRun(data.request, {
      model: d.model,
      pluginDirs: d.pluginDirs,
      mode,
      session: data.session?.trim() || undefined,
      principal: tokenPrincipal(who),
    });
    await d.audit(who, 'start_run', leg.run_id, JSON.stringify({ mode: mode ?? null, via: 'console' }));
    await d.accepted(leg);
    return c.redirect(`/runs/${leg.run_id}`, 303);
  });

  app.get('/runs/:id', async (c) => {
    const s = session(c) as { who: Who; csrf: string };
    return guarded(c, s.who, s.csrf, async () => {
      const run = await keel.getRun(c.req.param('id'));
      const body = await runPage(run, s.who, s.csrf);
      if (c.req.query('fragment')) return c.html(body);
      const live = run.status === 'running' || run.status === 'paused';
      return page(
        c,
        200,
        `Run ${run.id}`,
        <div data-live={live ? `/v1/runs/${run.id}/events` : undefined} data-fragment={`/runs/${run.id}?fragment=1`}>
          {body}
        </div>,
        s.who,
        s.csrf,
      );
    });
  });

  async function runPage(run: RunState, who: Who, csrf: string) {
    let registry: Registry | undefined;
    try {
      registry = await keel.registry(run.plugin_dirs);
    } catch {
      registry = undefined; // a run whose plugins no longer mount still shows its trace
    }
    const effectOf = (tool: string) => registry?.byName.get(tool)?.declaration.effect;
    const approvals = await store.listApprovals({ run_id: run.id });
    const can = allows(who.role, 'approver');
    const pendingCard =
      run.pause?.kind === 'approval' ? approvals.find((a) => a.id === (run.pause as { approval_id: string }).approval_id) : undefined;
    // D6 (issue 38): a delegate's run links its parent; a run links the delegates it started.
    const children = await keel.children(run.id);
    return (
      <div>
        <h1>
          Run <code>{run.id}</code>
        </h1>
        <p class="summary">
          <Badge kind={run.status}>{d.isQueued(run.id) ? 'queued' : run.status}</Badge> {run.reason ?? ''} · mode {run.mode} · model{' '}
          <code>{run.model}</code> · {run.model_calls} model call(s) · session <a href={`/sessions/${run.session_id}`}>{run.session_id}</a>
        </p>
        <p class="request">
          <q>{run.request}</q>
        </p>
        {run.parent && (
          <p class="parent">
            Delegate {run.parent.delegate} (task {run.parent.task_id}), started by run{' '}
            <a href={`/runs/${run.parent.run_id}`}>{run.parent.run_id}</a>
          </p>
        )}
        {children.length > 0 && (
          <section aria-labelledby="h-tasks">
            <h2 id="h-tasks">Delegates</h2>
            <ul class="tasks">
              {children.map((t) => (
                <li>
                  {t.task_id} {t.delegate}: <a href={`/runs/${t.run_id}`}>{t.run_id}</a>{' '}
                  <Badge kind={t.status as RunState['status']}>{t.status}</Badge>
                </li>
              ))}
            </ul>
          </section>
        )}
        {run.answer && (
          <section aria-labelledby="h-answer">
            <h2 id="h-answer">Answer</h2>
            <pre class="answer-text">{run.answer}</pre>
          </section>
        )}
        {pendingCard?.status === 'pending' && (
          <Card
            a={pendingCard}
            canAnswer={mayAnswerCard(who, pendingCard)}
            csrf={csrf}
            tools={can && !isMcpSession(run) ? registry?.byName : undefined}
          />
        )}
        {run.pause?.kind === 'ask_user' && <Question run={run} canAnswer={can} csrf={csrf} />}
        <section aria-labelledby="h-calls">
          <h2 id="h-calls">Calls</h2>
          {run.steps.length ? (
            <table class="calls">
              <Head cols={['Step', 'Call', 'Tool', 'Outcome', 'Arguments', 'Result']} />
              <tbody>
                {run.steps.map((r) => (
                  <tr class={`o-${r.outcome}`}>
                    <td data-label="Step">{r.step}</td>
                    <td data-label="Call">
                      <code class="id">{r.call_id}</code>
                    </td>
                    <td data-label="Tool">
                      {r.tool} {r.effect && <Badge kind={r.effect}>{r.effect}</Badge>}
                    </td>
                    <td data-label="Outcome">
                      {/* R27: a rejected call is the owner's decision, not an error: a neutral badge, not the red one. */}
                      <Badge kind={r.outcome === 'rejected' ? 'call-rejected' : r.outcome}>{OUTCOME_TEXT[r.outcome]}</Badge>
                    </td>
                    <td data-label="Arguments">
                      <code>{JSON.stringify(r.args)}</code>
                      {r.edited_from && (
                        // A7: the owner changed the call on its card: what the model asked for, and who changed it.
                        <p class="edited">
                          {`edited by ${r.edited_by ?? 'the approver'}; the model asked `}
                          <code>{JSON.stringify(r.edited_from)}</code>
                        </p>
                      )}
                    </td>
                    <td data-label="Result">
                      <pre>{r.result}</pre>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p>No calls yet.</p>
          )}
        </section>
        <section aria-labelledby="h-requests">
          <h2 id="h-requests">Model requests</h2>
          {run.requests.map((q) => (
            <details class="request-menu">
              <summary>
                Step {q.step}: {q.tools.length} tool(s) declared
                {q.tools.some((t) => !t.available) ? `, ${q.tools.filter((t) => !t.available).length} unavailable in ${run.mode} mode` : ''}
                {q.dropped.length ? `, ${q.dropped.length} left off` : ''}
                {q.input_tokens !== undefined ? ` · ${q.input_tokens} input tokens` : ''}
              </summary>
              <ul class="menu">
                {q.tools.map((t) => (
                  <li class={t.available ? '' : 'unavailable'}>
                    <code>{t.name}</code> {effectOf(t.name) && <Badge kind={effectOf(t.name) as string}>{effectOf(t.name)}</Badge>}
                    {!t.available && <Badge kind="unavailable">declared, unavailable</Badge>}
                  </li>
                ))}
              </ul>
              {q.dropped.length > 0 && <p class="dropped">Left off the menu: {q.dropped.join(', ')}</p>}
              {(q.found?.length ?? 0) > 0 && <p class="found">Found by find_tools: {q.found?.join(', ')}</p>}
            </details>
          ))}
        </section>
        {untrustedRead(run).length > 0 && (
          <section aria-labelledby="h-untrusted">
            <h2 id="h-untrusted">Read from outside you</h2>
            <ReadFromOutside untrusted={untrustedRead(run)} />
          </section>
        )}
        {run.effects.length > 0 && (
          <section aria-labelledby="h-effects">
            <h2 id="h-effects">Effects recorded</h2>
            <ul>
              {run.effects.map((e) => (
                <li>
                  <code>{e.tool}</code> <Badge kind={e.effect}>{e.effect}</Badge> <code class="id">{e.call_id}</code>{' '}
                  <code>{JSON.stringify(e.args)}</code>
                </li>
              ))}
            </ul>
          </section>
        )}
        {approvals.length > 0 && (
          <section aria-labelledby="h-approvals">
            <h2 id="h-approvals">Approvals</h2>
            <ul>
              {approvals.map((a) => (
                <li>
                  <code>{a.id}</code> {a.card.title}: <Badge kind={a.status}>{a.status}</Badge>
                  {a.answered_by ? ` by ${a.answered_by}` : ''}
                  {a.reason ? ` (${a.reason})` : ''}
                </li>
              ))}
            </ul>
          </section>
        )}
        <section aria-labelledby="h-conv">
          <h2 id="h-conv">Conversation</h2>
          <Transcript messages={run.messages} />
        </section>
        {(run.notes.length > 0 || run.warnings.length > 0) && (
          <section aria-labelledby="h-notes">
            <h2 id="h-notes">Notes</h2>
            <ul>
              {[...run.warnings.map((w) => `warning: ${w}`), ...run.notes].map((n) => (
                <li>{n}</li>
              ))}
            </ul>
          </section>
        )}
      </div>
    );
  }

  // A8: several cards in one action, each answered on its own and once (registered before /approvals/:id).
  post('/approvals/answer', 'approver', async (c, who, data) => {
    const decision = data.decision === 'approve' ? 'approve' : data.decision === 'reject' ? 'reject' : undefined;
    if (!decision) throw new KeelError('bad_input', 'choose Approve or Reject');
    const { ids, runs } = batchSelection(data);
    if (!ids.length && !runs.length) throw new KeelError('bad_input', 'select the cards to answer first');
    const o = { actor: who.name, reason: data.reason?.trim() || null, who: answerer(who) };
    // Issue 40: one batch, checked whole (its cap, every run known) before any card is answered, as the API's.
    const answers = await keel.answerApprovals(ids, decision, { ...o, runs });
    const results = [];
    for (const { leg, ...r } of answers) {
      if (r.approval) d.wake(r.approval.run_id);
      if (leg) await d.accepted(leg);
      results.push({ ...r, run_id: r.approval?.run_id });
    }
    return page(c, 200, 'Answered', <BatchResults results={results} />, who, data.csrf);
  });

  post('/approvals/:id', 'approver', async (c, who, data) => {
    const decision = data.decision === 'approve' ? 'approve' : data.decision === 'reject' ? 'reject' : undefined;
    if (!decision) throw new KeelError('bad_input', 'choose Approve or Reject');
    const id = c.req.param('id') as string;
    // A7: the edit form's fields, turned back into arguments; answerApproval checks them (schema, validate).
    let edit: Record<string, unknown> | undefined;
    if (data.edit === '1') {
      const a = await store.getApproval(id);
      if (!a) throw new KeelError('not_found', `no approval ${id}`);
      const tools = (await cardTools([a])).get(a.id) ?? new Map<string, ToolSpec>();
      try {
        edit = editedArguments(a, tools, data);
        const { approval, leg } = await keel.answerApproval(id, decision, { actor: who.name, arguments: edit, who: answerer(who) });
        d.wake(approval.run_id);
        if (leg) await d.accepted(leg);
        return nextCard(c, approval.id);
      } catch (err) {
        if (!(err instanceof KeelError && err.code === 'bad_input')) throw err;
        // Refused on the page: why, and the card again (still pending) to fix the edit.
        const fresh = (await store.getApproval(id)) ?? a;
        return page(
          c,
          400,
          'Edit refused',
          <div>
            <h1>Edit refused</h1>
            <p class="error" role="alert">{`Not approved: ${err.message}. Nothing ran; the card still waits.`}</p>
            <Card a={fresh} canAnswer={fresh.status === 'pending' && mayAnswerCard(who, fresh)} csrf={data.csrf} tools={tools} />
          </div>,
          who,
          data.csrf,
        );
      }
    }
    const { approval, leg } = await keel.answerApproval(id, decision, {
      actor: who.name,
      reason: data.reason?.trim() || null,
      consentWrites: data.consent_writes === '1',
      who: answerer(who),
    });
    d.wake(approval.run_id);
    if (leg) await d.accepted(leg);
    return nextCard(c, approval.id);
  });

  post('/runs/:id/answer', 'approver', async (c, who, data) => {
    const runId = c.req.param('id') as string;
    const confirm = data.confirm === 'yes' ? true : data.confirm === 'no' ? false : undefined;
    const leg = await keel.answerRun(runId, { text: data.text ?? '', ...(confirm !== undefined ? { confirm } : {}) });
    await d.audit(who, 'answer_question', runId, JSON.stringify({ confirm: confirm ?? null, via: 'console' }));
    await d.accepted(leg);
    return nextCard(c, runId);
  });

  app.get('/plugins', async (c) => {
    const s = session(c) as { who: Who; csrf: string };
    const reg = await keel.registry(d.pluginDirs);
    return page(
      c,
      200,
      'Plugins',
      <div>
        <h1>Plugins</h1>
        {(reg.policy?.unmatched ?? []).map((u) => (
          <p class="warning">{u}</p>
        ))}
        {reg.plugins.map((p) => (
          <section class={`plugin p-${p.status}`} aria-labelledby={`p-${p.name}`}>
            <h2 id={`p-${p.name}`}>
              {p.name} <small>{p.version}</small> <Badge kind={p.status}>{p.status}</Badge>
            </h2>
            <p class="dir">
              <code>{p.dir}</code>
            </p>
            {[...p.failures, ...p.degraded].map((r) => (
              <ReportRow row={r} kind="refused" />
            ))}
            {p.drift.map((r) => (
              <ReportRow row={r} kind="drift" />
            ))}
            {p.tools.length > 0 && (
              <table class="tools">
                <Head cols={['Tool', 'Effect', 'Gate', 'Guidance', 'Pinned', 'Answers directly']} />
                <tbody>
                  {p.tools.map((t) => (
                    <tr>
                      <td data-label="Tool">
                        <code>{t.name}</code>
                      </td>
                      <td data-label="Effect">
                        <Badge kind={t.effect}>{t.effect}</Badge>
                      </td>
                      <td data-label="Gate">
                        {t.gate}
                        {t.gate !== t.declared_gate ? ` (declared ${t.declared_gate}${t.gate_source ? `; ${t.gate_source}` : ''})` : ''}
                        {t.denied ? ' · denied by policy' : ''}
                      </td>
                      <td data-label="Guidance">{t.guidance ? 'yes' : 'no'}</td>
                      <td data-label="Pinned">{t.pinned ? 'yes' : 'no'}</td>
                      <td data-label="Answers directly">{t.answers_directly ? 'yes' : 'no'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        ))}
      </div>,
      s.who,
      s.csrf,
    );
  });

  app.get('/sessions/:id', async (c) => {
    const s = session(c) as { who: Who; csrf: string };
    return guarded(c, s.who, s.csrf, async () => {
      const id = c.req.param('id') as string;
      const rec = await store.getSession(id);
      if (!rec) throw new KeelError('not_found', `no session ${id}`);
      const runs = (await store.listRuns({ session_id: id, limit: 100 })).map((r) => ({ ...r, queued: d.isQueued(r.id) }));
      return page(
        c,
        200,
        `Session ${id}`,
        <div>
          <h1>
            Session <code>{id}</code>
          </h1>
          <p>
            Mode: <Badge kind={`mode-${rec.mode}`}>{rec.mode}</Badge>
          </p>
          {allows(s.who.role, 'approver') && (
            <form method="post" action={`/sessions/${id}/mode`} class="mode">
              <input type="hidden" name="csrf" value={s.csrf} />
              <label>
                Switch to{' '}
                <select name="mode">
                  {(['agent', 'plan', 'goal'] as Mode[]).map((m) => (
                    <option value={m} selected={m === rec.mode}>
                      {m}
                    </option>
                  ))}
                </select>
              </label>
              <button type="submit">Switch</button>
            </form>
          )}
          <h2>Approved contract</h2>
          {rec.contract ? <pre>{JSON.stringify(rec.contract, null, 2)}</pre> : <p>None.</p>}
          <h2>Runs</h2>
          <RunRows runs={runs} />
        </div>,
        s.who,
        s.csrf,
      );
    });
  });

  post('/sessions/:id/mode', 'approver', async (c, who, data) => {
    const id = c.req.param('id') as string;
    const mode = (['agent', 'plan', 'goal'] as Mode[]).find((m) => m === data.mode);
    if (!mode) throw new KeelError('bad_input', 'choose agent, plan or goal');
    await keel.setMode(id, mode);
    await d.audit(who, 'set_mode', id, JSON.stringify({ mode, via: 'console' }));
    return c.redirect(`/sessions/${id}`, 303);
  });

  // S7: the installable app (manifest, icons, service worker) and the Notifications page.
  mountPushConsole(app, { push: d.push, page, session, post, audit: d.audit });
}

/** Behind TLS (directly or through a proxy that says so), cookies are marked Secure. */
function secure(c: Context): boolean {
  return new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';
}
