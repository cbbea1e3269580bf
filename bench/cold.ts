/**
 * bench/cold: the cold start of an application that embeds an agent core — a fresh process imports
 * it, builds N tools and the agent, then makes its first run on a replayed model — Keel
 * (`new Keel({ tools })`, `keel.run`) against pi-agent-core's `Agent` set up and run the same way,
 * in the same bench run, samples interleaved in a new shuffled order each round (issue 49).
 *
 *   node --import tsx bench/cold.ts [--reps 15] [--tools 20,2000] [--steps 10] [--stores none,sqlite]
 *     [--baseline DIR] [--no-write]
 *
 * Each sample is one process (bench/support/cold-child.mjs, plain JavaScript: Keel from its compiled
 * dist/ as a user of the package runs it — `npm run build` first — pi-agent-core from its own dist/).
 * It reports, in milliseconds:
 * - import: loading the core's entry (Keel's index; pi-agent-core and pi-ai's index, which it needs
 *   for its model and tool schemas);
 * - setup: building the N tools (Keel: `defineTool` with a JSON Schema and an effect; pi: TypeBox
 *   schemas) and constructing the agent (Keel: store none — `store: null` — or the embedded SQLite file
 *   under a fresh home);
 * - first run: the run's wall time minus the time inside the replayed model's stream and the tools'
 *   execute: STEPS model calls, each but the last calling one read tool, then the answer.
 * The goal (issue 49): setup + first run at or below pi-agent-core's at 20 tools, within 2× at 2,000.
 * Keel runs as an application gets it: its default shortlist (12 tools declared per request; pi
 * declares all N), no plugin folders, token counting off (KEEL_COUNT_TOKENS=0: ai-tokenizer is an
 * optional package; this repository has it), each process with a new, empty KEEL_HOME — and once
 * more with a KEEL_HOME kept between its processes ("home kept"): what a second start of the same
 * app finds in KEEL_HOME (for the library with no plugin folders, nothing it reads: a check that none is needed).
 *
 * --baseline DIR: another checkout of Keel with its dist/ built (e.g. `git worktree add /tmp/k REV`,
 * its node_modules, `npm run build`) runs as a third contender: the same figures before a change.
 * Writes bench/results/cold.json. No wall-clock assertion anywhere: figures and ratios.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CHILD = join(ROOT, 'bench', 'support', 'cold-child.mjs');
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
};
const REPS = Number(arg('reps', '15'));
const TOOLS = arg('tools', '20,2000').split(',').map(Number);
const STEPS = Number(arg('steps', '10'));
const STORES = arg('stores', 'none,sqlite').split(',');
const BASELINE = arg('baseline', '');
const WRITE = !process.argv.includes('--no-write');

interface Contender {
  name: string;
  impl: 'keel' | 'pi';
  store: string;
  root: string;
  /** A KEEL_HOME kept across this contender's processes (per tool count): the caches a second start finds. */
  keep?: boolean;
}
const contenders: Contender[] = [
  ...STORES.map((store) => ({ name: `keel (store ${store})`, impl: 'keel' as const, store, root: ROOT })),
  { name: 'keel (store none, home kept)', impl: 'keel', store: 'none', root: ROOT, keep: true },
  ...(BASELINE
    ? STORES.map((store) => ({ name: `keel-baseline (store ${store})`, impl: 'keel' as const, store, root: resolve(BASELINE) }))
    : []),
  { name: 'pi-agent-core', impl: 'pi', store: 'none', root: ROOT },
];

interface Sample {
  import_ms: number;
  setup_ms: number;
  first_run_ms: number;
  model_ms: number;
  tools_ms: number;
  rss_mb: number;
}

