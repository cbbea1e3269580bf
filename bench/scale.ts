/**
 * bench/scale (#15): Keel beyond one process, on PostgreSQL.
 *
 * 1. Throughput with 1, 2 and 4 `keel worker` processes (each --concurrency 4, dist/ as a user runs
 *    it; `npm run build` first) on one database: --runs runs (default 120) are started and handed to
 *    the queue from this process at once, each 3 model calls on the scripted model at --delay ms
 *    (50) each — two calls of the fixture calendar plugin's read tool, then an answer. runs/s =
 *    runs / (first hand-off → last run done), read from the store. The ideal per run is 3 × delay, so
 *    W workers × 4 legs can at best finish 4W / (3 × delay) runs/s; the figure is also given as a
 *    fraction of that limit. (The machine's cores bound it too: every worker shares them.)
 * 2. The per-step store overhead of PostgreSQL against SQLite, in one process and one bench run:
 *    the same scripted run of --steps steps (no model delay) driven through the library with no
 *    store, with the SQLite file, and with PostgreSQL, interleaved, --reps times; overhead per step =
 *    (median with the store − median without) / steps; the ratio PostgreSQL / SQLite is reported.
 *
 *    Round trips per step: every query the PostgreSQL store sends during those runs is counted
 *    (pg's Client.prototype.query wrapped in this process: a BEGIN or a COMMIT is one too), per run
 *    and divided by the steps. WAL flushes per step: pg_stat_wal's wal_sync over all of those runs.
 *    Beside them, SQLite at PostgreSQL's durability (the same file store with synchronous=FULL: each
 *    commit waits for its fsync, where Keel's NORMAL syncs at checkpoints), and PostgreSQL's floor on
 *    this machine: a commit of a one-row INSERT (a round trip and a WAL flush) and a SELECT 1, each
 *    timed --floor-reps times; the floor per step counts each flush as such a commit and each other
 *    round trip as a SELECT 1.
 *
 * PostgreSQL: KEEL_TEST_PG_URL (its fsync and synchronous_commit are read with SHOW and reported
 * beside the figures), else a throwaway cluster with PostgreSQL's DEFAULT durability — fsync on,
 * synchronous_commit on — unlike the tests' cluster, which turns both off for speed
 * (test/support/pg.ts). Writes bench/results/scale.json. No assertion: figures and ratios. On a
 * shared machine run it as `chrt -f 50 node …` (the load average is reported with the figures).
 *
 *   node --import tsx bench/scale.ts [--runs 120] [--delay 50] [--steps 20] [--reps 7] [--floor-reps 300] [--workers 1,2,4] [--no-write]
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { stringify } from 'yaml';
import { Keel } from '../src/keel/keel.js';
import { handToQueue } from '../src/server/workers/worker.js';
import { PostgresStore } from '../src/store/postgres.js';
import { SqliteStore } from '../src/store/sqlite.js';
import type { Store } from '../src/types/index.js';
import { dropSchemas, freshSchema, throwawayCluster, withSchema } from '../test/support/pg.js';
import { now } from './support/timing.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'keel.js');
const CALENDAR = join(ROOT, 'test', 'fixtures', 'plugins', 'calendar');
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
};
const RUNS = Number(arg('runs', '120'));
const DELAY = Number(arg('delay', '50'));
const STEPS = Number(arg('steps', '20'));
const REPS = Number(arg('reps', '7'));
const FLOOR_REPS = Number(arg('floor-reps', '300'));
const WORKERS = arg('workers', '1,2,4').split(',').map(Number);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error('dist/ is missing: npm run build first');
const home = mkdtempSync(join(tmpdir(), 'keel-bench-scale-'));
const lookups = (n: number, delay: number) => [
  ...Array.from({ length: n }, (_, i) => ({
    delay_ms: delay,
    tool_calls: [{ id: `c${i}`, name: 'calendar_lookup', args: { day: `2025-03-${String((i % 28) + 1).padStart(2, '0')}` } }],
  })),
  { delay_ms: delay, text: 'Your days are free.' },
];
const throughputScript = join(home, 'throughput.yaml');
writeFileSync(throughputScript, stringify(lookups(2, DELAY)));
const stepScript = join(home, 'steps.yaml');
writeFileSync(stepScript, stringify(lookups(STEPS - 1, 0)));

/**
 * Started under a real-time policy (`chrt -f 50`), this process gives it up while it starts the
 * workers, which would inherit it (busy real-time workers starve a 2-core machine), and takes it
 * back for the per-step figure, which it measures in-process; the throwaway cluster keeps it (it
 * is started first), so the database is not kept waiting by the machine's other work either.
 */
