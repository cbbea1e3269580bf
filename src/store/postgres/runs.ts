/**
 * The PostgreSQL store's runs: a run's save — its fields, what its trace gained (messages, call
 * records, requests with their content-addressed blobs) and the journal events that go with it, in
 * one statement (issue 29) — and a run read back whole, the runs listed, the tools' use counted.
 * Never rewrites a run's trace (it only grows, R19), and never saves a run this process lost.
 */
import type {
  ApprovalRecord,
  JournalEntry,
  Message,
  Mode,
  Principal,
  RequestTrace,
  RunLimit,
  RunQuery,
  RunState,
  RunSummary,
  UntrustedSource,
} from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { contentHash, type StepRow, stepRow, stepsFrom, toolsBlob } from '../trace.js';
import { approvalParams, INSERT_APPROVAL } from './approvals.js';
import { LOCK_DELEGATES, LOCK_JOURNAL, named, type Queryable } from './connection.js';
import { EVENTS_CHANNEL } from './journal.js';
import { jsonArray, jsonb, unjsonb } from './json.js';
import type { Leases } from './leases.js';
import type { PgPool } from './pool.js';

/** How much of a run's trace the database holds: where its next save appends. */
type Stored = { messages: number; steps: number; requests: number };
/** D5: the delegates' runs not over, in the whole schema. */
const ACTIVE_DELEGATES = "SELECT count(*) AS n FROM runs WHERE parent_run IS NOT NULL AND status IN ('running', 'paused')";

const INSERT_RUN = named(
  'insert_run',
  `INSERT INTO runs (id,status,reason,request,mode,model,plugin_dirs,answer,pause,pause_seq,model_calls,effects,notes,warnings,owner,session_id,seq_base,contract,created_at,updated_at,inherited_untrusted,parent_run,depth,delegate,task_id,parent_request,principal,app_tools)
   VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27,$28)`,
);
const RECHECK = named(
  'recheck_run',
  'SELECT n_messages AS messages, n_steps AS steps, n_requests AS requests, owner FROM runs WHERE id = $1',
);

/**
 * A run's save (issue 29): if the database holds what this process believes ($20, $22, $25) and the
 * run is still this process's ($27), the run's row is locked, the new blobs, messages, steps, tool
 * counts and requests appended, its fields written — and the journal events that go with the save
 * appended ($28–$30), under the journal's advisory lock taken before their ids are drawn (as in
 * appendEvent: ids become visible in the order drawn, S5), with a notification ($32) at commit —
 * each only if its mode ($33, '' for any) is the session's as this statement reads it, or the
 * session has no record (JournalEntry.onlyInMode; the same snapshot as the mode returned).
 * No events: no lock. Returns the session's mode (C5) and the events' ids.
 */
