/**
 * The PostgreSQL store (S4): the same interfaces and the same semantics as the SQLite file, for
 * deployments where a server and several workers on several machines share one database.
 *
 * It connects lazily: constructing it opens nothing, and the first query connects and brings the
 * schema up to date (numbered migrations, under an advisory lock, so two processes starting at once
 * migrate once). Everything a method writes is one transaction or one statement.
 *
 * This file is the store's face: each method is one call into the folder postgres/, one file per
 * concern — pool.ts (connections, transactions), schema.ts (migrations), runs.ts, journal.ts,
 * approvals.ts, leases.ts, queue.ts (pg-boss), sessions.ts, push.ts. It must never hold SQL or
 * state of its own: what it keeps lives in those parts.
 */
import type pg from 'pg';
import type PgBoss from 'pg-boss';
import type {
  ApprovalRecord,
  ApprovalStatus,
  AuditRecord,
  EventQuery,
  JournalEntry,
  LedgerRow,
  Memory,
  Mode,
  PushSubscriptionRecord,
  RunEvent,
  RunLimit,
  RunQuery,
  RunState,
  RunSummary,
  SessionRecord,
  Store,
  StoredEvent,
  VapidKeys,
} from '../types/index.js';
import * as approvals from './postgres/approvals.js';
import { type PostgresTarget, parsePostgresUrl } from './postgres/connection.js';
import * as journal from './postgres/journal.js';
import { Leases } from './postgres/leases.js';
import { PgPool } from './postgres/pool.js';
import * as push from './postgres/push.js';
import { type LegJob, LegQueue } from './postgres/queue.js';
import { Runs } from './postgres/runs.js';
import * as sessions from './postgres/sessions.js';

export {
  explainPgError,
  isPostgresUrl,
  type PostgresTarget,
  parsePostgresUrl,
  withPostgres,
} from './postgres/connection.js';
export { LEG_QUEUE, type LegJob } from './postgres/queue.js';
export { type MigrationState, migrate, migrationStatus } from './postgres/schema.js';

export interface PostgresStoreOptions {
  /** Pool size (default 10). */
  max?: number;
  /** How long a run's lease lasts without renewal (default 30 s; KEEL_LEASE_MS). */
  leaseMs?: number;
}

export class PostgresStore implements Store {
  readonly kind = 'postgres';
  readonly target: PostgresTarget;
  /** How long a lease lasts without renewal. */
  readonly leaseMs: number;
  /** The pool, made and migrated on first use. */
  private readonly db: PgPool;
  /** The runs this process holds and their leases. */
  private readonly leases: Leases;
  private readonly runs: Runs;
  /** The job queue (pg-boss), started on first use. */
  private readonly legs: LegQueue;

  constructor(url: string | PostgresTarget, o: PostgresStoreOptions = {}) {
    this.target = typeof url === 'string' ? parsePostgresUrl(url) : url;
    this.db = new PgPool(this.target, o.max ?? 10);
    this.leaseMs = o.leaseMs ?? 30_000;
    this.leases = new Leases(this.db, this.leaseMs);
    this.runs = new Runs(this.db, this.leases);
    this.legs = new LegQueue(this.db, this.leases);
  }

  get schema(): string {
    return this.target.schema;
  }

  /** Runs `f` in one transaction on one connection: committed whole, or rolled back whole. */
  transaction<T>(f: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.db.transaction(f);
  }

  createRun(run: RunState, limit?: RunLimit): Promise<boolean> {
    return this.runs.createRun(run, limit);
  }

  saveRun(run: RunState, events?: JournalEntry[], card?: ApprovalRecord): Promise<Mode | undefined> {
    return this.runs.saveRun(run, events, card);
  }

  loadRun(id: string): Promise<RunState | undefined> {
    return this.runs.loadRun(id);
  }

  listRuns(q: RunQuery = {}): Promise<RunSummary[]> {
    return this.runs.listRuns(q);
  }

  toolUsage(limit: number): Promise<{ tool: string; calls: number }[]> {
    return this.runs.toolUsage(limit);
  }

  claimPause(runId: string, seq: number, owner: string): Promise<boolean> {
    return this.leases.claimPause(runId, seq, owner);
  }

  /** Issue 40: the claim and the closing of the run's pending cards, in one transaction (leases.ts). */
  claimToCancel(
    runId: string,
    seq: number,
    owner: string,
    close: { actor: string; reason: string; at: string },
  ): Promise<string[] | undefined> {
    return this.leases.claimToCancel(runId, seq, owner, close);
  }

  takeOver(runId: string, seq: number, deadOwner: string | null, owner: string, ownerGone = false): Promise<boolean> {
    return this.leases.takeOver(runId, seq, deadOwner, owner, ownerGone);
  }

