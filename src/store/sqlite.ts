import { chmodSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type {
  ApprovalCard,
  ApprovalItem,
  ApprovalRecord,
  ApprovalStatus,
  AuditRecord,
  CallRecord,
  EventQuery,
  JournalEntry,
  LedgerRow,
  Memory,
  Message,
  Mode,
  PushSubscriptionRecord,
  RequestTrace,
  RunEvent,
  RunQuery,
  RunState,
  RunSummary,
  SessionRecord,
  Store,
  StoredEvent,
  ToolUsage,
  VapidKeys,
} from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { contentHash, eventJson, readEvents, type StepRow, stepRow, stepsFrom, toolsBlob } from './trace.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  status TEXT NOT NULL,
  reason TEXT,
  request TEXT NOT NULL,
  mode TEXT NOT NULL,
  model TEXT NOT NULL,
  plugin_dirs TEXT NOT NULL,
  answer TEXT,
  pause TEXT,
  pause_seq INTEGER NOT NULL DEFAULT 0,
  model_calls INTEGER NOT NULL DEFAULT 0,
  effects TEXT NOT NULL DEFAULT '[]',
  notes TEXT NOT NULL DEFAULT '[]',
  warnings TEXT NOT NULL DEFAULT '[]',
  owner TEXT,
  lease_until INTEGER,
  counted_steps INTEGER,
  session_id TEXT NOT NULL,
  seq_base INTEGER NOT NULL DEFAULT 0,
  contract TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
-- A run's trace as an older Keel stored it, a row per message, call record and request (read, never written).
CREATE TABLE IF NOT EXISTS messages (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS calls (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS requests (run_id TEXT NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL, system_hash TEXT NOT NULL, tools_hash TEXT NOT NULL, meta TEXT NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, mode TEXT NOT NULL, last_run_id TEXT, contract TEXT, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (hash TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS approvals (
  id TEXT PRIMARY KEY, run_id TEXT NOT NULL, pause_seq INTEGER NOT NULL, items TEXT NOT NULL, card TEXT NOT NULL,
  status TEXT NOT NULL, requested_at TEXT NOT NULL, expires_at TEXT NOT NULL,
  answered_at TEXT, answered_by TEXT, reason TEXT, consent_writes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS approvals_status ON approvals(status);
CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL, subject TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (
  approval_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL, args_json TEXT NOT NULL,
  state TEXT NOT NULL, result TEXT, is_error INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (approval_id, call_id)
);
CREATE TABLE IF NOT EXISTS memories (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS feedback (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, text TEXT NOT NULL, at TEXT NOT NULL);
-- The journal, and the run's trace as it grows (issue 29: one row per step). A row is one event (n NULL:
-- body is the event, its id the row's), or what a save wrote: its n events (body a JSON array, ids id to
-- id + n - 1; n = 0 holds none and takes one id no event has) and, in part, what it added to the trace —
-- messages, call records, requests — with the trace's lengths after it. A save whose run's reply is the
-- journal's last row extends that row (its events follow the reply's; at_rest is their time).
CREATE TABLE IF NOT EXISTS run_events (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, type TEXT NOT NULL, at TEXT NOT NULL, body TEXT NOT NULL,
  n INTEGER, part TEXT, at_rest TEXT);
CREATE INDEX IF NOT EXISTS run_events_run ON run_events(run_id, id);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created_at DESC);
CREATE INDEX IF NOT EXISTS runs_session ON runs(session_id, created_at DESC);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status, created_at DESC);
CREATE TABLE IF NOT EXISTS push_keys (id INTEGER PRIMARY KEY CHECK (id = 1), public_key TEXT NOT NULL, private_key TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS push_subscriptions (
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, owner_id TEXT NOT NULL, endpoint TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL,
  label TEXT, created_at TEXT NOT NULL, UNIQUE (owner_id, endpoint)
);
`;

type Row = Record<string, unknown>;
/** The id the journal's next row takes: after the last row's events (or its one id when it holds none). */
const NEXT_EVENT_ID = 'COALESCE((SELECT id + MAX(COALESCE(n, 1), 1) FROM run_events ORDER BY id DESC LIMIT 1), 1)';

/** Stores of this process with journal rows not yet committed. */
const PENDING = new Set<SqliteStore>();

/** Every other store of this process commits its journal group (before a write or a journal read). */
function commitOthers(self: SqliteStore): void {
  for (const s of [...PENDING]) if (s !== self) s.commitEvents();
}
/** The lengths of a run's trace in the file, and how many of its call records its tools' use counts (R23). */
type Stored = { messages: number; steps: number; requests: number; counted: number };
/** The run's fields a save writes, in the order of `writeRun`'s values. */
const RUN_FIELDS = [
  'status',
  'reason',
  'mode',
  'answer',
  'pause',
  'pause_seq',
  'model_calls',
  'effects',
  'notes',
  'warnings',
  'contract',
  'counted_steps',
];
/**
 * What one save added to a run's trace (a key is absent when it added none), and the trace's lengths
 * after it (messages, call records, requests): a journal row's `part`.
 */
type Part = {
  n: [messages: number, steps: number, requests: number];
  m?: Message[];
  c?: (StepRow | number)[];
  r?: [systemHash: string, toolsHash: string, meta: Omit<RequestTrace, 'system' | 'tools'>][];
};

export interface SqliteStoreOptions {
  /** How long a run's lease lasts without renewal (default 30 s; KEEL_LEASE_MS), as on PostgreSQL. */
  leaseMs?: number;
}

/** The embedded store: one SQLite file (WAL), safe to share between processes. */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly file: string;
  private readonly db: Database.Database;
  private readonly stmt: Record<string, Database.Statement>;
  /** Hashes this process has already written to `blobs` (the table is content-addressed). */
  private readonly knownBlobs = new Set<string>();
  /** The last row this store appended on its own (a run's reply): the run's next save may extend it. */
  private lastAppended: { runId: string; id: number; body: string } | undefined;
  /** Blob texts the journal's readers asked for lately (menus: a few, read again and again). */
  private readonly blobCache = new Map<string, string>();
  /** Blobs written by the transaction in progress: forgotten again if it rolls back. */
  private uncommittedBlobs: string[] = [];
  /** Runs a function inside one SQLite transaction (made once: better-sqlite3 wraps it). */
  private readonly transaction: (write: () => void) => void;
  /** Statements of the queries built from a filter, one per shape. */
  private readonly shapes = new Map<string, Database.Statement>();
  /** Journal rows written since the last commit (see appendEvent). */
  private eventsPending = false;
  /** How many messages, steps and requests of each run the file holds (a run is saved by one process at a time). */
  private readonly stored = new Map<string, Stored>();
  /** The fields this store last wrote of each run it holds running (see writeRun). */
  private readonly written = new Map<string, unknown[]>();
  /** The run's updates, one per set of fields they write. */
  private readonly updates = new Map<number, Database.Statement>();
  /** How long a lease lasts without renewal. */
  readonly leaseMs: number;
  /** Runs this store holds (created running, claimed, taken over), with the owner that holds them: their leases are renewed. */
  private readonly held = new Map<string, string>();
  /** Runs this store held and another process took (its lease ran out): never saved from here again. */
  private readonly lost = new Map<string, string | null>();
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(file: string, o: SqliteStoreOptions = {}) {
    this.file = file;
    this.leaseMs = o.leaseMs ?? 30_000;
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    this.db = new Database(file, { timeout: 5000 });
    // The store holds conversations and approvals: readable by its owner only (SQLite's WAL and
    // shared-memory files take the database file's permissions).
    if (file !== ':memory:') {
      try {
        chmodSync(file, 0o600);
      } catch {
        // Not ours to change (a database another account shares with us): leave it as it is.
      }
    }
    try {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      this.db.pragma('foreign_keys = ON');
      this.db.exec(SCHEMA);
      this.migrate();
    } catch (err) {
      this.db.close();
      throw err;
    }
    this.transaction = this.db.transaction((write: () => void) => write());
    const p = (sql: string) => this.db.prepare(sql);
    this.stmt = {
      insertRun:
        p(`INSERT INTO runs (id,status,reason,request,mode,model,plugin_dirs,answer,pause,pause_seq,model_calls,effects,notes,warnings,owner,lease_until,counted_steps,session_id,seq_base,contract,created_at,updated_at,inherited_untrusted,parent_run,depth,delegate,task_id,parent_request,principal)
        VALUES (@id,@status,@reason,@request,@mode,@model,@plugin_dirs,@answer,@pause,@pause_seq,@model_calls,@effects,@notes,@warnings,@owner,@lease_until,0,@session_id,@seq_base,@contract,@created_at,@updated_at,@inherited_untrusted,@parent_run,@depth,@delegate,@task_id,@parent_request,@principal)`),
      // C5: the session's mode as stored, read in the save's own transaction.
      sessionMode: p('SELECT mode FROM sessions WHERE id = ?'),
      ownerNow: p('SELECT owner, status FROM runs WHERE id = ?'),
      getRun: p('SELECT * FROM runs WHERE id = ?'),
      appendEvent: p(`INSERT INTO run_events (id, run_id, type, at, body) VALUES (${NEXT_EVENT_ID}, ?, ?, ?, ?)`),
      insertWrite: p(`INSERT INTO run_events (id, run_id, type, at, body, n, part) VALUES (${NEXT_EVENT_ID}, ?, ?, ?, ?, ?, ?)`),
      extendRow: p('UPDATE run_events SET body = ?, n = ?, at_rest = ?, part = ? WHERE id = ?'),
      lastEventRow: p('SELECT id FROM run_events ORDER BY id DESC LIMIT 1'),
      // The journal group's transaction (appendEvent), prepared once rather than parsed at each step.
      begin: p('BEGIN IMMEDIATE'),
      commit: p('COMMIT'),
      // The lengths of a run's trace: its last part's, or (a run an older Keel stored) its rows counted.
      counts: p(`SELECT json_extract(part, '$.n') AS n FROM run_events WHERE run_id = @id AND part IS NOT NULL ORDER BY id DESC LIMIT 1`),
      counted: p('SELECT counted_steps AS counted FROM runs WHERE id = ?'),
      oldCounts:
        p(`SELECT (SELECT COUNT(*) FROM messages WHERE run_id = @id) AS messages, (SELECT COUNT(*) FROM calls WHERE run_id = @id) AS steps,
        (SELECT COUNT(*) FROM requests WHERE run_id = @id) AS requests`),
      parts: p('SELECT part, body FROM run_events WHERE run_id = ? AND part IS NOT NULL ORDER BY id'),
      blobBody: p('SELECT body FROM blobs WHERE hash = ?'),
      insertBlob: p('INSERT OR IGNORE INTO blobs (hash, body) VALUES (?, ?)'),
      messages: p('SELECT body FROM messages WHERE run_id = ? ORDER BY seq'),
      calls: p('SELECT body FROM calls WHERE run_id = ? ORDER BY seq'),
      requests: p(`SELECT r.step, r.meta, s.body AS system, t.body AS tools FROM requests r
        JOIN blobs s ON s.hash = r.system_hash JOIN blobs t ON t.hash = r.tools_hash WHERE r.run_id = ? ORDER BY r.seq`),
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
      insertApproval:
        p(`INSERT INTO approvals (id,run_id,pause_seq,items,card,status,requested_at,expires_at,answered_at,answered_by,reason,consent_writes)
        VALUES (@id,@run_id,@pause_seq,@items,@card,@status,@requested_at,@expires_at,@answered_at,@answered_by,@reason,@consent_writes)`),
      getApproval: p('SELECT * FROM approvals WHERE id = ?'),
      answerApproval: p(
        "UPDATE approvals SET status = ?, answered_by = ?, reason = ?, answered_at = ?, consent_writes = ?, items = COALESCE(?, items), card = COALESCE(?, card) WHERE id = ? AND status = 'pending'",
      ),
      audit: p('INSERT INTO audit (at, actor, action, subject, detail) VALUES (?, ?, ?, ?, ?)'),
      ledgerStart: p("INSERT OR IGNORE INTO ledger (approval_id, call_id, tool, args_json, state) VALUES (?, ?, ?, ?, 'started')"),
      ledgerFinish: p("UPDATE ledger SET state = 'finished', result = ?, is_error = ? WHERE approval_id = ? AND call_id = ?"),
      ledgerGet: p('SELECT * FROM ledger WHERE approval_id = ? AND call_id = ?'),
      memoryAdd: p("INSERT INTO memories (text, status, created_at, updated_at, untrusted) VALUES (?, 'active', ?, ?, ?)"),
      memoryGet: p('SELECT * FROM memories WHERE id = ?'),
      memoryActive: p("SELECT * FROM memories WHERE status = 'active' ORDER BY id"),
      feedback: p('INSERT INTO feedback (run_id, text, at) VALUES (?, ?, ?)'),
      countUse: p('INSERT INTO tool_usage (tool, calls) VALUES (?, 1) ON CONFLICT(tool) DO UPDATE SET calls = calls + 1'),
      toolUsage: p('SELECT tool, calls FROM tool_usage ORDER BY calls DESC, tool LIMIT ?'),
    };
  }

  private runParams(run: RunState) {
    return {
      id: run.id,
      status: run.status,
      reason: run.reason,
      request: run.request,
      mode: run.mode,
      model: run.model,
      plugin_dirs: JSON.stringify(run.plugin_dirs),
      answer: run.answer,
      pause: run.pause ? JSON.stringify(run.pause) : null,
      pause_seq: run.pause_seq,
      model_calls: run.model_calls,
      effects: JSON.stringify(run.effects),
      notes: JSON.stringify(run.notes),
      warnings: JSON.stringify(run.warnings),
      owner: run.owner,
      session_id: run.session_id,
      seq_base: run.seq_base,
      contract: run.contract ? JSON.stringify(run.contract) : null,
      created_at: run.created_at,
      updated_at: run.updated_at,
      inherited_untrusted: run.inherited_untrusted?.length ? JSON.stringify(run.inherited_untrusted) : null,
      principal: run.principal ? JSON.stringify(run.principal) : null,
      parent_run: run.parent?.run_id ?? null,
      depth: run.parent?.depth ?? 0,
      delegate: run.parent?.delegate ?? null,
      task_id: run.parent?.task_id ?? null,
      parent_request: run.parent?.request ?? null,
    };
  }

  private blob(body: string, hash = contentHash(body)): string {
    if (!this.knownBlobs.has(hash)) {
      this.stmt.insertBlob.run(hash, body);
      this.knownBlobs.add(hash);
      this.uncommittedBlobs.push(hash);
    }
    return hash;
  }

  private blobOf(b: { body: string; hash: string }): string {
    return this.blob(b.body, b.hash);
  }

  /** Stores a blob (in the write in progress) and returns its key. */
  private readonly keepBlob = (b: { body: string; hash: string }): string => this.blobOf(b);

  /** A blob's text, by its key, read once into `cache`. */
  private blobFrom(hash: string, cache: Map<string, string>): string {
    let body = cache.get(hash);
    if (body === undefined) {
      body = (this.stmt.blobBody.get(hash) as { body: string } | undefined)?.body;
      if (body === undefined) throw new Error(`the file names a blob it does not hold (${hash})`);
      cache.set(hash, body);
    }
    return body;
  }

  /** A blob the journal names (a menu's names): the few read lately are remembered. */
  private readonly blobText = (hash: string): string => {
    if (this.blobCache.size >= 64 && !this.blobCache.has(hash)) this.blobCache.clear();
    return this.blobFrom(hash, this.blobCache);
  };

  /** Columns added since the first schema: a file made by an older Keel gains them (with their defaults). */
  private migrate(): void {
    const added: [table: string, column: string, definition: string][] = [
      ['runs', 'warnings', "TEXT NOT NULL DEFAULT '[]'"],
      ['approvals', 'consent_writes', 'INTEGER NOT NULL DEFAULT 0'],
      // S4/R18: when the run's lease runs out (ms since the epoch); NULL for no lease.
      ['runs', 'lease_until', 'INTEGER'],
      // R23: how many of the run's call records its tools' use counts (NULL: all of them).
      ['runs', 'counted_steps', 'INTEGER'],
      // Issue 29: a journal row holds a save's events and its part of the trace.
      ['run_events', 'n', 'INTEGER'],
      ['run_events', 'part', 'TEXT'],
      ['run_events', 'at_rest', 'TEXT'],
      // U2: a memory written by a run that had read untrusted content: where from (NULL: the user's own).
      ['memories', 'untrusted', 'TEXT'],
      // U2: what a run's context inherited from outside the user (its session, a delegate's parent); set once.
      ['runs', 'inherited_untrusted', 'TEXT'],
      // PC9: who started the run (a token, the local user, an MCP client, the app), as operator policies see it; set once.
      ['runs', 'principal', 'TEXT'],
      // D1: a delegate's run: the run that started it, how deep, as which delegate and task, and that run's request; set once.
      ['runs', 'parent_run', 'TEXT'],
      ['runs', 'depth', 'INTEGER NOT NULL DEFAULT 0'],
      ['runs', 'delegate', 'TEXT'],
      ['runs', 'task_id', 'TEXT'],
      ['runs', 'parent_request', 'TEXT'],
    ];
    for (const [table, column, definition] of added) {
      const columns = (this.db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name);
      if (!columns.includes(column)) this.db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${definition}`);
    }
    // D1: a run's delegates are listed by their parent.
    this.db.exec('CREATE INDEX IF NOT EXISTS runs_parent ON runs (parent_run) WHERE parent_run IS NOT NULL');
    // R23: how often each tool ran, kept as calls are written; a file made before it is counted once,
    // under a write lock so that two processes opening it together do not both count.
    const hasUsage = () => this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tool_usage'").get() !== undefined;
    if (!hasUsage()) {
      this.db
        .transaction(() => {
          if (hasUsage()) return;
          this.db.exec(`CREATE TABLE tool_usage (tool TEXT PRIMARY KEY, calls INTEGER NOT NULL);
            INSERT INTO tool_usage (tool, calls) SELECT tool, COUNT(*) FROM (
              SELECT json_extract(body, '$.tool') AS tool, json_extract(body, '$.outcome') AS outcome FROM calls
              UNION ALL SELECT json_extract(c.value, '$.tool'), json_extract(c.value, '$.outcome') FROM run_events, json_each(run_events.part, '$.c') AS c
                WHERE run_events.part IS NOT NULL)
              WHERE outcome = 'ran' AND tool IS NOT NULL GROUP BY 1;`);
        })
        .immediate();
    }
  }

  /** What the file holds of a run: remembered from the last write or load, else counted. */
  private storedOf(id: string): Stored {
    let n = this.stored.get(id);
    if (!n) {
      const last = this.stmt.counts.get({ id }) as { n: string } | undefined;
      if (last) {
        const [messages, steps, requests] = JSON.parse(last.n) as Part['n'];
        n = { messages, steps, requests, counted: 0 };
      } else n = this.stmt.oldCounts.get({ id }) as Stored;
      n.counted = (this.stmt.counted.get(id) as { counted: number | null } | undefined)?.counted ?? n.steps;
      this.stored.set(id, n);
    }
    return n;
  }

  /**
   * Writes the run's fields (those that changed) and counts its tools' use when it pauses or ends.
   * Returns the mode of the run's session as stored, read in the same transaction, and the lengths of
   * its trace in the file before and after the save (what the save appends: see partOf). The trace
   * only grows.
   */
  private writeRun(run: RunState): { mode: Mode | undefined; had: Stored; now: Stored } {
    const had = this.storedOf(run.id);
    const now = { messages: run.messages.length, steps: run.steps.length, requests: run.requests.length, counted: had.counted };
    for (const k of ['messages', 'steps', 'requests'] as const) {
      if (now[k] < had[k]) throw new Error(`run ${run.id}: ${k} went from ${had[k]} to ${now[k]}; a run's trace is never rewritten`);
    }
    // R23: each call that ran counts once towards its tool's use, when its run pauses or ends (not a
    // write at every step): the records since the last count, the count kept with the run's row.
    if (run.status !== 'running') {
      for (let seq = had.counted; seq < now.steps; seq++) if (run.steps[seq].outcome === 'ran') this.stmt.countUse.run(run.steps[seq].tool);
      now.counted = now.steps;
    }
    const holder = this.held.get(run.id) ?? null;
    const values = [
      run.status,
      run.reason,
      run.mode,
      run.answer,
      run.pause ? JSON.stringify(run.pause) : null,
      run.pause_seq,
      run.model_calls,
      JSON.stringify(run.effects),
      JSON.stringify(run.notes),
      JSON.stringify(run.warnings),
      run.contract ? JSON.stringify(run.contract) : null,
      now.counted,
    ];
    // Issue 29: only the fields that changed since this store last wrote them (a step changes two or
    // three), so an index on a field left alone (the status's) is not rewritten at every step.
    const last = this.written.get(run.id);
    let changed = 0;
    const params: unknown[] = [];
    for (let i = 0; i < values.length; i++) {
      if (last && last[i] === values[i]) continue;
      changed |= 1 << i;
      params.push(values[i]);
    }
    // S4/R18: a save renews the lease of a running run (and drops it otherwise); a run this store
    // holds is written only while its owner is still the holder (another process may have taken it).
    const updated = this.updateOf(changed).run(...params, run.updated_at, this.leaseFor(run), run.id, holder, holder).changes === 1;
    // Another process took the run (its lease ran out): nothing of this save is kept (the transaction rolls back).
    if (holder !== null && !updated) this.loseRun(run.id, holder);
    this.stored.set(run.id, now);
    // Remembered only while this store holds the run running: no one else writes it then.
    if (run.status === 'running' && holder !== null) this.written.set(run.id, values);
    else this.written.delete(run.id);
    const mode = updated ? ((this.stmt.sessionMode.get(run.session_id) as { mode: Mode } | undefined)?.mode ?? undefined) : undefined;
    return { mode, had, now };
  }

  /**
   * Issue 29: what a save adds to the run's trace — messages, call records, requests — as one text,
   * the part of the save's journal row; none when it adds nothing. A call record that is the record of
   * one of the row's own events (a tool_result written with it, `events[i]` at row index `offset + i`)
   * is that index, not a second copy.
   */
  private partOf(run: RunState, had: Stored, now: Stored, events: readonly JournalEntry[], offset: number): string | null {
    if (now.messages === had.messages && now.steps === had.steps && now.requests === had.requests) return null;
    let body = `{"n":[${now.messages},${now.steps},${now.requests}]`;
    if (now.messages > had.messages) {
      body += ',"m":[';
      for (let seq = had.messages; seq < now.messages; seq++) body += (seq > had.messages ? ',' : '') + JSON.stringify(run.messages[seq]);
      body += ']';
    }
    if (now.steps > had.steps) {
      body += ',"c":[';
      for (let seq = had.steps; seq < now.steps; seq++) {
        const inRow = events.findIndex((e) => e.event.type === 'tool_result' && e.event.record === run.steps[seq]);
        body += (seq > had.steps ? ',' : '') + (inRow >= 0 ? String(offset + inRow) : JSON.stringify(stepRow(run, seq)));
      }
      body += ']';
    }
    if (now.requests > had.requests) {
      body += ',"r":[';
      for (let seq = had.requests; seq < now.requests; seq++) {
        const { system, tools, ...meta } = run.requests[seq];
        // [system prompt's blob, menu's blob, the rest]: the prompt and the menu are content-addressed.
        body += `${seq > had.requests ? ',' : ''}[${JSON.stringify(this.blob(system))},${JSON.stringify(this.blobOf(toolsBlob(tools)))},${JSON.stringify(meta)}]`;
      }
      body += ']';
    }
    return `${body}}`;
  }

  /** The run's reply this store appended, if it is still the journal's last row: the save's row may extend it. */
  private extendable(runId: string): { runId: string; id: number; body: string } | undefined {
    const reply = this.lastAppended;
    if (reply?.runId !== runId) return undefined;
    return reply.id === (this.stmt.lastEventRow.get() as { id: number } | undefined)?.id ? reply : undefined;
  }

  /**
   * A save's one journal row: its events (their ids consecutive, in order, drawn under the file's
   * write lock) and its part of the run's trace. Returns the first event's id.
   */
  private insertWrite(runId: string, entries: readonly JournalEntry[], part: string | null, reply?: { id: number; body: string }): number {
    let events = '';
    for (let i = 0; i < entries.length; i++) events += (i ? ',' : '') + eventJson(entries[i].event, this.keepBlob);
    const first = entries[0];
    this.lastAppended = undefined;
    // The run's reply is still the journal's last row (no id after it is taken): the save extends it,
    // its events taking the ids after the reply's — a step is one row, the reply's.
    if (reply) {
      this.stmt.extendRow.run(`[${reply.body}${events ? `,${events}` : ''}]`, 1 + entries.length, first?.at ?? null, part, reply.id);
      return reply.id + 1;
    }
    const r = this.stmt.insertWrite.run(runId, first?.event.type ?? 'trace', first?.at ?? '', `[${events}]`, entries.length, part);
    return Number(r.lastInsertRowid);
  }

  /** The run's update that sets the fields in `changed` (bits in RUN_FIELDS' order), prepared once per set. */
  private updateOf(changed: number): Database.Statement {
    let st = this.updates.get(changed);
    if (!st) {
      const set = RUN_FIELDS.filter((_, i) => changed & (1 << i)).map((f) => `${f} = ?, `);
      st = this.db.prepare(`UPDATE runs SET ${set.join('')}updated_at = ?, lease_until = ? WHERE id = ? AND (? IS NULL OR owner IS ?)`);
      this.updates.set(changed, st);
    }
    return st;
  }

  /** A running run's lease from now; none for a paused or ended run. */
  private leaseFor(run: { status: string }): number | null {
    return run.status === 'running' ? Date.now() + this.leaseMs : null;
  }

  /** This store held the run as `holder` and another process has it now: marked lost, never saved from here again. */
  private loseRun(runId: string, holder: string): void {
    const row = this.stmt.ownerNow.get(runId) as { owner: string | null; status: string } | undefined;
    if (row && row.owner === holder) return;
    this.held.delete(runId);
    this.lost.set(runId, row?.owner ?? null);
    throw this.lostError(runId);
  }

  private lostError(runId: string): KeelError {
    return new KeelError(
      'conflict',
      `run ${runId} was taken over by ${this.lost.get(runId) ?? 'another process'}: this process lost its lease`,
    );
  }

  /** This process holds a run: its lease is renewed (every third of its length) until the run pauses or ends. */
  private hold(runId: string, owner: string): void {
    this.held.set(runId, owner);
    this.lost.delete(runId);
    if (!this.heartbeat && this.db.open) {
      this.heartbeat = setInterval(() => this.renewLeases(), Math.max(50, Math.floor(this.leaseMs / 3)));
      this.heartbeat.unref();
    }
  }

  /** Renews the leases of the runs this store holds; a run another process took is marked lost. */
  renewLeases(): void {
    if (!this.held.size || !this.db.open) return;
    try {
      this.write(() => {
        this.transaction(() => {
          const until = Date.now() + this.leaseMs;
          for (const [id, owner] of [...this.held]) {
            if (this.stmt.renew.run(until, id, owner).changes === 1) continue;
            const row = this.stmt.ownerNow.get(id) as { owner: string | null; status: string } | undefined;
            this.held.delete(id);
            if (row?.status === 'running' && row.owner !== owner) this.lost.set(id, row.owner);
          }
        });
      });
    } catch {
      // The file is busy or gone for a moment: the next beat tries again, well inside the lease.
    }
  }

  async createRun(run: RunState): Promise<void> {
    this.write(() => {
      this.inTransaction(run.id, () => {
        this.stmt.insertRun.run({ ...this.runParams(run), lease_until: this.leaseFor(run) });
        this.stored.set(run.id, { messages: 0, steps: 0, requests: 0, counted: 0 });
        const { had, now } = this.writeRun(run);
        const part = this.partOf(run, had, now, [], 0);
        if (part) this.insertWrite(run.id, [], part);
      });
    });
    if (run.status === 'running' && run.owner) this.hold(run.id, run.owner);
  }

  async saveRun(run: RunState, events?: JournalEntry[], card?: ApprovalRecord): Promise<Mode | undefined> {
    if (this.lost.has(run.id)) throw this.lostError(run.id);
    return this.write(() => {
      let mode: Mode | undefined;
      let first = 0;
      let kept: JournalEntry[] = [];
      this.inTransaction(run.id, () => {
        // A pause's card, with the paused run or not at all.
        if (card) this.insertApproval(card);
        // C5: the session's mode as stored, read in the save's own transaction.
        const { had, now, mode: stored } = this.writeRun(run);
        mode = stored;
        // Issue 29: the journal events that go with this save and what it adds to the trace, one row.
        // An event held for a mode the session has left is not kept (JournalEntry.onlyInMode).
        kept = events?.filter((e) => !e.onlyInMode || mode === undefined || mode === e.onlyInMode) ?? [];
        const reply = this.extendable(run.id);
        const part = this.partOf(run, had, now, kept, reply ? 1 : 0);
        if (kept.length || part) first = this.insertWrite(run.id, kept, part, reply);
      });
      // Committed: the kept events have their ids.
      for (let i = 0; i < kept.length; i++) kept[i].id = first + i;
      // Paused or ended: no longer held here (a claim holds it again).
      if (run.status !== 'running') this.held.delete(run.id);
      return mode;
    });
  }

  /**
   * Runs a write as one transaction. If it rolls back, what this process remembers of the file
   * (the run's counts, the blobs written) is forgotten with it, so the next save writes them again.
   */
  private inTransaction(runId: string, write: () => void): void {
    this.uncommittedBlobs = [];
    try {
      this.transaction(write);
    } catch (err) {
      this.stored.delete(runId);
      this.written.delete(runId);
      for (const h of this.uncommittedBlobs) this.knownBlobs.delete(h);
      throw err;
    } finally {
      this.uncommittedBlobs = [];
    }
  }

  async loadRun(id: string): Promise<RunState | undefined> {
    const r = this.stmt.getRun.get(id) as Row | undefined;
    if (!r) return undefined;
    const bodies = (s: Database.Statement) => (s.all(id) as { body: string }[]).map((x) => JSON.parse(x.body));
    // A run an older Keel stored has rows of its own; a run this Keel stored (or carried on) has parts.
    const messages = bodies(this.stmt.messages) as Message[];
    const callRows = bodies(this.stmt.calls) as StepRow[];
    const requests = (this.stmt.requests.all(id) as Row[]).map(
      (x) => ({ ...JSON.parse(x.meta as string), system: x.system, tools: JSON.parse(x.tools as string) }) as RequestTrace,
    );
    // The prompts and menus this run's requests name, each read once for this load.
    const blobs = new Map<string, string>();
    const blob = (hash: string): string => this.blobFrom(hash, blobs);
    const tools = new Map<string, RequestTrace['tools']>();
    for (const row of this.stmt.parts.all(id) as { part: string; body: string }[]) {
      const part = JSON.parse(row.part) as Part;
      if (part.m) messages.push(...part.m);
      if (part.c) {
        // A number: the record of the row's own event at that index (see partOf).
        let events: { record?: CallRecord }[] | undefined;
        for (const c of part.c) callRows.push(typeof c === 'number' ? ((events ??= JSON.parse(row.body))[c].record as CallRecord) : c);
      }
      for (const [systemHash, toolsHash, meta] of part.r ?? []) {
        // One menu's declarations are parsed once per load, shared by the requests that sent it.
        let declared = tools.get(toolsHash);
        if (!declared) tools.set(toolsHash, (declared = JSON.parse(blob(toolsHash)) as RequestTrace['tools']));
        requests.push({ ...meta, system: blob(systemHash), tools: declared });
      }
    }
    const run: RunState = {
      id: r.id as string,
      status: r.status as RunState['status'],
      reason: (r.reason as RunState['reason']) ?? null,
      request: r.request as string,
      mode: r.mode as RunState['mode'],
      model: r.model as string,
      plugin_dirs: JSON.parse(r.plugin_dirs as string),
      answer: (r.answer as string | null) ?? null,
      pause: r.pause ? JSON.parse(r.pause as string) : null,
      pause_seq: r.pause_seq as number,
      model_calls: r.model_calls as number,
      effects: JSON.parse(r.effects as string),
      notes: JSON.parse(r.notes as string),
      warnings: JSON.parse(r.warnings as string),
      owner: (r.owner as string | null) ?? null,
      session_id: r.session_id as string,
      seq_base: r.seq_base as number,
      contract: r.contract ? JSON.parse(r.contract as string) : null,
      ...(typeof r.inherited_untrusted === 'string' ? { inherited_untrusted: JSON.parse(r.inherited_untrusted) } : {}),
      ...(typeof r.principal === 'string' ? { principal: JSON.parse(r.principal) } : {}),
      ...(typeof r.parent_run === 'string'
        ? {
            parent: {
              run_id: r.parent_run,
              delegate: r.delegate as string,
              depth: r.depth as number,
              task_id: r.task_id as string,
              request: r.parent_request as string,
            },
          }
        : {}),
      messages,
      steps: [],
      requests,
      created_at: r.created_at as string,
      updated_at: r.updated_at as string,
    };
    run.steps = stepsFrom(callRows, run.messages);
    this.stored.set(id, {
      messages: run.messages.length,
      steps: run.steps.length,
      requests: run.requests.length,
      counted: (r.counted_steps as number | null) ?? run.steps.length,
    });
    this.written.delete(id);
    return run;
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const r = this.shaped('SELECT * FROM sessions WHERE id = ?').get(id) as Row | undefined;
    if (!r) return undefined;
    return {
      id: r.id as string,
      mode: r.mode as SessionRecord['mode'],
      last_run_id: (r.last_run_id as string | null) ?? null,
      contract: r.contract ? JSON.parse(r.contract as string) : null,
      updated_at: r.updated_at as string,
    };
  }

  async saveSession(s: SessionRecord): Promise<void> {
    this.write(() => {
      this.shaped(
        `INSERT INTO sessions (id, mode, last_run_id, contract, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT(id) DO UPDATE SET mode = excluded.mode, last_run_id = excluded.last_run_id, contract = excluded.contract, updated_at = excluded.updated_at`,
      ).run(s.id, s.mode, s.last_run_id, s.contract ? JSON.stringify(s.contract) : null, s.updated_at);
    });
  }

  async listRuns(q: RunQuery = {}): Promise<RunSummary[]> {
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (q.status) {
      where.push('status = ?');
      args.push(q.status);
    }
    if (q.session_id) {
      where.push('session_id = ?');
      args.push(q.session_id);
    }
    if (q.before) {
      where.push('(created_at < ? OR (created_at = ? AND id < ?))');
      args.push(q.before.created_at, q.before.created_at, q.before.id);
    }
    if (q.parent_run) {
      where.push('parent_run = ?');
      args.push(q.parent_run);
    }
    const sql = `SELECT id,status,reason,request,mode,model,model_calls,session_id,created_at,updated_at,parent_run FROM runs
      ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ?`;
    return this.shaped(sql).all(...args, q.limit ?? 50) as RunSummary[];
  }

  /**
   * Journal rows commit in groups: the first of a tick opens a transaction that the store's next
   * write of any kind (a step saved, a pause, a claim), or the end of the tick, commits — so a
   * step's events cost one commit, not one each. This connection reads them at once; others see
   * them within the tick (every store of this process commits its group before it writes or reads
   * the journal, so two stores in one process never wait on each other). A crash loses at most
   * that tick's events, which no other process was shown.
   */
  async appendEvent(runId: string, event: RunEvent, at: string): Promise<number> {
    if (!this.eventsPending) {
      commitOthers(this);
      this.stmt.begin.run();
      this.eventsPending = true;
      PENDING.add(this);
      setImmediate(() => this.commitEvents());
    }
    const body = eventJson(event, this.keepBlob);
    this.lastAppended = undefined;
    const id = Number(this.stmt.appendEvent.run(runId, event.type, at, body).lastInsertRowid);
    this.lastAppended = { runId, id, body };
    return id;
  }

  /**
   * A write: after the other stores of this process commit their groups (a store waiting on another
   * in the same thread would wait for ever), inside this store's group, which commits with it.
   */
  private write<T>(f: () => T): T {
    commitOthers(this);
    let out: T;
    try {
      out = f();
    } catch (err) {
      this.commitEvents();
      throw err;
    }
    // A write inside the group is kept only if the group commits: if it does not, the write fails.
    this.commitEvents(true);
    return out;
  }

  /**
   * Commits the journal rows written since the last commit (and a write made inside the group).
   * If the commit fails, all of it rolls back, what this process remembers of the file is forgotten,
   * and `failWrite` says whether the error is thrown (to the write the group carried) or reported.
   */
  commitEvents(failWrite = false): void {
    if (!this.eventsPending) return;
    this.eventsPending = false;
    PENDING.delete(this);
    if (!this.db.open || !this.db.inTransaction) return;
    try {
      this.stmt.commit.run();
    } catch (err) {
      try {
        this.db.exec('ROLLBACK');
      } catch {
        // nothing left to roll back
      }
      this.stored.clear();
      this.written.clear();
      this.knownBlobs.clear();
      this.lastAppended = undefined;
      if (failWrite) throw err;
      process.stderr.write(`keel: the store could not keep a run's latest events: ${(err as Error).message}\n`);
    }
  }

  /** A statement for a query built from a filter: prepared once per shape. */
  private shaped(sql: string): Database.Statement {
    let st = this.shapes.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.shapes.set(sql, st);
    }
    return st;
  }

  async toolUsage(limit: number): Promise<ToolUsage[]> {
    return this.stmt.toolUsage.all(Math.max(0, Math.floor(limit))) as ToolUsage[];
  }

  async latestEventId(): Promise<number> {
    commitOthers(this);
    const last = 'SELECT id + MAX(COALESCE(n, 1), 1) - 1 FROM run_events ORDER BY id DESC LIMIT 1';
    return (this.shaped(`SELECT COALESCE((${last}), 0) AS id`).get() as { id: number }).id;
  }

  async listEvents(q: EventQuery = {}): Promise<StoredEvent[]> {
    commitOthers(this);
    const after = q.after ?? 0;
    const limit = q.limit ?? 1000;
    const byRun = q.run_id ? ' AND run_id = ?' : '';
    const runArgs = q.run_id ? [q.run_id] : [];
    // A save's row holds several events: reading starts at the row that holds `after`.
    let from = (
      this.shaped(`SELECT COALESCE(MAX(id), 0) AS id FROM run_events WHERE id <= ?${byRun}`).get(after, ...runArgs) as { id: number }
    ).id;
    // A row of one event is filtered by its type here; a save's row once its events are read.
    const types = q.types ? ` AND (n IS NOT NULL OR type IN (${q.types.map(() => '?').join(',')}))` : '';
    const sql = `SELECT id, run_id, at, at_rest, body, n FROM run_events WHERE id >= ?${byRun} AND (n IS NULL OR n > 0)${types} ORDER BY id LIMIT ?`;
    const wanted = q.types ? new Set<string>(q.types) : undefined;
    const out: StoredEvent[] = [];
    while (out.length < limit) {
      const rows = this.shaped(sql).all(from, ...runArgs, ...(q.types ?? []), limit) as Row[];
      for (const r of rows) {
        const run_id = r.run_id as string;
        const id = r.id as number;
        const events = readEvents(r.body as string, this.blobText);
        for (let i = 0; i < events.length; i++) {
          const at = (i > 0 && (r.at_rest as string | null)) || (r.at as string);
          if (id + i > after && (!wanted || wanted.has(events[i].type))) out.push({ id: id + i, run_id, at, event: events[i] });
        }
      }
      if (rows.length < limit) break;
      from = (rows[rows.length - 1].id as number) + 1;
    }
    return out.length > limit ? out.slice(0, limit) : out;
  }

  async claimPause(runId: string, seq: number, owner: string): Promise<boolean> {
    const claimed = this.write(() => {
      return this.stmt.claim.run(owner, new Date().toISOString(), Date.now() + this.leaseMs, runId, seq).changes === 1;
    });
    if (claimed) {
      this.written.delete(runId);
      this.hold(runId, owner);
    }
    return claimed;
  }

  /**
   * Issue 40: the claim and the closing of the run's cards are one transaction, and the claim's
   * statement takes the file's write lock before it reads the card: an approve (one UPDATE of the
   * card while pending) lands wholly before it — and the claim is refused — or after, finding the
   * card rejected.
   */
  async claimToCancel(
    runId: string,
    seq: number,
    owner: string,
    close: { actor: string; reason: string; at: string },
  ): Promise<string[] | undefined> {
    let closed: string[] | undefined;
    this.write(() => {
      this.transaction(() => {
        const now = Date.now();
        const claimed = this.stmt.claimToCancel.run({
          owner,
          at: new Date(now).toISOString(),
          lease_until: now + this.leaseMs,
          id: runId,
          seq,
        });
        if (claimed.changes !== 1) return;
        closed = (this.stmt.closeCards.all(close.actor, close.reason, close.at, runId) as { id: string }[]).map((r) => r.id);
      });
    });
    if (closed) {
      this.written.delete(runId);
      this.hold(runId, owner);
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
  async takeOver(runId: string, seq: number, deadOwner: string | null, owner: string, ownerGone = false): Promise<boolean> {
    const ours = deadOwner !== null && deadOwner === owner && this.held.get(runId) === owner;
    const taken = this.write(() => {
      const now = Date.now();
      return (
        this.stmt.takeOver.run({
          owner,
          at: new Date(now).toISOString(),
          lease_until: now + this.leaseMs,
          id: runId,
          seq,
          dead: deadOwner,
          now,
          gone: ownerGone || ours ? 1 : 0,
        }).changes === 1
      );
    });
    if (taken) {
      this.written.delete(runId);
      this.hold(runId, owner);
    }
    return taken;
  }

  async createApproval(a: ApprovalRecord): Promise<void> {
    this.write(() => this.insertApproval(a));
  }

  private insertApproval(a: ApprovalRecord): void {
    this.stmt.insertApproval.run({
      ...a,
      items: JSON.stringify(a.items),
      card: JSON.stringify(a.card),
      consent_writes: a.consent_writes ? 1 : 0,
    });
  }

  private approvalFromRow(r: Row): ApprovalRecord {
    return {
      ...(r as unknown as ApprovalRecord),
      items: JSON.parse(r.items as string),
      card: JSON.parse(r.card as string),
      consent_writes: r.consent_writes === 1,
    };
  }

  async getApproval(id: string): Promise<ApprovalRecord | undefined> {
    const r = this.stmt.getApproval.get(id) as Row | undefined;
    return r ? this.approvalFromRow(r) : undefined;
  }

  async listApprovals(filter: { status?: ApprovalStatus; run_id?: string } = {}): Promise<ApprovalRecord[]> {
    const where: string[] = [];
    const args: string[] = [];
    if (filter.status) {
      where.push('status = ?');
      args.push(filter.status);
    }
    if (filter.run_id) {
      where.push('run_id = ?');
      args.push(filter.run_id);
    }
    const sql = `SELECT * FROM approvals ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY requested_at, rowid`;
    return (this.shaped(sql).all(...args) as Row[]).map((r) => this.approvalFromRow(r));
  }

  async answerApproval(
    id: string,
    status: Exclude<ApprovalStatus, 'pending'>,
    actor: string,
    reason: string | null,
    at: string,
    consentWrites = false,
    items?: ApprovalItem[],
    card?: ApprovalCard,
  ): Promise<boolean> {
    const itemsJson = items ? JSON.stringify(items) : null;
    const cardJson = card ? JSON.stringify(card) : null;
    return this.write(() => {
      return this.stmt.answerApproval.run(status, actor, reason, at, consentWrites ? 1 : 0, itemsJson, cardJson, id).changes === 1;
    });
  }

  async audit(row: AuditRecord): Promise<void> {
    this.write(() => {
      this.stmt.audit.run(row.at, row.actor, row.action, row.subject, row.detail);
    });
  }

  async listAudit(subject?: string): Promise<AuditRecord[]> {
    const rows = subject
      ? this.db.prepare('SELECT at, actor, action, subject, detail FROM audit WHERE subject = ? ORDER BY id').all(subject)
      : this.db.prepare('SELECT at, actor, action, subject, detail FROM audit ORDER BY id').all();
    return rows as AuditRecord[];
  }

  async ledgerStart(row: Omit<LedgerRow, 'state' | 'result' | 'is_error'>): Promise<boolean> {
    return this.write(() => {
      return this.stmt.ledgerStart.run(row.approval_id, row.call_id, row.tool, row.args_json).changes === 1;
    });
  }

  async ledgerFinish(approvalId: string, callId: string, result: string, isError: boolean): Promise<void> {
    this.write(() => {
      this.stmt.ledgerFinish.run(result, isError ? 1 : 0, approvalId, callId);
    });
  }

  async ledgerGet(approvalId: string, callId: string): Promise<LedgerRow | undefined> {
    const r = this.stmt.ledgerGet.get(approvalId, callId) as Row | undefined;
    return r ? ({ ...(r as unknown as LedgerRow), is_error: r.is_error === 1 } as LedgerRow) : undefined;
  }

  async memoryAdd(text: string, untrusted?: string): Promise<Memory> {
    return this.write(() => {
      const now = new Date().toISOString();
      const id = Number(this.stmt.memoryAdd.run(text, now, now, untrusted ?? null).lastInsertRowid);
      return memoryRow(this.stmt.memoryGet.get(id) as Row);
    });
  }

  async memorySearch(query: string, limit: number): Promise<Memory[]> {
    const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    const scored = (this.stmt.memoryActive.all() as Row[])
      .map(memoryRow)
      .map((m) => ({ m, score: words.filter((w) => m.text.toLowerCase().includes(w)).length }))
      .filter((x) => words.length === 0 || x.score > 0)
      .sort((a, b) => b.score - a.score || b.m.id - a.m.id);
    return scored.slice(0, limit).map((x) => x.m);
  }

  async memoryUpdate(
    id: number,
    patch: { text?: string; status?: Memory['status']; untrusted?: string | null },
  ): Promise<Memory | undefined> {
    return this.write(() => {
      const row = this.stmt.memoryGet.get(id) as Row | undefined;
      if (!row) return undefined;
      const m = memoryRow(row);
      const untrusted = patch.untrusted === undefined ? (m.untrusted ?? null) : patch.untrusted;
      this.db
        .prepare('UPDATE memories SET text = ?, status = ?, updated_at = ?, untrusted = ? WHERE id = ?')
        .run(patch.text ?? m.text, patch.status ?? m.status, new Date().toISOString(), untrusted, id);
      return memoryRow(this.stmt.memoryGet.get(id) as Row);
    });
  }

  async addFeedback(runId: string, text: string): Promise<void> {
    this.write(() => {
      this.stmt.feedback.run(runId, text, new Date().toISOString());
    });
  }

  async pushKeys(candidate?: VapidKeys): Promise<VapidKeys | undefined> {
    const read = () =>
      this.db.prepare('SELECT public_key, private_key, created_at FROM push_keys WHERE id = 1').get() as VapidKeys | undefined;
    const kept = read();
    if (kept || !candidate) return kept;
    return this.write(() => {
      this.db
        .prepare('INSERT OR IGNORE INTO push_keys (id, public_key, private_key, created_at) VALUES (1, ?, ?, ?)')
        .run(candidate.public_key, candidate.private_key, candidate.created_at);
      return read();
    });
  }

  async addPushSubscription(
    sub: PushSubscriptionRecord,
    max: number,
  ): Promise<{ status: 'added' | 'updated' | 'full'; subscription?: PushSubscriptionRecord }> {
    const one = (owner_id: string, endpoint: string) =>
      this.db.prepare('SELECT * FROM push_subscriptions WHERE owner_id = ? AND endpoint = ?').get(owner_id, endpoint) as
        | PushSubscriptionRecord
        | undefined;
    return this.write(() =>
      // IMMEDIATE: the count and the insert hold the write lock together, across processes too.
      this.db
        .transaction(() => {
          const had = one(sub.owner_id, sub.endpoint);
          if (had) {
            this.db
              .prepare('UPDATE push_subscriptions SET p256dh = ?, auth = ?, label = ?, owner = ? WHERE id = ?')
              .run(sub.p256dh, sub.auth, sub.label, sub.owner, had.id);
            return { status: 'updated' as const, subscription: one(sub.owner_id, sub.endpoint) };
          }
          const count = this.db.prepare('SELECT COUNT(*) AS n FROM push_subscriptions WHERE owner_id = ?');
          const { n } = count.get(sub.owner_id) as { n: number };
          if (n >= max) return { status: 'full' as const };
          this.db
            .prepare(
              'INSERT INTO push_subscriptions (id, owner, owner_id, endpoint, p256dh, auth, label, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
            )
            .run(sub.id, sub.owner, sub.owner_id, sub.endpoint, sub.p256dh, sub.auth, sub.label, sub.created_at);
          return { status: 'added' as const, subscription: one(sub.owner_id, sub.endpoint) };
        })
        .immediate(),
    );
  }

  async listPushSubscriptions(ownerId?: string): Promise<PushSubscriptionRecord[]> {
    const rows =
      ownerId === undefined
        ? this.db.prepare('SELECT * FROM push_subscriptions ORDER BY created_at, rowid').all()
        : this.db.prepare('SELECT * FROM push_subscriptions WHERE owner_id = ? ORDER BY created_at, rowid').all(ownerId);
    return rows as PushSubscriptionRecord[];
  }

  async removePushSubscription(id: string): Promise<boolean> {
    return this.write(() => this.db.prepare('DELETE FROM push_subscriptions WHERE id = ?').run(id).changes === 1);
  }

  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    this.commitEvents();
    if (this.db.open) this.db.close();
  }
}

/** A memory as stored: `untrusted` only when the row has one (U2). */
function memoryRow(r: Row): Memory {
  const m: Memory = {
    id: r.id as number,
    text: r.text as string,
    status: r.status as Memory['status'],
    created_at: r.created_at as string,
    updated_at: r.updated_at as string,
  };
  if (typeof r.untrusted === 'string') m.untrusted = r.untrusted;
  return m;
}
