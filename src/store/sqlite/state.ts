/**
 * What one SQLite store keeps between calls: its connection, its prepared statements, and what this
 * process remembers of the file (the lengths of each run's trace, the blobs written, the runs it holds).
 * Never a second source of truth: what it remembers is forgotten whenever a write rolls back, and is
 * read again from the file.
 */
import type Database from 'better-sqlite3';

export type Row = Record<string, unknown>;

/** The lengths of a run's trace in the file, and how many of its call records its tools' use counts (R23). */
export type Stored = { messages: number; steps: number; requests: number; counted: number };

export interface SqliteState {
  readonly db: Database.Database;
  readonly stmt: Record<string, Database.Statement>;
  /** Hashes this process has already written to `blobs` (the table is content-addressed). */
  readonly knownBlobs: Set<string>;
  /** The last row this store appended on its own (a run's reply), in which group: the run's next save may extend it. */
  lastAppended: { runId: string; id: number; body: string; group: number } | undefined;
  /** How many journal groups this store has opened: the one open now, while `eventsPending`. */
  group: number;
  /** Blob texts the journal's readers asked for lately (menus: a few, read again and again). */
  readonly blobCache: Map<string, string>;
  /** Blobs written by the transaction in progress: forgotten again if it rolls back. */
  uncommittedBlobs: string[];
  /** Runs a function inside one SQLite transaction (made once: better-sqlite3 wraps it); `.immediate` takes the write lock first. */
  readonly transaction: Database.Transaction<(write: () => void) => void>;
  /** Statements of the queries built from a filter, one per shape. */
  readonly shapes: Map<string, Database.Statement>;
  /** The journal group is open: journal rows and run writes made since the last commit (see appendEvent). */
  eventsPending: boolean;
  /** The run writes made in the open group, each told when it commits or fails (see groupWrite). */
  waiting: { resolve(): void; reject(err: unknown): void }[];
  /** This tick of the event loop's run writes: the run of the first, and whether another run has written since (see groupWrite). */
  tick: { runId: string; batching: boolean } | undefined;
  /** How many messages, steps and requests of each run the file holds (a run is saved by one process at a time). */
  readonly stored: Map<string, Stored>;
  /** The fields this store last wrote of each run it holds running (see writeRun). */
  readonly written: Map<string, unknown[]>;
  /** The run's updates, one per set of fields they write. */
  readonly updates: Map<number, Database.Statement>;
  /** How long a lease lasts without renewal. */
  readonly leaseMs: number;
  /** Runs this store holds (created running, claimed, taken over), with the owner that holds them: their leases are renewed. */
  readonly held: Map<string, string>;
  /** Runs this store held and another process took (its lease ran out): never saved from here again. */
  readonly lost: Map<string, string | null>;
  heartbeat: NodeJS.Timeout | undefined;
}

/** A store's state on an open file, with the statements it prepared. */
export function newState(db: Database.Database, leaseMs: number, stmt: Record<string, Database.Statement>): SqliteState {
  return {
    db,
    stmt,
    knownBlobs: new Set<string>(),
    lastAppended: undefined,
    group: 0,
    blobCache: new Map<string, string>(),
    uncommittedBlobs: [],
    transaction: db.transaction((write: () => void) => write()),
    shapes: new Map<string, Database.Statement>(),
    eventsPending: false,
    waiting: [],
    tick: undefined,
    stored: new Map<string, Stored>(),
    written: new Map<string, unknown[]>(),
    updates: new Map<number, Database.Statement>(),
    leaseMs,
    held: new Map<string, string>(),
    lost: new Map<string, string | null>(),
    heartbeat: undefined,
  };
}

/** A statement for a query built from a filter: prepared once per shape. */
export function shaped(st: SqliteState, sql: string): Database.Statement {
  let s = st.shapes.get(sql);
  if (!s) {
    s = st.db.prepare(sql);
    st.shapes.set(sql, s);
  }
  return s;
}
