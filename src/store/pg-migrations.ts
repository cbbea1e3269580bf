/**
 * The PostgreSQL store's schema, as numbered migrations (S4). Each runs once, in its own
 * transaction, in order; `schema_migrations` records which ran. A migration is never edited once
 * released: a change is a new migration with the next number.
 *
 * Conventions: free text a model, a tool or a user wrote (a request, an answer, a tool's output, a
 * memory) is kept as JSONB, like the transcript, since a TEXT column cannot hold a NUL character;
 * timestamps are ISO-8601 text, exactly as Keel wrote them (they sort as time does).
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'init',
    sql: `
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  status TEXT NOT NULL,
  reason TEXT,
  request JSONB NOT NULL,
  mode TEXT NOT NULL,
  model TEXT NOT NULL,
  plugin_dirs JSONB NOT NULL,
  answer JSONB,
  pause JSONB,
  pause_seq INTEGER NOT NULL DEFAULT 0,
  model_calls INTEGER NOT NULL DEFAULT 0,
  effects JSONB NOT NULL DEFAULT '[]',
  notes JSONB NOT NULL DEFAULT '[]',
  warnings JSONB NOT NULL DEFAULT '[]',
  owner TEXT,
  session_id TEXT NOT NULL,
  seq_base INTEGER NOT NULL DEFAULT 0,
  contract JSONB,
  n_messages INTEGER NOT NULL DEFAULT 0,
  n_steps INTEGER NOT NULL DEFAULT 0,
  n_requests INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX runs_created ON runs (created_at DESC, id DESC);
CREATE INDEX runs_status ON runs (status, created_at DESC, id DESC);
CREATE INDEX runs_session ON runs (session_id, created_at DESC, id DESC);

CREATE TABLE messages (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body JSONB NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE steps (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body JSONB NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE blobs (hash TEXT PRIMARY KEY, body JSONB NOT NULL);
CREATE TABLE requests (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL,
  system_hash TEXT NOT NULL REFERENCES blobs (hash), tools_hash TEXT NOT NULL REFERENCES blobs (hash),
  meta JSONB NOT NULL, PRIMARY KEY (run_id, seq)
);

CREATE TABLE sessions (id TEXT PRIMARY KEY, mode TEXT NOT NULL, last_run_id TEXT, contract JSONB, updated_at TEXT NOT NULL);

CREATE TABLE approvals (
  ord BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY, run_id TEXT NOT NULL, pause_seq INTEGER NOT NULL, items JSONB NOT NULL, card JSONB NOT NULL,
  status TEXT NOT NULL, requested_at TEXT NOT NULL, expires_at TEXT NOT NULL,
  answered_at TEXT, answered_by TEXT, reason TEXT, consent_writes BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX approvals_status ON approvals (status, requested_at, ord);
CREATE INDEX approvals_run ON approvals (run_id, requested_at, ord);

CREATE TABLE audit (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at TEXT NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL, subject TEXT NOT NULL, detail JSONB NOT NULL
);
CREATE INDEX audit_subject ON audit (subject, id);

CREATE TABLE ledger (
  approval_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL, args_json TEXT NOT NULL,
  state TEXT NOT NULL, result JSONB, is_error BOOLEAN NOT NULL DEFAULT false, PRIMARY KEY (approval_id, call_id)
);

CREATE TABLE memories (
  id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  text JSONB NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL
);
CREATE INDEX memories_status ON memories (status, id);

CREATE TABLE feedback (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, run_id TEXT NOT NULL, text JSONB NOT NULL, at TEXT NOT NULL);

CREATE TABLE run_events (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id TEXT NOT NULL, type TEXT NOT NULL, at TEXT NOT NULL, body JSONB NOT NULL
);
CREATE INDEX run_events_run ON run_events (run_id, id);
CREATE INDEX run_events_type ON run_events (type, id);

CREATE TABLE tool_usage (tool TEXT PRIMARY KEY, calls BIGINT NOT NULL);
`,
  },
  {
    version: 2,
    name: 'run_leases',
    sql: `
-- A run being worked is held by a lease its process renews; a run whose lease ran out is taken over
-- by a worker (its leg re-queued), never by two.
ALTER TABLE runs ADD COLUMN lease_until TIMESTAMPTZ;
CREATE INDEX runs_lease ON runs (lease_until) WHERE status = 'running';
`,
  },
  {
    version: 3,
    name: 'web_push',
    sql: `
-- S7: the server's VAPID key pair (one row, made on first use) and the browsers subscribed to Web
-- Push, per token. A label is bounded text Keel made storable before it was kept.
CREATE TABLE push_keys (id INTEGER PRIMARY KEY CHECK (id = 1), public_key TEXT NOT NULL, private_key TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE push_subscriptions (
  ord BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, owner_id TEXT NOT NULL, endpoint TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL,
  label TEXT, created_at TEXT NOT NULL, UNIQUE (owner_id, endpoint)
);
`,
  },
  {
    version: 4,
    name: 'provenance',
    sql: `
-- U2: a memory written by a run that had read words from outside the user keeps where from (NULL: the
-- user's own), so a later run that reads it back counts it as untrusted.
ALTER TABLE memories ADD COLUMN untrusted JSONB;
-- U2: what a run's context inherited from outside the user (its session's transcript, a delegate's
-- parent): set when the run is made, never changed.
ALTER TABLE runs ADD COLUMN inherited_untrusted JSONB;
`,
  },
  {
    version: 5,
    name: 'delegates',
    sql: `
-- D1: a delegate's run: the run that started it (its task), how deep, as which delegate, and that
-- run's request (the user's words its cards show); set when the run is made, never changed.
ALTER TABLE runs ADD COLUMN parent_run TEXT;
ALTER TABLE runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN delegate TEXT;
ALTER TABLE runs ADD COLUMN task_id TEXT;
ALTER TABLE runs ADD COLUMN parent_request JSONB;
CREATE INDEX runs_parent ON runs (parent_run) WHERE parent_run IS NOT NULL;
`,
  },
  {
    version: 6,
    name: 'principal',
    sql: `
-- PC9: who started a run (a token's name, role and groups; the local user; an MCP client; the app), as
-- the operator's policy sees it: set when the run is made, never changed.
ALTER TABLE runs ADD COLUMN principal JSONB;
`,
  },
  {
    version: 7,
    name: 'ledger_provenance',
    sql: `
-- U1/U2 (issue 47): an approved call's result that carried words from outside the user keeps its label
-- (where from) in the ledger, so the result replayed after a crash comes back untrusted, as it ran
-- (NULL: a trusted result).
ALTER TABLE ledger ADD COLUMN untrusted JSONB;
`,
  },
  {
    version: 8,
    name: 'app_tools',
    sql: `
-- R18 (issue 47): the names of a run's tools declared in code (an application's own): only a process
-- that has them carries the run on. Set when the run is made, never changed.
ALTER TABLE runs ADD COLUMN app_tools JSONB;
`,
  },
];
