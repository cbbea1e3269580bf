/**
 * bench/loop: the core's own time per step — everything except the model and the tools — at 20 and
 * at 2,000 pool tools, against pi-agent-core's `Agent` running the same conversation in the same
 * process.
 *
 *   node --import tsx bench/loop.ts [--runs 2000] [--warmup 400] [--steps 10] [--tools 20,2000] [--only keel|pi]
 *     [--stores none,sqlite-memory,sqlite-file] [--mem-runs 40] [--block 1] [--groups 10] [--keel dist|src]
 *     [--no-write] [--out NAME.json] [--baseline DIR]
 *
 * Keel runs as compiled JavaScript (--keel dist, the default: src/ compiled by tsc as `npm run build`
 * does, into node_modules/.cache), as a user of the package runs it and as pi-agent-core runs from its
 * own dist/; --keel src runs the TypeScript through tsx, whose transform adds a `__name` call to
 * every named closure (a few µs per step that no user pays).
 *
 * The fair pairing (model faux and faux-recorded): Keel THROUGH its pi-ai adapter
 * (src/models/provider.ts, the path every real provider spec takes) and pi-agent-core's Agent, both
 * calling the same pi-ai faux provider through the same stream function — live (every call goes to
 * the faux provider with the context the agent built, drained and timed as the model's) and
 * pre-recorded (the faux events recorded once, pushed into a fresh stream per call). Both keep the
 * transcript in memory (Keel with store none) and declare every pool tool (no shortlist).
 * The replay rows: Keel with a zero-latency ModelClient of its own (no pi-ai at all), per store.
 *
 * Per-step time of one run = (run wall time − time inside the model's stream − time inside tool
 * execute) / model calls. Each run is one fresh run from the user's message to the final answer:
 * steps−1 replies that each call one read tool (a different tool, different arguments), then a text
 * answer. Median and p95 are over runs. The contenders take turns run by run (in a new, seeded
 * shuffled order each round), each run after a minor GC outside the timed region, so the garbage a run
 * leaves is collected on no one else's time — in two phases: Keel's replay rows (with the baseline's),
 * then the pi-ai pairing, so both checkouts' engines run the same contenders (see benchCase). Spread: the runs are cut into --groups groups in
 * order; each pairing's ratio is computed per group and the lowest and highest are reported.
 * Warm-up: --warmup runs per contender before any is timed. The figures are the engines' steady
 * state: this checkout's engine runs more code per step than wave 1's and takes longer to be fully
 * optimised (~300 runs of 10 steps against ~200); with 60 warm-up runs its first timed runs were
 * still partly interpreted, and the engine-alone ratio at 20 tools read 1.10–1.15 instead of ~1.0.
 * Memory: --mem-runs more runs per contender, interleaved, each under v8's GCProfiler: bytes
 * allocated per step = (heap used after − before + what each GC freed) / model calls (the model
 * stream's own allocations included: for the live faux that is its serialisation of the context).
 * Writes bench/results/loop.json (--out NAME.json: bench/results/NAME.json, e.g. one per baseline).
 *
 * --baseline DIR: another checkout of Keel (e.g. `git worktree add /tmp/keel-before REV`, with its
 * node_modules) runs the same conversation with its own engine and store in this process, its runs
 * interleaved with this checkout's, and the table adds `keel-baseline` rows and the ratio of this
 * checkout to the baseline for each case (< 1: this checkout spends less per step). Both checkouts,
 * their bench support with them, are loaded as --keel says: with dist each checkout's src/ and
 * bench/support/ are compiled by its own tsc (a checkout from before loadKeelCode too), so neither
 * side pays tsx's `__name` calls — nor does the pi-ai pairing, whose two agents run under this
 * checkout's compiled bench support, as pi-agent-core runs from its own dist/.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { GCProfiler, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { EngineDeps } from '../src/loop/engine.js';
import type { ModelClient } from '../src/models/types.js';
import type { Registry } from '../src/plugin-host/host.js';
import { systemPrompt } from '../src/prompt/prompt.js';
import type { SqliteStore } from '../src/store/sqlite.js';
import { conversation } from './support/conversation.js';
import type * as KeelSupport from './support/keel-side.js';
import { compileKeel, type KeelCode } from './support/keel-side.js';
import type * as PiSupport from './support/pi-side.js';
import type { PiCase } from './support/pi-side.js';
import { Meter, now, summarize } from './support/timing.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}
const RUNS = Number(arg('runs', '2000'));
const WARMUP = Number(arg('warmup', '400'));
const STEPS = Number(arg('steps', '10'));
const TOOL_COUNTS = arg('tools', '20,2000').split(',').map(Number);
const ONLY = arg('only', '');
const STORES = arg('stores', 'none,sqlite-memory,sqlite-file').split(',');
const MEM_RUNS = Number(arg('mem-runs', '40'));
/** Runs per contender before the next one takes its turn (1: one run each per round). */
const BLOCK = Math.max(1, Number(arg('block', '1')));
/** How many groups the runs are cut into for the ratios' spread. */
const GROUPS = Math.max(1, Number(arg('groups', '10')));
const WRITE = !process.argv.includes('--no-write');
const BASELINE = arg('baseline', '');
/** Keel's code: compiled JavaScript (dist, the default: what the package runs) or its TypeScript through tsx (src). */
const KEEL = arg('keel', 'dist');
if (KEEL !== 'dist' && KEEL !== 'src') throw new Error(`--keel takes dist or src, not ${KEEL}`);