const SAVE = named(
  'save_run',
  `WITH
        r AS (SELECT id FROM runs WHERE id = $1 AND n_messages = $20 AND n_steps = $22 AND n_requests = $25
              AND ($27::text IS NULL OR owner IS NOT DISTINCT FROM $27) FOR UPDATE),
        b AS (INSERT INTO blobs (hash, body) SELECT h, x::jsonb FROM unnest($18::text[], $19::text[]) AS x(h, x) ON CONFLICT (hash) DO NOTHING),
        m AS (INSERT INTO messages (run_id, seq, body) SELECT r.id, $20 + e.ord - 1, e.body FROM r, jsonb_array_elements($21::jsonb) WITH ORDINALITY AS e(body, ord)),
        s AS (INSERT INTO steps (run_id, seq, body) SELECT r.id, $22 + e.ord - 1, e.body FROM r, jsonb_array_elements($23::jsonb) WITH ORDINALITY AS e(body, ord)),
        u AS (INSERT INTO tool_usage (tool, calls) SELECT tool, COUNT(*) FROM r, unnest($24::text[]) AS u(tool) GROUP BY tool
              ON CONFLICT (tool) DO UPDATE SET calls = tool_usage.calls + excluded.calls),
        q AS (INSERT INTO requests (run_id, seq, step, system_hash, tools_hash, meta)
              SELECT r.id, $25 + e.ord - 1, (e.x->'m'->>'step')::int, e.x->>'s', e.x->>'t', e.x->'m'
              FROM r, jsonb_array_elements($26::jsonb) WITH ORDINALITY AS e(x, ord)),
        l AS (SELECT pg_advisory_xact_lock($31, hashtext(current_schema())) FROM r WHERE jsonb_array_length($28::jsonb) > 0),
        ev AS (INSERT INTO run_events (run_id, type, at, body)
              SELECT r.id, ($29::text[])[e.ord], ($30::text[])[e.ord], e.body
              FROM r, l, jsonb_array_elements($28::jsonb) WITH ORDINALITY AS e(body, ord)
              WHERE ($33::text[])[e.ord] = '' OR NOT EXISTS (SELECT 1 FROM runs x JOIN sessions z ON z.id = x.session_id
                      WHERE x.id = $1 AND z.mode <> ($33::text[])[e.ord])
              ORDER BY e.ord RETURNING id)
      UPDATE runs SET status=$2, reason=$3, mode=$4, answer=$5, pause=$6, pause_seq=$7, model_calls=$8, effects=$9, notes=$10,
        warnings=$11, contract=$12, updated_at=$13, n_messages=$14, n_steps=$15, n_requests=$16,
        lease_until = CASE WHEN $2 = 'running' THEN now() + $17 * interval '1 millisecond' END FROM r WHERE runs.id = r.id
      RETURNING (SELECT mode FROM sessions WHERE sessions.id = runs.session_id) AS session_mode,
        (SELECT array_agg(id) FROM ev) AS event_ids,
        (SELECT pg_notify('${EVENTS_CHANNEL}', $32) FROM (SELECT 1 FROM ev LIMIT 1) AS x) IS NULL AS quiet`,
);

export class Runs {
  /** Hashes of blobs this process knows are stored (the table is content-addressed, rows never deleted). */
  private readonly knownBlobs = new Set<string>();
  /** What the database holds of each run this process wrote or read: where its next save appends. */
  private readonly stored = new Map<string, Stored>();

  constructor(
    private readonly db: PgPool,
    private readonly leases: Leases,
  ) {}

  /** The run's fields that change as it goes, in the order both INSERT_RUN and SAVE take them. */
  private progressParams(run: RunState): unknown[] {
    return [
      run.answer === null ? null : jsonb(run.answer),
      run.pause ? jsonb(run.pause) : null,
      run.pause_seq,
      run.model_calls,
      jsonb(run.effects),
      jsonb(run.notes),
      jsonb(run.warnings),
    ];
  }

  private runParams(run: RunState): unknown[] {
    return [
      run.id,
      run.status,
      run.reason,
      jsonb(run.request),
      run.mode,
      run.model,
      jsonb(run.plugin_dirs),
      ...this.progressParams(run),
      run.owner,
      run.session_id,
      run.seq_base,
      run.contract ? jsonb(run.contract) : null,
      run.created_at,
      run.updated_at,
      run.inherited_untrusted?.length ? jsonb(run.inherited_untrusted) : null,
      run.parent?.run_id ?? null,
      run.parent?.depth ?? 0,
      run.parent?.delegate ?? null,
      run.parent?.task_id ?? null,
      run.parent ? jsonb(run.parent.request) : null,
      run.principal ? jsonb(run.principal) : null,
      run.app_tools?.length ? jsonb(run.app_tools) : null,
    ];
  }

