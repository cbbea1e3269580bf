/**
 * `keel worker` (#15): takes legs from the job queue in the PostgreSQL store and drives them on the
 * one engine, at most `concurrency` at once. A leg is taken atomically (one worker gets a run; the
 * others' jobs end as conflicts); the run is held by a lease the store renews while the leg runs.
 * Every worker also reaps: a run whose lease ran out (its worker died or was cut off) is released
 * and queued again, once, so another worker takes it over — its calls in flight are reported as of
 * unknown outcome and never run again. On stop, running legs pause at a safe point and are queued
 * again for another worker.
 */
import type { Keel } from '../../keel/keel.js';
import type { Leg } from '../../loop/legs.js';
import { legOver, processOwner } from '../../loop/run.js';
import { LEG_QUEUE, type LegJob, type PostgresStore } from '../../store/postgres.js';
import type { LoopEvent } from '../../types/index.js';
import { crashPoint } from '../../util/crash.js';
import { KeelError } from '../../util/errors.js';

/** Why a worker paused a run when it was stopped: the run is queued again at once. */
export const WORKER_STOPPED = 'the worker was stopped';

export interface WorkerOptions {
  keel: Keel;
  store: PostgresStore;
  concurrency: number;
  /** Every event of every leg this worker drives (after it is stored). */
  onEvent?: (runId: string, e: LoopEvent) => void;
  log?: (line: string) => void;
  /** How often to look for runs whose lease ran out (default: half the lease). */
  reapMs?: number;
}

export interface RunningWorker {
  /** Legs being driven now. */
  readonly active: number;
  /** Stops taking legs; running legs pause at their next safe point (bounded by `ms`) and are queued again. */
  stop(ms?: number): Promise<void>;
}

/** Hands a leg to the queue instead of driving it here (keel serve on PostgreSQL, a stopping worker). */
export async function handToQueue(store: PostgresStore, leg: Leg): Promise<boolean> {
  try {
    return await store.handOff(leg.run_id, processOwner(), leg.job);
  } catch (err) {
    // Not queued: the lease is let go, so the run is reaped and queued once it runs out.
    store.release(leg.run_id);
    throw err;
  } finally {
    // R18: queued (or taken by another process): no leg of this process holds the run any more.
    legOver(leg.run_id);
  }
}

export async function startWorker(o: WorkerOptions): Promise<RunningWorker> {
  const log = o.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const boss = await o.store.queue();
  // D1/D2: a delegate's run this worker starts, and a parent its delegate's end wakes, are legs of the queue: any worker may drive them.
  o.keel.legSink = (leg) => {
    handToQueue(o.store, leg).then(
      (queued) => {
        if (!queued) log(`keel worker: run ${leg.run_id} was taken by another process before it was queued`);
      },
      (err) => log(`keel worker: run ${leg.run_id} could not be queued: ${err instanceof Error ? err.message : String(err)}`),
    );
  };
  let active = 0;
  let stopping = false;
  /** Slots waiting for a job, woken early when the worker stops. */
  const sleepers = new Set<() => void>();
  const nap = (ms: number) =>
    new Promise<void>((res) => {
      const done = () => {
        clearTimeout(t);
        sleepers.delete(done);
        res();
      };
      const t = setTimeout(done, ms);
      sleepers.add(done);
    });

  /** Takes the run a job hands over: the leg, or undefined when the job is not to be worked (logged). */
  const take = async (runId: string, job: LegJob): Promise<Leg | undefined> => {
    try {
      return await o.keel.queuedLeg(runId, job);
    } catch (err) {
      // Another process has the run, or it no longer waits for this leg: the job is done.
      if (err instanceof KeelError) {
        log(`keel worker: run ${runId}: ${job.kind} leg not taken: ${err.message}`);
        return undefined;
      }
      throw err;
    }
  };

  const drive = async (runId: string, leg: Leg): Promise<void> => {
    active++;
    try {
      const gen = leg.drive();
      let last: LoopEvent | undefined;
      while (true) {
        const n = await gen.next();
        if (n.done) break;
        last = n.value;
        o.onEvent?.(runId, n.value);
      }
      // Paused because this worker stops: another worker carries it on.
      if (stopping && last?.type === 'run_finished' && last.result.status === 'paused' && last.result.reason === 'interrupted') {
        await handToQueue(o.store, await o.keel.continueLeg(runId));
      }
    } catch (err) {
      // The lease is let go: the run is reaped and taken over by a worker once it runs out.
      o.store.release(runId);
      log(`keel worker: run ${runId} stopped on an error: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      active--;
    }
  };

  /**
   * One slot: fetch a job, hold its run, complete the job, drive the leg; again. The job covers only
   * the hand-over: a worker that dies between the fetch and the hold leaves a job that expires and is
   * offered again (the queue's tries), and one that dies after leaves a lease that runs out (reapExpired).
   */
  const slot = async (): Promise<void> => {
    while (!stopping) {
      let jobs: { id: string; data: { run_id: string } & LegJob }[];
      try {
        jobs = await boss.fetch<{ run_id: string } & LegJob>(LEG_QUEUE);
      } catch (err) {
        log(`keel worker: could not fetch a leg: ${err instanceof Error ? err.message : String(err)}`);
        await nap(1000);
        continue;
      }
      const j = jobs[0];
      if (!j) {
        await nap(500);
        continue;
      }
      crashPoint('leg-fetched');
      const { run_id, ...job } = j.data;
      let leg: Leg | undefined;
      try {
        leg = await take(run_id, job as LegJob);
      } catch (err) {
        log(`keel worker: run ${run_id}: ${job.kind} leg failed to start: ${err instanceof Error ? err.message : String(err)}`);
        await boss.fail(LEG_QUEUE, j.id).catch(() => {});
        continue;
      }
      crashPoint('leg-held');
      // Held (or refused): the hand-over is over. Should this fail, the job expires and its next try is refused.
      await boss.complete(LEG_QUEUE, j.id).catch(() => {});
      if (!leg) continue;
      // Taken as the worker stops: back to the queue, untouched, for another worker.
      if (stopping) await handToQueue(o.store, leg).catch(() => {});
      else await drive(run_id, leg);
    }
  };
  const slots = Array.from({ length: o.concurrency }, () => slot());

  const reap = setInterval(
    () => {
      o.store
        .reapExpired()
        .then((ids) => {
          if (ids.length) log(`keel worker: ${ids.length} run(s) whose lease ran out queued to be taken over: ${ids.join(', ')}`);
        })
        .catch((err) =>
          log(`keel worker: could not look for runs whose lease ran out: ${err instanceof Error ? err.message : String(err)}`),
        );
    },
    o.reapMs ?? Math.max(200, Math.floor(o.store.leaseMs / 2)),
  );
  reap.unref();

  return {
    get active() {
      return active;
    },
    async stop(ms = 10_000) {
      if (stopping) return;
      stopping = true;
      clearInterval(reap);
      for (const f of [...sleepers]) f();
      if (active > 0) o.keel.interrupt(WORKER_STOPPED);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(slots),
        new Promise<void>((res) => {
          timer = setTimeout(res, ms);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}
