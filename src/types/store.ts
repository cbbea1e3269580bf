/**
 * What a store must do (RunStore, ApprovalStore, MemoryStore, …), the contract both stores meet.
 * Types only.
 */
import type { ApprovalCard, ApprovalItem, Contract, EndReason, RunEvent, RunState, RunStatus, StoredEvent } from './run.js';
import type { Mode } from './tools.js';

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
  /** A delegate's run: the run that started it (null for a top-level run). */
  parent_run?: string | null;
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
  /** A plan or goal approved with its confirm-once writes let run unasked. */
  consent_writes: boolean;
}

export interface AuditRecord {
  at: string;
  actor: string;
  action: string;
  subject: string;
  detail: string;
}

/** A side-effect ledger row: intent before an approved call runs, outcome after. */
export interface LedgerRow {
  approval_id: string;
  call_id: string;
  tool: string;
  args_json: string;
  state: 'started' | 'finished';
  result: string | null;
  is_error: boolean;
  /**
   * The result carried words from outside the user (its tool's declaration, or the result's own
   * `untrusted: true`): the label of where from, as it was when the call ran (its `source`, else the
   * call). Absent for a trusted result, so a replay after a crash comes back exactly as it ran.
   */
  untrusted?: string;
}

export interface Memory {
  id: number;
  text: string;
  status: 'active' | 'forgotten';
  created_at: string;
  updated_at: string;
  /** Written by a run that had read words from outside the user: where from (its text may be an injection). */
  untrusted?: string;
}

/**
 * Runs and the sessions they belong to. Every method may be called from several processes on the
 * same store; only the process that holds a run (it created or claimed it) saves it.
 */
export interface RunStore {
  /**
   * Stores a new run. With `limit` (a delegate's run), only while fewer than
   * `limit.activeDelegates` delegates' runs are running or paused in the whole store — counted and
   * inserted atomically, whichever processes start delegates at once; false when refused (nothing
   * stored). True otherwise.
   */
  createRun(run: RunState, limit?: RunLimit): Promise<boolean>;
  /**
   * Writes the run's fields and appends the messages, steps and requests the store does not have
   * yet, in one transaction. The transcript only grows: a run with fewer messages, steps or
   * requests than stored is refused. Returns the mode of the run's session as stored when the save
   * committed, read by the save itself (a mode switch made in another process reaches the run at its
   * next save, with no query of its own); undefined when the session has no record yet.
   *
   * `events`: journal events appended in the same write — the same transaction, on
   * PostgreSQL the same statement — as appendEvent would append them, in order; each gets its `id`
   * once the save committed. A save that fails appends none of them.
   *
   * `card`: the approval card a pause waits on, stored in the same transaction as the paused run,
   * so that no card is ever stored without its run paused on it (a process killed between the two
   * left one no one could answer), nor the pause without its card.
   */
  saveRun(run: RunState, events?: JournalEntry[], card?: ApprovalRecord): Promise<Mode | undefined>;
  loadRun(id: string): Promise<RunState | undefined>;
  /** Runs newest first, filtered; `before` continues a listing after its last row (keyset paging). */
  listRuns(query?: RunQuery): Promise<RunSummary[]>;
  /**
   * Atomically takes a paused run out of pause `seq`. False when it is not paused there any more
   * (already resumed, in this process or another): the caller must not continue it.
   */
  claimPause(runId: string, seq: number, owner: string): Promise<boolean>;
  /**
   * Issue 40: a cancel's claim. Takes a paused run out of pause `seq` as claimPause does and, in the
   * same transaction, closes the run's pending cards (rejected, by `close.actor`, for `close.reason`):
   * returns their ids, or undefined when the run was not claimed — no longer paused there, or the
   * card its pause waits on was answered first (approved or rejected: that answer carries the run on).
   * So an answer and a cancel of one run have one winner, and the card says which.
   */
  claimToCancel(
    runId: string,
    seq: number,
    owner: string,
    close: { actor: string; reason: string; at: string },
  ): Promise<string[] | undefined>;
  /**
   * Takes over a run left 'running' at pause `seq` by a process that died (`deadOwner`). False
   * when another process took it first, or while the run's lease is valid (both stores hold runs
   * by lease): a valid lease always wins, unless `ownerGone` says the caller saw
   * the owner's process gone (on its own host: exited, a zombie, or its PID reused), so that no one
   * renews the lease any more. The process that holds a run renews its lease while the run is
   * 'running' and can no longer save it once another process took it.
   */
  // S4/R18 (issue 27.3): the lease rule.
  takeOver(runId: string, seq: number, deadOwner: string | null, owner: string, ownerGone?: boolean): Promise<boolean>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  saveSession(s: SessionRecord): Promise<void>;
  /**
   * Appends an event to a run's journal and returns its id: larger than every id already stored,
   * in any run. The journal is written as events happen, before anyone is shown them.
   */
  appendEvent(runId: string, event: RunEvent, at: string): Promise<number>;
  /** Journal rows in id order: of one run or all, after an id, of some types, at most `limit`. */
  listEvents(query?: EventQuery): Promise<StoredEvent[]>;
  /** The largest journal id so far (0 for none): where a stream that wants only new events starts. */
  latestEventId(): Promise<number>;
  /**
   * The tools most used before, across every run: calls that ran (outcome `ran`), most first, ties
   * by name, at most `limit` (what fills a menu whose request matches no tool).
   */
  toolUsage(limit: number): Promise<ToolUsage[]>;
}