// A minor GC before every run (outside the timed region): no run pays for the garbage of the one before.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (o?: { type: 'minor' | 'major' }) => void;

type Impl = 'keel' | 'keel-baseline' | 'pi-agent-core';
type StoreKind = 'none' | 'sqlite-memory' | 'sqlite-file';
/**
 * replay: Keel's zero-latency ModelClient (no pi-ai). faux: pi-ai's faux provider, called live and
 * drained inside the model timer (Keel through its pi-ai adapter). faux-recorded: the faux provider's
 * events recorded once and pushed into a fresh stream per call.
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
  /** Bytes allocated per step, one per memory run. */
  allocs: number[];
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
  /** Median bytes allocated per step (KB), over the memory runs. */
  median_alloc_kb_per_step: number;
  mem_runs: number;
}

/** Keel through its pi-ai adapter against pi-agent-core, on the same faux stream (one row of the fair pairing). */
interface PairRow {
  tools: number;
  model: 'faux' | 'faux-recorded';
  keel_median_us_per_step: number;
  pi_median_us_per_step: number;
  /** Keel median / pi-agent-core median (< 1: Keel spends less per step). */
  ratio: number;
  /** The same ratio in each group of runs (in run order): lowest and highest. */
  ratio_min_over_groups: number;
  ratio_max_over_groups: number;
  groups: number;
  keel_alloc_kb_per_step: number;
  pi_alloc_kb_per_step: number;
  alloc_ratio: number;
}

const model = new Meter();
const tools = new Meter();

async function timedRun(c: Contender): Promise<{ core: number; wall: number }> {
  c.before?.();
  model.reset();
  tools.reset();
  gc({ type: 'minor' });
  const t0 = now();
  await c.run();
  const wall = now() - t0;
  const core = wall - model.ms - tools.ms;
  c.after?.();
  return { core: (core / STEPS) * 1000, wall: (wall / STEPS) * 1000 };
}

