/**
 * The SQLite store's runs (R18, R19, R26): a run's row, created and saved field by field as it changes,
 * its trace loaded whole (an older Keel's rows, then the parts each save added to the journal), the
 * runs listed, and how often each tool ran (R23). Never rewrites a run's trace: a save that would
 * shrink it is refused, and a save from a process that lost the run's lease keeps nothing (its
 * transaction rolls back).
 */
import type Database from 'better-sqlite3';
import type {
  ApprovalRecord,
  CallRecord,
  JournalEntry,
  Message,
  Mode,
  RequestTrace,
  RunLimit,
  RunQuery,
  RunState,
  RunSummary,
  ToolUsage,
} from '../../types/index.js';
import { type StepRow, stepRow, stepsFrom, toolsBlob } from '../trace.js';
import { insertApproval } from './approvals.js';
import { blob, blobFrom, blobOf } from './blobs.js';
import { extendable, groupWrite, insertWrite } from './journal.js';
import { hold, leaseFor, loseRun, lostError } from './leases.js';
import { type Row, type SqliteState, type Stored, shaped } from './state.js';

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

export function runStatements(db: Database.Database): Record<string, Database.Statement> {
  const p = (sql: string) => db.prepare(sql);
  return {
    insertRun:
      p(`INSERT INTO runs (id,status,reason,request,mode,model,plugin_dirs,answer,pause,pause_seq,model_calls,effects,notes,warnings,owner,lease_until,counted_steps,session_id,seq_base,contract,created_at,updated_at,inherited_untrusted,parent_run,depth,delegate,task_id,parent_request,principal,app_tools)
      VALUES (@id,@status,@reason,@request,@mode,@model,@plugin_dirs,@answer,@pause,@pause_seq,@model_calls,@effects,@notes,@warnings,@owner,@lease_until,0,@session_id,@seq_base,@contract,@created_at,@updated_at,@inherited_untrusted,@parent_run,@depth,@delegate,@task_id,@parent_request,@principal,@app_tools)`),
    // C5: the session's mode as stored, read in the save's own transaction.
    sessionMode: p('SELECT mode FROM sessions WHERE id = ?'),
    getRun: p('SELECT * FROM runs WHERE id = ?'),
    // D5: the delegates' runs not over, in the whole file.
    activeDelegates: p("SELECT COUNT(*) AS n FROM runs WHERE parent_run IS NOT NULL AND status IN ('running', 'paused')"),
    // The lengths of a run's trace: its last part's, or (a run an older Keel stored) its rows counted.
    counts: p(`SELECT json_extract(part, '$.n') AS n FROM run_events WHERE run_id = @id AND part IS NOT NULL ORDER BY id DESC LIMIT 1`),
    counted: p('SELECT counted_steps AS counted FROM runs WHERE id = ?'),
    oldCounts:
      p(`SELECT (SELECT COUNT(*) FROM messages WHERE run_id = @id) AS messages, (SELECT COUNT(*) FROM calls WHERE run_id = @id) AS steps,
      (SELECT COUNT(*) FROM requests WHERE run_id = @id) AS requests`),
    parts: p('SELECT part, body FROM run_events WHERE run_id = ? AND part IS NOT NULL ORDER BY id'),
    messages: p('SELECT body FROM messages WHERE run_id = ? ORDER BY seq'),
    calls: p('SELECT body FROM calls WHERE run_id = ? ORDER BY seq'),
    requests: p(`SELECT r.step, r.meta, s.body AS system, t.body AS tools FROM requests r
      JOIN blobs s ON s.hash = r.system_hash JOIN blobs t ON t.hash = r.tools_hash WHERE r.run_id = ? ORDER BY r.seq`),
    countUse: p('INSERT INTO tool_usage (tool, calls) VALUES (?, ?) ON CONFLICT(tool) DO UPDATE SET calls = calls + excluded.calls'),
    toolUsage: p('SELECT tool, calls FROM tool_usage ORDER BY calls DESC, tool LIMIT ?'),
  };
}

function runParams(run: RunState) {
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
    app_tools: run.app_tools?.length ? JSON.stringify(run.app_tools) : null,
    parent_run: run.parent?.run_id ?? null,
    depth: run.parent?.depth ?? 0,
    delegate: run.parent?.delegate ?? null,
    task_id: run.parent?.task_id ?? null,
    parent_request: run.parent?.request ?? null,
  };
}

