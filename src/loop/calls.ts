/**
 * Running one reply's calls: each through the gate and the one call pipeline, in call order (R22),
 * then the step's pause (a card, a question, a delegate's task; the core's own question when the
 * model answers while writes are held, R16) or the evaluator's say on the step (R20, R12). Never executes a call the gate did not allow: every call is prepared (mode, policy,
 * repeat guard, consent) before it runs, and a call that needs a card waits for its answer.
 */
import { randomUUID } from 'node:crypto';
import { buildCard } from '../approvals/card.js';
import { recordCall } from '../policy/gate.js';
import type { Menu } from '../prompt/menu.js';
import type {
  ApprovalItem,
  ApprovalRecord,
  CallRecord,
  Confirmation,
  EndReason,
  LoopEvent,
  PendingResult,
  RunResult,
  ToolCall,
} from '../types/index.js';
import { endToolSpan, recordError, startToolSpan } from '../util/telemetry.js';
import { type Ending, end, pause } from './ends.js';
import { countTrailingFailures, describeFailures, heldConfirmation, lastUsable } from './evaluator.js';
import { isFindTools } from './find-tools.js';
import { goalProgress } from './goal.js';
import type { LegState } from './leg-state.js';
import { executeCall, type Prepared, prepareApproval, prepareCall, type Ready } from './pipeline.js';
import { SAY } from './sentences.js';
import { type TaskWait, takeTaskWait } from './tasks.js';

type EndOn = { reason: EndReason; answer: string };

