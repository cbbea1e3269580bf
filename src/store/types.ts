import type {
  ApprovalCard,
  ApprovalItem,
  CallRecord,
  Contract,
  EffectRecord,
  EndReason,
  Message,
  Pause,
  RequestTrace,
  RunState,
  RunStatus,
} from '../loop/types.js';
import type { Mode } from '../tools/types.js';

export interface SessionRecord {
  id: string;
  mode: Mode;
  last_run_id: string | null;
  contract: Contract | null;
  updated_at: string;
}

export interface RunSummary {
  id: string;
  session_id: string;
  status: RunStatus;
  reason: EndReason | null;
  request: string;
  mode: Mode;
  model: string;
  model_calls: number;
  created_at: string;
  updated_at: string;
}

/** The tails a step adds, and the run fields it changes: saved in one transaction. */
export interface RunDelta {
  messages: readonly Message[];
  steps: readonly CallRecord[];
  requests: readonly RequestTrace[];
}

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired';

export interface ApprovalRecord {
  id: string;
  run_id: string;
  /** The pause this approval answers (one approval, one pause). */
  pause_seq: number;
  items: ApprovalItem[];
  card: ApprovalCard;
  status: ApprovalStatus;
  requested_at: string;
  expires_at: string;
  answered_at: string | null;
  answered_by: string | null;
  reason: string | null;
}

export interface AuditRecord {
  at: string;
  actor: string;
  action: string;
  subject: string;
  detail: string;
}

/** A side-effect ledger row: intent before an approved call runs, outcome after (A2). */
export interface LedgerRow {
  approval_id: string;
  call_id: string;
  tool: string;
  args_json: string;
  state: 'started' | 'finished';
  result: string | null;
  is_error: boolean;
}

export interface Memory {
  id: number;
  text: string;
  status: 'active' | 'forgotten';
  created_at: string;
  updated_at: string;
}

/**
 * The one store interface (S4). SQLite now; PostgreSQL behind the same methods.
 * Every method may be called from several processes on the same store.
 */
export interface Store {
  readonly kind: string;
  createRun(run: RunState): Promise<void>;
  /** Appends the delta and writes the run's scalar fields (status, pause, effects, …). */
  saveRun(run: RunState, delta: RunDelta): Promise<void>;
  loadRun(id: string): Promise<RunState | undefined>;
  listRuns(limit?: number): Promise<RunSummary[]>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  saveSession(s: SessionRecord): Promise<void>;
  /**
   * Atomically takes a paused run out of pause `seq`. False when it is not paused there any more
   * (already resumed, in this process or another): the caller must not continue it (R18).
   */
  claimPause(runId: string, seq: number, owner: string): Promise<boolean>;
  /**
   * Takes over a run left 'running' at pause `seq` by a process that died (`deadOwner`).
   * False when another process took it first.
   */
  takeOver(runId: string, seq: number, deadOwner: string | null, owner: string): Promise<boolean>;

  createApproval(a: ApprovalRecord): Promise<void>;
  getApproval(id: string): Promise<ApprovalRecord | undefined>;
  listApprovals(filter?: { status?: ApprovalStatus; run_id?: string }): Promise<ApprovalRecord[]>;
  /** Moves a pending approval to a final status. False when it was no longer pending (conflict). */
  answerApproval(
    id: string,
    status: Exclude<ApprovalStatus, 'pending'>,
    actor: string,
    reason: string | null,
    at: string,
  ): Promise<boolean>;
  audit(row: AuditRecord): Promise<void>;
  listAudit(subject?: string): Promise<AuditRecord[]>;
  /** Records the intent to run an approved call. False when a row already exists (never run twice). */
  ledgerStart(row: Omit<LedgerRow, 'state' | 'result' | 'is_error'>): Promise<boolean>;
  ledgerFinish(approvalId: string, callId: string, result: string, isError: boolean): Promise<void>;
  ledgerGet(approvalId: string, callId: string): Promise<LedgerRow | undefined>;

  memoryAdd(text: string): Promise<Memory>;
  memorySearch(query: string, limit: number): Promise<Memory[]>;
  memoryUpdate(id: number, patch: { text?: string; status?: Memory['status'] }): Promise<Memory | undefined>;
  addFeedback(runId: string, text: string): Promise<void>;

  close(): Promise<void>;
}

export type { EffectRecord, Pause };
