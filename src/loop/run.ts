import { KeelError } from '../errors.js';
import type { ApprovalRecord } from '../store/types.js';
import type { Mode } from '../tools/types.js';
import { executeCall } from './calls.js';
import { type EngineDeps, RunLeg } from './engine.js';
import { toResult } from './result.js';
import { newRunState, ownerAlive, processOwner } from './state.js';
import type { CallRecord, Contract, LoopEvent, Message, Pause, PendingResult, RunResult, RunState } from './types.js';

export interface StartInput {
  message: string;
  mode?: Mode;
  pluginDirs?: string[];
  /** Continue a session: its id, its transcript so far, and its approved contract. */
  session?: { id: string; history: readonly Message[]; contract: Contract | null; seq_base: number };
  /** Notes for the run's trace from before it started (skills skipped, R25). */
  notes?: string[];
}

/** Streaming API: every event as it happens, ending with the run's result (R14). */
export async function* streamRun(deps: EngineDeps, input: StartInput): AsyncGenerator<LoopEvent, RunResult> {
  const message = input.message.trim();
  if (!message) throw new KeelError('bad_input', 'the message is empty: say what you want done');
  const state = newRunState({
    request: message,
    mode: input.mode ?? 'agent',
    model: deps.model.spec,
    plugin_dirs: input.pluginDirs ?? [],
    now: (deps.now?.() ?? new Date()).toISOString(),
    session: input.session,
    session_id: input.session?.id,
    history: input.session?.history,
    contract: input.session?.contract,
  });
  state.notes.push(...(input.notes ?? []));
  const leg = new RunLeg(deps, state, true);
  await leg.save(true);
  yield { type: 'run_started', run_id: state.id, session_id: state.session_id, mode: state.mode, request: message, resumed: false };
  return yield* leg.drive();
}

/** Blocking API: the same events, collected (R14). */
export async function collect(gen: AsyncGenerator<LoopEvent, RunResult>, onEvent?: (e: LoopEvent) => void): Promise<RunResult> {
  while (true) {
    const n = await gen.next();
    if (n.done) return n.value;
    onEvent?.(n.value);
  }
}

async function loadPaused(deps: EngineDeps, runId: string): Promise<RunState> {
  if (!deps.store) throw new KeelError('bad_input', 'this run has no store: nothing to resume');
  const state = await deps.store.loadRun(runId);
  if (!state) throw new KeelError('not_found', `no run ${runId} in the store (keel runs list shows the runs)`);
  return state;
}

/** R17/R18: the answer becomes the ask_user call's result (same call id); the run continues. */
export async function* streamResume(deps: EngineDeps, runId: string, answer: string): AsyncGenerator<LoopEvent, RunResult> {
  const state = await loadPaused(deps, runId);
  const pause = state.pause;
  if (state.status !== 'paused' || !pause) {
    throw new KeelError(
      'not_paused',
      `run ${runId} is not waiting for an answer (status ${state.status}${state.reason ? `, ${state.reason}` : ''})`,
    );
  }
  if (pause.kind !== 'ask_user') {
    throw new KeelError(
      'not_paused',
      `run ${runId} is waiting for approval ${pause.approval_id}, not for an answer: use keel approvals approve|reject ${pause.approval_id}`,
    );
  }
  if (!(await deps.store!.claimPause(runId, pause.seq, processOwner()))) {
    throw new KeelError('conflict', `run ${runId} was already resumed from this question; it cannot be resumed twice`);
  }
  const calls = pause.calls.map((c) => (c.call_id === pause.call_id ? { ...c, result: answer } : c));
  const results = pause.results.map((r) => (r.call_id === pause.call_id ? { ...r, content: answer } : r));
  return yield* continueLeg(deps, state, pause, calls, results);
}

async function* continueLeg(
  deps: EngineDeps,
  state: RunState,
  pause: Pause,
  calls: CallRecord[],
  results: PendingResult[],
): AsyncGenerator<LoopEvent, RunResult> {
  state.status = 'running';
  state.reason = null;
  const priorToolCalls = state.steps.some((r) => r.tool !== 'ask_user');
  const leg = new RunLeg(deps, state, false);
  yield { type: 'run_started', run_id: state.id, session_id: state.session_id, mode: state.mode, request: state.request, resumed: true };
  for (const record of calls) {
    const before = pause.calls.find((c) => c.call_id === record.call_id);
    if (before && (before.result !== record.result || before.outcome !== record.outcome))
      yield { type: 'tool_result', step: pause.step, record };
  }
  state.pause = null;
  const ended = yield* leg.finishStep(calls, results, undefined, priorToolCalls);
  if (ended) return ended;
  leg.refreshGate();
  return yield* leg.drive();
}

