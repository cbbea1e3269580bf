/**
 * The legs that continue a run: after an answer (R17; the core's own confirmation of held writes,
 * R16), an approval (A2), a delegate's task (D2), an interruption, a takeover (recover), plus reopening a question and cancelling — each inside its
 * leg's span, completing the step its pause left open, then driving on. Never runs a call that is
 * not pinned on an approved card, nor any call twice (the ledger), nor leaves a call without a
 * result (R19).
 */

import { recordCall } from '../policy/gate.js';
import type { Answer, ApprovalRecord, CallRecord, LoopEvent, PendingResult, RunResult } from '../types/index.js';
import { callKey, canonicalJson } from '../util/json.js';
import { endLegSpan, endToolSpan, type LegKind, recordError, startLegSpan, startToolSpan, toolSpan } from '../util/telemetry.js';
import { truncate } from '../util/text.js';
import { finishStep } from './calls.js';
import { drive } from './drive.js';
import { end, saved } from './ends.js';
import { gateOf, type LegState } from './leg-state.js';
import { coreResult, type Executed, executeCall, prepareCall } from './pipeline.js';
import { answerOpenCalls } from './recovery.js';
import { expiredAnswer, toResult } from './result.js';
import type { ApprovalPause, QuestionPause, RunView, TaskPauseOf } from './run.js';
import { SAY } from './sentences.js';
import { taskResult } from './tasks.js';

/**
 * A leg's body inside its invoke_agent span, ended exactly once however the leg stops: an end, a
 * pause, a thrown error, or a consumer that closes the generator early.
 */
async function* traced(
  leg: LegState,
  kind: LegKind,
  body: () => AsyncGenerator<LoopEvent, RunResult>,
): AsyncGenerator<LoopEvent, RunResult> {
  const span = (leg.span = startLegSpan(kind, leg.run.state, leg.deps.model.spec));
  try {
    return yield* body();
  } catch (err) {
    recordError(span, err);
    throw err;
  } finally {
    endLegSpan(span, leg.run.state);
    leg.run.legEnds();
  }
}

/**
 * R17: the answer becomes the ask_user call's result (same call id) and the run goes on. For a
 * confirmation (R16) the result says yes or no in the core's words, and the record keeps the decision.
 */
export function continueAfterAnswer(leg: LegState, pause: QuestionPause, answer: Answer): AsyncGenerator<LoopEvent, RunResult> {
  return traced(leg, 'answer', async function* () {
    leg.run.resume();
    yield leg.begin(true);
    const decision: CallRecord['decision'] = pause.confirm ? (answer.confirm ? 'yes' : 'no') : undefined;
    const content = pause.confirm ? (answer.confirm ? SAY.confirmed : SAY.declined)(pause.confirm.tools, answer.text) : answer.text;
    const records = pause.calls.map((c) =>
      c.call_id === pause.call_id ? { ...c, result: content, ...(decision ? { decision } : {}) } : c,
    );
    const results = pause.results.map((r) => (r.call_id === pause.call_id ? { ...r, content } : r));
    for (const record of records) if (record.call_id === pause.call_id) yield { type: 'tool_result', step: pause.step, record };
    if (pause.by_core) return yield* afterHeldAnswer(leg, pause, answer, records);
    return yield* continueStep(leg, records, results);
  });
}

/**
 * R16 (issue 47): the core's own confirmation of writes the model held and never asked about is
 * answered. The decision joins the trace as an answered question would (the gate's consent); a yes
 * runs exactly the held calls, once, through the one pipeline and gate, each under an id of its own
 * (no model call is invented: the transcript gets the core's message, not tool results); a no runs
 * nothing. Then the model has its turn. The pause stays until the calls are done, so a process that
 * dies while running them leaves the question open again, and a call whose effect was recorded is
 * never run a second time (its outcome is unknown).
 */
