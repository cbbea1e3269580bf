/**
 * bench/serve: `keel serve` under concurrent load — runs started and followed through the HTTP API
 * (POST /v1/runs, then the run's Server-Sent Events until `run_finished`), against the same workload
 * driven in-process through the library (no HTTP), measured in the same bench run.
 *
 *   node --import tsx bench/serve.ts [--sizes 100,300,1000] [--quick] [--reps 3] [--delay 50] [--warmup 50]
 *     [--no-preconnect] [--profile] [--no-write] [--max-runs N] [--sides http,library,library-nostore]
 *     [--root DIR] [--out FILE]
 *
 * Workload: every run is 5 model calls on the scripted model (`script:FILE`), each after `--delay` ms
 * (50): 4 replies that call the fixture calendar plugin's read tool `calendar_lookup` with a different
 * day each time (the core stops a run that repeats a call), then a text answer. The ideal run
 * latency is 5 × 50 ms = 250 ms, so C runs at once can at best finish at C / 0.25 s runs/s: the
 * limit. runs/s is reported as a fraction of it (for one burst that is ideal latency / wall time).
 *
 * Per concurrency level C (fresh KEEL_HOME each, KEEL_MAX_CONCURRENT_RUNS=C, KEEL_COUNT_TOKENS=0):
 *
 * - http: `node bin/keel.js serve --port 0 --plugins test/fixtures/plugins/calendar --model script:FILE`
 *   as its own process (dist/, as a user runs it; `npm run build` first); a run is started without a
 *   model of its own, so it runs on the server's, as an app that uses the server's model does (a
 *   request that chooses a script: model has its file checked, realpath and read, on each POST: a
 *   cost of scripted models only, which a provider's prefix does not pay). The client (this process,
 *   node:http with a keep-alive agent and no socket limit) warms the server up with --warmup runs,
 *   opens C keep-alive connections (unless --no-preconnect), then starts C runs at once and follows
 *   each run's SSE stream to `run_finished`. Time to first event = POST sent → first SSE event
 *   received; time to finish = POST sent → `run_finished` received.
 * - library: the same C runs as C concurrent `keel.run()` promises in a fresh plain-node process
 *   importing dist/ (`new Keel({ home, env })`), with the same warm-up. Time to first event = call →
 *   first onEvent; time to finish = call → resolved.
 * - library-nostore: the same, with `new Keel({ home, env, store: null })`: the engine alone. CPU per
 *   run splits into engine (library-nostore), store (library − library-nostore) and HTTP/SSE
 *   (http − library).
 *
 * Each side does --reps bursts per level (its samples pooled for the percentiles, wall time and
 * runs/s the median burst). CPU time of the server process (/proc/PID/stat), of the library process
 * and of the client is measured over each burst: CPU ms per run, and 1000 / that = the runs/s one
 * busy core allows. Peak RSS: the server's VmHWM and the library process's maxRSS, with their
 * resident size after warm-up (idle) for the growth. Every run is checked: status done, 5 model
 * calls, 4 tool results without error; a sample is also read back with GET /v1/runs/:id.
 *
 * --max-runs N: the server runs at most N legs at once (KEEL_MAX_CONCURRENT_RUNS=N, e.g. its default
 * 16) and queues the rest, so its limit is N / 250 ms: how close a loaded server stays to what its
 * configured concurrency allows. Writes bench/results/serve-maxN.json.
 *
 * --root DIR: the Keel checkout whose dist/ serves and runs (default this one; the workload, the
 * client and the fixture plugin stay this checkout's), so two builds are measured by one bench —
 * bench/serve-ab.ts alternates this checkout and a baseline that way. --out FILE: where the JSON goes.
 *
 * Writes bench/results/serve.json. No wall-clock assertion: figures, ratios and an honest verdict.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { now, percentile } from './support/timing.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The checkout under test (--root): its bin/ and dist/ serve and run; the rest is this one's. */
const KEEL_ROOT = resolve(arg('root', ROOT));
const KEEL_BIN = join(KEEL_ROOT, 'bin', 'keel.js');
const DIST_MAIN = join(KEEL_ROOT, 'dist', 'src', 'cli', 'main.js');
const PLUGIN = join(ROOT, 'test', 'fixtures', 'plugins', 'calendar');

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}
const QUICK = process.argv.includes('--quick');
const SIZES = arg('sizes', QUICK ? '100,300' : '100,300,1000')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
const REPS = Number(arg('reps', QUICK ? '1' : '3'));
const DELAY_MS = Number(arg('delay', '50'));
const WARMUP = Number(arg('warmup', '50'));
const STEPS = 5;
const TOOL_STEPS = STEPS - 1;
const IDEAL_MS = STEPS * DELAY_MS;
const PRECONNECT = !process.argv.includes('--no-preconnect');
/** --sides http: only the sides named (to compare two builds of the server with less time per round). */
const SIDES = (['library-nostore', 'library', 'http'] as const).filter((s) =>
  arg('sides', 'library-nostore,library,http').split(',').includes(s),
);
const PROFILE = process.argv.includes('--profile');
const WRITE = !process.argv.includes('--no-write');
/** The issue's target: at least 90% of the limit at 300 concurrent runs. */
const TARGET = { size: 300, fraction: 0.9 };
/**
 * --max-runs N: the server runs at most N legs at once (KEEL_MAX_CONCURRENT_RUNS; the rest queue),
 * and its limit is N / ideal run latency. Default: N = C, the stress case where every run is live.
 */