const policy = (() => {
  try {
    const out = execFileSync('chrt', ['-p', String(process.pid)], { encoding: 'utf8' });
    const m = /SCHED_FIFO[\s\S]*priority: (\d+)/.exec(out);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
})();
function realTime(on: boolean): void {
  if (policy === undefined) return;
  execFileSync('chrt', on ? ['-a', '-f', '-p', String(policy), String(process.pid)] : ['-a', '-o', '-p', '0', String(process.pid)]);
}

function startWorker(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, [BIN, 'worker', '--concurrency', '4'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((res, rej) => {
    let out = '';
    child.stdout?.on('data', (d) => {
      out += d;
      if (/taking legs/.test(out)) res(child);
    });
    child.once('exit', (code) => rej(new Error(`keel worker exited ${code}`)));
  });
}

async function throughput(url: string, workers: number) {
  const schemaUrl = withSchema(url, freshSchema('keel_bench'));
  const env = { ...process.env, KEEL_HOME: home, KEEL_STORE: schemaUrl, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '' };
  const store = new PostgresStore(schemaUrl);
  const keel = new Keel({ home, env, store });
  const procs: ChildProcess[] = [];
  try {
    for (let i = 0; i < workers; i++) procs.push(await startWorker(env));
    await store.queue();
    const t0 = now();
    const legs = await Promise.all(
      Array.from({ length: RUNS }, (_, i) => keel.startRun(`week ${i}`, { model: `script:${throughputScript}`, pluginDirs: [CALENDAR] })),
    );
    for (const leg of legs) await handToQueue(store, leg);
    let done = 0;
    while (done < RUNS) {
      await sleep(20);
      done = (await store.listRuns({ status: 'done', limit: RUNS + 1 })).length;
      const failed = (await store.listRuns({ status: 'failed', limit: 1 })).length;
      if (failed) throw new Error('a run failed');
    }
    const seconds = (now() - t0) / 1000;
    const limit = (workers * 4) / ((3 * DELAY) / 1000);
    return { workers, runs: RUNS, seconds, runs_per_s: RUNS / seconds, of_limit: RUNS / seconds / limit };
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode === null ? p.once('exit', r) : r(null)))));
    await keel.close();
  }
}

/** Queries sent by every pg client of this process while `counting` (one round trip each). */
let counting = false;
let queries = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  if (counting) queries++;
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

/** The server's durability settings, as it reports them. */
async function durability(url: string): Promise<Record<string, string>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const out: Record<string, string> = {};
    for (const name of ['fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method', 'server_version']) {
      out[name] = (await c.query(`SHOW ${name}`)).rows[0][name];
    }
    return out;
  } finally {
    await c.end();
  }
}

/** The cluster's WAL flushes so far (pg_stat_wal, PostgreSQL 14+), or undefined where it has none. */
async function walSyncs(c: pg.Client): Promise<number | undefined> {
  try {
    return Number((await c.query('SELECT wal_sync FROM pg_stat_wal')).rows[0].wal_sync);
  } catch {
    return undefined;
  }
}

/**
 * PostgreSQL's floor on this machine: the median time of a round trip that writes nothing (SELECT 1)
 * and of one that commits a one-row INSERT on its own (a round trip and a WAL flush: the least any
 * durable write costs), each --floor-reps times on a client of the bench's database.
 */
