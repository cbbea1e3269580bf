/**
 * bench/loop: the core's own time per step — everything except the model and the tools — with a
 * zero-latency scripted model, at 20 and at 2,000 pool tools, against pi-agent-core's `Agent`
 * running the same conversation on pi-ai's faux provider in the same process.
 *
 *   node --import tsx bench/loop.ts [--runs 200] [--warmup 40] [--steps 10] [--tools 20,2000] [--only keel|pi]
 *     [--stores none,sqlite-memory,sqlite-file] [--no-write] [--baseline DIR]
 *
 * Per-step time of one run = (run wall time − time inside the model's stream − time inside tool
 * execute) / model calls. Each run is one fresh run from the user's message to the final answer:
 * steps−1 replies that each call one read tool (a different tool, different arguments), then a text
 * answer. Median and p95 are over runs. Writes bench/results/loop.json.
 *
 * --baseline DIR: another checkout of Keel (e.g. `git worktree add /tmp/keel-before REV`, with its
 * node_modules) runs the same conversation with its own engine and store in this process, its runs
 * interleaved with this checkout's, and the table adds `keel-baseline` rows and the ratio of this
 * checkout to the baseline for each case (< 1: this checkout spends less per step).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EngineDeps } from '../src/loop/engine.js';
import { systemPrompt } from '../src/prompt/prompt.js';
import { SqliteStore } from '../src/store/sqlite.js';
import { conversation } from './support/conversation.js';
import { benchRegistry, ReplayModel, runKeelOnce } from './support/keel-side.js';
import {
  checkPiRun,
  meteredStreamFn,
  type PiCase,
  piTools,
  recordedStreamFn,
  registerZeroLatencyFaux,
  runPiOnce,
  scriptFaux,
} from './support/pi-side.js';
import { Meter, now, summarize } from './support/timing.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}
const RUNS = Number(arg('runs', '200'));
const WARMUP = Number(arg('warmup', '40'));
const STEPS = Number(arg('steps', '10'));
const TOOL_COUNTS = arg('tools', '20,2000').split(',').map(Number);
const ONLY = arg('only', '');
const STORES = arg('stores', 'none,sqlite-memory,sqlite-file').split(',');
const WRITE = !process.argv.includes('--no-write');
const BASELINE = arg('baseline', '');
/** Runs per impl before rotating to the next: keeps GC attribution local while spreading drift. */
const BLOCK = 25;

type Impl = 'keel' | 'keel-baseline' | 'pi-agent-core';
type StoreKind = 'none' | 'sqlite-memory' | 'sqlite-file';
/**
 * replay: Keel's zero-latency ModelClient. faux: pi-ai's faux provider, drained inside the model timer.
 * faux-recorded: the faux provider's events recorded once and replayed (pi-agent-core's best case).
 */
type ModelKind = 'replay' | 'faux' | 'faux-recorded';

interface Contender {
  impl: Impl;
  store: StoreKind;
  model: ModelKind;
  /** Prepares the next run (outside the timed region). */
  before?: () => void;
  run: () => Promise<void>;
  after?: () => void;
  close?: () => Promise<void>;
  samples: number[];
  walls: number[];
}

interface CaseRow {
  tools: number;
  impl: Impl;
  store: StoreKind;
  model: ModelKind;
  median_us_per_step: number;
  p95_us_per_step: number;
  min_us_per_step: number;
  /** Wall time per step including the (zero-latency) model and tools, for context. */
  median_wall_us_per_step: number;
  runs: number;
}

const model = new Meter();
const tools = new Meter();

async function timedRun(c: Contender): Promise<{ core: number; wall: number }> {
  c.before?.();
  model.reset();
  tools.reset();
  const t0 = now();
  await c.run();
  const wall = now() - t0;
  const core = wall - model.ms - tools.ms;
  c.after?.();
  return { core: (core / STEPS) * 1000, wall: (wall / STEPS) * 1000 };
}

/** What one Keel checkout lends the bench: its registry, replay model, store and one-run driver. */
interface KeelSide {
  benchRegistry: typeof benchRegistry;
  ReplayModel: typeof ReplayModel;
  runKeelOnce: typeof runKeelOnce;
  SqliteStore: typeof SqliteStore;
}

/** The baseline checkout's own bench support and store, loaded from its tree (its own src/). */
async function baselineSide(): Promise<KeelSide> {
  const { pathToFileURL } = await import('node:url');
  const from = (p: string) => import(pathToFileURL(join(BASELINE, p)).href);
  const side = await from('bench/support/keel-side.ts');
  const store = await from('src/store/sqlite.ts');
  return {
    benchRegistry: side.benchRegistry,
    ReplayModel: side.ReplayModel,
    runKeelOnce: side.runKeelOnce,
    SqliteStore: store.SqliteStore,
  };
}