async function* afterHeldAnswer(
  leg: LegState,
  pause: QuestionPause,
  answer: Answer,
  records: CallRecord[],
): AsyncGenerator<LoopEvent, RunResult> {
  const s = leg.run.state;
  const tools = pause.confirm?.tools ?? [];
  for (const r of records) recordCall(leg.gate, r);
  const ran: CallRecord[] = [];
  const lines: string[] = [];
  if (answer.confirm) {
    const pool = leg.deps.registry.byName;
    const ctx = (leg.callContext ??= leg.executeContext());
    for (const item of pause.confirm?.items ?? []) {
      const call = { id: `${item.call_id}.confirmed`, name: item.tool, args: item.args ?? {} };
      const tool = pool.get(call.name);
      const prepared = prepareCall({
        call,
        pool,
        menu: { admissible: (n) => pool.has(n) },
        mode: s.mode,
        gate: leg.gate,
        pending: { question: false, approvals: false },
        policy: leg.callPolicy(),
      });
      const span = startToolSpan(leg.span, call.name, call.id);
      let ex: Omit<Executed, 'outcome'> & { outcome: CallRecord['outcome'] };
      let key: string | undefined;
      try {
        if (prepared.kind === 'execute') {
          key = prepared.key;
          // Run once: a call whose effect was recorded (a process died while it ran) is never run again.
          ex = s.effects.some((e) => e.call_id === call.id)
            ? { ...coreResult(SAY.unknownOutcome(call.name)), unknown_outcome: true }
            : await executeCall(ctx, prepared.tool, call.id, prepared.args);
        } else if (prepared.kind === 'answered' || prepared.kind === 'repeat') {
          ex = { outcome: prepared.kind === 'repeat' ? 'repeat' : prepared.outcome, content: prepared.result, is_error: true };
        } else ex = coreResult(SAY.heldNotRunAfterYes(call.name));
      } catch (err) {
        recordError(span, err);
        span.end();
        throw err;
      }
      endToolSpan(span, ex.outcome, ex.is_error, tool?.declaration.effect);
      const rec: CallRecord = {
        step: pause.step,
        call_id: call.id,
        tool: call.name,
        args: item.args,
        outcome: ex.outcome,
        result: ex.content,
        is_error: ex.is_error,
        effect: tool?.declaration.effect,
        by_core: ex.outcome !== 'ran',
        ...(prepared.verdict ? { policy: [...prepared.verdict.policies] } : {}),
      };
      if (ex.untrusted !== undefined) rec.untrusted = ex.untrusted;
      if (ex.unknown_outcome) leg.run.note(`unknown outcome: ${call.name} (${call.id}) after the user's yes`);
      recordCall(leg.gate, rec, key);
      ran.push(rec);
      lines.push(SAY.heldCallResult(call.name, truncate(canonicalJson(item.args ?? {}), 500), ex.outcome, ex.content));
      yield { type: 'tool_result', step: pause.step, record: rec };
    }
  }
  // The question's record and the calls it let run join the trace; no model call waits on them.
  leg.run.completeStep([...records, ...ran], []);
  leg.run.addCoreMessage(answer.confirm ? SAY.heldRanAfterYes(tools, answer.text, lines) : SAY.heldDeclinedAfterAsk(tools, answer.text));
  leg.gate = gateOf(leg.run.state, leg.deps);
  leg.stepUnsaved = true;
  return yield* drive(leg);
}

/**
 * A2: after the owner answered the card. Approved: exactly the pinned calls run, through the one
 * call pipeline, each at most once (the ledger). Rejected or expired: nothing runs, and each call's
 * result says so. Then the run goes on (expired: it stops, with a notice).
 */