  /**
   * Appends what the database does not hold of a run yet and writes its fields, in one statement on
   * `c`, if the database holds what this process believes (`had`) and the run is still this
   * process's (when it holds it): the row is locked and checked in the same statement. False when
   * it does not: the caller looks again. The transcript only grows (R19).
   */
  private async writeRun(
    c: Queryable,
    run: RunState,
    had: Stored,
    blobsAdded: string[],
    events: readonly JournalEntry[],
  ): Promise<{ mode: Mode | undefined; ids: number[] } | false> {
    const now = { messages: run.messages.length, steps: run.steps.length, requests: run.requests.length };
    for (const k of ['messages', 'steps', 'requests'] as const) {
      if (now[k] < had[k]) throw new Error(`run ${run.id}: ${k} went from ${had[k]} to ${now[k]}; a run's trace is never rewritten`);
    }
    const holder = this.leases.held.get(run.id);
    const steps: StepRow[] = [];
    for (let seq = had.steps; seq < now.steps; seq++) steps.push(stepRow(run, seq));
    // R23: each call that ran counts once towards its tool's use (a record is written once).
    const ran = run.steps.slice(had.steps).flatMap((x) => (x.outcome === 'ran' ? [x.tool] : []));
    const blobs: [string, string][] = [];
    const requests: { s: string; t: string; m: unknown }[] = [];
    for (let seq = had.requests; seq < now.requests; seq++) {
      const { system, tools, ...meta } = run.requests[seq];
      const sh = contentHash(system);
      const t = toolsBlob(tools);
      for (const [hash, text] of [
        [sh, jsonb(system)],
        [t.hash, t.body],
      ] as const) {
        if (!this.knownBlobs.has(hash) && !blobs.some((b) => b[0] === hash)) blobs.push([hash, text]);
      }
      requests.push({ s: sh, t: t.hash, m: meta });
    }
    // Everything new, the run's fields and the journal events that go with them in one statement:
    // one round trip for a step (issue 29), prepared once per connection.
    const r = await c.query(SAVE, [
      run.id,
      run.status,
      run.reason,
      run.mode,
      ...this.progressParams(run),
      run.contract ? jsonb(run.contract) : null,
      run.updated_at,
      now.messages,
      now.steps,
      now.requests,
      this.leases.leaseMs,
      blobs.map((b) => b[0]),
      blobs.map((b) => b[1]),
      had.messages,
      jsonArray(run.messages.slice(had.messages)),
      had.steps,
      jsonArray(steps),
      ran,
      had.requests,
      jsonArray(requests),
      holder ?? null,
      events.length ? jsonArray(events.map((e) => e.event)) : '[]',
      events.map((e) => e.event.type),
      events.map((e) => e.at),
      LOCK_JOURNAL,
      `${this.db.target.schema} ${run.id}`,
      events.map((e) => e.onlyInMode ?? ''),
    ]);
    if (r.rowCount !== 1) return false;
    blobsAdded.push(...blobs.map((b) => b[0]));
    // The ids were drawn in the events' order (under the journal's lock): the smallest is the first event's.
    const ids = ((r.rows[0]?.event_ids as string[] | null) ?? []).map(Number).sort((a, b) => a - b);
    // C5: the session's mode as stored, read by the save's own statement (no round trip of its own).
    return { mode: (r.rows[0]?.session_mode as Mode | null) ?? undefined, ids };
  }

  /** Why a save found the run other than expected: the counts it holds now, or an error. */
  private async recheck(c: Queryable, run: RunState): Promise<Stored> {
    const row = (await c.query<Stored & { owner: string | null }>(RECHECK, [run.id])).rows[0];
    if (!row) throw new Error(`run ${run.id} is not in the store: it cannot be saved`);
    // A run this process held and another took over (its lease ran out) is not written from here.
    const holder = this.leases.held.get(run.id);
    if (holder !== undefined && row.owner !== holder) {
      this.leases.lost.set(run.id, row.owner);
      this.leases.held.delete(run.id);
      throw new KeelError('conflict', `run ${run.id} was taken over by ${row.owner ?? 'the queue'}: this process lost its lease`);
    }
    return { messages: row.messages, steps: row.steps, requests: row.requests };
  }