const MAX_RUNS = process.argv.includes('--max-runs') ? Number(arg('max-runs', '16')) : undefined;
/** How many legs the server runs at once at concurrency c. */
const slotsAt = (c: number) => Math.min(c, MAX_RUNS ?? c);
/** How many runs per burst are also read back with GET /v1/runs/:id. */
const READ_BACK = 10;
const CLK_TCK = 100;

// --- cleanup, whatever happens ------------------------------------------------------------------

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();

function cleanupSync(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children.clear();
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  tempDirs.clear();
}
process.on('exit', cleanupSync);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    cleanupSync();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  });
}

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(d);
  return d;
}

/** The environment both sides run with: no inherited plugin, policy or model settings. */
function benchEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('KEEL_')) delete env[k];
  return { ...env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', ...extra };
}

// --- the workload -------------------------------------------------------------------------------

function writeScript(dir: string): string {
  const days = ['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05'];
  const entries = [
    ...days.slice(0, TOOL_STEPS).map((day, i) => ({
      delay_ms: DELAY_MS,
      tool_calls: [{ id: `c${i + 1}`, name: 'calendar_lookup', args: { day } }],
    })),
    { delay_ms: DELAY_MS, text: 'Nothing is on your calendar from Monday to Thursday.' },
  ];
  const file = join(dir, 'script.yaml');
  writeFileSync(file, stringify(entries));
  return `script:${file}`;
}

const requestText = (tag: string, i: number) => `${tag} ${i}: what is on my calendar on Monday, Tuesday, Wednesday and Thursday?`;

// --- figures ------------------------------------------------------------------------------------

interface Dist {
  p50: number;
  p99: number;
  max: number;
}
function dist(xs: readonly number[]): Dist {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: round(percentile(s, 50)), p99: round(percentile(s, 99)), max: round(s[s.length - 1] ?? Number.NaN) };
}
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** One burst of C runs, as either side measured it. */
interface Burst {
  wall_ms: number;
  ttfe_ms: number[];
  finish_ms: number[];
  /** CPU time of the process doing the work (server, or library process), ms. */
  cpu_ms: number;
  /** Of that, kernel time (system calls: sockets, the SQLite file), ms. */
  cpu_sys_ms: number;
  /** CPU time of the HTTP client (this process), ms; http only. */
  client_cpu_ms?: number;
  /** Highest resident size seen while the burst ran (sampled every 20 ms), MB; http only. */
  rss_sampled_mb?: number;
  ok: number;
  errors: string[];
}

interface Row {
  side: 'http' | 'library' | 'library-nostore';
  concurrency: number;
  runs: number;
  reps: number;
  ok: number;
  errors: number;
  error_samples: string[];
  wall_ms: number;
  walls_ms: number[];
  runs_per_s: number;
  limit_runs_per_s: number;
  fraction_of_limit: number;
  ttfe_ms: Dist;
  finish_ms: Dist;
  cpu_ms_per_run: number;
  /** CPU cores the working process kept busy during the burst (CPU time / wall time). */
  cpu_cores_busy: number;
  /** The share of that CPU time spent in the kernel. */
  cpu_sys_share: number;
  /** The runs/s one fully busy core allows at this CPU cost per run. */
  cpu_bound_runs_per_s: number;
  client_cpu_ms_per_run?: number;
  client_cpu_cores_busy?: number;
  rss_idle_mb: number;
  rss_peak_mb: number;
}

