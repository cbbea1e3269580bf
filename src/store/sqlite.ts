/**
 * The embedded store (S4): one SQLite file (WAL), safe to share between processes — the default store.
 * This class is its face: each method hands its work to the file of its concern in src/store/sqlite/
 * (schema, runs, blobs, journal, leases, approvals, sessions, push), with the state one store keeps.
 * Never holds logic of its own beyond opening and closing: what a method does is in its concern's file.
 */
import type {
  ApprovalCard,
  ApprovalItem,
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
  ToolUsage,
  VapidKeys,
} from '../types/index.js';
import * as approvals from './sqlite/approvals.js';
import { blobStatements } from './sqlite/blobs.js';
import * as journal from './sqlite/journal.js';
import * as leases from './sqlite/leases.js';
import * as push from './sqlite/push.js';
import * as runs from './sqlite/runs.js';
import { openDatabase } from './sqlite/schema.js';
import * as sessions from './sqlite/sessions.js';
import { newState, type SqliteState } from './sqlite/state.js';

export interface SqliteStoreOptions {
  /** How long a run's lease lasts without renewal (default 30 s; KEEL_LEASE_MS), as on PostgreSQL. */
  leaseMs?: number;
}

/** The embedded store: one SQLite file (WAL), safe to share between processes. */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly file: string;
  /** How long a lease lasts without renewal. */
  readonly leaseMs: number;
  /** The connection, its statements and what this process remembers of the file. */
  private readonly st: SqliteState;

  constructor(file: string, o: SqliteStoreOptions = {}) {
    this.file = file;
    this.leaseMs = o.leaseMs ?? 30_000;
    const db = openDatabase(file);
    this.st = newState(db, this.leaseMs, {
      ...runs.runStatements(db),
      ...journal.journalStatements(db),
      ...blobStatements(db),
      ...leases.leaseStatements(db),
      ...approvals.approvalStatements(db),
      ...sessions.sessionStatements(db),
    });
  }

  /** Renews the leases of the runs this store holds now (the heartbeat does every third of the lease). */
  renewLeases(): void {
    leases.renewLeases(this.st);
  }

  createRun(run: RunState, limit?: RunLimit): Promise<boolean> {
    return runs.createRun(this.st, run, limit);
  }

  saveRun(run: RunState, events?: JournalEntry[], card?: ApprovalRecord): Promise<Mode | undefined> {
    return runs.saveRun(this.st, run, events, card);
  }

  loadRun(id: string): Promise<RunState | undefined> {
    return runs.loadRun(this.st, id);
  }

  getSession(id: string): Promise<SessionRecord | undefined> {
    return sessions.getSession(this.st, id);
  }

  saveSession(s: SessionRecord): Promise<void> {
    return sessions.saveSession(this.st, s);
  }

  listRuns(q: RunQuery = {}): Promise<RunSummary[]> {
    return runs.listRuns(this.st, q);
  }

  /** The event joins this store's journal group, committed by its next write or at the end of the tick. */
  appendEvent(runId: string, event: RunEvent, at: string): Promise<number> {
    return journal.appendEvent(this.st, runId, event, at);
  }

  /** Commits this store's journal group now; `failWrite`: a failed commit is thrown, not reported. */
  commitEvents(failWrite = false): void {
    journal.commitEvents(this.st, failWrite);
  }

  toolUsage(limit: number): Promise<ToolUsage[]> {
    return runs.toolUsage(this.st, limit);
  }

  latestEventId(): Promise<number> {
    return journal.latestEventId(this.st);
  }

  listEvents(q: EventQuery = {}): Promise<StoredEvent[]> {
    return journal.listEvents(this.st, q);
  }

  claimPause(runId: string, seq: number, owner: string): Promise<boolean> {
    return leases.claimPause(this.st, runId, seq, owner);
  }

  claimToCancel(
    runId: string,
    seq: number,
    owner: string,
    close: { actor: string; reason: string; at: string },
  ): Promise<string[] | undefined> {
    return leases.claimToCancel(this.st, runId, seq, owner, close);
  }

  takeOver(runId: string, seq: number, deadOwner: string | null, owner: string, ownerGone = false): Promise<boolean> {
    return leases.takeOver(this.st, runId, seq, deadOwner, owner, ownerGone);
  }

  createApproval(a: ApprovalRecord): Promise<void> {
    return approvals.createApproval(this.st, a);
  }

  getApproval(id: string): Promise<ApprovalRecord | undefined> {
    return approvals.getApproval(this.st, id);
  }

  listApprovals(filter: { status?: ApprovalStatus; run_id?: string } = {}): Promise<ApprovalRecord[]> {
    return approvals.listApprovals(this.st, filter);
  }

  answerApproval(
    id: string,
    status: Exclude<ApprovalStatus, 'pending'>,
    actor: string,
    reason: string | null,
    at: string,
    consentWrites = false,
    items?: ApprovalItem[],
    card?: ApprovalCard,
  ): Promise<boolean> {
    return approvals.answerApproval(this.st, id, status, actor, reason, at, consentWrites, items, card);
  }

  audit(row: AuditRecord): Promise<void> {
    return approvals.audit(this.st, row);
  }

  listAudit(subject?: string): Promise<AuditRecord[]> {
    return approvals.listAudit(this.st, subject);
  }

  ledgerStart(row: Omit<LedgerRow, 'state' | 'result' | 'is_error'>): Promise<boolean> {
    return approvals.ledgerStart(this.st, row);
  }

  ledgerFinish(approvalId: string, callId: string, result: string, isError: boolean, untrusted?: string): Promise<void> {
    return approvals.ledgerFinish(this.st, approvalId, callId, result, isError, untrusted);
  }

  ledgerGet(approvalId: string, callId: string): Promise<LedgerRow | undefined> {
    return approvals.ledgerGet(this.st, approvalId, callId);
  }

  memoryAdd(text: string, untrusted?: string): Promise<Memory> {
    return sessions.memoryAdd(this.st, text, untrusted);
  }

  memorySearch(query: string, limit: number): Promise<Memory[]> {
    return sessions.memorySearch(this.st, query, limit);
  }

  memoryUpdate(id: number, patch: { text?: string; status?: Memory['status']; untrusted?: string | null }): Promise<Memory | undefined> {
    return sessions.memoryUpdate(this.st, id, patch);
  }

  addFeedback(runId: string, text: string): Promise<void> {
    return sessions.addFeedback(this.st, runId, text);
  }

  pushKeys(candidate?: VapidKeys): Promise<VapidKeys | undefined> {
    return push.pushKeys(this.st, candidate);
  }

  addPushSubscription(
    sub: PushSubscriptionRecord,
    max: number,
  ): Promise<{ status: 'added' | 'updated' | 'full'; subscription?: PushSubscriptionRecord }> {
    return push.addPushSubscription(this.st, sub, max);
  }

  listPushSubscriptions(ownerId?: string): Promise<PushSubscriptionRecord[]> {
    return push.listPushSubscriptions(this.st, ownerId);
  }

  removePushSubscription(id: string): Promise<boolean> {
    return push.removePushSubscription(this.st, id);
  }

  async close(): Promise<void> {
    clearInterval(this.st.heartbeat);
    this.st.heartbeat = undefined;
    this.commitEvents();
    if (this.st.db.open) this.st.db.close();
  }
}