  /** A save: one statement when this process knows what the database holds, else it looks first. */
  private async save(c: Queryable, run: RunState, blobsAdded: string[], events: JournalEntry[] = []): Promise<Mode | undefined> {
    let had = this.stored.get(run.id) ?? (await this.recheck(c, run));
    let saved: { mode: Mode | undefined; ids: number[] } | false;
    for (let attempt = 0; ; attempt++) {
      // Checked before every attempt: the lease may be found lost (renewLeases) while one is retried.
      if (this.leases.lost.has(run.id)) {
        const by = this.leases.lost.get(run.id);
        throw new KeelError('conflict', `run ${run.id} was taken over by ${by ?? 'the queue'}: this process lost its lease`);
      }
      saved = await this.writeRun(c, run, had, blobsAdded, events);
      if (saved) break;
      if (attempt > 3) throw new Error(`run ${run.id} is being saved by another process at the same time`);
      had = await this.recheck(c, run);
    }
    this.stored.set(run.id, { messages: run.messages.length, steps: run.steps.length, requests: run.requests.length });
    // The events the statement kept: it read the session's mode in the same snapshot it returned.
    const mode = saved.mode;
    const kept = events.filter((e) => !e.onlyInMode || mode === undefined || mode === e.onlyInMode);
    if (saved.ids.length !== kept.length) throw new Error(`run ${run.id}: the save appended ${saved.ids.length} of ${kept.length} events`);
    for (let i = 0; i < kept.length; i++) kept[i].id = saved.ids[i];
    return saved.mode;
  }

  /** A run write; blobs it wrote are remembered only once it committed; on failure what we believed is forgotten. */
  private async runWrite<T>(runId: string, f: (c: Queryable, blobsAdded: string[]) => Promise<T>, inTransaction: boolean): Promise<T> {
    const added: string[] = [];
    let out: T;
    try {
      if (inTransaction) out = await this.db.transaction((c) => f(c, added));
      else {
        await this.db.ensureReady();
        out = await f(this.db.pooled, added);
      }
    } catch (err) {
      this.stored.delete(runId);
      throw err;
    }
    for (const h of added) this.knownBlobs.add(h);
    return out;
  }