function rowOf(side: Row['side'], c: number, bursts: Burst[], rssIdle: number, rssPeak: number, slots = c): Row {
  const walls = bursts.map((b) => b.wall_ms);
  const wall = median(walls);
  const limit = slots / (IDEAL_MS / 1000);
  const rps = c / (wall / 1000);
  const cpu = bursts.reduce((a, b) => a + b.cpu_ms, 0);
  const wallSum = walls.reduce((a, b) => a + b, 0);
  const runs = c * bursts.length;
  const clientCpu = bursts.every((b) => b.client_cpu_ms !== undefined) ? bursts.reduce((a, b) => a + (b.client_cpu_ms ?? 0), 0) : undefined;
  const errors = bursts.flatMap((b) => b.errors);
  return {
    side,
    concurrency: c,
    runs,
    reps: bursts.length,
    ok: bursts.reduce((a, b) => a + b.ok, 0),
    errors: errors.length,
    error_samples: [...new Set(errors)].slice(0, 5),
    wall_ms: round(wall),
    walls_ms: walls.map((w) => round(w)),
    runs_per_s: round(rps),
    limit_runs_per_s: round(limit),
    fraction_of_limit: round(rps / limit, 3),
    ttfe_ms: dist(bursts.flatMap((b) => b.ttfe_ms)),
    finish_ms: dist(bursts.flatMap((b) => b.finish_ms)),
    cpu_ms_per_run: round(cpu / runs, 3),
    cpu_cores_busy: round(cpu / wallSum, 2),
    cpu_sys_share: round(bursts.reduce((a, b) => a + b.cpu_sys_ms, 0) / cpu, 2),
    cpu_bound_runs_per_s: round(1000 / (cpu / runs)),
    ...(clientCpu !== undefined
      ? { client_cpu_ms_per_run: round(clientCpu / runs, 3), client_cpu_cores_busy: round(clientCpu / wallSum, 2) }
      : {}),
    rss_idle_mb: round(rssIdle),
    rss_peak_mb: round(rssPeak),
  };
}

// --- /proc ----------------------------------------------------------------------------------------

/** utime + stime of a process, and stime alone, ms. */
function procCpuMs(pid: number): { total: number; sys: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [user, sys] = [Number(fields[11]), Number(fields[12])].map((t) => (t * 1000) / CLK_TCK);
  return { total: user + sys, sys };
}

/** A field of /proc/PID/status (VmRSS, VmHWM), MB. */
function procMemMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

// --- the HTTP client ------------------------------------------------------------------------------

const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY, maxFreeSockets: 100_000 });

function call(base: string, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: string }> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string | number> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (data !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = Buffer.byteLength(data);
  }
  return new Promise((res, rej) => {
    const req = httpRequest(`${base}${path}`, { method, headers, agent }, (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (d: string) => (text += d));
      r.on('end', () => res({ status: r.statusCode ?? 0, body: text }));
      r.on('error', rej);
    });
    req.on('error', rej);
    req.end(data);
  });
}

interface HttpRun {
  run_id?: string;
  ttfe?: number;
  finish?: number;
  error?: string;
}

/**
 * One run through the API: POST /v1/runs, then its SSE stream until `run_finished`. Checks it
 * finished done with STEPS model calls and TOOL_STEPS tool results that were not errors.
 */
async function httpRun(base: string, token: string, text: string): Promise<HttpRun> {
  const t0 = now();
  let started: { status: number; body: string };
  try {
    started = await call(base, 'POST', '/v1/runs', token, { request: text });
  } catch (err) {
    return { error: `POST /v1/runs: ${(err as Error).message}` };
  }
  if (started.status !== 202) return { error: `POST /v1/runs: ${started.status} ${started.body.slice(0, 200)}` };
  const { run_id, events } = JSON.parse(started.body) as { run_id: string; events: string };
  return new Promise<HttpRun>((res) => {
    const out: HttpRun = { run_id };
    let settled = false;
    const settle = (error?: string) => {
      if (settled) return;
      settled = true;
      if (error) out.error = `${run_id}: ${error}`;
      res(out);
    };
    const req = httpRequest(
      `${base}${events}`,
      { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, agent },
      (r: IncomingMessage) => {
        if (r.statusCode !== 200) {
          r.resume();
          return settle(`GET events: ${r.statusCode}`);
        }
        r.setEncoding('utf8');
        let buf = '';
        const counts = { model_request: 0, tool_result: 0, tool_errors: 0 };
        r.on('data', (chunk: string) => {
          out.ttfe ??= now() - t0;
          buf += chunk;
          let end = buf.indexOf('\n\n');
          while (end >= 0) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            end = buf.indexOf('\n\n');
            let type = 'message';
            let data = '';
            for (const line of block.split('\n')) {
              if (line.startsWith('event:')) type = line.slice(6).trim();
              else if (line.startsWith('data:')) data += line.slice(5).trimStart();
            }
            if (type === 'model_request') counts.model_request++;
            else if (type === 'tool_result') {
              counts.tool_result++;
              if ((JSON.parse(data) as { record: { is_error: boolean } }).record.is_error) counts.tool_errors++;
            } else if (type === 'run_finished') {
              out.finish = now() - t0;
              const result = (JSON.parse(data) as { result: { status: string; reason: string | null; model_calls: number } }).result;
              const bad =
                result.status !== 'done'
                  ? `finished ${result.status} (${result.reason})`
                  : result.model_calls !== STEPS || counts.model_request !== STEPS
                    ? `${result.model_calls} model calls (${counts.model_request} model_request events), expected ${STEPS}`
                    : counts.tool_result !== TOOL_STEPS || counts.tool_errors
                      ? `${counts.tool_result} tool results (${counts.tool_errors} errors), expected ${TOOL_STEPS} without error`
                      : undefined;
              // The server ends the stream after run_finished: let it, so the socket goes back to the pool.
              r.resume();
              return settle(bad);
            }
          }
        });
        r.on('end', () => settle('the stream ended before run_finished'));
        r.on('error', (err) => settle(`stream: ${err.message}`));
      },
    );
    req.on('error', (err) => settle(`GET events: ${err.message}`));
    req.end();
  });
}

