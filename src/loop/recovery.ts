/**
 * After a crash or for a cancel: the calls of the run's last reply that have no result yet, each
 * answered in the core's words and never run again — of unknown outcome when its effect was recorded
 * as started, stopped before its card was answered, an unanswered question, or interrupted.
 */
import type { CallRecord, Effect, PendingResult } from '../types/index.js';
import type { RunView } from './run.js';
import { SAY } from './sentences.js';

export interface OpenCalls {
  records: CallRecord[];
  results: PendingResult[];
  /** Calls whose effect had started: their outcome is unknown. */
  unknown: string[];
}

/** The open calls of the last reply, answered; undefined when every call has its result. */
export function answerOpenCalls(s: RunView, effectOf: (tool: string) => Effect | undefined): OpenCalls | undefined {
  let last = s.messages.length - 1;
  while (last >= 0 && s.messages[last].role !== 'assistant') last--;
  const reply = s.messages[last];
  if (reply?.role !== 'assistant' || !reply.tool_calls.length) return undefined;
  const answered = new Set(s.messages.slice(last + 1).flatMap((m) => (m.role === 'tool' ? [m.call_id] : [])));
  const open = reply.tool_calls.filter((c) => !answered.has(c.id));
  if (!open.length) return undefined;
  const known = s.pause && s.pause.kind !== 'interrupted' ? s.pause.calls : [];
  const out: OpenCalls = { records: [], results: [], unknown: [] };
  for (const call of open) {
    const before = known.find((c) => c.call_id === call.id);
    const started = s.effects.some((e) => e.call_id === call.id);
    // A repeat of a carded call (R13) waits on the card too: it has no result until the card's call ran.
    const onCard = before?.outcome === 'awaiting_approval' || (before?.outcome === 'repeat' && before.result === '');
    // D2: the task_wait a pause on a delegate holds has no result until the delegate ends.
    const onTask = s.pause?.kind === 'task' && s.pause.call_id === call.id;
    const waiting = onCard || onTask || (before?.tool === 'ask_user' && before.result === '');
    const rec: CallRecord =
      before && !waiting
        ? before
        : {
            step: s.model_calls,
            call_id: call.id,
            tool: call.name,
            args: call.args ?? null,
            outcome: 'error',
            result: started
              ? SAY.unknownOutcome(call.name)
              : onCard
                ? SAY.stoppedBeforeApproval(call.name)
                : before?.tool === 'ask_user'
                  ? SAY.questionUnanswered
                  : SAY.interruptedCall(call.name),
            is_error: true,
            effect: effectOf(call.name),
            by_core: true,
          };
    if (rec !== before && started) out.unknown.push(`${call.name} (${call.id})`);
    out.records.push(rec);
    out.results.push({ call_id: call.id, name: call.name, content: rec.result, is_error: rec.is_error });
  }
  return out;
}