/**
 * A2: continues a run whose approval has been answered. Approved: exactly the pinned calls run,
 * each once (the side-effect ledger records the intent first; a call whose intent is recorded but
 * whose outcome is not is reported as unknown, never re-run). Rejected: nothing runs.
 * `recover` takes over a run a dead process left mid-execution.
 */
export async function* streamApprovalContinuation(deps: EngineDeps, approval: ApprovalRecord): AsyncGenerator<LoopEvent, RunResult> {
  const store = deps.store!;
  const state = await loadPaused(deps, approval.run_id);
  const pause = state.pause;
  if (pause?.kind !== 'approval' || pause.approval_id !== approval.id) {
    throw new KeelError('not_paused', `run ${state.id} is not waiting for approval ${approval.id} (status ${state.status})`);
  }
  if (approval.status === 'pending') throw new KeelError('not_paused', `approval ${approval.id} has not been answered yet`);
  const claimed =
    state.status === 'paused'
      ? await store.claimPause(state.id, pause.seq, processOwner())
      : state.status === 'running' &&
        !ownerAlive(state.owner, state.updated_at) &&
        (await store.takeOver(state.id, pause.seq, state.owner, processOwner()));
  if (!claimed) {
    throw new KeelError(
      'conflict',
      `run ${state.id} is already being continued after approval ${approval.id} (by ${state.owner ?? 'another process'})`,
    );
  }
  state.owner = processOwner();
  if (approval.status === 'expired') {
    state.status = 'failed';
    state.reason = 'approval_expired';
    state.answer = `Nothing was run: approval ${approval.id} (${approval.card.title}) expired at ${approval.expires_at} before anyone answered it. Ask again to get a new card.`;
    state.notes.push(`approval ${approval.id} expired`);
    state.steps.push(...pause.calls);
    state.pause = null;
    state.updated_at = new Date().toISOString();
    await store.saveRun(state, { messages: [], steps: pause.calls, requests: [] });
    return toResult(state);
  }
  const calls = pause.calls.map((c) => ({ ...c }));
  const results = pause.results.map((r) => ({ ...r }));
  for (const item of pause.items) {
    const rec = calls.find((c) => c.call_id === item.call_id)!;
    const res = results.find((r) => r.call_id === item.call_id)!;
    let content: string;
    let isError: boolean;
    let outcome: CallRecord['outcome'] = 'ran';
    if (approval.status === 'rejected') {
      content = `Not run: the owner rejected this ${item.tool} call${approval.reason ? ` (${approval.reason})` : ''}. Nothing changed.`;
      isError = true;
      outcome = 'error';
    } else {
      const tool = deps.registry.byName.get(item.tool);
      const started = await store.ledgerStart({
        approval_id: approval.id,
        call_id: item.call_id,
        tool: item.tool,
        args_json: JSON.stringify(item.args),
      });
      if (!started) {
        const row = await store.ledgerGet(approval.id, item.call_id);
        if (row?.state === 'finished') {
          content = row.result ?? '';
          isError = row.is_error;
        } else {
          content = `The outcome of ${item.tool} is unknown: Keel stopped while it was running, so it was not run again. Check its effect before trying again.`;
          isError = true;
          outcome = 'error';
          state.notes.push(`unknown outcome: ${item.tool} (${item.call_id}) under approval ${approval.id}`);
        }
      } else if (!tool) {
        content = `${item.tool} is no longer available (its plugin did not mount); nothing was run.`;
        isError = true;
        outcome = 'error';
        await store.ledgerFinish(approval.id, item.call_id, content, true);
      } else {
        state.effects.push({ call_id: item.call_id, tool: item.tool, effect: tool.declaration.effect, args: item.args });
        await store.saveRun(state, { messages: [], steps: [], requests: [] });
        const ex = await executeCall({
          tool,
          args: item.args,
          runId: state.id,
          callId: item.call_id,
          request: state.request,
          currentMode: () => state.mode,
          registry: deps.registry,
          signal: new AbortController().signal,
        });
        content = ex.content;
        isError = ex.is_error;
        if (ex.by_core) outcome = 'error';
        await store.ledgerFinish(approval.id, item.call_id, content, isError);
      }
    }
    Object.assign(rec, { outcome, result: content, is_error: isError, by_core: outcome !== 'ran' });
    Object.assign(res, { content, is_error: isError });
  }
  return yield* continueLeg(deps, state, pause, calls, results);
}
