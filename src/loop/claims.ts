/**
 * The claims: how a process takes a run to drive it — out of its question (R17) or its approval
 * pause (A2), from a dead owner (R18's takeover), to cancel it (issue 40), or to switch a paused
 * run's mode (C1). Each returns the claimed state for RunWriter to hold. Never claims a run a live
 * process drives (a live leg of this process included, see owners.ts), nor a pause twice: every
 * claim is the store's conditional write on the state checked here, never on a newer one.
 */
import type { Answer, ApprovalRecord, Mode, Pause, RunState, RunStore } from '../types/index.js';
import { crashPoint } from '../util/crash.js';
import { KeelError } from '../util/errors.js';
import { legHere, ownerAlive, ownerGone, processOwner } from './owners.js';

export type QuestionPause = Extract<Pause, { kind: 'ask_user' }>;
export type ApprovalPause = Extract<Pause, { kind: 'approval' }>;
export type TaskPauseOf = Extract<Pause, { kind: 'task' }>;

async function loadOrThrow(store: RunStore, runId: string): Promise<RunState> {
  const s = await store.loadRun(runId);
  if (!s) throw new KeelError('not_found', `no run ${runId} in the store`, 'keel runs list shows the runs');
  return s;
}

/**
 * A takeover was refused: another process took the run first, or its owner still holds its lease
 * (issue 27.3: a valid lease always wins, however old the run's last save).
 */
async function refusedTakeover(store: RunStore, s: RunState): Promise<KeelError> {
  const now = await store.loadRun(s.id);
  if (now?.status === 'running' && now.owner === s.owner && now.pause_seq === s.pause_seq) {
    return new KeelError(
      'conflict',
      `run ${s.id} is running in process ${s.owner ?? 'unknown'}, which still holds its lease: wait for it, or stop that process, then try again`,
    );
  }
  return new KeelError('conflict', `run ${s.id} was just taken by another process`);
}

/**
 * R17/R18: takes a run out of its question, for the answer. Refused when the run does not wait
 * for an answer, or was already resumed from this question (here or in another process).
 */
export async function claimForAnswer(store: RunStore, runId: string, answer: Answer): Promise<{ state: RunState; pause: QuestionPause }> {
  const s = await loadOrThrow(store, runId);
  const pause = s.pause;
  if (s.status !== 'paused' || !pause) {
    throw new KeelError('not_paused', `run ${runId} is not waiting for an answer (status ${s.status}${s.reason ? `, ${s.reason}` : ''})`);
  }
  if (pause.kind === 'approval') {
    throw new KeelError(
      'not_paused',
      `run ${runId} is waiting for approval ${pause.approval_id}, not for an answer: answer the approval`,
      `keel approvals approve|reject ${pause.approval_id}`,
    );
  }
  if (pause.kind === 'task') {
    throw new KeelError(
      'not_paused',
      `run ${runId} waits for its delegate's task ${pause.task_id} (run ${pause.child_run}), not for an answer: it goes on when that run ends`,
      `keel runs show ${pause.child_run}`,
    );
  }
  if (pause.kind !== 'ask_user') {
    throw new KeelError(
      'not_paused',
      `run ${runId} was ${pause.why}, not asked a question: continue it without an answer`,
      `keel resume ${runId}`,
    );
  }
  // R16: a confirmation is a decision, not free text. Refused before the claim: the pause stays open.
  if (pause.confirm && answer.confirm === undefined) {
    throw new KeelError(
      'bad_input',
      `run ${runId} asks the user to confirm ${pause.confirm.tools.join(', ')}: answer with --yes or --no (and --answer TEXT if you like)`,
    );
  }
  if (!pause.confirm && !answer.text.trim()) {
    throw new KeelError('bad_input', `run ${runId} asks a question (${pause.question}): answer it with --answer TEXT`);
  }
  if (!(await store.claimPause(runId, pause.seq, processOwner()))) {
    throw new KeelError('conflict', `run ${runId} was already resumed from this question; it cannot be resumed twice`);
  }
  crashPoint('claim');
  s.owner = processOwner();
  return { state: s, pause };
}

/**
 * A2: takes a run out of its approval pause once the approval is answered — or takes over a run
 * whose process died while carrying out its approved calls.
 */
