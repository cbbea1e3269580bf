/**
 * The session routes: a session with its mode, approved contract and runs, and switching its mode.
 * A mode changes only through an authenticated approver's call, audited; never by a run.
 */
import { KeelError } from '../../util/errors.js';
import * as S from '../http/schemas.js';
import type { Api } from './context.js';
import { json } from './route.js';

/** Declares the session routes. */
export function sessionRoutes(api: Api): void {
  const { d, route, audit, summary } = api;
  const { keel, store } = d;

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

  async function sessionView(id: string) {
    const rec = await store.getSession(id);
    if (!rec) throw new KeelError('not_found', `no session ${id}`);
    const runs = await store.listRuns({ session_id: id, limit: 200 });
    return { ...rec, runs: runs.map(summary) };
  }
}
