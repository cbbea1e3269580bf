/**
 * Carrying a run on without an answer (resume, a worker's queued leg) and ending one for good
 * (cancel, with the delegates it started). Never takes a run from a live leg of this process
 * (R18), never carries on a run that waits for a person's answer, and a cancel claims only the
 * state it checked (A3: one winner against an approve).
 */
import { RUN_CANCELLED, recordCardsClosed } from '../approvals/respond.js';
import { cancelLeg, collect, type Leg, type LegJob, continueLeg as loopContinueLeg, queuedLeg as loopQueuedLeg } from '../loop/legs.js';
import { ended } from '../loop/tasks.js';
import { type ModelClient, ModelError } from '../models/types.js';
import type { LoopEvent, RunResult } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { storableText } from '../util/text.js';
import { osUser } from '../util/user.js';
import { approvalLeg } from './approvals.js';
import { type KeelCore, requireStore } from './core.js';
import { afterLeg } from './delegates.js';
import { kept, legDeps, passOn, tracked } from './legs.js';
import type { ContinueOptions } from './options.js';

/** Keel.queuedLeg: a leg a worker takes from the queue, by one worker only. */
export async function queuedLeg(core: KeelCore, runId: string, job: LegJob, o: ContinueOptions = {}): Promise<Leg> {
  if (job.kind === 'continue') return core.keel.continueLeg(runId, o);
  if (job.kind === 'approval') {
    const approval = await requireStore(core).getApproval(job.approval_id);
    if (!approval) throw new KeelError('not_found', `approval ${job.approval_id} is not in the store`);
    return approvalLeg(core, approval, o);
  }
  const run = await core.keel.getRun(runId);
  const deps = await legDeps(core, kept(core, runId, o), run);
  return tracked(core, await loopQueuedLeg(deps, runId, job));
}

/** Keel.continueLeg: a run claimed to carry it on without an answer. */
export async function continueLeg(core: KeelCore, runId: string, o: ContinueOptions = {}): Promise<Leg> {
  const run = await core.keel.getRun(runId);
  const pause = run.pause;
  if (run.status === 'done' || run.status === 'failed') {
    throw new KeelError('not_paused', `run ${runId} is ${run.status} (${run.reason}) already: there is nothing to continue`);
  }
  if (pause?.kind === 'approval') {
    const store = requireStore(core);
    // A4: cards past their expiry end their runs; this run's, if expired, is ended by the leg below.
    await core.keel.expireApprovals({ except: runId });
    const approval = await store.getApproval(pause.approval_id);
    if (!approval) throw new KeelError('not_found', `run ${runId} waits for approval ${pause.approval_id}, which is not in the store`);
    if (approval.status === 'pending') {
      throw new KeelError(
        'not_paused',
        `run ${runId} waits for approval ${approval.id}: answer the approval, and the run goes on`,
        `keel approvals approve|reject ${approval.id}`,
      );
    }
    return approvalLeg(core, approval, o);
  }
  if (pause?.kind === 'task') {
    // D2: carrying on a run that waits for its delegate carries the delegate on (left by a dead
    // process, or interrupted); the run itself goes on when the delegate ends.
    const child = await requireStore(core).loadRun(pause.child_run);
    const person = child?.status === 'paused' && (child.pause?.kind === 'ask_user' || child.pause?.kind === 'approval');
    if (child && !ended(child) && !person) {
      // A run's owner is this process while it drives it: a leg of its own is never taken over here (R18).
      if (core.driving.has(child.id) || core.inflight.has(child.id)) {
        throw new KeelError(
          'conflict',
          `run ${runId} waits for its delegate's run ${child.id}, which this process is driving: it goes on when that run ends`,
        );
      }
      // Issue 47: what the app gave to carry the parent on reaches its delegate (its tools, its model when it shares it).
      passOn(core, child, kept(core, runId, o), 'down');
      return core.keel.continueLeg(child.id, {});
    }
  }
  if (run.status === 'paused' && pause?.kind === 'ask_user') {
    throw pause.confirm
      ? new KeelError(
          'bad_input',
          `run ${runId} asks the user to confirm ${pause.confirm.tools.join(', ')}: resume it with a decision`,
          `keel resume ${runId} --yes or --no`,
        )
      : new KeelError('bad_input', `run ${runId} waits for an answer: resume it with one`, `keel resume ${runId} --answer TEXT`);
  }
  const deps = await legDeps(core, kept(core, runId, o), run);
  return tracked(core, await loopContinueLeg(deps, runId));
}

/** Keel.cancel: a paused or stalled run ended for good, audited, with the delegates it started. */
export async function cancel(
  core: KeelCore,
  runId: string,
  o: { actor?: string; reason?: string | null; onEvent?: (e: LoopEvent) => void } = {},
): Promise<RunResult> {
  const store = requireStore(core);
  const run = await core.keel.getRun(runId);
  // Issue 27: who cancelled and why are made storable where they enter, as every text a run keeps.
  const actor = storableText(o.actor ?? osUser(core.env)).text;
  const reason = o.reason == null ? null : storableText(o.reason).text;
  const why = `cancelled by ${actor}${reason ? `: ${reason}` : ''}`;
  // No model is called to end a run: one whose model can no longer be reached can still be cancelled.
  const model: ModelClient = {
    spec: run.model,
    stream: () => {
      throw new ModelError('a cancelled run calls no model');
    },
  };
  const deps = await legDeps(core, { model }, run, 'end');
  const at = new Date().toISOString();
  // Issue 40: the run's pending cards are closed in the transaction that takes it (one winner
  // against an approve), then journalled and audited; a card answered first refuses the cancel.
  const { leg, closed } = await cancelLeg(deps, runId, why, { actor, reason: RUN_CANCELLED, at });
  // A run taken from a dead process (not paused) may still hold a card no pause waits on.
  for (const a of await store.listApprovals({ run_id: runId, status: 'pending' })) {
    if (await store.answerApproval(a.id, 'rejected', actor, RUN_CANCELLED, at)) closed.push(a.id);
  }
  await recordCardsClosed(store, runId, closed, actor, at);
  const result = await collect(leg.parent_run ? leg.drive() : core.sessions.track(leg.drive()), o.onEvent);
  core.remembered.delete(runId);
  core.childStops.delete(runId);
  // D2: the delegates a cancelled run started are cancelled with it (each audited); one a live process drives is left to it.
  for (const c of await store.listRuns({ parent_run: runId, limit: 500 })) {
    if (c.status !== 'running' && c.status !== 'paused') continue;
    const running = core.inflight.get(c.id);
    if (running) {
      core.childStops.get(c.id)?.abort(new Error(`its parent run ${runId} was cancelled`));
      await running;
    }
    await core.keel.cancel(c.id, { actor, reason: `its parent run ${runId} was cancelled` }).catch((err) => {
      if (!(err instanceof KeelError)) throw err;
    });
  }
  if (leg.parent_run) {
    // D2: a delegate cancelled while its parent waits for it: the parent goes on (here, before the cancel returns).
    await afterLeg(core, leg, result);
    const next = core.woken.get(runId);
    core.woken.delete(runId);
    await next;
  }
  await store.audit({ at, actor, action: 'cancel_run', subject: runId, detail: JSON.stringify({ reason }) });
  return result;
}