async function floor(url: string) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CREATE TABLE IF NOT EXISTS keel_bench_floor (id bigserial PRIMARY KEY, body text NOT NULL)');
    const round: number[] = [];
    const commit: number[] = [];
    for (let i = 0; i < FLOOR_REPS + 20; i++) {
      let t0 = now();
      await c.query('SELECT 1');
      const r = now() - t0;
      t0 = now();
      await c.query('INSERT INTO keel_bench_floor (body) VALUES ($1)', [`probe ${i}`]);
      const w = now() - t0;
      if (i >= 20) {
        round.push(r);
        commit.push(w);
      }
    }
    await c.query('DROP TABLE keel_bench_floor');
    return { round_trip_ms: median(round), commit_ms: median(commit) };
  } finally {
    await c.end();
  }
}

async function stepOverhead(url: string) {
  const pgUrl = withSchema(url, freshSchema('keel_bench'));
  const pgStore = new PostgresStore(pgUrl);
  const sqlite = new SqliteStore(join(home, 'steps.db'));
  // The same store with PostgreSQL's durability: a commit waits for its fsync (synchronous=FULL; Keel
  // opens the file with NORMAL, which in WAL mode syncs at checkpoints, not at every commit).
  const sqliteFull = new SqliteStore(join(home, 'steps-full.db'));
  (sqliteFull as unknown as { db: { pragma(p: string): unknown } }).db.pragma('synchronous = FULL');
  const kinds: [string, Store | null][] = [
    ['none', null],
    ['sqlite', sqlite],
    ['sqlite_full', sqliteFull],
    ['postgres', pgStore],
  ];
  const env = { ...process.env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '' };
  const keels = kinds.map(([name, store]) => [name, new Keel({ home, env, store })] as const);
  const times: Record<string, number[]> = { none: [], sqlite: [], sqlite_full: [], postgres: [] };
  const trips: number[] = [];
  const stats = new pg.Client({ connectionString: url });
  await stats.connect();
  let flushes = Number.NaN;
  try {
    const syncsBefore = await walSyncs(stats);
    for (let rep = 0; rep < REPS + 2; rep++) {
      for (const [name, keel] of keels) {
        queries = 0;
        counting = name === 'postgres';
        const t0 = now();
        const r = await keel.run('what is on this month?', { model: `script:${stepScript}`, pluginDirs: [CALENDAR] });
        const ms = now() - t0;
        counting = false;
        if (name === 'postgres') trips.push(queries);
        if (r.status !== 'done' || r.model_calls !== STEPS)
          throw new Error(`${name}: ${r.status} ${r.reason} after ${r.model_calls} calls`);
        if (rep >= 2) times[name].push(ms); // two warm-up rounds
      }
    }
    // A backend reports its WAL statistics when it has been idle for 10 s, or as it exits
    // (PostgreSQL 15): the store's connections are left idle that long before they are read.
    await sleep(11_000);
    const syncsAfter = await walSyncs(stats);
    if (syncsBefore !== undefined && syncsAfter !== undefined) flushes = (syncsAfter - syncsBefore) / ((REPS + 2) * STEPS);
  } finally {
    await stats.end();
    for (const [, keel] of keels) await keel.close();
  }
  const base = median(times.none);
  const per = (name: string) => (median(times[name]) - base) / STEPS;
  const least = await floor(pgUrl);
  const flushesPerStep = flushes;
  const tripsPerStep = median(trips) / STEPS;
  return {
    steps: STEPS,
    reps: REPS,
    median_run_ms: { none: base, sqlite: median(times.sqlite), sqlite_full: median(times.sqlite_full), postgres: median(times.postgres) },
    store_ms_per_step: { sqlite: per('sqlite'), sqlite_full: per('sqlite_full'), postgres: per('postgres') },
    postgres_over_sqlite: per('postgres') / per('sqlite'),
    /** Against SQLite at PostgreSQL's durability (synchronous=FULL: a commit waits for its fsync). */
    postgres_over_sqlite_full: per('postgres') / per('sqlite_full'),
    /** Queries the PostgreSQL store sent per run (median) and per step: the run's own (start, end) included. */
    postgres_round_trips_per_run: median(trips),
    postgres_round_trips_per_step: tripsPerStep,
    /** WAL flushes per step: pg_stat_wal.wal_sync over all the PostgreSQL runs (the cluster's own included) / their steps. */
    postgres_wal_flushes_per_step: flushesPerStep,
    /**
     * The least a step can cost on this server, as this store writes it: each WAL flush as a one-row
     * commit, each other round trip as a SELECT 1.
     */
    postgres_floor: {
      ...least,
      ms_per_step: flushesPerStep * least.commit_ms + Math.max(0, tripsPerStep - flushesPerStep) * least.round_trip_ms,
    },
  };
}

