/**
 * The step loop: the leg's checks at each step's top (interruption, stop, step cap, time limit, the
 * session's mode), the request, the model call and what its reply leads to — an answer, a retry, or
 * the reply's calls (calls.ts). The hot path: every event of a step passes through here, so nothing
 * here may add a generator layer or an await per event (see legs.ts). Never sends the model a request
 * built for a mode the session has left (C2/C5), and never keeps a reply it cannot store as written.
 */
import { type AssistantReply, ModelError } from '../models/types.js';
import { countRequestTokens, encodingFor } from '../prompt/tokens.js';
import type { LoopEvent, RequestTrace, RunResult } from '../types/index.js';
import { redact } from '../util/redact.js';
import { endChatSpan, endLegSpan, recordError, startChatSpan, startLegSpan } from '../util/telemetry.js';
import { askAboutHeld, runCalls } from './calls.js';
import { end, pauseInterrupted, saved } from './ends.js';
import { goalProgress, goalReminder, MAX_GOAL_REMINDERS } from './goal.js';
import type { LegState } from './leg-state.js';
import { admitReply } from './pipeline.js';
import { SAY } from './sentences.js';
import { repliedCalls } from './seq.js';
import { storableReply, unstorableNote } from './storable.js';

/** The note that marks the one retry an answer off its output schema gets. */
const OUTPUT_RETRY = 'output retry: ';
/** The note that marks the one retry an empty reply gets (issue 26). */
const EMPTY_RETRY = 'empty reply: asked the model again';

/**
 * Drives the run until it ends or pauses, yielding every event on the way. `starting`: the leg
 * starts the run here — its span, and the run's start shown before the first request is made (its
 * own write: a consumer may switch the session's mode as the run starts, C1, and the first request
 * is then made in the new mode).
 */