export function continueAfterApproval(leg: LegState, pause: ApprovalPause, approval: ApprovalRecord): AsyncGenerator<LoopEvent, RunResult> {
  return traced(leg, 'approval', async function* () {
    leg.run.resume();
    yield leg.begin(true);
    const records = pause.calls.map((c) => ({ ...c }));
    const results = pause.results.map((r) => ({ ...r }));
    const store = leg.deps.store;
    const ctx = leg.executeContext(approval.status === 'approved' && store ? { store, approval_id: approval.id } : undefined);
    for (const asked of pause.items) {
      // A7: the owner may have changed the arguments on the card: the approval is pinned to those.
      const pinned = approval.items.find((i) => i.call_id === asked.call_id);
      const edited = approval.status === 'approved' && pinned?.original_args ? pinned : undefined;
      const item = edited ?? asked;
      const tool = leg.deps.registry.byName.get(item.tool);
      const span = startToolSpan(leg.span, item.tool, item.call_id);
      let ex: Executed;
      try {
        if (approval.status === 'expired') ex = coreResult(SAY.approvalExpired(item.tool, approval.id));
        // R27: a rejection is the owner's decision, not an error: the call's own outcome, with the reason.
        else if (approval.status !== 'approved')
          ex = { outcome: 'rejected', content: SAY.rejected(item.tool, approval.reason), is_error: true };
        else ex = tool ? await executeCall(ctx, tool, item.call_id, item.args) : coreResult(SAY.noLongerAvailable(item.tool));
        if (edited) ex = { ...ex, content: `${SAY.editedByOwner(item.tool, truncate(canonicalJson(item.args), 2000))}\n${ex.content}` };
      } catch (err) {
        recordError(span, err);
        span.end();
        throw err;
      }
      endToolSpan(span, ex.outcome, ex.is_error, tool?.declaration.effect);
      const rec = records.find((c) => c.call_id === item.call_id);
      const res = results.find((r) => r.call_id === item.call_id);
      if (!rec || !res) continue;
      Object.assign(rec, { outcome: ex.outcome, result: ex.content, is_error: ex.is_error, by_core: ex.outcome !== 'ran' });
      if (ex.untrusted !== undefined) rec.untrusted = ex.untrusted;
      // A7: the trace keeps what ran and what the model asked for, and who changed it; the gate's
      // repeat guard then knows the edited call as the one that ran.
      if (edited) Object.assign(rec, { args: edited.args, edited_from: edited.original_args, edited_by: edited.edited_by });
      // R16: the approver let the plan's (or goal's) confirm-once writes run: the trace keeps it, so the gate does.
      if (approval.consent_writes && ex.outcome === 'ran') rec.consent_writes = true;
      Object.assign(res, { content: ex.content, is_error: ex.is_error });
      if (ex.unknown_outcome) {
        leg.run.note(`unknown outcome: ${item.tool} (${item.call_id}) under approval ${approval.id}`);
      }
      if (ex.refused !== undefined) {
        leg.run.note(`approved call refused: ${item.tool} (${item.call_id}) under approval ${approval.id}: ${ex.refused}`);
      }
      yield { type: 'tool_result', step: pause.step, record: rec };
    }
    // R13: a call identical to a carded one is answered with that call's result, marked as its repeat.
    for (const rec of records) {
      const res = results.find((r) => r.call_id === rec.call_id);
      if (rec.outcome !== 'repeat' || !res || res.content !== undefined) continue;
      const key = callKey(rec.tool, rec.args ?? {});
      const first = pause.items.find((i) => callKey(i.tool, i.args) === key);
      const done = first && records.find((c) => c.call_id === first.call_id);
      const content = done ? SAY.repeat(rec.tool, done.call_id, done.result) : SAY.stoppedBeforeApproval(rec.tool);
      Object.assign(rec, { result: content, is_error: done ? done.is_error : true });
      Object.assign(res, { content, is_error: rec.is_error });
      yield { type: 'tool_result', step: pause.step, record: rec };
    }
    if (approval.status === 'expired') {
      leg.run.completeStep(records, results);
      leg.run.note(`approval ${approval.id} expired`);
      return yield* end(leg, 'failed', 'approval_expired', undefined, expiredAnswer(approval));
    }
    return yield* continueStep(leg, records, results);
  });
}

/**
 * D2: the delegate's run this run waited for has ended: its report becomes the task_wait call's
 * result (same call id; U2: marked untrusted when the delegate had read others' words), and the
 * run goes on. A delegate that has not ended is refused before this leg is made (continueLeg).
 */