export async function claimForApproval(store: RunStore, approval: ApprovalRecord): Promise<{ state: RunState; pause: ApprovalPause }> {
  const s = await loadOrThrow(store, approval.run_id);
  const pause = s.pause;
  if (pause?.kind !== 'approval' || pause.approval_id !== approval.id) {
    throw new KeelError('not_paused', `run ${s.id} is not waiting for approval ${approval.id} (status ${s.status})`);
  }
  if (approval.status === 'pending') throw new KeelError('not_paused', `approval ${approval.id} has not been answered yet`);
  const alive = s.status === 'running' && (ownerAlive(s.owner, s.updated_at) || (s.owner === processOwner() && legHere(s.id)));
  const claimed =
    s.status === 'paused'
      ? await store.claimPause(s.id, pause.seq, processOwner())
      : s.status === 'running' && !alive && (await store.takeOver(s.id, pause.seq, s.owner, processOwner(), ownerGone(s.owner)));
  if (!claimed && s.status === 'running' && !alive) throw await refusedTakeover(store, s);
  if (!claimed) {
    throw new KeelError(
      'conflict',
      `run ${s.id} is already being continued after approval ${approval.id} (by ${s.owner ?? 'another process'})`,
    );
  }
  crashPoint('claim');
  s.owner = processOwner();
  return { state: s, pause };
}

/**
 * Takes a run to carry it on or end it without an answer: a paused run (its pause claimed, as
 * once-only as an answer), or a run whose process died mid-leg (taken over from the dead owner).
 * A run still driven by a live process, or already finished, is refused.
 */
export async function claimStalled(store: RunStore, runId: string, loaded?: RunState): Promise<RunState> {
  // Issue 38: a caller that has checked the state it loaded (claimToCancel) passes it: the claim
  // is then conditional on that state (owner and pause), never on a newer one it did not check.
  const s = loaded ?? (await loadOrThrow(store, runId));
  if (s.status === 'done' || s.status === 'failed') {
    throw new KeelError(
      'not_paused',
      `run ${runId} is ${s.status}${s.reason ? ` (${s.reason})` : ''} already: there is nothing to continue or cancel`,
    );
  }
  if (s.status === 'running' && (ownerAlive(s.owner, s.updated_at) || (s.owner === processOwner() && legHere(runId)))) {
    throw new KeelError(
      'conflict',
      `run ${runId} is running in process ${s.owner}: wait for it, or stop that process (Ctrl-C), then try again`,
    );
  }
  const claimed =
    s.status === 'paused'
      ? await store.claimPause(runId, s.pause_seq, processOwner())
      : await store.takeOver(runId, s.pause_seq, s.owner, processOwner(), ownerGone(s.owner));
  if (!claimed)
    throw s.status === 'paused'
      ? new KeelError('conflict', `run ${runId} was just taken by another process`)
      : await refusedTakeover(store, s);
  crashPoint('claim');
  s.owner = processOwner();
  return s;
}

/**
 * Issue 40: takes a run to cancel it, as claimStalled does, except that a paused run's pending
 * cards are closed in the claim's own transaction (their ids returned), and a run whose card was
 * answered first is refused: that answer carries the run on. An approve and a cancel of one run
 * have one winner, and the card says which.
 */
export async function claimToCancel(
  store: RunStore,
  runId: string,
  close: { actor: string; reason: string; at: string },
): Promise<{ state: RunState; closed: string[] }> {
  const s = await loadOrThrow(store, runId);
  // Handed to the queue (S4: running, no owner) at its approval pause: its card was answered and
  // a worker carries that answer out; taking the run over here would strand the answer.
  if (s.status === 'running' && s.owner === null && s.pause?.kind === 'approval') {
    throw new KeelError(
      'conflict',
      `run ${runId} can no longer be cancelled: its approval ${s.pause.approval_id} was answered, and a worker carries the run on with that answer`,
    );
  }
  if (s.status !== 'paused') return { state: await claimStalled(store, runId, s), closed: [] };
  const closed = await store.claimToCancel(runId, s.pause_seq, processOwner(), close);
  if (!closed) {
    throw new KeelError(
      'conflict',
      s.pause?.kind === 'approval'
        ? `run ${runId} can no longer be cancelled: its approval ${s.pause.approval_id} was answered just now, and the run goes on with that answer`
        : `run ${runId} was just taken by another process`,
    );
  }
  crashPoint('claim');
  s.owner = processOwner();
  return { state: s, closed };
}

/**
 * C1: a session's mode changed while its run was paused: the run records it and continues in the
 * new mode. The pause is claimed around the change, so a resume racing it is never overwritten;
 * a run already being continued picks the mode up from its session instead.

/**
 * C1: the claim of RunWriter.switchPausedMode: the paused run whose mode is to change, its pause
 * claimed; none when it is not paused, already in that mode, or was just claimed by another.
 */
export async function claimForModeSwitch(store: RunStore, runId: string, mode: Mode): Promise<RunState | undefined> {
  const s = await store.loadRun(runId);
  if (s?.status !== 'paused' || !s.pause || s.mode === mode) return undefined;
  if (!(await store.claimPause(runId, s.pause.seq, processOwner()))) return undefined;
  return s;
}
