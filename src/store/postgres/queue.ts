/**
 * The PostgreSQL store's job queue (#15, pg-boss in the same database): a leg of a run handed to
 * the queue for any worker to take, and the runs whose lease ran out reaped into it.
 * Never loses a leg nor queues one twice: a run is released and its leg queued in one transaction.
 */
import type pg from 'pg';
import type PgBoss from 'pg-boss';
import { optionalImport } from '../../util/optional.js';
import { explainPgError, LOCK_QUEUE } from './connection.js';
import type { Leases } from './leases.js';
import type { PgPool } from './pool.js';

/** What a worker is to do with a run handed to the queue (#15): one leg. */
export type LegJob =
  | { kind: 'start' }
  | { kind: 'answer'; seq: number; answer: { text: string; confirm?: boolean } }
  | { kind: 'approval'; approval_id: string }
  | { kind: 'continue' };

/** The job queue's name, in pg-boss. */
export const LEG_QUEUE = 'keel-legs';

/**
 * How often a leg's job is offered again when the worker that fetched it died before it held the
 * run (the job expired in the hand-over, see handoverSeconds). Each try is one fetch: a spare try
 * that finds the run already held ends as a conflict, which is harmless.
 */
const HANDOVER_TRIES = 20;

export class LegQueue {
  private boss: Promise<PgBoss> | undefined;

  constructor(
    private readonly db: PgPool,
    private readonly leases: Leases,
  ) {}

  /**
   * How long a worker has between fetching a leg's job and holding its run (then it completes the
   * job): a job still active after that was fetched by a worker that died in between, and the queue
   * offers it again. As long as the lease, at least a second (the queue's finest grain).
   */
  get handoverSeconds(): number {
    return Math.max(1, Math.ceil(this.leases.leaseMs / 1000));
  }

  /** Queues a leg inside the caller's transaction (pg-boss's `db` option): the job exists exactly when the change commits. */
  private async sendLeg(boss: PgBoss, c: pg.PoolClient, runId: string, job: LegJob): Promise<void> {
    await boss.send(
      LEG_QUEUE,
      { run_id: runId, ...job },
      {
        retryLimit: HANDOVER_TRIES,
        // A second between tries: after a failure to start (the database was away) a pause, not a spin.
        retryDelay: 1,
        expireInSeconds: this.handoverSeconds,
        db: { executeSql: (text, values) => c.query(text, values) },
      },
    );
  }

  /** The job queue in this database (pg-boss), started on first use. */
  queue(): Promise<PgBoss> {
    this.boss ??= (async () => {
      await this.db.ensureReady();
      const { default: PgBoss } = await optionalImport(
        'pg-boss',
        'the job queue of the PostgreSQL store (keel serve, keel worker)',
        () => import('pg-boss'),
      );
      const boss = new PgBoss({
        connectionString: this.db.target.connectionString,
        schema: this.db.target.schema === 'public' ? 'pgboss' : `${this.db.target.schema}_boss`,
        max: 4,
        application_name: 'keel-queue',
        // Expiry is checked by the queue's maintenance: as often as a hand-over may last (see handoverSeconds).
        maintenanceIntervalSeconds: this.handoverSeconds,
      });
      boss.on('error', () => {});
      // Processes starting together install the queue's schema and create the queue one at a time.
      const lock = await this.db.pool.connect();
      try {
        await lock.query('SELECT pg_advisory_lock($1, hashtext($2))', [LOCK_QUEUE, this.db.target.schema]);
        await boss.start();
        // A job is the hand-over of a run to a worker, not the leg (which may run for hours, held by its
        // lease): each job carries its own tries and expiry (sendLeg); these are only the queue's defaults.
        if (!(await boss.getQueue(LEG_QUEUE)))
          await boss.createQueue(LEG_QUEUE, { name: LEG_QUEUE, retryLimit: 0, expireInSeconds: 4 * 3600 });
      } catch (err) {
        await boss.stop({ graceful: false, wait: false }).catch(() => {});
        throw err;
      } finally {
        await lock.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_QUEUE, this.db.target.schema]).catch(() => {});
        lock.release();
      }
      return boss;
    })().catch((err) => {
      this.boss = undefined;
      throw explainPgError(err, this.db.target.shown);
    });
    return this.boss;
  }

  /**
   * Hands a run this process holds to the queue: in one transaction, the run is released (no owner,
   * no lease) and its leg is queued as a job — so the leg is never lost and never queued twice.
   * False when the run is not held by `owner` any more (another process has it).
   */
  async handOff(runId: string, owner: string, job: LegJob): Promise<boolean> {
    const boss = await this.queue();
    const done = await this.db.transaction(async (c) => {
      const r = await c.query("UPDATE runs SET owner = NULL, lease_until = NULL WHERE id = $1 AND status = 'running' AND owner = $2", [
        runId,
        owner,
      ]);
      if (r.rowCount !== 1) return false;
      await this.sendLeg(boss, c, runId, job);
      return true;
    });
    if (done) this.leases.held.delete(runId);
    return done;
  }

  /**
   * Runs whose lease ran out (their process died or was cut off): each is released and queued to be
   * taken over, in one transaction, at most once. Returns their ids.
   */
  async reapExpired(limit = 100): Promise<string[]> {
    const due = (
      await this.db.q<{ id: string; owner: string | null }>(
        "SELECT id, owner FROM runs WHERE status = 'running' AND lease_until < now() ORDER BY lease_until LIMIT $1",
        [limit],
      )
    ).rows;
    if (!due.length) return [];
    const boss = await this.queue();
    const out: string[] = [];
    for (const { id, owner } of due) {
      const taken = await this.db.transaction(async (c) => {
        const r = await c.query(
          `UPDATE runs SET owner = NULL, lease_until = NULL
           WHERE id = $1 AND status = 'running' AND owner IS NOT DISTINCT FROM $2 AND lease_until < now()`,
          [id, owner],
        );
        if (r.rowCount !== 1) return false;
        await this.sendLeg(boss, c, id, { kind: 'continue' });
        return true;
      });
      if (taken) out.push(id);
    }
    return out;
  }

  /** Stops the queue, if it was started (the store is closing). */
  async stop(): Promise<void> {
    const boss = this.boss;
    this.boss = undefined;
    if (boss) await (await boss.catch(() => undefined))?.stop({ graceful: false, wait: true, timeout: 5000 });
  }
}