const given = process.env.KEEL_TEST_PG_URL?.trim();
try {
  const url = given || (await throwawayCluster({ durable: true }));
  const settings = await durability(url);
  const server = given ? 'KEEL_TEST_PG_URL' : "a throwaway cluster with PostgreSQL's default durability";
  console.log(
    `PostgreSQL ${settings.server_version}: ${server} — fsync=${settings.fsync}, synchronous_commit=${settings.synchronous_commit}, full_page_writes=${settings.full_page_writes}; load ${loadavg()[0].toFixed(1)} on ${cpus().length} CPUs`,
  );
  const rows = [];
  realTime(false);
  for (const w of WORKERS) {
    const r = await throughput(url, w);
    rows.push(r);
    console.log(
      `${w} worker(s): ${r.runs} runs in ${r.seconds.toFixed(2)} s = ${r.runs_per_s.toFixed(1)} runs/s (${(r.of_limit * 100).toFixed(0)}% of ${((w * 4) / ((3 * DELAY) / 1000)).toFixed(1)} runs/s)`,
    );
  }
  const base = rows[0]?.runs_per_s ?? Number.NaN;
  for (const r of rows) console.log(`  ${r.workers} worker(s) / 1 worker: ×${(r.runs_per_s / base).toFixed(2)}`);
  realTime(true);
  const steps = await stepOverhead(url);
  console.log(
    `store per step (${steps.steps}-step run, median of ${steps.reps}): SQLite file ${steps.store_ms_per_step.sqlite.toFixed(2)} ms, PostgreSQL ${steps.store_ms_per_step.postgres.toFixed(2)} ms (fsync=${settings.fsync}, synchronous_commit=${settings.synchronous_commit}) — PostgreSQL / SQLite ×${steps.postgres_over_sqlite.toFixed(2)}; ${steps.postgres_round_trips_per_step.toFixed(2)} PostgreSQL round trips per step (${steps.postgres_round_trips_per_run} per run); load ${loadavg()[0].toFixed(1)}`,
  );
  const f = steps.postgres_floor;
  console.log(
    `at the same durability: SQLite file with synchronous=FULL ${steps.store_ms_per_step.sqlite_full.toFixed(2)} ms per step — PostgreSQL / SQLite(FULL) ×${steps.postgres_over_sqlite_full.toFixed(2)}`,
  );
  console.log(
    `PostgreSQL's floor here: ${steps.postgres_wal_flushes_per_step.toFixed(2)} WAL flushes per step × ${f.commit_ms.toFixed(3)} ms (a one-row commit) + the other round trips × ${f.round_trip_ms.toFixed(3)} ms (SELECT 1) = ${f.ms_per_step.toFixed(2)} ms per step (${(f.ms_per_step / steps.store_ms_per_step.sqlite).toFixed(1)}× SQLite file)`,
  );
  if (!process.argv.includes('--no-write')) {
    writeFileSync(
      join(ROOT, 'bench', 'results', 'scale.json'),
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          cpus: cpus().length,
          load_average: loadavg().map((x) => Number(x.toFixed(2))),
          postgres: { server, ...settings },
          delay_ms: DELAY,
          throughput: rows.map((r) => ({ ...r, over_one_worker: r.runs_per_s / base })),
          step_overhead: steps,
        },
        null,
        2,
      )}\n`,
    );
  }
} finally {
  // A throwaway cluster goes with this process; a given one keeps only what it had.
  if (given) await dropSchemas().catch(() => {});
  rmSync(home, { recursive: true, force: true });
}
process.exit(0);