  async createRun(run: RunState, limit?: RunLimit): Promise<boolean> {
    if (run.status === 'running' && run.owner) this.leases.hold(run.id, run.owner);
    this.stored.set(run.id, { messages: 0, steps: 0, requests: 0 });
    const made = await this.runWrite(
      run.id,
      async (c, added) => {
        if (limit) {
          // D5: one limited start at a time in this schema, counted after the last one committed.
          await c.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [LOCK_DELEGATES]);
          const active = await c.query(ACTIVE_DELEGATES);
          if (Number((active.rows[0] as { n: string }).n) >= limit.activeDelegates) return false;
        }
        await c.query(INSERT_RUN, this.runParams(run));
        await this.save(c, run, added);
        return true;
      },
      true,
    );
    if (!made) {
      this.stored.delete(run.id);
      this.leases.held.delete(run.id);
    }
    return made;
  }

  async saveRun(run: RunState, events?: JournalEntry[], card?: ApprovalRecord): Promise<Mode | undefined> {
    // One statement: atomic by itself; with a pause's card, the card and the save in one transaction.
    const mode = card
      ? await this.runWrite(
          run.id,
          async (c, added) => {
            await c.query(INSERT_APPROVAL, approvalParams(card));
            return this.save(c, run, added, events);
          },
          true,
        )
      : await this.runWrite(run.id, (c, added) => this.save(c, run, added, events), false);
    if (run.status !== 'running') this.leases.held.delete(run.id);
    return mode;
  }

  async loadRun(id: string): Promise<RunState | undefined> {
    // One statement, one snapshot: the run's fields and its whole trace as of one moment.
    const r = (
      await this.db.q(
        `SELECT r.*,
          COALESCE((SELECT jsonb_agg(body ORDER BY seq) FROM messages WHERE run_id = r.id), '[]') AS t_messages,
          COALESCE((SELECT jsonb_agg(body ORDER BY seq) FROM steps WHERE run_id = r.id), '[]') AS t_steps,
          COALESCE((SELECT jsonb_agg(jsonb_build_object('m', q.meta, 's', s.body, 't', t.body) ORDER BY q.seq)
             FROM requests q JOIN blobs s ON s.hash = q.system_hash JOIN blobs t ON t.hash = q.tools_hash WHERE q.run_id = r.id), '[]') AS t_requests
         FROM runs r WHERE r.id = $1`,
        [id],
      )
    ).rows[0];
    if (!r) return undefined;
    const messages = (r.t_messages as unknown[]).map((m) => unjsonb<Message>(m));
    const requests = (r.t_requests as { m: Record<string, unknown>; s: unknown; t: unknown }[]).map(
      (x) => ({ ...x.m, system: unjsonb<string>(x.s), tools: unjsonb(x.t) }) as RequestTrace,
    );
    const run: RunState = {
      id: r.id as string,
      status: r.status as RunState['status'],
      reason: (r.reason as RunState['reason']) ?? null,
      request: unjsonb<string>(r.request),
      mode: r.mode as RunState['mode'],
      model: r.model as string,
      plugin_dirs: unjsonb(r.plugin_dirs),
      answer: r.answer === null ? null : unjsonb<string>(r.answer),
      pause: r.pause === null ? null : unjsonb(r.pause),
      pause_seq: r.pause_seq as number,
      model_calls: r.model_calls as number,
      effects: unjsonb(r.effects),
      notes: unjsonb(r.notes),
      warnings: unjsonb(r.warnings),
      owner: (r.owner as string | null) ?? null,
      session_id: r.session_id as string,
      seq_base: r.seq_base as number,
      contract: r.contract === null ? null : unjsonb(r.contract),
      ...(r.inherited_untrusted !== null && r.inherited_untrusted !== undefined
        ? { inherited_untrusted: unjsonb<UntrustedSource[]>(r.inherited_untrusted) }
        : {}),
      ...(r.principal !== null && r.principal !== undefined ? { principal: unjsonb<Principal>(r.principal) } : {}),
      ...(r.app_tools !== null && r.app_tools !== undefined ? { app_tools: unjsonb<string[]>(r.app_tools) } : {}),
      ...(typeof r.parent_run === 'string'
        ? {
            parent: {
              run_id: r.parent_run,
              delegate: r.delegate as string,
              depth: r.depth as number,
              task_id: r.task_id as string,
              request: unjsonb<string>(r.parent_request),
            },
          }
        : {}),
      messages,
      steps: stepsFrom(
        (r.t_steps as unknown[]).map((s) => unjsonb<StepRow>(s)),
        messages,
      ),
      requests,
      created_at: r.created_at as string,
      updated_at: r.updated_at as string,
    };
    this.stored.set(id, { messages: run.messages.length, steps: run.steps.length, requests: run.requests.length });
    return run;
  }

  async listRuns(q: RunQuery = {}): Promise<RunSummary[]> {
    const where: string[] = [];
    const args: unknown[] = [];
    const arg = (v: unknown) => {
      args.push(v);
      return `$${args.length}`;
    };
    if (q.status) where.push(`status = ${arg(q.status)}`);
    if (q.session_id) where.push(`session_id = ${arg(q.session_id)}`);
    if (q.before) where.push(`(created_at, id) < (${arg(q.before.created_at)}, ${arg(q.before.id)})`);
    if (q.parent_run) where.push(`parent_run = ${arg(q.parent_run)}`);
    const sql = `SELECT id,status,reason,request,mode,model,model_calls,session_id,created_at,updated_at,parent_run FROM runs
      ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ${arg(q.limit ?? 50)}`;
    return (await this.db.q(sql, args)).rows.map((r) => ({
      id: r.id as string,
      session_id: r.session_id as string,
      status: r.status as RunSummary['status'],
      reason: (r.reason as RunSummary['reason']) ?? null,
      request: unjsonb<string>(r.request),
      mode: r.mode as RunSummary['mode'],
      model: r.model as string,
      model_calls: r.model_calls as number,
      created_at: r.created_at as string,
      updated_at: r.updated_at as string,
      parent_run: (r.parent_run as string | null) ?? null,
    }));
  }

  async toolUsage(limit: number): Promise<{ tool: string; calls: number }[]> {
    const r = await this.db.q<{ tool: string; calls: string }>('SELECT tool, calls FROM tool_usage ORDER BY calls DESC, tool LIMIT $1', [
      Math.max(0, Math.floor(limit)),
    ]);
    return r.rows.map((x) => ({ tool: x.tool, calls: Number(x.calls) }));
  }
}