/** How many delegates' runs (runs with a parent) may be running or paused at once in a store. */
export interface RunLimit {
  activeDelegates: number;
}

/** An event a save appends to the run's journal (see saveRun); `id` is set by the store. */
export interface JournalEntry {
  event: RunEvent;
  at: string;
  /**
   * Appended only when the run's session, as the save reads it, is in this mode or has no record;
   * otherwise skipped, and its `id` stays unset (a request built for a mode left since).
   */
  onlyInMode?: Mode;
  id?: number;
}

export interface ToolUsage {
  tool: string;
  calls: number;
}

export interface RunQuery {
  limit?: number;
  status?: RunStatus;
  session_id?: string;
  /** Rows strictly older than this one (the last row of the previous page). */
  before?: { created_at: string; id: string };
  /** Only the delegates' runs this run started. */
  parent_run?: string;
}

export interface EventQuery {
  run_id?: string;
  after?: number;
  types?: readonly RunEvent['type'][];
  limit?: number;
}

/** Approval cards, the audit log, and the side-effect ledger that makes approved calls run once. */
export interface ApprovalStore {
  createApproval(a: ApprovalRecord): Promise<void>;
  getApproval(id: string): Promise<ApprovalRecord | undefined>;
  listApprovals(filter?: { status?: ApprovalStatus; run_id?: string }): Promise<ApprovalRecord[]>;
  /**
   * Moves a pending approval to a final status. False when it was no longer pending (conflict).
   * `items`, when given (the owner edited a call's arguments), replace the card's calls in the same
   * update, and `card`, when given, its words (issue 40: the edited calls worded again).
   */
  answerApproval(
    id: string,
    status: Exclude<ApprovalStatus, 'pending'>,
    actor: string,
    reason: string | null,
    at: string,
    consentWrites?: boolean,
    items?: ApprovalItem[],
    card?: ApprovalCard,
  ): Promise<boolean>;
  audit(row: AuditRecord): Promise<void>;
  listAudit(subject?: string): Promise<AuditRecord[]>;
  /** Records the intent to run an approved call. False when a row already exists (never run twice). */
  ledgerStart(row: Omit<LedgerRow, 'state' | 'result' | 'is_error'>): Promise<boolean>;
  /** The call's outcome; `untrusted`: its result's label when the result carried words from outside the user, kept with it. */
  ledgerFinish(approvalId: string, callId: string, result: string, isError: boolean, untrusted?: string): Promise<void>;
  ledgerGet(approvalId: string, callId: string): Promise<LedgerRow | undefined>;
}

/** What the user asked Keel to remember, and their feedback (the memory_* and record_feedback tools). */
export interface MemoryStore {
  /** `untrusted`: the writing run had read words from outside the user: where from. */
  memoryAdd(text: string, untrusted?: string): Promise<Memory>;
  memorySearch(query: string, limit: number): Promise<Memory[]>;
  /** `untrusted`: a string marks the memory untrusted, null makes it trusted again (new text from a clean run), absent keeps it. */
  memoryUpdate(id: number, patch: { text?: string; status?: Memory['status']; untrusted?: string | null }): Promise<Memory | undefined>;
  addFeedback(runId: string, text: string): Promise<void>;
}

/** The server's VAPID key pair for Web Push: P-256, base64url, as browsers and web-push take them. */
export interface VapidKeys {
  /** The uncompressed public point (65 bytes): the console's applicationServerKey. */
  public_key: string;
  /** The private scalar (32 bytes). */
  private_key: string;
  created_at: string;
}

/** A browser's Web Push subscription, held for the token that made it. */
export interface PushSubscriptionRecord {
  id: string;
  /** The token's name, for people; `owner_id` is what counts (a name may be reused after a revoke). */
  owner: string;
  /** The token's id: pushes go only while that token is active and may answer cards. */
  owner_id: string;
  /** The push service's URL for this browser (a capability: never shown whole outside its owner's list). */
  endpoint: string;
  /** The browser's ECDH P-256 public key (65 bytes, base64url) and auth secret (16 bytes, base64url): RFC 8291. */
  p256dh: string;
  auth: string;
  /** What the owner called it ("phone"), bounded. */
  label: string | null;
  created_at: string;
}

/** Web Push: the server's VAPID keys and the browsers subscribed, per token. */
export interface PushStore {
  /**
   * The VAPID key pair. With `candidate`, a store that has none keeps it — the first writer wins,
   * across processes — and the pair kept is returned either way; undefined only when none is kept
   * and no candidate was given.
   */
  pushKeys(candidate?: VapidKeys): Promise<VapidKeys | undefined>;
  /**
   * Keeps a subscription: a new one (`added`), or the owner's one with the same endpoint given new
   * keys and label (`updated`, keeping its id). `full`, storing nothing, when the owner holds `max`
   * already. Counted and written in one step, so two at once never pass the bound.
   */
  addPushSubscription(
    s: PushSubscriptionRecord,
    max: number,
  ): Promise<{ status: 'added' | 'updated' | 'full'; subscription?: PushSubscriptionRecord }>;
  /** Subscriptions, oldest first: one owner's (by token id), or all. */
  listPushSubscriptions(ownerId?: string): Promise<PushSubscriptionRecord[]>;
  /** Removes one subscription. False when there was none with that id. */
  removePushSubscription(id: string): Promise<boolean>;
}

/** One store: SQLite now, PostgreSQL behind the same interfaces; test/store/conformance.ts checks each. */
export interface Store extends RunStore, ApprovalStore, MemoryStore, PushStore {
  readonly kind: string;
  close(): Promise<void>;
}