/** One run under the GC profiler: bytes allocated per step (heap growth plus what the GCs freed). */
async function memoryRun(c: Contender): Promise<number> {
  c.before?.();
  gc({ type: 'minor' });
  const profiler = new GCProfiler();
  profiler.start();
  const used0 = getHeapStatistics().used_heap_size;
  await c.run();
  const used1 = getHeapStatistics().used_heap_size;
  const stats = profiler.stop();
  c.after?.();
  let freed = 0;
  for (const g of stats?.statistics ?? []) freed += g.beforeGC.heapStatistics.usedHeapSize - g.afterGC.heapStatistics.usedHeapSize;
  return (used1 - used0 + freed) / STEPS;
}

/** What one Keel checkout lends the bench: its tools, replay model, store and one-run driver. */
interface KeelSide {
  registry: (count: number) => Registry;
  replay: (replies: ReturnType<typeof conversation>) => ModelClient;
  run: (deps: EngineDeps) => Promise<void>;
  store: (path: string) => SqliteStore;
  /** Its code, when its bench support loads it (the provider path needs it). */
  code?: KeelCode;
}

/**
 * A checkout's bench support (bench/support/), as --keel says: compiled with its src/ (dist) or its
 * TypeScript through tsx (src). Each checkout's Keel runs under its own bench support (the replay
 * model, the run and its checks, the tools), and the pi-ai pairing's two agents under this checkout's,
 * all of it compiled alike: under tsx every named closure the support makes (the replay model's
 * iterator at each model call) pays a `__name` call that a compiled side does not.
 */
async function supportOf(repo: string): Promise<{ dir: string; src: string }> {
  if (KEEL === 'src') return { dir: join(repo, 'bench', 'support'), src: join(repo, 'src') };
  const src = compileKeel(repo);
  return { dir: join(src, '..', 'bench', 'support'), src };
}

const importFrom = (dir: string, file: string) => import(pathToFileURL(join(dir, KEEL === 'src' ? `${file}.ts` : `${file}.js`)).href);

/** This checkout's bench support, loaded by main() as --keel says. */
let K: typeof KeelSupport;
let P: typeof PiSupport;

function sideOf(code: KeelCode): KeelSide {
  return {
    registry: (count) => K.benchRegistry(code, count, tools),
    replay: (replies) => new K.ReplayModel(replies, model),
    run: (deps) => K.runKeelOnce(code, deps, STEPS),
    store: (path) => new code.SqliteStore(path),
    code,
  };
}

/** The baseline checkout's own bench support and store, loaded from its tree. */
async function baselineSide(): Promise<KeelSide> {
  const support = await supportOf(BASELINE);
  const side = await importFrom(support.dir, 'keel-side');
  if (side.loadKeelCode) {
    const code: KeelCode = await side.loadKeelCode(support.src);
    return {
      registry: (count) => side.benchRegistry(code, count, tools),
      replay: (replies) => new side.ReplayModel(replies, model),
      run: (deps) => side.runKeelOnce(code, deps, STEPS),
      store: (path) => new code.SqliteStore(path),
    };
  }
  // A checkout from before the bench loaded Keel's code itself: its bench support imports its src/.
  const store = await import(pathToFileURL(join(support.src, 'store', KEEL === 'src' ? 'sqlite.ts' : 'sqlite.js')).href);
  return {
    registry: (count) => side.benchRegistry(count, tools),
    replay: (replies) => new side.ReplayModel(replies, model),
    run: (deps) => side.runKeelOnce(deps, STEPS),
    store: (path) => new store.SqliteStore(path),
  };
}

const contender = (c: Omit<Contender, 'samples' | 'walls' | 'allocs'>): Contender => ({ ...c, samples: [], walls: [], allocs: [] });

/** KEEL_BENCH_POLICY=N (issue 37): this checkout's runs decide every call with an operator's Cedar policy of N policies; the baseline's do not. */
const POLICY = Number(process.env.KEEL_BENCH_POLICY ?? 0);