/** What the file holds of a run: remembered from the last write or load, else counted. */
function storedOf(st: SqliteState, id: string): Stored {
  let n = st.stored.get(id);
  if (!n) {
    const last = st.stmt.counts.get({ id }) as { n: string } | undefined;
    if (last) {
      const [messages, steps, requests] = JSON.parse(last.n) as Part['n'];
      n = { messages, steps, requests, counted: 0 };
    } else n = st.stmt.oldCounts.get({ id }) as Stored;
    n.counted = (st.stmt.counted.get(id) as { counted: number | null } | undefined)?.counted ?? n.steps;
    st.stored.set(id, n);
  }
  return n;
}

/**
 * Writes the run's fields (those that changed) and counts its tools' use when it pauses or ends.
 * Returns the mode of the run's session as stored, read in the same transaction, and the lengths of
 * its trace in the file before and after the save (what the save appends: see partOf). The trace
 * only grows.
 */
function writeRun(st: SqliteState, run: RunState): { mode: Mode | undefined; had: Stored; now: Stored } {
  const had = storedOf(st, run.id);
  const now = { messages: run.messages.length, steps: run.steps.length, requests: run.requests.length, counted: had.counted };
  for (const k of ['messages', 'steps', 'requests'] as const) {
    if (now[k] < had[k]) throw new Error(`run ${run.id}: ${k} went from ${had[k]} to ${now[k]}; a run's trace is never rewritten`);
  }
  // R23: each call that ran counts once towards its tool's use, when its run pauses or ends (not a
  // write at every step): the records since the last count, the count kept with the run's row.
  if (run.status !== 'running') {
    // One statement per tool, however many of its calls ran.
    const ran = new Map<string, number>();
    for (let seq = had.counted; seq < now.steps; seq++) {
      const c = run.steps[seq];
      if (c.outcome === 'ran') ran.set(c.tool, (ran.get(c.tool) ?? 0) + 1);
    }
    for (const [tool, calls] of ran) st.stmt.countUse.run(tool, calls);
    now.counted = now.steps;
  }
  const holder = st.held.get(run.id) ?? null;
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
  const last = st.written.get(run.id);
  let changed = 0;
  const params: unknown[] = [];
  for (let i = 0; i < values.length; i++) {
    if (last && last[i] === values[i]) continue;
    changed |= 1 << i;
    params.push(values[i]);
  }
  // S4/R18: a save renews the lease of a running run (and drops it otherwise); a run this store
  // holds is written only while its owner is still the holder (another process may have taken it).
  const updated = updateOf(st, changed).run(...params, run.updated_at, leaseFor(st, run), run.id, holder, holder).changes === 1;
  // Another process took the run (its lease ran out): nothing of this save is kept (the transaction rolls back).
  if (holder !== null && !updated) loseRun(st, run.id, holder);
  st.stored.set(run.id, now);
  // Remembered only while this store holds the run running: no one else writes it then.
  if (run.status === 'running' && holder !== null) st.written.set(run.id, values);
  else st.written.delete(run.id);
  const mode = updated ? ((st.stmt.sessionMode.get(run.session_id) as { mode: Mode } | undefined)?.mode ?? undefined) : undefined;
  return { mode, had, now };
}

/**
 * Issue 29: what a save adds to the run's trace — messages, call records, requests — as one text,
 * the part of the save's journal row; none when it adds nothing. A call record that is the record of
 * one of the row's own events (a tool_result written with it, `events[i]` at row index `offset + i`)
 * is that index, not a second copy.
 */
function partOf(st: SqliteState, run: RunState, had: Stored, now: Stored, events: readonly JournalEntry[], offset: number): string | null {
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
      body += `${seq > had.requests ? ',' : ''}[${JSON.stringify(blob(st, system))},${JSON.stringify(blobOf(st, toolsBlob(tools)))},${JSON.stringify(meta)}]`;
    }
    body += ']';
  }
  return `${body}}`;
}

/** The run's update that sets the fields in `changed` (bits in RUN_FIELDS' order), prepared once per set. */
function updateOf(st: SqliteState, changed: number): Database.Statement {
  let update = st.updates.get(changed);
  if (!update) {
    const set = RUN_FIELDS.filter((_, i) => changed & (1 << i)).map((f) => `${f} = ?, `);
    update = st.db.prepare(`UPDATE runs SET ${set.join('')}updated_at = ?, lease_until = ? WHERE id = ? AND (? IS NULL OR owner IS ?)`);
    st.updates.set(changed, update);
  }
  return update;
}

