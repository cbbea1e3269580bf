/**
 * The runs routes: start a run, list and read runs, answer a run's question, carry a run on, cancel
 * it. A run may use only the plugin folders and the models the server allows (one refusal, byte for
 * byte, for a model it may not choose: issue 40); every change is audited with the token's name, and
 * nothing here answers for anyone but the calling token.
 */
import { resolve } from 'node:path';
import { toResult } from '../../loop/result.js';
import { allowedModel } from '../../models/index.js';
import { SCRIPT_MAX_BYTES } from '../../models/script.js';
import { ModelError } from '../../models/types.js';
import type { RunSummary } from '../../types/index.js';
import { tokenPrincipal } from '../access/tokens.js';
import * as S from '../http/schemas.js';
import type { Api } from './context.js';
import { HttpProblem, json } from './route.js';

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

/** A model a request may not choose: one refusal, byte for byte, whatever the reason (issue 40). */
export function modelRefused(): HttpProblem {
  return new HttpProblem(403, 'this server does not let a run choose that model', [
    {
      field: 'body.model',
      message: `not allowed here (keel serve --allow-model PREFIX allows a provider, and --allow-model script:DIR/ the scripts inside DIR: regular files of at most ${SCRIPT_MAX_BYTES} bytes that load)`,
    },
  ]);
}

/** Declares the runs routes on the app, in the API's order. */
export function runRoutes(api: Api): void {
  const { d, route, accepted, audit, summary } = api;
  const { keel, store, hub, runner } = d;
  const serverDirs = d.pluginDirs.map((p) => resolve(p));

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
}
