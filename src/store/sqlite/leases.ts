/**
 * The SQLite store's leases and claims (S4, R18): who holds a run, the claim of a pause (to resume it or
 * to cancel it), the takeover of a run whose holder died, and the heartbeat that renews the leases held.
 * A claim is one statement: never read-then-write — the UPDATE checks the state it takes (status, pause,
 * owner, lease) under the file's write lock, so of two claimants exactly one wins; and a valid lease is
 * never taken over.
 */
import type Database from 'better-sqlite3';
import { KeelError } from '../../util/errors.js';
import { write } from './journal.js';
import type { SqliteState } from './state.js';

export function leaseStatements(db: Database.Database): Record<string, Database.Statement> {
  const p = (sql: string) => db.prepare(sql);
  return {
    ownerNow: p('SELECT owner, status FROM runs WHERE id = ?'),
    claim: p(
      "UPDATE runs SET status = 'running', owner = ?, updated_at = ?, lease_until = ? WHERE id = ? AND status = 'paused' AND pause_seq = ?",
    ),
    // Issue 40: a cancel claims a pause only while the card it waits on is unanswered (or expired).
    claimToCancel: p(`UPDATE runs SET status = 'running', owner = @owner, updated_at = @at, lease_until = @lease_until
      WHERE id = @id AND status = 'paused' AND pause_seq = @seq
        AND NOT EXISTS (SELECT 1 FROM approvals WHERE run_id = @id AND pause_seq = @seq AND status IN ('approved', 'rejected'))`),
    closeCards: p(
      "UPDATE approvals SET status = 'rejected', answered_by = ?, reason = ?, answered_at = ? WHERE run_id = ? AND status = 'pending' RETURNING id",
    ),
    // A valid lease always wins (issue 27.3), as on PostgreSQL: its holder is alive somewhere.
    takeOver: p(`UPDATE runs SET owner = @owner, updated_at = @at, lease_until = @lease_until
      WHERE id = @id AND status = 'running' AND pause_seq = @seq AND owner IS @dead
        AND (lease_until IS NULL OR lease_until < @now OR @gone = 1)`),
    renew: p("UPDATE runs SET lease_until = ? WHERE id = ? AND owner = ? AND status = 'running'"),
  };
}

/** A running run's lease from now; none for a paused or ended run. */
export function leaseFor(st: SqliteState, run: { status: string }): number | null {
  return run.status === 'running' ? Date.now() + st.leaseMs : null;
}

/** This store held the run as `holder` and another process has it now: marked lost, never saved from here again. */
export function loseRun(st: SqliteState, runId: string, holder: string): void {
  const row = st.stmt.ownerNow.get(runId) as { owner: string | null; status: string } | undefined;
  if (row && row.owner === holder) return;
  st.held.delete(runId);
  st.lost.set(runId, row?.owner ?? null);
  throw lostError(st, runId);
}

export function lostError(st: SqliteState, runId: string): KeelError {
  return new KeelError(
    'conflict',
    `run ${runId} was taken over by ${st.lost.get(runId) ?? 'another process'}: this process lost its lease`,
  );
}

/** This process holds a run: its lease is renewed (every third of its length) until the run pauses or ends. */
export function hold(st: SqliteState, runId: string, owner: string): void {
  st.held.set(runId, owner);
  st.lost.delete(runId);
  if (!st.heartbeat && st.db.open) {
    st.heartbeat = setInterval(() => renewLeases(st), Math.max(50, Math.floor(st.leaseMs / 3)));
    st.heartbeat.unref();
  }
}

/** Renews the leases of the runs this store holds; a run another process took is marked lost. */
export function renewLeases(st: SqliteState): void {
  if (!st.held.size || !st.db.open) return;
  try {
    write(st, () => {
      st.transaction(() => {
        const until = Date.now() + st.leaseMs;
        for (const [id, owner] of [...st.held]) {
          if (st.stmt.renew.run(until, id, owner).changes === 1) continue;
          const row = st.stmt.ownerNow.get(id) as { owner: string | null; status: string } | undefined;
          st.held.delete(id);
          if (row?.status === 'running' && row.owner !== owner) st.lost.set(id, row.owner);
        }
      });
    });
  } catch {
    // The file is busy or gone for a moment: the next beat tries again, well inside the lease.
  }
}

export async function claimPause(st: SqliteState, runId: string, seq: number, owner: string): Promise<boolean> {
  const claimed = write(st, () => {
    return st.stmt.claim.run(owner, new Date().toISOString(), Date.now() + st.leaseMs, runId, seq).changes === 1;
  });
  if (claimed) {
    st.written.delete(runId);
    hold(st, runId, owner);
  }
  return claimed;
}

/**
 * Issue 40: the claim and the closing of the run's cards are one transaction, and the claim's
 * statement takes the file's write lock before it reads the card: an approve (one UPDATE of the
 * card while pending) lands wholly before it — and the claim is refused — or after, finding the
 * card rejected.
 */
export async function claimToCancel(
  st: SqliteState,
  runId: string,
  seq: number,
  owner: string,
  close: { actor: string; reason: string; at: string },
): Promise<string[] | undefined> {
  let closed: string[] | undefined;
  write(st, () => {
    st.transaction(() => {
      const now = Date.now();
      const claimed = st.stmt.claimToCancel.run({
        owner,
        at: new Date(now).toISOString(),
        lease_until: now + st.leaseMs,
        id: runId,
        seq,
      });
      if (claimed.changes !== 1) return;
      closed = (st.stmt.closeCards.all(close.actor, close.reason, close.at, runId) as { id: string }[]).map((r) => r.id);
    });
  });
  if (closed) {
    st.written.delete(runId);
    hold(st, runId, owner);
  }
  return closed;
}

/**
 * As on PostgreSQL, a run whose lease is valid is not taken over — its owner renews it
 * while it lives, wherever it runs (a container sharing the file, whose PID this host cannot
 * check) — unless the caller saw the owner's process gone (`ownerGone`). A lease this store holds
 * itself is no obstacle: the process asking is its holder (a leg of its own failed).
 */
// S4/R18: the lease rule of both stores.
export async function takeOver(
  st: SqliteState,
  runId: string,
  seq: number,
  deadOwner: string | null,
  owner: string,
  ownerGone = false,
): Promise<boolean> {
  const ours = deadOwner !== null && deadOwner === owner && st.held.get(runId) === owner;
  const taken = write(st, () => {
    const now = Date.now();
    return (
      st.stmt.takeOver.run({
        owner,
        at: new Date(now).toISOString(),
        lease_until: now + st.leaseMs,
        id: runId,
        seq,
        dead: deadOwner,
        now,
        gone: ownerGone || ours ? 1 : 0,
      }).changes === 1
    );
  });
  if (taken) {
    st.written.delete(runId);
    hold(st, runId, owner);
  }
  return taken;
}