export async function* drive(leg: LegState, starting = false): AsyncGenerator<LoopEvent, RunResult> {
  const span = starting ? (leg.span = startLegSpan('start', leg.run.state, leg.deps.model.spec)) : undefined;
  try {
    if (starting) yield leg.begin(false);
    const s = leg.run.state;
    await leg.loadMostUsed();
    while (true) {
      if (leg.interrupted) return yield* pauseInterrupted(leg, s.model_calls + 1);
      if (leg.stopped) return yield* end(leg, 'failed', 'halted', leg.stopped);
      if (s.model_calls >= leg.limits.maxSteps) return yield* end(leg, 'failed', 'max_steps');
      if (leg.timedOut || Date.now() - leg.started > leg.limits.timeoutMs) return yield* end(leg, 'failed', 'timeout');
      leg.run.switchMode(leg.mode(), 'during the run');
      const entry = leg.menu();
      const { menu, system } = entry;
      const step = s.model_calls + 1;
      const found = leg.found.size ? menu.tools.filter((t) => leg.found.has(t.name)).map((t) => t.name) : [];
      const trace: RequestTrace = { step, system, tools: menu.declared, dropped: menu.dropped };
      if (found.length) trace.found = found;
      // R30: counted in a process of its own while the model works (the first count loads an encoding, ~1 s).
      const tokens = leg.deps.countTokens
        ? (entry.tokens.count ??= countRequestTokens(system, menu.declared, encodingFor(leg.deps.model.spec)).catch(() => -1))
        : undefined;
      // Issue 29: the step before's save (its last result held back for it) and this request's
      // event in one write; the request joins the trace after it (its usage is known at the next
      // save). A leg's first request has no step before it to save: its event is appended alone.
      const request: LoopEvent = { type: 'model_request', step, system, tools: menu.declared, dropped: menu.dropped };
      if (leg.stepUnsaved) {
        leg.stepUnsaved = false;
        // C2/C5: journaled only if the save finds the session still in the mode this request was
        // built in. A switch made in another process during the step leaves it out: the loop's top
        // then takes the new mode and builds the request again (appended alone), so no call of this
        // step is gated, nor the model told, by the mode the session has left.
        leg.run.defer(request, s.mode);
        let kept = false;
        for (const e of await leg.run.save()) {
          if (e.type === 'model_request') kept = true;
          yield e;
        }
        if (!kept) continue;
      } else yield request;
      leg.run.addRequest(trace);
      let reply: AssistantReply | undefined;
      let failed = false;
      let error: unknown;
      // The model call's span ends as the call does, also when the consumer stops at a text delta.
      const chat = startChatSpan(leg.span, leg.deps.model.spec);
      try {
        for await (const ev of leg.deps.model.stream({
          system,
          messages: s.messages,
          tools: menu.declared,
          seq: s.seq_base + repliedCalls(s),
          signal: leg.modelAbort.signal,
        })) {
          if (ev.type === 'text_delta') yield { type: 'text_delta', text: ev.text };
          else if (ev.type === 'done') reply = ev.reply;
        }
        if (!reply) throw new ModelError('the model stream ended without a reply');
      } catch (err) {
        failed = true;
        error = err;
        recordError(chat, err);
      } finally {
        endChatSpan(chat, failed ? undefined : reply?.usage);
      }
      if (failed || !reply) {
        // P2/R18: a call the interruption cut short gave no reply: resuming asks again (replayed).
        if (leg.interrupted) trace.unanswered = true;
        leg.run.countModelCall(trace, await leg.counted(tokens, trace), undefined);
        if (leg.interrupted) return yield* pauseInterrupted(leg, step);
        if (leg.stopped) return yield* end(leg, 'failed', 'halted', leg.stopped);
        if (leg.timedOut) return yield* end(leg, 'failed', 'timeout');
        // A provider's error may echo a header or a key: it is stored and shown without them.
        const msg = redact(error instanceof Error ? error.message : String(error));
        leg.run.note(`model error: ${msg}`);
        return yield* end(leg, 'failed', 'model_error', msg);
      }
      leg.run.countModelCall(trace, await leg.counted(tokens, trace), reply.usage);
      const admitted = admitReply(reply.tool_calls);
      if ('problem' in admitted) {
        // Nothing of a reply whose calls cannot be told apart runs or joins the transcript (R19, R21).
        leg.run.note(`model reply refused: ${admitted.problem}`);
        return yield* end(leg, 'failed', 'model_error', admitted.problem);
      }
      // Issue 27: what the model wrote is made storable here, once, before anything keeps or shows it.
      const clean = storableReply(reply.text, admitted.calls);
      if (clean.replaced) {
        leg.run.note(unstorableNote('model reply', clean.replaced));
        reply = { ...reply, text: clean.text };
      }
      const calls = clean.calls;
      if (calls.length === 0 && !reply.text.trim() && !reply.truncated) {
        // Issue 26: an empty reply (no text, no call) is asked again once; it never joins the transcript.
        if (s.notes.includes(EMPTY_RETRY)) return yield* end(leg, 'failed', 'model_error', SAY.emptyReply(leg.deps.model.spec));
        leg.run.note(EMPTY_RETRY);
        yield* saved(leg);
        continue;
      }
      leg.run.addAssistant(reply.text, calls);
      // Issue 26: a first reply calling a tool the request did not declare, after a request with tools,
      // suggests the server never showed the model its tools (a chat template that cannot render them).
      if (step === 1 && menu.declared.length) {
        const outside: string[] = [];
        for (const c of calls) if (!entry.names.has(c.name)) outside.push(c.name);
        if (outside.length) leg.run.warn(SAY.toolsNotSeen(leg.deps.model.spec, outside));
      }
      for (const c of calls) leg.called.add(c.name);
      yield { type: 'assistant', step, text: reply.text, tool_calls: calls };
      if (calls.length === 0) {
        // Issue 26: a text cut off at the output token limit is never the answer.
        if (reply.truncated) return yield* end(leg, 'failed', 'truncated', SAY.outputLimit(reply.truncated));
        // C1: a goal runs until every criterion is reported verified (or a boundary stops it).
        const goal = goalProgress(s);
        if (goal?.missing.length) {
          const reminders = s.notes.filter((n) => n.startsWith('goal reminder')).length;
          if (reminders >= MAX_GOAL_REMINDERS) {
            return yield* end(leg, 'failed', 'halted', `the goal's criteria ${goal.missing.join(', ')} were never reported verified`);
          }
          leg.run.note(`goal reminder: criteria ${goal.missing.join(', ')} not yet verified`);
          leg.run.addCoreMessage(goalReminder(goal.missing));
          yield* saved(leg);
          continue;
        }
        // R16 (issue 47): an answer while writes it never asked about are held is not final: the core
        // asks the person itself (a run that cannot pause says in its answer that they were not done).
        const held = leg.gate.heldAwaitingAnswer;
        if (held.size && leg.deps.store) return yield* askAboutHeld(leg, step);
        const unasked = held.size ? SAY.heldNotDone([...held]) : undefined;
        if (leg.deps.output) {
          const verdict = leg.deps.output.parse(reply.text);
          if (!verdict.ok) {
            if (s.notes.some((n) => n.startsWith(OUTPUT_RETRY))) return yield* end(leg, 'failed', 'invalid_output', verdict.problem);
            leg.run.note(`${OUTPUT_RETRY}${verdict.problem}`);
            leg.run.addCoreMessage(SAY.outputMismatch(verdict.problem));
            yield* saved(leg);
            continue;
          }
        }
        return yield* end(leg, 'done', 'final_answer', undefined, unasked ? `${reply.text}\n\n${unasked}` : reply.text);
      }
      // Issue 26: in a reply cut off at the output token limit, the last call is the one cut short.
      const cutOff = reply.truncated ? { call_id: calls[calls.length - 1].id, limit: SAY.outputLimit(reply.truncated) } : undefined;
      const outcome = yield* runCalls(leg, step, calls, menu, cutOff);
      if (outcome) return outcome;
    }
  } catch (err) {
    if (span) recordError(span, err);
    throw err;
  } finally {
    if (span) endLegSpan(span, leg.run.state);
    leg.run.legEnds();
  }
}