async function keelContenders(impl: Impl, side: KeelSide, toolCount: number, dir: string): Promise<Contender[]> {
  const replies = conversation(toolCount, STEPS);
  const registry = side.registry(toolCount);
  const policy = impl === 'keel' && POLICY > 0 && side.code ? await K.benchPolicy(side.code, registry, POLICY) : undefined;
  const replay = side.replay(replies);
  const stores: [StoreKind, () => SqliteStore | null][] = [
    ['none', () => null],
    ['sqlite-memory', () => side.store(':memory:')],
    ['sqlite-file', () => side.store(join(dir, `${impl}-${toolCount}.db`))],
  ];
  return stores
    .filter(([k]) => STORES.includes(k))
    .map(([kind, make]) => {
      const store = make();
      const deps: EngineDeps = { registry, model: replay, store, ...(policy ? { policy } : {}) };
      return contender({
        impl,
        store: kind,
        model: 'replay',
        run: () => side.run(deps),
        close: async () => store?.close(),
      });
    });
}

/** The fair pairing: Keel (through its pi-ai adapter) and pi-agent-core on the same faux streams. */
async function fauxContenders(code: KeelCode, toolCount: number): Promise<Contender[]> {
  const replies = conversation(toolCount, STEPS);
  const faux = P.registerZeroLatencyFaux();
  const live = P.liveFauxStream(model);
  const pi: PiCase = {
    faux,
    tools: P.piTools(toolCount, tools),
    replies,
    streamFn: live,
    system: systemPrompt({ mode: 'agent', menu: [], unavailable: [] }),
  };
  const out: Contender[] = [];
  let agent: Awaited<ReturnType<typeof P.runPiOnce>> | undefined;
  if (ONLY !== 'pi') {
    const registry = K.benchRegistry(code, toolCount, tools);
    const liveDeps: EngineDeps = { registry, model: K.providerModel(code, faux.getModel(), live), store: null };
    out.push(
      contender({
        impl: 'keel',
        store: 'none',
        model: 'faux',
        before: () => P.scriptFaux(pi),
        run: () => K.runKeelOnce(code, liveDeps, STEPS),
      }),
    );
    const recorded = await P.recordedFauxStream(pi, model);
    const recordedDeps: EngineDeps = { registry, model: K.providerModel(code, faux.getModel(), recorded.stream), store: null };
    out.push(
      contender({
        impl: 'keel',
        store: 'none',
        model: 'faux-recorded',
        before: recorded.reset,
        run: () => K.runKeelOnce(code, recordedDeps, STEPS),
      }),
    );
  }
  if (ONLY !== 'keel') {
    out.push(
      contender({
        impl: 'pi-agent-core',
        store: 'none',
        model: 'faux',
        before: () => P.scriptFaux(pi),
        run: async () => {
          agent = await P.runPiOnce(pi);
        },
        after: () => P.checkPiRun(agent!, STEPS),
      }),
    );
    const recorded = await P.recordedFauxStream(pi, model);
    const piRecorded: PiCase = { ...pi, streamFn: recorded.stream };
    out.push(
      contender({
        impl: 'pi-agent-core',
        store: 'none',
        model: 'faux-recorded',
        before: recorded.reset,
        run: async () => {
          agent = await P.runPiOnce(piRecorded);
        },
        after: () => P.checkPiRun(agent!, STEPS),
      }),
    );
  }
  // Unregistered once, after the last contender of this case closes.
  out[out.length - 1].close = async () => faux.unregister();
  return out;
}

async function contenders(sides: { keel: KeelSide; baseline?: KeelSide }, toolCount: number, dir: string): Promise<Contender[]> {
  const out: Contender[] = [];
  if (ONLY !== 'pi') {
    out.push(...(await keelContenders('keel', sides.keel, toolCount, dir)));
    if (sides.baseline) out.push(...(await keelContenders('keel-baseline', sides.baseline, toolCount, dir)));
  }
  out.push(...(await fauxContenders(sides.keel.code as KeelCode, toolCount)));
  return out;
}