function keelContenders(impl: Impl, side: KeelSide, toolCount: number, dir: string): Contender[] {
  const replies = conversation(toolCount, STEPS);
  const registry = side.benchRegistry(toolCount, tools);
  const replay = new side.ReplayModel(replies, model);
  const stores: [StoreKind, () => SqliteStore | null][] = [
    ['none', () => null],
    ['sqlite-memory', () => new side.SqliteStore(':memory:')],
    ['sqlite-file', () => new side.SqliteStore(join(dir, `${impl}-${toolCount}.db`))],
  ];
  return stores
    .filter(([k]) => STORES.includes(k))
    .map(([kind, make]) => {
      const store = make();
      const deps: EngineDeps = { registry, model: replay, store };
      return {
        impl,
        store: kind,
        model: 'replay' as const,
        run: () => side.runKeelOnce(deps, STEPS),
        close: async () => store?.close(),
        samples: [],
        walls: [],
      };
    });
}

async function contenders(toolCount: number, dir: string): Promise<Contender[]> {
  const replies = conversation(toolCount, STEPS);
  const out: Contender[] = [];
  if (ONLY !== 'pi') {
    out.push(...keelContenders('keel', { benchRegistry, ReplayModel, runKeelOnce, SqliteStore }, toolCount, dir));
    if (BASELINE) out.push(...keelContenders('keel-baseline', await baselineSide(), toolCount, dir));
  }
  if (ONLY !== 'keel') {
    const faux = registerZeroLatencyFaux();
    const pi: PiCase = {
      faux,
      tools: piTools(toolCount, tools),
      replies,
      streamFn: meteredStreamFn(model),
      system: systemPrompt({ mode: 'agent', menu: [], unavailable: [] }),
    };
    let agent: Awaited<ReturnType<typeof runPiOnce>> | undefined;
    out.push({
      impl: 'pi-agent-core',
      store: 'none',
      model: 'faux',
      before: () => scriptFaux(pi),
      run: async () => {
        agent = await runPiOnce(pi);
      },
      after: () => checkPiRun(agent!, STEPS),
      samples: [],
      walls: [],
    });
    const recorded = await recordedStreamFn(pi, model);
    const piRecorded: PiCase = { ...pi, streamFn: recorded.streamFn };
    out.push({
      impl: 'pi-agent-core',
      store: 'none',
      model: 'faux-recorded',
      before: recorded.reset,
      run: async () => {
        agent = await runPiOnce(piRecorded);
      },
      after: () => checkPiRun(agent!, STEPS),
      close: async () => faux.unregister(),
      samples: [],
      walls: [],
    });
  }
  return out;
}

async function benchCase(toolCount: number, dir: string): Promise<CaseRow[]> {
  const cs = await contenders(toolCount, dir);
  for (const c of cs) for (let i = 0; i < WARMUP; i++) await timedRun(c);
  for (let done = 0; done < RUNS; done += BLOCK) {
    const n = Math.min(BLOCK, RUNS - done);
    for (const c of cs) {
      for (let i = 0; i < n; i++) {
        const { core, wall } = await timedRun(c);
        c.samples.push(core);
        c.walls.push(wall);
      }
    }
  }
  for (const c of cs) await c.close?.();
  return cs.map((c) => {
    const s = summarize(c.samples);
    return {
      tools: toolCount,
      impl: c.impl,
      store: c.store,
      model: c.model,
      median_us_per_step: round(s.median),
      p95_us_per_step: round(s.p95),
      min_us_per_step: round(s.min),
      median_wall_us_per_step: round(summarize(c.walls).median),
      runs: s.n,
    };
  });
}

const round = (x: number) => Math.round(x * 10) / 10;

