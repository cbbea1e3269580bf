/**
 * The console's inbox (`/`): the cards waiting for approval (with the batch form, A8), the runs'
 * questions, and the cards answered or expired today; live-updated through the API's event stream,
 * and saying what the owner just answered. Never answers anything itself (the forms post to
 * answers.tsx), and expires a card only through `keel.expireApprovals` and the server's runner (A4).
 */
import type { Hono } from 'hono';
import type { Child } from 'hono/jsx';
import { isMcpSession } from '../../keel/keel.js';
import type { ApprovalRecord, RunState, ToolSpec } from '../../types/index.js';
import { allows } from '../access/tokens.js';
import { Card, mayAnswerCard, Question } from './cards.js';
import { BatchForm } from './edit.js';
import type { ConsoleDeps, ConsoleRoutes, Who } from './shell.js';

/** A7: the tools of each card's run (its pool), for the edit form; a run whose plugins no longer mount gets none. */
export async function cardTools(d: ConsoleDeps, cards: readonly ApprovalRecord[]): Promise<Map<string, ReadonlyMap<string, ToolSpec>>> {
  const { keel, store } = d;
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

export function mountInbox(app: Hono, routes: ConsoleRoutes): void {
  const { d, page, session } = routes;
  const { keel, store } = d;

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
    const tools = can ? await cardTools(d, pending) : new Map<string, ReadonlyMap<string, ToolSpec>>();
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
}
