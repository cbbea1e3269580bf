/**
 * The console's runs (`/runs`): the list, filtered by status, and the form that starts a run through
 * the server's runner with the token as its principal (PC9); and the runs table the sessions page
 * shares. Never renders a request unescaped (Hono JSX), and never starts a run for a viewer.
 */
import type { Hono } from 'hono';
import type { FC } from 'hono/jsx';
import type { Mode, RunSummary } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { allows, tokenPrincipal } from '../access/tokens.js';
import { Badge, type ConsoleRoutes, Head, Time, type Who } from './shell.js';

export const RunRows: FC<{ runs: (RunSummary & { queued: boolean })[] }> = ({ runs }) =>
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

export function mountRuns(app: Hono, routes: ConsoleRoutes): void {
  const { d, page, session, post } = routes;
  const { keel, store } = d;

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
}
