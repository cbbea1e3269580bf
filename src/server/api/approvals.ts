/**
 * The approval routes: list and read cards, answer one (A3, with an edit: A7) or several at once (A8),
 * each as the calling token (A9: its groups decide a routed card). A card is answered once, through
 * the one answer function; a card past its expiry is expired first (A4) and never runs.
 */
import type { Answerer } from '../../approvals/who.js';
import { KeelError } from '../../util/errors.js';
import * as S from '../http/schemas.js';
import type { Api } from './context.js';
import { HttpProblem, json, problem, type Who } from './route.js';

/** A9: a token as the one who answers a card (its groups decide a routed card). */
const answerer = (who: Who): Answerer => ({ name: who.name, role: who.role, groups: who.groups, kind: 'token' });

/** Declares the approval routes, in the API's order (the batch answer before `POST /v1/approvals/:id`). */
export function approvalRoutes(api: Api): void {
  const { d, route, accepted, expire } = api;
  const { keel, store, hub } = d;

  route(
    {
      method: 'get',
      path: '/v1/approvals',
      summary: 'Approval cards, by status and run (pending ones past their expiry are marked expired first)',
      role: 'viewer',
      query: S.ApprovalsQuery,
      ok: { status: 200, description: 'the cards', schema: S.ApprovalListSchema },
      errors: [400, 401],
    },
    async (c, { query }) => {
      await expire();
      return json(c, 200, { approvals: await store.listApprovals({ status: query.status, run_id: query.run }) });
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/approvals/:id',
      summary: 'One approval card',
      role: 'viewer',
      ok: { status: 200, description: 'the card', schema: S.ApprovalSchema },
      errors: [401, 404],
    },
    async (c) => {
      const id = c.req.param('id') as string;
      await expire(); // a card past its expiry reads as expired, and its run is ended
      const a = await store.getApproval(id);
      if (!a) throw new KeelError('not_found', `no approval ${id}`);
      return json(c, 200, a);
    },
  );

  route(
    {
      method: 'post',
      path: '/v1/approvals/answer',
      summary:
        'Answer several cards in one action (A8): each on its own, once, audited; a card answered meanwhile is reported as a conflict and the others go on',
      role: 'approver',
      body: S.BatchApprovalBody,
      ok: { status: 200, description: 'one result per card, in the order given', schema: S.BatchAnsweredSchema },
      errors: [400, 401, 403, 404, 415],
    },
    async (c, { body, who }) => {
      if (!body.ids.length && body.run === undefined)
        throw new HttpProblem(400, 'give ids, or a run whose pending cards to answer', [
          { field: 'body.ids', message: 'give ids, or a run whose pending cards to answer' },
        ]);
      const answers = await keel.answerApprovals(body.ids, body.decision, {
        actor: who.name,
        reason: body.reason ?? null,
        run: body.run,
        who: answerer(who),
      });
      const results = [];
      for (const { leg, app, ...a } of answers) {
        if (a.approval) hub.wake(a.approval.run_id);
        results.push(a.approval ? { ...a, run: leg ? await accepted(leg) : null, ...(app ? { waits_for_app: app } : {}) } : a);
      }
      return json(c, 200, { results });
    },
  );

  route(
    {
      method: 'post',
      path: '/v1/approvals/:id',
      summary: 'Approve or reject a card (once): the run goes on, running exactly the approved calls',
      role: 'approver',
      body: S.ApprovalBody,
      ok: { status: 200, description: 'the answer is recorded; the run goes on', schema: S.ApprovalAnsweredSchema },
      errors: [400, 401, 403, 404, 409, 410, 415],
    },
    async (c, { body, who }) => {
      const id = c.req.param('id') as string;
      const { approval, leg, app } = await keel
        .answerApproval(id, body.decision, {
          actor: who.name,
          reason: body.reason ?? null,
          consentWrites: body.consent_writes,
          arguments: body.arguments,
          who: answerer(who),
        })
        .catch((err: unknown) => {
          // A7: a refused edit names the field (`arguments`, or `arguments.<call_id>` on a card of several calls).
          const field = err instanceof KeelError && err.code === 'bad_input' ? /^(arguments(?:\.[^:\s]+)?): /.exec(err.message) : null;
          throw field
            ? new HttpProblem(400, err instanceof Error ? err.message : String(err), [
                { field: `body.${field[1]}`, message: err instanceof Error ? err.message : '' },
              ])
            : err;
        });
      hub.wake(approval.run_id);
      // An MCP session's card: the MCP server holding the call carries it out; no leg runs here.
      const run = leg ? await accepted(leg) : null;
      if (approval.status === 'expired') {
        // The run ends (nothing runs); the caller is told the card had expired.
        return problem(c, 410, `approval ${id} expired at ${approval.expires_at} before it was answered; nothing ran`);
      }
      // R18: a run only its application can carry on (its model, its tools in code): recorded; it waits for the app.
      return json(c, 200, { approval, run, ...(app ? { waits_for_app: app } : {}) });
    },
  );
}
