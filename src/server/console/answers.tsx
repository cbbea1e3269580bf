/**
 * The console's answers: a card's Approve or Reject (with its edited calls, A7), several cards in one
 * action (A8), and a run's question — each through Keel's one answer path (A3) with the logged-in
 * token as who answers (A9), handed to the server's runner, then on to the next pending card (S8).
 * Never decides itself whether an answer or an edit is allowed: `keel.answerApproval(s)` and
 * `keel.answerRun` do, and a refused edit is shown with the card still pending.
 */
import type { Context } from 'hono';
import type { ToolSpec } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { answerer, Card, mayAnswerCard } from './cards.js';
import { BatchResults, batchSelection, editedArguments } from './edit.js';
import { cardTools } from './inbox.js';
import type { ConsoleRoutes } from './shell.js';

export function mountAnswers(routes: ConsoleRoutes): void {
  const { d, page, post } = routes;
  const { keel, store } = d;

  /**
   * After an answer (a card's Approve or Reject, a question's answer) the owner lands on the next
   * pending card, oldest first, or on the inbox when none is left; the inbox says what was answered.
   */
  async function nextCard(c: Context, answered: string): Promise<Response> {
    const now = Date.now();
    const next = (await store.listApprovals({ status: 'pending' })).find((a) => Date.parse(a.expires_at) > now);
    return c.redirect(`/?answered=${encodeURIComponent(answered)}${next ? `#card-${next.id}` : ''}`, 303);
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
      const tools = (await cardTools(d, [a])).get(a.id) ?? new Map<string, ToolSpec>();
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
}