interface Server {
  url: string;
  token: string;
  pid: number;
  stop(): Promise<void>;
}

/** `keel serve` as a user starts it, on a free port; its admin token and URL read from its stdout. */
async function startServerProcess(home: string, model: string, limit: number, profileDir?: string): Promise<Server> {
  const args = [
    ...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []),
    KEEL_BIN,
    'serve',
    '--port',
    '0',
    '--plugins',
    PLUGIN,
    '--model',
    model,
  ];
  const child = spawn(process.execPath, args, {
    cwd: KEEL_ROOT,
    env: benchEnv(home, { KEEL_MAX_CONCURRENT_RUNS: String(limit) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let out = '';
  let err = '';
  child.stderr?.on('data', (d) => {
    err += d;
    if (err.length > 100_000) err = err.slice(-50_000);
  });
  const { url, admin } = await new Promise<{ url: string; admin: string }>((res, rej) => {
    const t = setTimeout(() => rej(new Error(`keel serve did not start within 30 s:\n${out}\n${err}`)), 30_000);
    child.stdout?.on('data', (d) => {
      out += d;
      const u = /listening on (http:\/\/\S+)/.exec(out);
      const a = /admin token: (\S+)/.exec(out);
      if (u && a) {
        clearTimeout(t);
        res({ url: u[1], admin: a[1] });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(t);
      rej(new Error(`keel serve exited (${code}) before it listened:\n${out}\n${err}`));
    });
  });
  // Runs are started with an approver token, as an app would (the admin token only makes it).
  const made = await call(url, 'POST', '/v1/tokens', admin, { name: 'bench', role: 'approver' });
  if (made.status !== 201) throw new Error(`POST /v1/tokens: ${made.status} ${made.body}`);
  const token = (JSON.parse(made.body) as { token: string }).token;
  const pid = child.pid as number;
  return {
    url,
    token,
    pid,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      children.delete(child);
      if (/error|stopped on/i.test(err)) {
        const lines = err.split('\n').filter((l) => /error|stopped on/i.test(l));
        console.log(`  server stderr: ${lines.length} line(s) mention an error, e.g. ${lines[0]?.slice(0, 200)}`);
      }
    },
  };
}

/** C runs at once through the API; the server's CPU and RSS measured over the burst. */
async function httpBurst(srv: Server, c: number, tag: string): Promise<Burst> {
  if (PRECONNECT) {
    // Opens C keep-alive connections first, so the burst measures the server, not C TCP handshakes
    // racing for the listen backlog (511).
    await Promise.all(Array.from({ length: c }, () => call(srv.url, 'GET', '/v1/health')));
  }
  let rssMax = procMemMb(srv.pid, 'VmRSS');
  const poll = setInterval(() => {
    rssMax = Math.max(rssMax, procMemMb(srv.pid, 'VmRSS'));
  }, 20);
  const cpu0 = procCpuMs(srv.pid);
  const client0 = selfCpuMs();
  const t0 = now();
  const runs = await Promise.all(Array.from({ length: c }, (_, i) => httpRun(srv.url, srv.token, requestText(tag, i))));
  const wall = now() - t0;
  const client = selfCpuMs() - client0;
  const cpu1 = procCpuMs(srv.pid);
  clearInterval(poll);
  rssMax = Math.max(rssMax, procMemMb(srv.pid, 'VmRSS'));
  const errors = runs.flatMap((r) => (r.error ? [r.error] : []));
  // A sample read back as a client would: GET /v1/runs/:id says done, with 5 model calls.
  for (const r of runs.filter((x) => x.run_id && !x.error).slice(0, READ_BACK)) {
    const got = await call(srv.url, 'GET', `/v1/runs/${r.run_id}`, srv.token);
    const body = got.status === 200 ? (JSON.parse(got.body) as { status: string; model_calls: number }) : undefined;
    if (body?.status !== 'done' || body.model_calls !== STEPS) {
      errors.push(`${r.run_id}: GET /v1/runs/:id says ${got.status} ${got.body.slice(0, 200)}`);
    }
  }
  const ok = runs.filter((r) => !r.error && r.ttfe !== undefined && r.finish !== undefined);
  return {
    wall_ms: wall,
    ttfe_ms: ok.map((r) => r.ttfe as number),
    finish_ms: ok.map((r) => r.finish as number),
    cpu_ms: cpu1.total - cpu0.total,
    cpu_sys_ms: cpu1.sys - cpu0.sys,
    client_cpu_ms: client,
    rss_sampled_mb: rssMax,
    ok: ok.length,
    errors,
  };
}

async function httpLevel(c: number, profileDir?: string): Promise<Row> {
  const home = tempDir(`keel-bench-serve-${c}-`);
  const model = writeScript(home);
  const srv = await startServerProcess(home, model, slotsAt(c), profileDir);
  try {
    // Warm-up: the JIT, the registry, the store's statements; not measured.
    const warm = await Promise.all(Array.from({ length: WARMUP }, (_, i) => httpRun(srv.url, srv.token, requestText('warm-up', i))));
    const warmErrors = warm.filter((r) => r.error);
    if (warmErrors.length) throw new Error(`warm-up runs failed: ${warmErrors[0].error}`);
    const idle = procMemMb(srv.pid, 'VmRSS');
    const bursts: Burst[] = [];
    for (let rep = 0; rep < REPS; rep++) bursts.push(await httpBurst(srv, c, `burst ${rep}`));
    const hwm = procMemMb(srv.pid, 'VmHWM');
    return rowOf('http', c, bursts, idle, Math.max(hwm, ...bursts.map((b) => b.rss_sampled_mb ?? 0)), slotsAt(c));
  } finally {
    await srv.stop();
    rmSync(home, { recursive: true, force: true });
    tempDirs.delete(home);
  }
}

// --- the library baseline, in its own plain-node process -------------------------------------------

/** The in-process side: dist/'s Keel, C concurrent keel.run() promises per burst; prints JSON. */
const DRIVER = `
import { pathToFileURL } from 'node:url';
const [root, home, plugin, model, store, cS, warmS, repsS, stepsS, toolStepsS] = process.argv.slice(2);
const [c, warm, reps, steps, toolSteps] = [cS, warmS, repsS, stepsS, toolStepsS].map(Number);
const { Keel } = await import(pathToFileURL(root + '/dist/src/keel/keel.js').href);
const keel = new Keel({ home, env: process.env, ...(store === 'none' ? { store: null } : {}) });
await keel.registry([plugin]);
const now = () => performance.now();
const cpu = () => { const u = process.cpuUsage(); return { total: (u.user + u.system) / 1000, sys: u.system / 1000 }; };
const text = (tag, i) => tag + ' ' + i + ': what is on my calendar on Monday, Tuesday, Wednesday and Thursday?';
async function one(tag, i) {
  const t0 = now();
  let first;
  try {
    const r = await keel.run(text(tag, i), { model, pluginDirs: [plugin] }, () => { first ??= now() - t0; });
    const finish = now() - t0;
    const toolErrors = r.steps.filter((s) => s.is_error).length;
    const bad = r.status !== 'done' ? 'finished ' + r.status + ' (' + r.reason + ')'
      : r.model_calls !== steps ? r.model_calls + ' model calls, expected ' + steps
      : r.steps.length !== toolSteps || toolErrors ? r.steps.length + ' tool results (' + toolErrors + ' errors), expected ' + toolSteps
      : undefined;
    return bad ? { error: r.run_id + ': ' + bad } : { ttfe: first, finish };
  } catch (err) {
    return { error: String(err && err.message || err) };
  }
}
const batch = (n, tag) => Promise.all(Array.from({ length: n }, (_, i) => one(tag, i)));
const warmed = await batch(warm, 'warm-up');
const warmErr = warmed.find((r) => r.error);
if (warmErr) throw new Error('warm-up runs failed: ' + warmErr.error);
const rssIdle = process.memoryUsage().rss / 1048576;
const bursts = [];
for (let rep = 0; rep < reps; rep++) {
  const c0 = cpu();
  const t0 = now();
  const runs = await batch(c, 'burst ' + rep);
  const wall = now() - t0;
  const ok = runs.filter((r) => !r.error);
  bursts.push({ wall_ms: wall, ttfe_ms: ok.map((r) => r.ttfe), finish_ms: ok.map((r) => r.finish), cpu_ms: cpu().total - c0.total, cpu_sys_ms: cpu().sys - c0.sys,
    ok: ok.length, errors: runs.filter((r) => r.error).map((r) => r.error) });
}
const rssPeak = process.resourceUsage().maxRSS / 1024;
await keel.close();
process.stdout.write(JSON.stringify({ bursts, rssIdle, rssPeak }));
`;

function runDriver(driver: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [driver, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.once('error', rej);
    child.once('exit', (code) => {
      children.delete(child);
      if (code === 0) res(out);
      else rej(new Error(`the library baseline exited ${code}:\n${err.slice(-4000)}`));
    });
  });
}

async function libraryLevel(driver: string, c: number, store: 'sqlite' | 'none'): Promise<Row> {
  const home = tempDir(`keel-bench-lib-${c}-`);
  try {
    const model = writeScript(home);
    const out = await runDriver(
      driver,
      [KEEL_ROOT, home, PLUGIN, model, store, String(c), String(WARMUP), String(REPS), String(STEPS), String(TOOL_STEPS)],
      benchEnv(home),
    );
    const r = JSON.parse(out) as { bursts: Burst[]; rssIdle: number; rssPeak: number };
    return rowOf(store === 'none' ? 'library-nostore' : 'library', c, r.bursts, r.rssIdle, r.rssPeak);
  } finally {
    rmSync(home, { recursive: true, force: true });
    tempDirs.delete(home);
  }
}

// --- report ---------------------------------------------------------------------------------------

function table(rows: Row[]): string {
  const head = [
    'C',
    'side',
    'ok',
    'wall ms',
    'runs/s',
    'limit',
    '% limit',
    'TTFE p50',
    'TTFE p99',
    'finish p50',
    'finish p99',
    'CPU ms/run',
    'cores',
    'sys',
    'client ms/run',
    'RSS idle→peak MB',
  ];
  const body = rows.map((r) => [
    String(r.concurrency),
    r.side,
    `${r.ok}/${r.runs}`,
    r.wall_ms.toFixed(0),
    r.runs_per_s.toFixed(0),
    r.limit_runs_per_s.toFixed(0),
    `${(r.fraction_of_limit * 100).toFixed(1)}%`,
    r.ttfe_ms.p50.toFixed(1),
    r.ttfe_ms.p99.toFixed(1),
    r.finish_ms.p50.toFixed(0),
    r.finish_ms.p99.toFixed(0),
    r.cpu_ms_per_run.toFixed(2),
    r.cpu_cores_busy.toFixed(2),
    `${(r.cpu_sys_share * 100).toFixed(0)}%`,
    r.client_cpu_ms_per_run === undefined ? '-' : r.client_cpu_ms_per_run.toFixed(2),
    `${r.rss_idle_mb.toFixed(0)}→${r.rss_peak_mb.toFixed(0)}`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 1 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

interface Comparison {
  concurrency: number;
  /** http wall / library wall for the same burst (1: the API adds nothing). */
  wall_ratio: number;
  /** Of the http side's time over the ideal latency, the share the library side does not have: the HTTP/SSE layer's. */
  http_share_of_gap: number;
  /** Server CPU per run / library CPU per run. */
  cpu_ratio: number;
  /** CPU ms per run, split: the engine alone (library-nostore), the store's writes (library − that), HTTP/SSE (server − library). */
  cpu_ms_per_run: { engine: number; store: number; http_sse: number; server_total: number };
}

function compare(rows: Row[]): Comparison[] {
  return SIZES.flatMap((c) => {
    const h = rows.find((r) => r.side === 'http' && r.concurrency === c);
    const l = rows.find((r) => r.side === 'library' && r.concurrency === c);
    const n = rows.find((r) => r.side === 'library-nostore' && r.concurrency === c);
    if (!h || !l || !n) return [];
    const gapH = h.wall_ms - IDEAL_MS;
    const gapL = l.wall_ms - IDEAL_MS;
    return [
      {
        concurrency: c,
        wall_ratio: round(h.wall_ms / l.wall_ms, 2),
        http_share_of_gap: round(gapH > 0 ? Math.min(1, Math.max(0, (gapH - gapL) / gapH)) : 0, 2),
        cpu_ratio: round(h.cpu_ms_per_run / l.cpu_ms_per_run, 2),
        cpu_ms_per_run: {
          engine: round(n.cpu_ms_per_run, 2),
          store: round(l.cpu_ms_per_run - n.cpu_ms_per_run, 2),
          http_sse: round(h.cpu_ms_per_run - l.cpu_ms_per_run, 2),
          server_total: round(h.cpu_ms_per_run, 2),
        },
      },
    ];
  });
}

/** Where it bends, from the figures: which resource runs out first, and what each layer costs. */
function notesOf(rows: Row[], cmp: Comparison[]): string {
  const parts: string[] = [];
  const cores = cpus().length;
  const http = rows.filter((r) => r.side === 'http');
  const bound = http.filter((h) => h.cpu_cores_busy >= 0.85);
  if (bound.length) {
    const first = bound[0];
    const cap = median(bound.map((h) => h.runs_per_s));
    parts.push(
      `The server is CPU-bound from C=${first.concurrency} on (${bound.map((h) => `${h.cpu_cores_busy.toFixed(2)}`).join('/')} cores busy: its one event loop is saturated), ` +
        `so throughput flattens at ~${cap.toFixed(0)} runs/s (≈ 1000 / ${median(bound.map((h) => h.cpu_ms_per_run)).toFixed(1)} ms CPU per run, ${(median(bound.map((h) => h.cpu_sys_share)) * 100).toFixed(0)}% of it in the kernel) while the limit grows with C, ` +
        'and time to first event grows with C because the POSTs queue behind the running runs on the same loop.',
    );
  } else {
    parts.push('The server never saturated a core: the gap is latency per step, not throughput.');
  }
  const k = cmp.find((x) => x.concurrency === TARGET.size) ?? cmp[cmp.length - 1];
  if (k) {
    const s = k.cpu_ms_per_run;
    parts.push(
      `CPU per run at C=${k.concurrency}: engine ${s.engine.toFixed(2)} ms, SQLite writes ${s.store.toFixed(2)} ms, HTTP+SSE ${s.http_sse.toFixed(2)} ms ` +
        `(server ${s.server_total.toFixed(2)} ms, ×${k.cpu_ratio} the library's); the HTTP/SSE layer accounts for ${(k.http_share_of_gap * 100).toFixed(0)}% of the http side's time over the ideal ${IDEAL_MS} ms.`,
    );
    const lib = rows.find((r) => r.side === 'library' && r.concurrency === k.concurrency);
    if (lib) {
      parts.push(
        `Even without HTTP the library process ${lib.cpu_cores_busy >= 0.85 ? 'is CPU-bound too' : 'is not CPU-bound'} at C=${k.concurrency} (${(lib.fraction_of_limit * 100).toFixed(0)}% of the limit, cap ~${lib.cpu_bound_runs_per_s.toFixed(0)} runs/s).`,
      );
    }
  }
  const client = http.map((h) => h.client_cpu_cores_busy ?? 0);
  if (http.length) {
    const worst = Math.max(...http.map((h, i) => h.cpu_cores_busy + client[i]));
    parts.push(
      `The client used ${Math.min(...client).toFixed(2)}–${Math.max(...client).toFixed(2)} cores; with the server that is at most ${worst.toFixed(2)} of ${cores}${worst > cores * 0.9 ? ': they compete for CPU' : ', so the client is not the limit'}.`,
    );
  }
  return parts.join(' ');
}

function verdict(rows: Row[]): string {
  const h = rows.find((r) => r.side === 'http' && r.concurrency === TARGET.size);
  if (!h) return `not measured: --sizes has no ${TARGET.size}`;
  const met = h.fraction_of_limit >= TARGET.fraction && h.errors === 0;
  return `${met ? 'MEETS' : 'MISSES'} "at least ${TARGET.fraction * 100}% of the limit at ${TARGET.size} concurrent runs" (embedded SQLite store): ${(h.fraction_of_limit * 100).toFixed(1)}% (${h.runs_per_s.toFixed(0)} of ${h.limit_runs_per_s.toFixed(0)} runs/s)${h.errors ? `, ${h.errors} run(s) with errors` : ''}`;
}

function gitInfo(): { commit: string; src_dirty: boolean } | undefined {
  try {
    const git = (...a: string[]) =>
      execFileSync('git', a, { cwd: KEEL_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return { commit: git('rev-parse', '--short', 'HEAD'), src_dirty: git('status', '--porcelain', '--', 'src').length > 0 };
  } catch {
    return undefined;
  }
}

/** A warning when src/ has changed since dist/ was built: the server and the library run dist/. */
function staleDist(): string | undefined {
  const built = statSync(DIST_MAIN).mtimeMs;
  try {
    const changed = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: KEEL_ROOT, encoding: 'utf8' })
      .split('\n')
      .map((l) => l.slice(3).trim())
      .filter((f) => f && existsSync(join(KEEL_ROOT, f)) && statSync(join(KEEL_ROOT, f)).mtimeMs > built);
    return changed.length ? `src/ changed after dist/ was built (${changed.slice(0, 3).join(', ')}): run npm run build` : undefined;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  if (!existsSync(DIST_MAIN)) throw new Error('dist/ is missing: run `npm run build` first (keel serve and the library side run dist/)');
  if (!SIZES.length) throw new Error('--sizes: give concurrency levels such as 100,300');
  const stale = staleDist();
  if (stale) console.log(`warning: ${stale}`);
  const started = now();
  const work = tempDir('keel-bench-serve-');
  const driver = join(work, 'library-driver.mjs');
  writeFileSync(driver, DRIVER);
  const profileDir = PROFILE ? mkdtempSync(join(tmpdir(), 'keel-serve-prof-')) : undefined;
  const rows: Row[] = [];
  console.log(
    `bench/serve: ${STEPS} model calls of ${DELAY_MS} ms per run (ideal ${IDEAL_MS} ms), sizes ${SIZES.join(', ')}, ${REPS} burst(s) each after ${WARMUP} warm-up runs; node ${process.version} on ${cpus().length} CPUs`,
  );
  try {
    for (const c of SIZES) {
      for (const side of SIDES) {
        const row =
          side === 'http' ? await httpLevel(c, profileDir) : await libraryLevel(driver, c, side === 'library' ? 'sqlite' : 'none');
        rows.push(row);
        console.log(
          `  C=${c} ${side.padEnd(15)} ${row.wall_ms.toFixed(0)} ms, ${(row.fraction_of_limit * 100).toFixed(1)}% of the limit, ${row.ok}/${row.runs} ok`,
        );
      }
    }
  } finally {
    agent.destroy();
  }
  const cmp = compare(rows);
  const notes = notesOf(rows, cmp);
  const v = verdict(rows);
  const load = loadavg()[0];

  console.log('');
  console.log(table(rows));
  console.log(`
TTFE: POST sent → first SSE event (http), call → first event (library). finish: to run_finished. wall: the
whole burst; runs/s = C / wall; limit = C / ${IDEAL_MS} ms. CPU ms/run: the server's (or the library
process's) CPU time over the burst / C; cores: that CPU time / wall; sys: its kernel share. client: this
process's CPU (http only).`);
  console.log('\nhttp vs library (same C, same machine, same bench run):');
  for (const k of cmp) {
    const s = k.cpu_ms_per_run;
    console.log(
      `  C=${String(k.concurrency).padEnd(5)} wall ×${k.wall_ratio.toFixed(2)}   server CPU/run ×${k.cpu_ratio.toFixed(2)} = engine ${s.engine.toFixed(2)} + store ${s.store.toFixed(2)} + HTTP/SSE ${s.http_sse.toFixed(2)} ms   HTTP/SSE share of the time over ideal ${(k.http_share_of_gap * 100).toFixed(0)}%`,
    );
  }
  const errors = rows.flatMap((r) => r.error_samples.map((e) => `${r.side} C=${r.concurrency}: ${e}`));
  if (errors.length) console.log(`\nerrors:\n${errors.map((e) => `  ${e}`).join('\n')}`);
  console.log(`\nwhere it bends: ${notes}`);
  console.log(`\ntarget: ${v}`);
  if (profileDir) console.log(`\nserver CPU profiles: ${profileDir} (node --import tsx bench/support/cpuprofile-top.ts FILE)`);
  console.log(`\n(${((now() - started) / 1000).toFixed(1)} s; load ${load.toFixed(1)})`);

  if (WRITE) {
    const file = process.argv.includes('--out')
      ? resolve(arg('out', ''))
      : join(ROOT, 'bench', 'results', MAX_RUNS ? `serve-max${MAX_RUNS}.json` : 'serve.json');
    const out = {
      date: new Date().toISOString(),
      node: process.version,
      git: gitInfo(),
      machine: {
        os: `${process.platform} ${process.arch}`,
        cpu: cpus()[0]?.model ?? 'unknown',
        cpus: cpus().length,
        memory_gb: round(totalmem() / 2 ** 30),
      },
      load_average_1m: round(load, 2),
      method: {
        workload: `${STEPS} model calls per run on script:FILE, each after delay_ms ${DELAY_MS}: ${TOOL_STEPS} calls of calendar_lookup (test/fixtures/plugins/calendar, effect read) with a different day each, then a text answer`,
        ideal_run_ms: IDEAL_MS,
        limit: 'C / ideal run latency (runs/s); fraction_of_limit = runs/s / limit = ideal / wall for one burst',
        burst: `C runs started at once; ${REPS} burst(s) per level after ${WARMUP} warm-up runs; percentiles over every run of every burst, wall and runs/s the median burst`,
        http: `node bin/keel.js serve --port 0 --plugins test/fixtures/plugins/calendar --model script:FILE (dist/; runs started without a model of their own), fresh KEEL_HOME per level, KEEL_MAX_CONCURRENT_RUNS=C, KEEL_COUNT_TOKENS=0; client node:http keep-alive agent, no socket limit${PRECONNECT ? ', C connections opened before each burst' : ''}; approver token; TTFE = POST sent → first SSE event; finish = POST sent → run_finished`,
        library:
          'new Keel({ home, env }) from dist/ in a fresh plain-node process, C concurrent keel.run(request, { model, pluginDirs }) promises; TTFE = call → first onEvent',
        library_nostore: 'the same with store: null (the engine alone, nothing persisted)',
        checks: `every run: run_finished done, ${STEPS} model calls, ${TOOL_STEPS} tool results without error; ${READ_BACK} per burst read back with GET /v1/runs/:id`,
        cpu: 'utime+stime of the server process (/proc/PID/stat) or the library process (process.cpuUsage) over the burst; client = this process',
        rss: 'http: VmRSS after warm-up (idle) and max(VmHWM, VmRSS sampled every 20 ms); library: rss after warm-up and maxRSS',
      },
      rows,
      http_vs_library: cmp,
      target: v,
      notes,
    };
    writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`wrote ${file}`);
  }
}

try {
  await main();
} finally {
  cleanupSync();
}
