/**
 * The console's session page (`/sessions/:id`): its mode, the form that switches it (audited), its
 * approved contract and its runs. Never renders a value unescaped (Hono JSX), and never switches a
 * mode for a viewer.
 */
import type { Hono } from 'hono';
import type { Mode } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { allows } from '../access/tokens.js';
import { RunRows } from './runs.js';
import { Badge, type ConsoleRoutes, type Who } from './shell.js';

export function mountSessions(app: Hono, routes: ConsoleRoutes): void {
  const { d, page, session, post, guarded } = routes;
  const { keel, store } = d;

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
}