const kept = mkdtempSync(join(tmpdir(), 'keel-bench-cold-kept-'));
function sample(c: Contender, tools: number): Sample {
  const home = c.keep ? [join(kept, String(tools))] : [];
  const r = spawnSync(process.execPath, [CHILD, c.impl, String(tools), String(STEPS), c.store, c.root, ...home], {
    cwd: ROOT,
    encoding: 'utf8',
    // No plugin folders, no config, no store setting of the caller's: the application's tools only.
    env: {
      ...process.env,
      KEEL_PLUGINS: '',
      KEEL_STORE: '',
      KEEL_CONFIG: '',
      KEEL_TOOL_CAP: '',
      KEEL_COUNT_TOKENS: '0',
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
    },
  });
  if (r.status !== 0) throw new Error(`${c.name} at ${tools} tools exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as Sample;
}

/** A seeded shuffle (the same order for the same round in every bench run). */
function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const out = [...xs];
  let s = seed * 2654435761;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const r1 = (x: number) => Math.round(x * 10) / 10;
const r2 = (x: number) => Math.round(x * 100) / 100;

const samples = new Map<string, Sample[]>();
const key = (c: Contender, n: number) => `${c.name}@${n}`;
const load0 = loadavg()[0];
// One warm-up round, not kept: the first process of a bench run pays for a cold disk cache.
for (const n of TOOLS) for (const c of contenders) sample(c, n);
for (let rep = 0; rep < REPS; rep++) {
  const order = shuffled(
    TOOLS.flatMap((n) => contenders.map((c) => ({ c, n }))),
    rep + 1,
  );
  for (const { c, n } of order) {
    const list = samples.get(key(c, n)) ?? [];
    list.push(sample(c, n));
    samples.set(key(c, n), list);
  }
}

interface Row {
  contender: string;
  tools: number;
  runs: number;
  import_ms: number;
  setup_ms: number;
  first_run_ms: number;
  setup_plus_first_run_ms: number;
  all_ms: number;
  rss_mb: number;
}
const rows: Row[] = [];
for (const n of TOOLS) {
  for (const c of contenders) {
    const s = samples.get(key(c, n)) ?? [];
    rows.push({
      contender: c.name,
      tools: n,
      runs: s.length,
      import_ms: r1(median(s.map((x) => x.import_ms))),
      setup_ms: r1(median(s.map((x) => x.setup_ms))),
      first_run_ms: r1(median(s.map((x) => x.first_run_ms))),
      setup_plus_first_run_ms: r1(median(s.map((x) => x.setup_ms + x.first_run_ms))),
      all_ms: r1(median(s.map((x) => x.import_ms + x.setup_ms + x.first_run_ms))),
      rss_mb: r1(median(s.map((x) => x.rss_mb))),
    });
  }
}

rmSync(kept, { recursive: true, force: true });

const ratios: Record<string, number> = {};
const verdicts: string[] = [];
for (const n of TOOLS) {
  const pi = rows.find((r) => r.tools === n && r.contender === 'pi-agent-core');
  if (!pi) continue;
  const limit = n <= 20 ? 1 : 2;
  for (const r of rows.filter((x) => x.tools === n && x.contender !== 'pi-agent-core')) {
    const ratio = r2(r.setup_plus_first_run_ms / pi.setup_plus_first_run_ms);
    ratios[`${r.contender} / pi-agent-core, setup + first run, ${n} tools`] = ratio;
    ratios[`${r.contender} / pi-agent-core, import + setup + first run, ${n} tools`] = r2(r.all_ms / pi.all_ms);
    if (!r.contender.startsWith('keel-baseline'))
      verdicts.push(
        `${n} tools, ${r.contender}: ${ratio <= limit ? 'MEETS' : 'MISSES'} "setup + first run ≤ ${limit}× pi-agent-core's" (${ratio})`,
      );
  }
  if (BASELINE) {
    for (const store of STORES) {
      const now = rows.find((r) => r.tools === n && r.contender === `keel (store ${store})`);
      const before = rows.find((r) => r.tools === n && r.contender === `keel-baseline (store ${store})`);
      if (now && before)
        ratios[`keel / baseline, setup + first run, store ${store}, ${n} tools`] = r2(
          now.setup_plus_first_run_ms / before.setup_plus_first_run_ms,
        );
    }
  }
}

console.log(
  `bench/cold: ${REPS} fresh processes per contender and tool count, ${STEPS} model calls per run; load ${load0.toFixed(2)} → ${loadavg()[0].toFixed(2)}\n`,
);
console.log('contender                         tools   import    setup  1st run  setup+1st  all     rss MB');
for (const r of rows) {
  console.log(
    `${r.contender.padEnd(33)} ${String(r.tools).padStart(5)} ${r.import_ms.toFixed(1).padStart(8)} ${r.setup_ms.toFixed(1).padStart(8)} ${r.first_run_ms.toFixed(1).padStart(8)} ${r.setup_plus_first_run_ms.toFixed(1).padStart(10)} ${r.all_ms.toFixed(1).padStart(7)} ${r.rss_mb.toFixed(0).padStart(8)}`,
  );
}
console.log('');
for (const [k, v] of Object.entries(ratios)) console.log(`${k}: ${v}`);
console.log('');
for (const v of verdicts) console.log(v);

if (WRITE) {
  const git = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
  const dirty = spawnSync('git', ['status', '--porcelain', 'src'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim() !== '';
  const out = {
    date: new Date().toISOString(),
    node: process.version,
    git: { commit: git, src_dirty: dirty },
    machine: { os: `${process.platform} ${process.arch}`, cpu: cpus()[0]?.model, cpus: cpus().length },
    load_average_1m: { before: r2(load0), after: r2(loadavg()[0]) },
    method: {
      process:
        'one fresh node process per sample (bench/support/cold-child.mjs); medians over --reps samples, contenders interleaved in a seeded shuffled order per round, after one warm-up round',
      import:
        'Keel: the package entry, dist/lib/index.js (dist/src/index.js for a checkout from before it was bundled); pi: @mariozechner/pi-agent-core and @mariozechner/pi-ai (index)',
      setup:
        'N tools built (Keel defineTool with JSON Schema + effect read; pi TypeBox) + the agent constructed (Keel: new Keel({ home, tools }) with store none or SQLite)',
      first_run: `one run of ${STEPS} model calls on a zero-latency replayed model: wall − model − tools`,
      keel_defaults:
        'shortlist cap 12 (pi declares all tools), KEEL_COUNT_TOKENS=0, no plugin folders, a new KEEL_HOME per process except for "home kept" (one per tool count, kept across its processes after the warm-up round)',
      baseline: BASELINE || null,
    },
    rows,
    ratios,
    verdicts,
  };
  writeFileSync(join(ROOT, 'bench', 'results', 'cold.json'), `${JSON.stringify(out, null, 2)}\n`);
  console.log('\nwrote bench/results/cold.json');
}
