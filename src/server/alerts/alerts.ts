/**
 * What a run's events set off beyond the streams of the process that drives it: the webhooks of
 * config.yaml's `notify` (a card to answer, a run that waits, a run that failed) and Web Push (S7).
 * Each process that drives legs has one — `keel serve` for the legs it drives, `keel worker` for
 * those it takes from the queue, `keel mcp serve` for its sessions' cards — and a leg is driven by
 * one process at a time, so each event is sent once, whichever process drove it.
 */
import type { KeelConfig } from '../../config/config.js';
import type { LoopEvent, Store } from '../../types/index.js';
import type { Tokens } from '../access/tokens.js';
import { Notifier } from './notify.js';
import { Push } from './push.js';

export class Alerts {
  private constructor(
    private readonly notifier: Notifier,
    readonly push: Push,
  ) {}

  /** Web Push is on with KEEL_PUSH_SUBJECT; without the package web-push that is refused here. */
  static async start(o: {
    config: KeelConfig;
    store: Store;
    tokens: Tokens;
    env: NodeJS.ProcessEnv;
    log: (line: string) => void;
  }): Promise<Alerts> {
    const notifier = new Notifier(o.config.notify ?? [], { audit: (row) => o.store.audit(row), env: o.env });
    return new Alerts(notifier, await Push.start({ store: o.store, tokens: o.tokens, env: o.env, log: o.log }));
  }

  /** A leg's event (not a text delta): sent on if it is one the receivers want. */
  event(runId: string, e: LoopEvent): void {
    notify(this.notifier, runId, e);
    this.push.publish(runId, e);
  }

  /** Lets deliveries under way finish, for at most `ms`. */
  async drain(ms: number): Promise<void> {
    await Promise.all([this.notifier.drain(ms), this.push.drain(ms)]);
  }
}

/** Webhooks: a card to answer, a run that waits, a run that failed. */
function notify(notifier: Notifier, runId: string, e: LoopEvent): void {
  // Most events make no webhook: the clock is read only for those that do.
  if (e.type !== 'paused' && e.type !== 'run_finished') return;
  const at = new Date().toISOString();
  if (e.type === 'paused') {
    const p = e.pause;
    if (p.kind === 'approval') {
      notifier.publish({
        type: 'approval_created',
        run_id: runId,
        at,
        // U6: the card's sources go with it (what the run read from outside the user, from its own record).
        data: {
          approval_id: p.approval_id,
          title: p.card.title,
          request: p.card.request,
          items: p.card.items,
          ...(p.card.untrusted ? { untrusted: p.card.untrusted } : {}),
          // A10: who may answer it, and which operator policies asked for it.
          ...(p.card.approvers?.length ? { approvers: p.card.approvers } : {}),
          ...(p.card.policy?.length ? { policy: p.card.policy } : {}),
        },
        ...(p.card.approvers?.length ? { approvers: p.card.approvers } : {}),
      });
    }
    notifier.publish({
      type: 'run_paused',
      run_id: runId,
      at,
      data:
        p.kind === 'approval'
          ? { kind: p.kind, approval_id: p.approval_id }
          : p.kind === 'ask_user'
            ? { kind: p.kind, question: p.question }
            : p.kind === 'task'
              ? { kind: p.kind, task_id: p.task_id, child_run: p.child_run }
              : { kind: p.kind, why: p.why },
      // A10: a routed card's pause goes where its card goes.
      ...(p.kind === 'approval' && p.card.approvers?.length ? { approvers: p.card.approvers } : {}),
    });
  }
  if (e.type === 'run_finished' && e.result.status === 'failed') {
    notifier.publish({ type: 'run_failed', run_id: runId, at, data: { reason: e.result.reason, answer: e.result.answer } });
  }
}
