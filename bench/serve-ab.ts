/**
 * bench/serve-ab: bench/serve at one concurrency, this checkout against a baseline checkout, in one
 * session, round by round — the "before and after in the same run" of issue 49's server figures.
 * Each round runs bench/serve once for each checkout (its three sides: library-nostore, library,
 * http), in alternating order, so a machine that slows down during the session slows both alike.
 * The figures are the medians over the rounds, with each round's values beside them: the split of
 * the server's CPU per run into engine, store and HTTP/SSE is a difference of two measurements and
 * moves by tenths of a millisecond between rounds, so one round cannot settle a goal near it.
 *
 *   node --import tsx bench/serve-ab.ts --baseline DIR [--rounds 5] [--size 300] [--reps 6] [--no-write]
 *
 * DIR: another checkout of Keel with its dist/ built (`git worktree add /tmp/k REV`, its
 * node_modules, `npm run build`); bench/serve runs its dist/ through --root. Writes
 * bench/results/serve-vs-REV.json. Goals (issue 49, embedded SQLite store): HTTP/SSE CPU per run at
 * or below the engine's, and the server at 40% of the limit or more.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
};
const BASELINE = arg('baseline', '');
const ROUNDS = Number(arg('rounds', '5'));
const SIZE = Number(arg('size', '300'));
const REPS = Number(arg('reps', '6'));
const WRITE = !process.argv.includes('--no-write');

/** What one round of bench/serve gives for one checkout. */
interface Figures {
  fraction_of_limit: number;
  runs_per_s: number;
  server_cpu_ms: number;
  engine_ms: number;
  store_ms: number;
  http_sse_ms: number;
  ttfe_p50_ms: number;
  rss_peak_mb: number;
}

interface ServeOut {
  git?: { commit: string };
  rows: { side: string; fraction_of_limit: number; runs_per_s: number; ttfe_ms: { p50: number }; rss_peak_mb: number }[];
  http_vs_library: { cpu_ms_per_run: { engine: number; store: number; http_sse: number; server_total: number } }[];
}

function serveOnce(root: string, work: string, tag: string): { figures: Figures; commit: string } {
  const out = join(work, `${tag}.json`);
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'bench', 'serve.ts'), '--sizes', String(SIZE), '--reps', String(REPS), '--root', root, '--out', out],
    { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (r.status !== 0) throw new Error(`bench/serve on ${root} exited ${r.status}:\n${(r.stderr || r.stdout).slice(-3000)}`);
  const o = JSON.parse(readFileSync(out, 'utf8')) as ServeOut;
  const http = o.rows.find((x) => x.side === 'http');
  const split = o.http_vs_library[0]?.cpu_ms_per_run;
  if (!http || !split) throw new Error(`bench/serve on ${root} gave no http row or no split`);
  return {
    commit: o.git?.commit ?? '?',
    figures: {
      fraction_of_limit: http.fraction_of_limit,
      runs_per_s: http.runs_per_s,
      server_cpu_ms: split.server_total,
      engine_ms: split.engine,
      store_ms: split.store,
      http_sse_ms: split.http_sse,
      ttfe_p50_ms: http.ttfe_ms.p50,
      rss_peak_mb: http.rss_peak_mb,
    },
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const round2 = (x: number) => Math.round(x * 100) / 100;
const round3 = (x: number) => Math.round(x * 1000) / 1000;

function main(): void {
  if (!BASELINE) throw new Error('--baseline DIR: a checkout of Keel with its dist/ built (git worktree add /tmp/k REV; npm run build)');
  const base = resolve(BASELINE);
  const work = mkdtempSync(join(tmpdir(), 'keel-serve-ab-'));
  const rounds: { round: number; order: string[]; now: Figures; before: Figures }[] = [];
  let commits = { now: '?', before: '?' };
  const load0 = loadavg()[0];
  console.log(`bench/serve-ab: C=${SIZE}, ${REPS} bursts per side, ${ROUNDS} rounds, this checkout against ${base}`);
  try {
    for (let k = 1; k <= ROUNDS; k++) {
      const order = k % 2 ? ['now', 'before'] : ['before', 'now'];
      const got: Record<string, Figures> = {};
      for (const which of order) {
        const r = serveOnce(which === 'now' ? ROOT : base, work, `${which}-${k}`);
        got[which] = r.figures;
        commits = { ...commits, [which]: r.commit };
      }
      rounds.push({ round: k, order, now: got.now, before: got.before });
      const f = (x: Figures) =>
        `${(x.fraction_of_limit * 100).toFixed(1)}% of the limit, server ${x.server_cpu_ms.toFixed(2)} ms/run (engine ${x.engine_ms.toFixed(2)}, store ${x.store_ms.toFixed(2)}, HTTP/SSE ${x.http_sse_ms.toFixed(2)})`;
      console.log(`  round ${k}: now ${f(got.now)}\n           before ${f(got.before)}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const keys = Object.keys(rounds[0].now) as (keyof Figures)[];
  // Verdicts from the medians as measured; the figures shown and written are rounded.
  const med = (which: 'now' | 'before') =>
    Object.fromEntries(keys.map((k) => [k, median(rounds.map((r) => r[which][k]))])) as unknown as Figures;
  const shown = (x: Figures) => Object.fromEntries(keys.map((k) => [k, round3(x[k])])) as unknown as Figures;
  const now = med('now');
  const before = med('before');
  console.log(`\nmedians over ${ROUNDS} rounds (${commits.before} → ${commits.now}):`);
  for (const k of keys) console.log(`  ${k.padEnd(18)} ${String(shown(before)[k]).padStart(8)} → ${String(shown(now)[k]).padStart(8)}`);
  const httpRounds = rounds.filter((r) => r.now.http_sse_ms <= r.now.engine_ms).length;
  const limitRounds = rounds.filter((r) => r.now.fraction_of_limit >= 0.4).length;
  const targets = [
    `HTTP/SSE CPU per run at or below the engine's: ${now.http_sse_ms <= now.engine_ms ? 'MEETS' : 'MISSES'} at the median (${now.http_sse_ms.toFixed(2)} vs ${now.engine_ms.toFixed(2)} ms), in ${httpRounds} of ${ROUNDS} rounds`,
    `the server at 40% of the limit or more: ${now.fraction_of_limit >= 0.4 ? 'MEETS' : 'MISSES'} at the median (${(now.fraction_of_limit * 100).toFixed(1)}%), in ${limitRounds} of ${ROUNDS} rounds`,
  ];
  console.log(`\n${targets.join('\n')}`);
  const load1 = loadavg()[0];
  console.log(`(load ${load0.toFixed(1)} → ${load1.toFixed(1)})`);
  if (!WRITE) return;
  const file = join(ROOT, 'bench', 'results', `serve-vs-${commits.before}.json`);
  const out = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    load_average_1m: { before: round2(load0), after: round2(load1) },
    method: `bench/serve --sizes ${SIZE} --reps ${REPS} per checkout per round (--root for the baseline's dist/), ${ROUNDS} rounds in alternating order; figures: the http side (fraction of the limit, runs/s, time to first event p50, peak RSS) and the split of the server's CPU per run (engine = library without a store, store = library − that, HTTP/SSE = server − library); medians over the rounds`,
    now: { commit: commits.now, medians: shown(now) },
    before: { commit: commits.before, medians: shown(before) },
    rounds,
    targets,
  };
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  console.log(`wrote ${file}`);
}

main();