export function continueAfterTask(leg: LegState, pause: TaskPauseOf, child: RunView): AsyncGenerator<LoopEvent, RunResult> {
  return traced(leg, 'task', async function* () {
    leg.run.resume();
    yield leg.begin(true);
    const out = taskResult(child, pause.task_id);
    const records = pause.calls.map((c) =>
      c.call_id === pause.call_id ? { ...c, result: out.content, ...(out.untrusted ? { untrusted: out.untrusted } : {}) } : c,
    );
    const results = pause.results.map((r) => (r.call_id === pause.call_id ? { ...r, content: out.content } : r));
    for (const record of records) if (record.call_id === pause.call_id) yield { type: 'tool_result', step: pause.step, record };
    return yield* continueStep(leg, records, results);
  });
}

/** A run interrupted between steps goes on from where it stopped. */
export function continueAfterInterruption(leg: LegState): AsyncGenerator<LoopEvent, RunResult> {
  return traced(leg, 'interruption', async function* () {
    leg.run.resume();
    leg.run.clearPause();
    yield leg.begin(true);
    return yield* drive(leg);
  });
}

/**
 * A run whose process died mid-leg, taken over: every call of the last reply that has no result
 * gets one in the core's words — of unknown outcome when its effect was recorded as started, else
 * interrupted — and none is run again. Then the run goes on.
 */
export function recover(leg: LegState): AsyncGenerator<LoopEvent, RunResult> {
  return traced(leg, 'recover', async function* () {
    leg.run.resume();
    leg.run.note('taken over from a process that stopped');
    yield leg.begin(true);
    yield* closeInFlight(leg);
    return yield* drive(leg);
  });
}

/** The answer to the run's question died with its process: the question is open again. */
export function reopenQuestion(leg: LegState): AsyncGenerator<LoopEvent, RunResult> {
  return traced(leg, 'reopen', async function* () {
    yield leg.begin(true);
    leg.release();
    await leg.run.reopenQuestion();
    const pause = leg.run.state.pause;
    if (pause) yield { type: 'paused', pause };
    const result = toResult(leg.run.state);
    yield { type: 'run_finished', result };
    return result;
  });
}

/** Ends an unfinished run for good (`keel runs cancel`), answering any call left without a result. */
export function cancel(leg: LegState, why: string): AsyncGenerator<LoopEvent, RunResult> {
  return traced(leg, 'cancel', async function* () {
    leg.run.resume();
    yield leg.begin(true);
    yield* closeInFlight(leg);
    return yield* end(leg, 'failed', 'cancelled', why);
  });
}

/** R19: the calls of the last reply that have no result yet get one, so the transcript stays paired. */
export async function* closeInFlight(leg: LegState): AsyncGenerator<LoopEvent, void> {
  const open = answerOpenCalls(leg.run.state, (tool) => leg.deps.registry.byName.get(tool)?.declaration.effect);
  if (!open) {
    leg.run.clearPause();
    return;
  }
  for (const u of open.unknown) leg.run.note(`unknown outcome: ${u}`);
  for (const record of open.records) {
    toolSpan(leg.span, record);
    yield { type: 'tool_result', step: record.step, record };
  }
  leg.run.completeStep(open.records, open.results);
  leg.gate = gateOf(leg.run.state, leg.deps);
  yield* saved(leg);
}

/** Completes the step a pause interrupted, then drives on. */
export async function* continueStep(leg: LegState, records: CallRecord[], results: PendingResult[]): AsyncGenerator<LoopEvent, RunResult> {
  const priorToolCalls = leg.run.state.steps.some((r) => r.tool !== 'ask_user');
  const ending = await finishStep(leg, records, results, undefined, priorToolCalls);
  if (ending) return yield* end(leg, ...ending);
  leg.gate = gateOf(leg.run.state, leg.deps);
  return yield* drive(leg);
}