/**
 * Runs `fn` for each contender in turns of BLOCK runs, `rounds` times, each round in a new order
 * (a seeded shuffle: the same every invocation), so no contender always runs right after the same
 * one. A fixed rotation kept the order cyclic: Keel's replay run always came right after
 * pi-agent-core's faux runs, whose garbage (1.6 MB per step at 2,000 tools) the old generation was
 * still collecting, while the baseline's came after Keel's — at 2,000 tools that alone made Keel's
 * median 10–25% higher than the baseline's (engine code the same).
 */
async function interleaved(cs: Contender[], runs: number, fn: (c: Contender) => Promise<void>): Promise<void> {
  let seed = 0x9e3779b9;
  const random = () => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const order = [...cs];
  for (let done = 0; done < runs; done += BLOCK) {
    const n = Math.min(BLOCK, runs - done);
    for (let j = order.length - 1; j > 0; j--) {
      const k = Math.floor(random() * (j + 1));
      [order[j], order[k]] = [order[k], order[j]];
    }
    for (const c of order) for (let i = 0; i < n; i++) await fn(c);
  }
}

async function benchCase(
  sides: { keel: KeelSide; baseline?: KeelSide },
  toolCount: number,
  dir: string,
): Promise<{ rows: CaseRow[]; pairs: PairRow[] }> {
  const cs = await contenders(sides, toolCount, dir);
  // Two phases, each interleaved among its own contenders: Keel's replay rows (this checkout's and the
  // baseline's), then the pi-ai pairing (Keel through its adapter, pi-agent-core). Interleaved all
  // together, this checkout's engine also ran the pi-ai rows and the baseline's did not, and that alone
  // made this checkout's replay rows 5-20% faster than the very same code as the baseline.
  for (const phase of [cs.filter((c) => c.model === 'replay'), cs.filter((c) => c.model !== 'replay')]) {
    await interleaved(phase, WARMUP, async (c) => {
      await timedRun(c);
    });
    await interleaved(phase, RUNS, async (c) => {
      const { core, wall } = await timedRun(c);
      c.samples.push(core);
      c.walls.push(wall);
    });
    await interleaved(phase, MEM_RUNS, async (c) => {
      c.allocs.push(await memoryRun(c));
    });
  }
  for (const c of cs) await c.close?.();
  const rows = cs.map((c): CaseRow => {
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
      median_alloc_kb_per_step: round(summarize(c.allocs).median / 1024),
      mem_runs: c.allocs.length,
    };
  });
  const pairs: PairRow[] = [];
  for (const m of ['faux', 'faux-recorded'] as const) {
    const k = cs.find((c) => c.impl === 'keel' && c.model === m);
    const p = cs.find((c) => c.impl === 'pi-agent-core' && c.model === m);
    if (!k || !p) continue;
    const groupRatios = groupMedians(k.samples).map((x, g) => x / groupMedians(p.samples)[g]);
    const km = summarize(k.samples).median;
    const pm = summarize(p.samples).median;
    const ka = summarize(k.allocs).median;
    const pa = summarize(p.allocs).median;
    pairs.push({
      tools: toolCount,
      model: m,
      keel_median_us_per_step: round(km),
      pi_median_us_per_step: round(pm),
      ratio: ratio(km / pm),
      ratio_min_over_groups: ratio(Math.min(...groupRatios)),
      ratio_max_over_groups: ratio(Math.max(...groupRatios)),
      groups: groupRatios.length,
      keel_alloc_kb_per_step: round(ka / 1024),
      pi_alloc_kb_per_step: round(pa / 1024),
      alloc_ratio: ratio(ka / pa),
    });
  }
  return { rows, pairs };
}

/** The samples cut into GROUPS consecutive groups (run order), each group's median. */
function groupMedians(samples: readonly number[]): number[] {
  const size = Math.max(1, Math.floor(samples.length / GROUPS));
  const out: number[] = [];
  for (let i = 0; i + size <= samples.length; i += size) out.push(summarize(samples.slice(i, i + size)).median);
  return out;
}