/** Each call of one reply through the pipeline, in order (R22); returns a result when the run stops here. */
export async function* runCalls(
  leg: LegState,
  step: number,
  calls: readonly ToolCall[],
  menu: Menu,
  cutOff?: { call_id: string; limit: string },
): AsyncGenerator<LoopEvent, RunResult | undefined> {
  const s = leg.run.state;
  const pool = leg.deps.registry.byName;
  const records: CallRecord[] = [];
  const results: PendingResult[] = [];
  const approvals: ApprovalItem[] = [];
  let question: { call_id: string; question: string; confirm?: Confirmation } | undefined;
  /** D2: a task_wait of this reply that waits for a delegate still working (with a store: the run pauses for it). */
  let task: (TaskWait & { call_id: string }) | undefined;
  let endOn: EndOn | undefined;
  let last: LoopEvent | undefined;
  const priorToolCalls = s.steps.some((r) => r.tool !== 'ask_user');
  const ctx = (leg.callContext ??= leg.executeContext());

  for (const call of calls) {
    const tool = pool.get(call.name);
    // Every call gets its span, answered by the core or run; it ends before the call's result is yielded.
    const span = startToolSpan(leg.span, call.name, call.id);
    let record: CallRecord;
    let pending = false;
    /** The call's repeat key, when prepare made it (the gate remembers the call by it). */
    let key: string | undefined;
    try {
      const first: Prepared =
        call.id === cutOff?.call_id
          ? { kind: 'answered', outcome: 'invalid_arguments', result: SAY.toolCallCutOff(call.name, cutOff.limit) }
          : prepareCall({
              call,
              pool,
              menu,
              mode: s.mode,
              gate: leg.gate,
              pending: { question: question !== undefined, approvals: approvals.length > 0 },
              policy: leg.callPolicy(),
            });
      const prepared: Ready =
        first.kind === 'needs_card' ? await prepareApproval(call.id, first.tool, first.args, first.verdict, first.outside) : first;
      const rec = (outcome: CallRecord['outcome'], result: string, is_error: boolean, by_core: boolean): CallRecord => ({
        step,
        call_id: call.id,
        tool: call.name,
        args: call.args ?? null,
        outcome,
        result,
        is_error,
        effect: tool?.declaration.effect,
        by_core,
        // PC11: the trace names the policies that decided the call.
        ...(first.verdict ? { policy: [...first.verdict.policies] } : {}),
      });
      switch (prepared.kind) {
        case 'answered':
          record = rec(prepared.outcome, prepared.result, true, true);
          break;
        case 'repeat': {
          const e = prepared.earlier;
          record = rec('repeat', prepared.result, e.is_error, true);
          const usable = !e.is_error && e.content.trim() !== '';
          if (tool?.declaration.answers_directly && usable) endOn ??= { reason: 'answered_by_tool', answer: e.content };
          else if (prepared.nth >= 2) endOn ??= { reason: 'stalled', answer: lastUsable([...s.steps, ...records]) ?? '' };
          break;
        }
        case 'ask_user':
          // R16: asked while writes are held (earlier in the run, or earlier in this reply), it is a confirmation.
          question = {
            call_id: call.id,
            question: prepared.question,
            confirm: heldConfirmation([...s.steps, ...records], leg.gate.heldAwaitingAnswer, pool, leg.gate.untrusted),
          };
          record = rec('ran', '', false, false);
          pending = true;
          break;
        case 'approval':
          approvals.push(prepared.item);
          record = rec('awaiting_approval', '', false, true);
          pending = true;
          break;
        case 'repeat_of_card':
          // R13: answered with the carded call's result once the card is answered; never run itself.
          record = rec('repeat', '', false, true);
          pending = true;
          break;
        case 'execute': {
          leg.admitted.add(prepared.tool.name);
          const runs = isFindTools(prepared.tool) ? leg.finder(prepared.tool, menu) : prepared.tool;
          const ex = await executeCall(ctx, runs, call.id, prepared.args);
          const wait = takeTaskWait(s.id, call.id);
          if (wait && ex.outcome === 'ran' && leg.deps.store && !task) {
            // D2: the run waits for the delegate (stored), not this process: its result comes when the delegate ends.
            task = { ...wait, call_id: call.id };
            record = rec('ran', '', false, false);
            pending = true;
            break;
          }
          record = rec(ex.outcome, ex.content, ex.is_error, ex.outcome !== 'ran');
          if (ex.untrusted !== undefined) record.untrusted = ex.untrusted;
          // U4: the trace says which operator rule let this write run after untrusted content.
          if (prepared.allowed_after_untrusted) record.allowed_after_untrusted = prepared.allowed_after_untrusted;
          key = prepared.key;
          break;
        }
      }
    } catch (err) {
      recordError(span, err);
      span.end();
      throw err;
    }
    endToolSpan(span, record.outcome, record.is_error, record.effect);
    records.push(record);
    results.push({ call_id: call.id, name: call.name, content: pending ? undefined : record.result, is_error: record.is_error });
    if (!pending) {
      recordCall(leg.gate, record, key);
      // Issue 29: the reply's last result waits for the step's save, which journals it (below).
      if (call === calls[calls.length - 1]) last = { type: 'tool_result', step, record };
      else yield { type: 'tool_result', step, record };
    } else if (record.outcome === 'awaiting_approval') recordCall(leg.gate, record);
  }

  const store = leg.deps.store;
  if (task && (approvals.length || question)) {
    // D2: a run waits for one thing at a time: the person comes first, and the model asks for the task again.
    const rec = records.find((r) => r.call_id === task?.call_id);
    const res = results.find((r) => r.call_id === task?.call_id);
    if (rec && res) {
      rec.result = res.content = SAY.taskStillRunning(task.task_id);
      recordCall(leg.gate, rec);
      yield { type: 'tool_result', step, record: rec };
    }
    task = undefined;
  }
  if (last) {
    if (store && (approvals.length || question || task)) yield last;
    else leg.run.defer(last);
  }
  if (store && approvals.length) {
    const seq = leg.run.nextPauseSeq();
    const id = `apr_${randomUUID().slice(0, 8)}`;
    const card = buildCard(approvals, pool, s.request, leg.gate.untrusted);
    // D3: a delegate's card names the chain: which delegate, started by which run, for what request.
    if (s.parent) card.chain = { delegate: s.parent.delegate, parent_run: s.parent.run_id, request: s.parent.request };
    const now = leg.deps.now?.() ?? new Date();
    // A1: the card is stored by the pause's own save — a process killed before it leaves
    // neither, and the step is done again; never a card no paused run waits on.
    const record: ApprovalRecord = {
      id,
      run_id: s.id,
      pause_seq: seq,
      items: approvals,
      card,
      status: 'pending',
      requested_at: now.toISOString(),
      expires_at: new Date(now.getTime() + leg.limits.approvalTtlMs).toISOString(),
      answered_at: null,
      answered_by: null,
      reason: null,
      consent_writes: false,
    };
    return yield* pause(leg, { kind: 'approval', seq, approval_id: id, card, step, items: approvals, results, calls: records }, record);
  }
  if (store && question) {
    const q = question;
    return yield* pause(leg, {
      kind: 'ask_user',
      seq: leg.run.nextPauseSeq(),
      call_id: q.call_id,
      question: q.question,
      ...(q.confirm ? { confirm: q.confirm } : {}),
      step,
      results,
      calls: records,
    });
  }
  if (store && task) {
    return yield* pause(leg, {
      kind: 'task',
      seq: leg.run.nextPauseSeq(),
      call_id: task.call_id,
      task_id: task.task_id,
      child_run: task.child_run,
      delegate: task.delegate,
      step,
      results,
      calls: records,
    });
  }
  const ending = await finishStep(leg, records, results, endOn, priorToolCalls);
  return ending ? yield* end(leg, ...ending) : undefined;
}