/** Which core was measured: the commit, and whether src/ had uncommitted changes at the time. */
function gitInfo(cwd?: string): { commit: string; src_dirty: boolean } | undefined {
  try {
    const git = (...a: string[]) => execFileSync('git', a, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return { commit: git('rev-parse', '--short', 'HEAD'), src_dirty: git('status', '--porcelain', '--', 'src').length > 0 };
  } catch {
    return undefined;
  }
}

function table(rows: CaseRow[]): string {
  const head = ['tools', 'impl', 'store', 'model', 'median µs/step', 'p95 µs/step', 'min µs/step', 'wall µs/step'];
  const body = rows.map((r) => [
    String(r.tools),
    r.impl,
    r.store,
    r.model,
    r.median_us_per_step.toFixed(1),
    r.p95_us_per_step.toFixed(1),
    r.min_us_per_step.toFixed(1),
    r.median_wall_us_per_step.toFixed(1),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i < 4 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

const find = (rows: CaseRow[], tools: number, impl: Impl, storeOrModel: StoreKind | ModelKind) =>
  rows.find((r) => r.tools === tools && r.impl === impl && (impl === 'pi-agent-core' ? r.model : r.store) === storeOrModel);

/** This checkout's median / the baseline's, per store (< 1: this checkout spends less time per step). */
function baselineRatios(rows: CaseRow[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows.filter((x) => x.impl === 'keel')) {
    const b = find(rows, r.tools, 'keel-baseline', r.store);
    if (b) out[`keel_${r.store}_vs_baseline_at_${r.tools}`] = Math.round((r.median_us_per_step / b.median_us_per_step) * 100) / 100;
  }
  return out;
}

/** Keel median / pi-agent-core median, per Keel store and pi model variant (< 1: Keel spends less). */
function ratiosOf(rows: CaseRow[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of TOOL_COUNTS) {
    for (const piModel of ['faux', 'faux-recorded'] as const) {
      const pi = find(rows, n, 'pi-agent-core', piModel);
      if (!pi) continue;
      for (const r of rows.filter((x) => x.tools === n && x.impl === 'keel')) {
        out[`keel_${r.store}_vs_pi_${piModel}_at_${n}`] = Math.round((r.median_us_per_step / pi.median_us_per_step) * 100) / 100;
      }
    }
  }
  return out;
}

function verdicts(rows: CaseRow[]): string[] {
  const out: string[] = [];
  for (const n of TOOL_COUNTS) {
    const mem = find(rows, n, 'keel', 'none');
    const file = find(rows, n, 'keel', 'sqlite-file');
    for (const piModel of ['faux', 'faux-recorded'] as const) {
      const pi = find(rows, n, 'pi-agent-core', piModel);
      if (pi && mem) {
        const ok = mem.median_us_per_step <= pi.median_us_per_step;
        out.push(`${n} tools: in-memory (store none) ${ok ? 'MEETS' : 'MISSES'} "no worse than pi-agent-core" (pi on ${piModel})`);
      }
    }
    if (file)
      out.push(`${n} tools: durable (sqlite-file) ${file.median_us_per_step < 1000 ? 'MEETS' : 'MISSES'} "< 1 ms per step (median)"`);
  }
  return out;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-loop-'));
  const started = now();
  const rows: CaseRow[] = [];
  try {
    for (const n of TOOL_COUNTS) rows.push(...(await benchCase(n, dir)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const ratios = ratiosOf(rows);
  const vsBaseline = baselineRatios(rows);
  const load = loadavg()[0];

  console.log(
    `bench/loop: ${RUNS} runs × ${STEPS} steps per case (${WARMUP} warm-up runs), model and tool time subtracted; node ${process.version}; load ${load.toFixed(1)} on ${cpus().length} CPUs\n`,
  );
  console.log(table(rows));
  console.log('\nratios (Keel median / pi-agent-core median; < 1 means Keel spends less time per step):');
  for (const [k, v] of Object.entries(ratios)) console.log(`  ${k.padEnd(48)} ${v.toFixed(2)}`);
  console.log(`
The fair 'in-memory' comparison is Keel with store none: like pi-agent-core's Agent it keeps the
transcript in memory and persists nothing. sqlite-memory runs the whole persistence path (serialise,
hash, insert) on an in-memory database; sqlite-file is the durable store (WAL, synchronous=NORMAL).
pi on faux: pi-ai's faux provider, its per-call work timed as model time and subtracted; pi on
faux-recorded: the same events recorded once and replayed (pi-agent-core's best case, no faux garbage).`);
  if (BASELINE) {
    console.log(`\nthis checkout / the baseline at ${BASELINE} (median per step; < 1: this checkout spends less):`);
    for (const [k, v] of Object.entries(vsBaseline)) console.log(`  ${k.padEnd(48)} ${v.toFixed(2)}`);
  }
  const v = verdicts(rows);
  if (v.length) console.log(`\ntargets:\n${v.map((x) => `  ${x}`).join('\n')}`);
  console.log(`\n(${((now() - started) / 1000).toFixed(1)} s)`);

  if (WRITE) {
    const file = join(dirname(fileURLToPath(import.meta.url)), 'results', 'loop.json');
    const out = {
      date: new Date().toISOString(),
      node: process.version,
      git: gitInfo(),
      cpu: cpus()[0]?.model ?? 'unknown',
      cpus: cpus().length,
      load_average_1m: Math.round(load * 100) / 100,
      method: {
        steps_per_run: STEPS,
        runs: RUNS,
        warmup_runs: WARMUP,
        per_step: '(run wall time − time inside the model stream − time inside tool execute) / model calls; median and p95 over runs',
        conversation: `${STEPS - 1} replies each calling one read tool (different tool, different args), then a text answer`,
        keel: 'streamRun + collect (src/loop/legs.ts), registry = ask_user + N read tools built with makeToolSpec, zero-latency replay ModelClient, default limits and shortlist',
        pi: '@mariozechner/pi-agent-core 0.73.1 Agent.prompt, a fresh Agent per run, same N tools (TypeBox schemas), default parallel tool execution',
        pi_model_faux:
          'pi-ai 0.73.1 registerFauxProvider (no tokensPerSecond: no timers; tokenSize 1e9: one delta per block), its stream drained inside the model timer and replayed to the agent',
        pi_model_faux_recorded: 'the faux events for each reply recorded once before the bench and pushed into a fresh stream per call',
        fair_in_memory: 'keel store none (pi-agent-core persists nothing either)',
      },
      cases: rows,
      ratios,
      ...(BASELINE ? { baseline: { dir: BASELINE, commit: gitInfo(BASELINE)?.commit, ratios: vsBaseline } } : {}),
      targets: v,
    };
    writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`wrote ${file}`);
  }
}

await main();