  /** Renews the leases of the runs this process holds; a run another process took is marked lost. */
  renewLeases(): Promise<void> {
    return this.leases.renewLeases();
  }

  /** Stops renewing a run's lease (its leg failed here): once it runs out, a worker takes the run over. */
  release(runId: string): void {
    this.leases.release(runId);
  }

  /** How long a worker has between fetching a leg's job and holding its run (queue.ts). */
  get handoverSeconds(): number {
    return this.legs.handoverSeconds;
  }

  /** The job queue in this database (pg-boss), started on first use. */
  queue(): Promise<PgBoss> {
    return this.legs.queue();
  }

  /** Hands a run this process holds to the queue, released and queued in one transaction (queue.ts). */
  handOff(runId: string, owner: string, job: LegJob): Promise<boolean> {
    return this.legs.handOff(runId, owner, job);
  }

  /** Runs whose lease ran out: each released and queued to be taken over, at most once (queue.ts). Returns their ids. */
  reapExpired(limit = 100): Promise<string[]> {
    return this.legs.reapExpired(limit);
  }

  getSession(id: string): Promise<SessionRecord | undefined> {
    return sessions.getSession(this.db, id);
  }

  saveSession(s: SessionRecord): Promise<void> {
    return sessions.saveSession(this.db, s);
  }

  appendEvent(runId: string, event: RunEvent, at: string): Promise<number> {
    return journal.appendEvent(this.db, runId, event, at);
  }

  /** Live wake-ups across processes (S5, journal.ts). Returns the function that stops listening. */
  listen(onWake: (runId: string) => void): Promise<() => Promise<void>> {
    return journal.listen(this.db, onWake);
  }

  latestEventId(): Promise<number> {
    return journal.latestEventId(this.db);
  }

  listEvents(q: EventQuery = {}): Promise<StoredEvent[]> {
    return journal.listEvents(this.db, q);
  }

  createApproval(a: ApprovalRecord): Promise<void> {
    return approvals.createApproval(this.db, a);
  }

  getApproval(id: string): Promise<ApprovalRecord | undefined> {
    return approvals.getApproval(this.db, id);
  }

  listApprovals(filter: { status?: ApprovalStatus; run_id?: string } = {}): Promise<ApprovalRecord[]> {
    return approvals.listApprovals(this.db, filter);
  }

  /** A7/A3: one conditional update of a pending card (approvals.ts); the arguments as Store names them. */
  answerApproval(...a: Parameters<Store['answerApproval']>): Promise<boolean> {
    return approvals.answerApproval(this.db, ...a);
  }

  audit(row: AuditRecord): Promise<void> {
    return approvals.audit(this.db, row);
  }

  listAudit(subject?: string): Promise<AuditRecord[]> {
    return approvals.listAudit(this.db, subject);
  }

  ledgerStart(row: Omit<LedgerRow, 'state' | 'result' | 'is_error'>): Promise<boolean> {
    return approvals.ledgerStart(this.db, row);
  }

  ledgerFinish(approvalId: string, callId: string, result: string, isError: boolean, untrusted?: string): Promise<void> {
    return approvals.ledgerFinish(this.db, approvalId, callId, result, isError, untrusted);
  }

  ledgerGet(approvalId: string, callId: string): Promise<LedgerRow | undefined> {
    return approvals.ledgerGet(this.db, approvalId, callId);
  }

  memoryAdd(text: string, untrusted?: string): Promise<Memory> {
    return sessions.memoryAdd(this.db, text, untrusted);
  }

  memorySearch(query: string, limit: number): Promise<Memory[]> {
    return sessions.memorySearch(this.db, query, limit);
  }

  memoryUpdate(id: number, patch: { text?: string; status?: Memory['status']; untrusted?: string | null }): Promise<Memory | undefined> {
    return sessions.memoryUpdate(this.db, id, patch);
  }

  addFeedback(runId: string, text: string): Promise<void> {
    return sessions.addFeedback(this.db, runId, text);
  }

  pushKeys(candidate?: VapidKeys): Promise<VapidKeys | undefined> {
    return push.pushKeys(this.db, candidate);
  }

  addPushSubscription(
    sub: PushSubscriptionRecord,
    max: number,
  ): Promise<{ status: 'added' | 'updated' | 'full'; subscription?: PushSubscriptionRecord }> {
    return push.addPushSubscription(this.db, sub, max);
  }

  listPushSubscriptions(ownerId?: string): Promise<PushSubscriptionRecord[]> {
    return push.listPushSubscriptions(this.db, ownerId);
  }

  removePushSubscription(id: string): Promise<boolean> {
    return push.removePushSubscription(this.db, id);
  }

  async close(): Promise<void> {
    if (this.db.closed) return;
    this.db.closed = true;
    this.leases.stop();
    await this.legs.stop();
    await this.db.end();
  }
}