export async function createRun(st: SqliteState, run: RunState, limit?: RunLimit): Promise<boolean> {
  let made = false;
  await groupWrite(st, run.id, () => {
    // D5: a limited run is counted and inserted under the file's write lock (the journal group's,
    // which holds it already): no other process starts one in between.
    inTransaction(st, run.id, () => {
      if (limit && (st.stmt.activeDelegates.get() as { n: number }).n >= limit.activeDelegates) return;
      st.stmt.insertRun.run({ ...runParams(run), lease_until: leaseFor(st, run) });
      st.stored.set(run.id, { messages: 0, steps: 0, requests: 0, counted: 0 });
      const { had, now } = writeRun(st, run);
      const part = partOf(st, run, had, now, [], 0);
      if (part) insertWrite(st, run.id, [], part);
      made = true;
    });
  });
  if (made && run.status === 'running' && run.owner) hold(st, run.id, run.owner);
  return made;
}

export async function saveRun(st: SqliteState, run: RunState, events?: JournalEntry[], card?: ApprovalRecord): Promise<Mode | undefined> {
  if (st.lost.has(run.id)) throw lostError(st, run.id);
  let mode: Mode | undefined;
  let first = 0;
  let kept: JournalEntry[] = [];
  await groupWrite(st, run.id, () =>
    inTransaction(st, run.id, () => {
      // A pause's card, with the paused run or not at all.
      if (card) insertApproval(st, card);
      // C5: the session's mode as stored, read in the save's own transaction.
      const { had, now, mode: stored } = writeRun(st, run);
      mode = stored;
      // Issue 29: the journal events that go with this save and what it adds to the trace, one row.
      // An event held for a mode the session has left is not kept (JournalEntry.onlyInMode).
      kept = events?.filter((e) => !e.onlyInMode || mode === undefined || mode === e.onlyInMode) ?? [];
      const reply = extendable(st, run.id);
      const part = partOf(st, run, had, now, kept, reply ? 1 : 0);
      if (kept.length || part) first = insertWrite(st, run.id, kept, part, reply);
    }),
  );
  // Committed: the kept events have their ids.
  for (let i = 0; i < kept.length; i++) kept[i].id = first + i;
  // Paused or ended: no longer held here (a claim holds it again).
  if (run.status !== 'running') st.held.delete(run.id);
  return mode;
}

/**
 * Runs a write as one transaction (a savepoint of the journal group's). If it rolls back, what this
 * process remembers of the file (the run's counts, the blobs written) is forgotten with it, so the
 * next save writes them again.
 */
function inTransaction(st: SqliteState, runId: string, write: () => void): void {
  st.uncommittedBlobs = [];
  try {
    st.transaction(write);
  } catch (err) {
    st.stored.delete(runId);
    st.written.delete(runId);
    for (const h of st.uncommittedBlobs) st.knownBlobs.delete(h);
    throw err;
  } finally {
    st.uncommittedBlobs = [];
  }
}

export async function loadRun(st: SqliteState, id: string): Promise<RunState | undefined> {
  const r = st.stmt.getRun.get(id) as Row | undefined;
  if (!r) return undefined;
  const bodies = (s: Database.Statement) => (s.all(id) as { body: string }[]).map((x) => JSON.parse(x.body));
  // A run an older Keel stored has rows of its own; a run this Keel stored (or carried on) has parts.
  const messages = bodies(st.stmt.messages) as Message[];
  const callRows = bodies(st.stmt.calls) as StepRow[];
  const requests = (st.stmt.requests.all(id) as Row[]).map(
    (x) => ({ ...JSON.parse(x.meta as string), system: x.system, tools: JSON.parse(x.tools as string) }) as RequestTrace,
  );
  // The prompts and menus this run's requests name, each read once for this load.
  const blobs = new Map<string, string>();
  const blob = (hash: string): string => blobFrom(st, hash, blobs);
  const tools = new Map<string, RequestTrace['tools']>();
  for (const row of st.stmt.parts.all(id) as { part: string; body: string }[]) {
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
    ...(typeof r.app_tools === 'string' ? { app_tools: JSON.parse(r.app_tools) } : {}),
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
  st.stored.set(id, {
    messages: run.messages.length,
    steps: run.steps.length,
    requests: run.requests.length,
    counted: (r.counted_steps as number | null) ?? run.steps.length,
  });
  st.written.delete(id);
  return run;
}

export async function listRuns(st: SqliteState, q: RunQuery = {}): Promise<RunSummary[]> {
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
  return shaped(st, sql).all(...args, q.limit ?? 50) as RunSummary[];
}

export async function toolUsage(st: SqliteState, limit: number): Promise<ToolUsage[]> {
  return st.stmt.toolUsage.all(Math.max(0, Math.floor(limit))) as ToolUsage[];
}