/**
 * R16 (issue 47): the model answered while writes it never asked about are held. The core asks the
 * person itself — a confirmation of the held calls, each in its tool's own words (describe), with what
 * the run has read — so the model's claim that it acted is never the final answer of a run in which it
 * did not. No model call waits on the question (`by_core`): its record joins the trace when answered.
 */
export async function* askAboutHeld(leg: LegState, step: number): AsyncGenerator<LoopEvent, RunResult> {
  const s = leg.run.state;
  const confirm = heldConfirmation(s.steps, leg.gate.heldAwaitingAnswer, leg.deps.registry.byName, leg.gate.untrusted);
  const seq = leg.run.nextPauseSeq();
  const call_id = `keel_confirm_${seq}`;
  const named = (confirm?.items ?? []).map((i) => (i.title ? `${i.tool} (${i.title})` : i.tool));
  const question = SAY.heldUnasked(named.length ? named : [...leg.gate.heldAwaitingAnswer]);
  const record: CallRecord = {
    step,
    call_id,
    tool: 'ask_user',
    args: { question },
    outcome: 'ran',
    result: '',
    is_error: false,
    by_core: true,
  };
  return yield* pause(leg, {
    kind: 'ask_user',
    seq,
    call_id,
    question,
    ...(confirm ? { confirm } : {}),
    by_core: true,
    step,
    results: [],
    calls: [record],
  });
}

/**
 * Appends a completed step's results (call order, R22) and applies the evaluator and R12: the end
 * they call for, if any (a plain function: a step that goes on passes no generator of its own).
 */
export async function finishStep(
  leg: LegState,
  records: CallRecord[],
  results: PendingResult[],
  endOn: EndOn | undefined,
  priorToolCalls: boolean,
): Promise<Ending | undefined> {
  const s = leg.run.state;
  leg.run.completeStep(records, results);
  for (const r of records) {
    if (r.outcome === 'ran' && (r.tool === 'submit_plan' || r.tool === 'submit_goal')) await leg.adoptContract(r);
  }
  const goal = goalProgress(s);
  if (goal?.boundary && records.some((r) => r.tool === 'report_goal' && r.outcome === 'ran')) {
    return ['failed', 'halted', `a boundary stops the goal: ${goal.boundary}`];
  }
  // R20: the evaluator has its say first.
  const failures = countTrailingFailures(s.steps);
  if (failures >= leg.limits.maxConsecutiveFailures) {
    // R20: the message names what failed, and points at the plugins only when a tool itself failed.
    const what = describeFailures(s.steps, failures);
    const hint = what.plugin ? '; keel plugins check shows whether a plugin is failing' : '';
    return ['failed', 'halted', `${failures} tool calls failed in a row: ${what.text}${hint}`];
  }
  if (Date.now() - leg.started > leg.limits.timeoutMs) return ['failed', 'timeout'];
  if (endOn) {
    if (endOn.reason === 'answered_by_tool') return ['done', 'answered_by_tool', undefined, endOn.answer];
    if (endOn.answer) return ['done', 'stalled', undefined, endOn.answer];
    return ['failed', 'stalled', 'the model repeated the same call with nothing usable to show'];
  }
  // R12: an answers_directly tool that is the run's first tool ends the run on its output.
  const tools = priorToolCalls ? undefined : records.filter((r) => r.tool !== 'ask_user');
  if (tools?.length === 1) {
    const only = tools[0];
    const spec = leg.deps.registry.byName.get(only.tool);
    if (spec?.declaration.answers_directly && only.outcome === 'ran' && !only.is_error && only.result.trim() !== '') {
      return ['done', 'answered_by_tool', undefined, only.result];
    }
  }
  // The step is saved with the next request's event (drive), or by the end or pause that comes first.
  leg.stepUnsaved = true;
  return undefined;
}