const round = (x: number) => Math.round(x * 10) / 10;
const ratio = (x: number) => Math.round(x * 100) / 100;

/** Which core was measured: the commit, and whether src/ had uncommitted changes at the time. */
function gitInfo(cwd?: string): { commit: string; src_dirty: boolean } | undefined {
  try {
    const git = (...a: string[]) => execFileSync('git', a, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return { commit: git('rev-parse', '--short', 'HEAD'), src_dirty: git('status', '--porcelain', '--', 'src').length > 0 };
  } catch {
    return undefined;
  }
}

function table(head: string[], body: string[][], left: number): string {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i < left ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

function caseTable(rows: CaseRow[]): string {
  const head = ['tools', 'impl', 'store', 'model', 'median µs/step', 'p95 µs/step', 'min µs/step', 'wall µs/step', 'alloc KB/step'];
  const body = rows.map((r) => [
    String(r.tools),
    r.impl,
    r.store,
    r.model,
    r.median_us_per_step.toFixed(1),
    r.p95_us_per_step.toFixed(1),
    r.min_us_per_step.toFixed(1),
    r.median_wall_us_per_step.toFixed(1),
    r.median_alloc_kb_per_step.toFixed(1),
  ]);
  return table(head, body, 4);
}

function pairTable(pairs: PairRow[]): string {
  const head = [
    'tools',
    'model',
    'keel µs/step',
    'pi µs/step',
    'ratio',
    `ratio over ${pairs[0]?.groups ?? GROUPS} groups`,
    'keel KB/step',
    'pi KB/step',
    'alloc ratio',
  ];
  const body = pairs.map((p) => [
    String(p.tools),
    p.model,
    p.keel_median_us_per_step.toFixed(1),
    p.pi_median_us_per_step.toFixed(1),
    p.ratio.toFixed(2),
    `${p.ratio_min_over_groups.toFixed(2)}–${p.ratio_max_over_groups.toFixed(2)}`,
    p.keel_alloc_kb_per_step.toFixed(1),
    p.pi_alloc_kb_per_step.toFixed(1),
    p.alloc_ratio.toFixed(2),
  ]);
  return table(head, body, 2);
}

const find = (rows: CaseRow[], tools: number, impl: Impl, store: StoreKind, m: ModelKind) =>
  rows.find((r) => r.tools === tools && r.impl === impl && r.store === store && r.model === m);

/** This checkout's median / the baseline's, per store (< 1: this checkout spends less time per step). */
function baselineRatios(rows: CaseRow[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows.filter((x) => x.impl === 'keel' && x.model === 'replay')) {
    const b = find(rows, r.tools, 'keel-baseline', r.store, 'replay');
    if (b) out[`keel_${r.store}_vs_baseline_at_${r.tools}`] = ratio(r.median_us_per_step / b.median_us_per_step);
  }
  return out;
}

/**
 * Keel median / pi-agent-core median (< 1: Keel spends less). keel_pi-ai_…: the fair pairing, Keel
 * through its pi-ai adapter on the same stream as pi; keel_STORE_…: Keel's replay rows against pi.
 */
function ratiosOf(rows: CaseRow[], pairs: PairRow[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of pairs) out[`keel_pi-ai_vs_pi_${p.model}_at_${p.tools}`] = p.ratio;
  for (const n of TOOL_COUNTS) {
    for (const piModel of ['faux', 'faux-recorded'] as const) {
      const pi = find(rows, n, 'pi-agent-core', 'none', piModel);
      if (!pi) continue;
      for (const r of rows.filter((x) => x.tools === n && x.impl === 'keel' && x.model === 'replay')) {
        out[`keel_${r.store}_vs_pi_${piModel}_at_${n}`] = ratio(r.median_us_per_step / pi.median_us_per_step);
      }
    }
  }
  return out;
}

function verdicts(rows: CaseRow[], pairs: PairRow[]): string[] {
  const out: string[] = [];
  for (const p of pairs) {
    const ok = p.ratio <= 1;
    out.push(
      `${p.tools} tools, ${p.model}: Keel through pi-ai ${ok ? 'MEETS' : 'MISSES'} "at or below pi-agent-core" (ratio ${p.ratio.toFixed(2)}, ${p.ratio_min_over_groups.toFixed(2)}–${p.ratio_max_over_groups.toFixed(2)} over ${p.groups} groups)`,
    );
  }
  for (const n of TOOL_COUNTS) {
    const file = find(rows, n, 'keel', 'sqlite-file', 'replay');
    if (file)
      out.push(`${n} tools: durable (sqlite-file) ${file.median_us_per_step < 1000 ? 'MEETS' : 'MISSES'} "< 1 ms per step (median)"`);
  }
  // Issue 29's targets against a baseline (stated for the wave-1 commit 79ef51b): the engine alone
  // within 5% of it, a durable step within 20%.
  for (const [key, r] of Object.entries(baselineRatios(rows))) {
    const [, store, n] = /^keel_(.+)_vs_baseline_at_(\d+)$/.exec(key) ?? [];
    const limit = store === 'none' ? 1.05 : 1.2;
    const what = store === 'none' ? 'the engine alone (store none)' : `a durable step (${store})`;
    out.push(`${n} tools: ${what} ${r <= limit ? 'MEETS' : 'MISSES'} "≤ ${limit} × the baseline" (ratio ${r.toFixed(2)})`);
  }
  return out;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-loop-'));
  const started = now();
  const rows: CaseRow[] = [];
  const pairs: PairRow[] = [];
  const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
  const support = await supportOf(repo);
  [K, P] = await Promise.all([importFrom(support.dir, 'keel-side'), importFrom(support.dir, 'pi-side')]);
  const code = await K.loadKeelCode(support.src);
  const sides = { keel: sideOf(code), baseline: BASELINE ? await baselineSide() : undefined };
  try {
    for (const n of TOOL_COUNTS) {
      const r = await benchCase(sides, n, dir);
      rows.push(...r.rows);
      pairs.push(...r.pairs);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const ratios = ratiosOf(rows, pairs);
  const vsBaseline = baselineRatios(rows);
  const load = loadavg()[0];

  console.log(
    `bench/loop: Keel as ${KEEL === 'dist' ? 'compiled JavaScript' : 'TypeScript through tsx'}; ${RUNS} runs × ${STEPS} steps per case (${WARMUP} warm-up runs, ${MEM_RUNS} memory runs), contenders interleaved ${BLOCK === 1 ? 'run by run' : `${BLOCK} runs at a time`}, model and tool time subtracted; node ${process.version}; load ${load.toFixed(1)} on ${cpus().length} CPUs\n`,
  );
  console.log(caseTable(rows));
  if (pairs.length) {
    console.log(
      '\nthe fair pairing: Keel through its pi-ai adapter vs pi-agent-core, same faux stream (ratio < 1: Keel spends less per step):',
    );
    console.log(pairTable(pairs));
  }
  console.log('\nratios (Keel median / pi-agent-core median; < 1 means Keel spends less time per step):');
  for (const [k, v] of Object.entries(ratios)) console.log(`  ${k.padEnd(48)} ${v.toFixed(2)}`);
  console.log(`
model faux: pi-ai's faux provider called live with the context each agent built (its serialisation,
clone and deltas are model time, subtracted); faux-recorded: its events recorded once and pushed into
a fresh stream per call. Keel on faux runs its real-model path (src/models/provider.ts) with store none:
like pi-agent-core's Agent it keeps the transcript in memory and persists nothing. The replay rows are
Keel on a zero-latency ModelClient of its own (no pi-ai), per store: sqlite-memory runs the whole
persistence path on an in-memory database; sqlite-file is the durable store (WAL, synchronous=NORMAL).`);
  if (BASELINE) {
    console.log(`\nthis checkout / the baseline at ${BASELINE} (median per step; < 1: this checkout spends less):`);
    for (const [k, v] of Object.entries(vsBaseline)) console.log(`  ${k.padEnd(48)} ${v.toFixed(2)}`);
  }
  const v = verdicts(rows, pairs);
  if (v.length) console.log(`\ntargets:\n${v.map((x) => `  ${x}`).join('\n')}`);
  console.log(`\n(${((now() - started) / 1000).toFixed(1)} s)`);

  if (WRITE) {
    const file = join(dirname(fileURLToPath(import.meta.url)), 'results', basename(arg('out', 'loop.json')));
    const out = {
      date: new Date().toISOString(),
      node: process.version,
      git: gitInfo(),
      cpu: cpus()[0]?.model ?? 'unknown',
      cpus: cpus().length,
      load_average_1m: Math.round(load * 100) / 100,
      // Issue 36: with KEEL_BENCH_UNTRUSTED=1 every tool of this checkout is declared output: untrusted (every step reads words from outside).
      untrusted_reads: process.env.KEEL_BENCH_UNTRUSTED === '1',
      // Issue 37: with KEEL_BENCH_POLICY=N this checkout's runs decide every call with a Cedar policy of N policies (the baseline's with none).
      policies: POLICY,
      method: {
        steps_per_run: STEPS,
        runs: RUNS,
        warmup_runs: WARMUP,
        memory_runs: MEM_RUNS,
        per_step: '(run wall time − time inside the model stream − time inside tool execute) / model calls; median and p95 over runs',
        schedule: `contenders take turns ${BLOCK === 1 ? 'run by run' : `${BLOCK} runs at a time`}, in a new (seeded, shuffled) order each round, in two phases (Keel's replay rows with the baseline's, then the pi-ai pairing); a minor GC before every run, outside the timed region`,
        spread: `runs cut into ${GROUPS} consecutive groups; each pairing's ratio per group, lowest and highest reported`,
        memory:
          "bytes allocated per step: (heap used after the run − before + bytes each GC freed during it, from v8's GCProfiler) / model calls; median over the memory runs; includes the model stream's own allocations",
        conversation: `${STEPS - 1} replies each calling one read tool (different tool, different args), then a text answer`,
        keel_faux:
          'streamRun + collect (src/loop/legs.ts) with ProviderModel (src/models/provider.ts) given pi-ai with its stream replaced by the bench stream and the faux model; registry = ask_user + N read tools (makeToolSpec), store none, no shortlist (every tool declared, as pi-agent-core does)',
        keel_replay: 'the same engine with a zero-latency replay ModelClient (no pi-ai), per store',
        keel_code: KEEL === 'dist' ? 'compiled JavaScript (tsc -p tsconfig.build.json, as npm run build)' : 'TypeScript through tsx',
        pi: '@mariozechner/pi-agent-core 0.73.1 Agent.prompt, a fresh Agent per run, same N tools (TypeBox schemas), default parallel tool execution, streamFn = the bench stream',
        model_faux:
          'pi-ai 0.73.1 registerFauxProvider (no tokensPerSecond: no timers; tokenSize 1e9: one delta per block) called with the context the agent built; drained inside the model timer, its events handed over in a fresh pi-ai stream',
        model_faux_recorded: 'the faux events for each reply recorded once before the bench and pushed into a fresh stream per call',
      },
      cases: rows,
      fair_pairing: pairs,
      ratios,
      ...(BASELINE ? { baseline: { dir: BASELINE, commit: gitInfo(BASELINE)?.commit, ratios: vsBaseline } } : {}),
      targets: v,
    };
    writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`wrote ${file}`);
  }
}

await main();
