/**
 * The SQLite store's file: the schema, the columns added since the first one (a file an older Keel
 * made gains them), and opening it — private to its owner, WAL, migrated before anything reads it.
 * Never drops or rewrites what a file holds: a migration only adds (a column with its default, an
 * index, the tool-use table counted once), so an older Keel's file is read as it is.
 */
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type Database from 'better-sqlite3';

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

/**
 * Where better-sqlite3's compiled addon is, when it is where its build and its prebuilt downloads put
 * it: given to the constructor, the package loads it directly instead of asking the `bindings`
 * package to search a dozen places for it (issue 49: ~5-8 ms of the first open in a process).
 * Anywhere else, the package finds it itself.
 */
let addon: { nativeBinding?: string } | undefined;
export function nativeBinding(require: NodeJS.Require): { nativeBinding?: string } {
  if (!addon) {
    addon = {};
    try {
      const file = join(dirname(require.resolve('better-sqlite3')), '..', 'build', 'Release', 'better_sqlite3.node');
      if (existsSync(file)) addon = { nativeBinding: file };
    } catch {
      // not resolvable from here: the constructor says what is missing
    }
  }
  return addon;
}

/** Opens (or creates) the store's file, readable by its owner only, with the schema up to date. */
export function openDatabase(file: string): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  // Loaded when a store is opened (issue 49): an application with `store: null`, and the commands
  // that open none, never load the native module.
  const require = createRequire(import.meta.url);
  const Sqlite = require('better-sqlite3') as typeof Database;
  const db = new Sqlite(file, { timeout: 5000, ...nativeBinding(require) });
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
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    // A file this schema already brought up to date says so in its user_version: its ~20 look-ups
    // of tables and columns are skipped (issue 49: every command and every Keel opens the store).
    const current = () => db.pragma('user_version', { simple: true }) === schemaStamp();
    if (!current()) {
      // Under a write lock, looked at again inside it: two processes opening a new file together
      // (keel serve and keel run, a test and the run it watches) would otherwise both see a column
      // missing and the second ALTER TABLE fail with "duplicate column name".
      db.transaction(() => {
        if (current()) return;
        db.exec(SCHEMA);
        migrate(db);
        db.pragma(`user_version = ${schemaStamp()}`);
      }).immediate();
    }
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** Columns added since the first schema: a file made by an older Keel gains them (with their defaults). */
const ADDED: readonly [table: string, column: string, definition: string][] = [
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
  // R18 (issue 47): the names of the run's tools declared in code: only a process that has them carries it on; set once.
  ['runs', 'app_tools', 'TEXT'],
  // D1: a delegate's run: the run that started it, how deep, as which delegate and task, and that run's request; set once.
  ['runs', 'parent_run', 'TEXT'],
  ['runs', 'depth', 'INTEGER NOT NULL DEFAULT 0'],
  ['runs', 'delegate', 'TEXT'],
  ['runs', 'task_id', 'TEXT'],
  ['runs', 'parent_request', 'TEXT'],
  // U1/U2 (issue 47): an approved call's untrusted result keeps its label, so a replay after a crash is untrusted too.
  ['ledger', 'untrusted', 'TEXT'],
];

/**
 * What this code makes of a file, as a number for its user_version: a hash of the schema, the added
 * columns and the migration itself, so any change to them migrates every file again.
 */
let stamp: number | undefined;
const schemaStamp = (): number => (stamp ??= stampOf(`${SCHEMA}\n${JSON.stringify(ADDED)}\n${String(migrate)}`));

function stampOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  // A positive 31-bit number (user_version is a signed 32-bit integer; 0 is a file never stamped).
  return h >>> 1 || 1;
}

function migrate(db: Database.Database): void {
  for (const [table, column, definition] of ADDED) {
    const columns = (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name);
    if (!columns.includes(column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${definition}`);
  }
  // D1: a run's delegates are listed by their parent.
  db.exec('CREATE INDEX IF NOT EXISTS runs_parent ON runs (parent_run) WHERE parent_run IS NOT NULL');
  // R23: how often each tool ran, kept as calls are written; a file made before it is counted once
  // (the caller holds the write lock, so two processes opening it together do not both count).
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tool_usage'").get() === undefined) {
    db.exec(`CREATE TABLE tool_usage (tool TEXT PRIMARY KEY, calls INTEGER NOT NULL);
        INSERT INTO tool_usage (tool, calls) SELECT tool, COUNT(*) FROM (
          SELECT json_extract(body, '$.tool') AS tool, json_extract(body, '$.outcome') AS outcome FROM calls
          UNION ALL SELECT json_extract(c.value, '$.tool'), json_extract(c.value, '$.outcome') FROM run_events, json_each(run_events.part, '$.c') AS c
            WHERE run_events.part IS NOT NULL)
          WHERE outcome = 'ran' AND tool IS NOT NULL GROUP BY 1;`);
  }
}
