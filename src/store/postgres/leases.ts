/**
 * The PostgreSQL store's leases and claims (R18, S4): the runs this process holds, their leases
 * renewed by a heartbeat, and the atomic claims that take a run — a pause's, a cancel's, a takeover.
 * Never takes a run whose lease is valid from another process (a valid lease always wins), and never
 * lets a run this process lost be saved from here again.
 */
import { named } from './connection.js';
import type { PgPool } from './pool.js';

const CLAIM_PAUSE = named(
  'claim_pause',
  `UPDATE runs SET status = 'running', owner = $1, updated_at = $2, lease_until = now() + $5 * interval '1 millisecond'
   WHERE id = $3 AND status = 'paused' AND pause_seq = $4`,
);

export class Leases {
  /** Runs this store holds (claimed or created running), with the owner that holds them: their leases are renewed. */
  readonly held = new Map<string, string>();
  /** Runs this store held and lost (their lease ran out and another process took them): never saved from here again. */
  readonly lost = new Map<string, string | null>();
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: PgPool,
    /** How long a lease lasts without renewal. */
    readonly leaseMs: number,
  ) {}

  async claimPause(runId: string, seq: number, owner: string): Promise<boolean> {
    const r = await this.db.q(CLAIM_PAUSE, [owner, new Date().toISOString(), runId, seq, this.leaseMs]);
    if (r.rowCount === 1) this.hold(runId, owner);
    return r.rowCount === 1;
  }

  /**
   * Issue 40: one transaction. The run's cards are locked first (the one its pause waits on, and
   * every pending one), so an approve's UPDATE of the card either committed before — the claim sees
   * it answered and is refused — or waits for this transaction and finds the card rejected.
   */
  async claimToCancel(
    runId: string,
    seq: number,
    owner: string,
    close: { actor: string; reason: string; at: string },
  ): Promise<string[] | undefined> {
    const closed = await this.db.transaction(async (c) => {
      const cards = await c.query<{ status: string; pause_seq: number }>(
        "SELECT status, pause_seq FROM approvals WHERE run_id = $1 AND (pause_seq = $2 OR status = 'pending') FOR UPDATE",
        [runId, seq],
      );
      if (cards.rows.some((r) => r.pause_seq === seq && (r.status === 'approved' || r.status === 'rejected'))) return undefined;
      const claimed = await c.query(CLAIM_PAUSE.text, [owner, new Date().toISOString(), runId, seq, this.leaseMs]);
      if (claimed.rowCount !== 1) return undefined;
      const r = await c.query<{ id: string }>(
        "UPDATE approvals SET status = 'rejected', answered_by = $1, reason = $2, answered_at = $3 WHERE run_id = $4 AND status = 'pending' RETURNING id",
        [close.actor, close.reason, close.at, runId],
      );
      return r.rows.map((x) => x.id);
    });
    if (closed) this.hold(runId, owner);
    return closed;
  }

  async takeOver(runId: string, seq: number, deadOwner: string | null, owner: string, ownerGone = false): Promise<boolean> {
    // A valid lease always wins (issue 27.3): its holder is alive somewhere, whatever updated_at says.
    const r = await this.db.q(
      `UPDATE runs SET owner = $1, updated_at = $2, lease_until = now() + $6 * interval '1 millisecond'
       WHERE id = $3 AND status = 'running' AND pause_seq = $4 AND owner IS NOT DISTINCT FROM $5
         AND (lease_until IS NULL OR lease_until < now() OR $7::boolean)`,
      [owner, new Date().toISOString(), runId, seq, deadOwner, this.leaseMs, ownerGone],
    );
    if (r.rowCount === 1) this.hold(runId, owner);
    return r.rowCount === 1;
  }

  /** This process holds a run: its lease is renewed until the run pauses, ends or is handed to the queue. */
  hold(runId: string, owner: string): void {
    this.held.set(runId, owner);
    this.lost.delete(runId);
    if (!this.heartbeat && !this.db.closed) {
      this.heartbeat = setInterval(
        () => {
          this.renewLeases().catch(() => {});
        },
        Math.max(50, Math.floor(this.leaseMs / 3)),
      );
      this.heartbeat.unref();
    }
  }

  /** Renews the leases of the runs this process holds; a run another process took is marked lost. */
  async renewLeases(): Promise<void> {
    if (!this.held.size) return;
    const entries = [...this.held];
    const r = await this.db.q<{ id: string }>(
      `UPDATE runs SET lease_until = now() + $3 * interval '1 millisecond'
       WHERE (id, owner) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND status = 'running' RETURNING id`,
      [entries.map((e) => e[0]), entries.map((e) => e[1]), this.leaseMs],
    );
    const kept = new Set(r.rows.map((x) => x.id));
    for (const [id, owner] of entries) {
      if (kept.has(id) || this.held.get(id) !== owner) continue;
      // Gone from 'running' by this process's own save is not a loss; a changed owner is. The run
      // stays held until that is known, so a save meanwhile still checks its owner (never unchecked).
      const now = (await this.db.q<{ owner: string | null; status: string }>('SELECT owner, status FROM runs WHERE id = $1', [id])).rows[0];
      if (this.held.get(id) !== owner) continue;
      this.held.delete(id);
      if (now?.status === 'running' && now.owner !== owner) this.lost.set(id, now.owner);
    }
  }

  /** Stops renewing a run's lease (its leg failed here): once it runs out, a worker takes the run over. */
  release(runId: string): void {
    this.held.delete(runId);
  }

  /** Stops the heartbeat (the store is closing). */
  stop(): void {
    clearInterval(this.heartbeat);
  }
}
