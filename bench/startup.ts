/**
 * bench/startup: what a user waits for before Keel does anything — `keel --help`, `keel --version`
 * and a one-reply scripted `keel run` as whole processes — against bare `node -e 0` measured in the
 * same run, interleaved. Targets: --help within 60 ms of bare Node; a one-reply run (the bundled
 * plugins, as installed) within 150 ms. A run with a TypeScript plugin is reported beside it.
 *
 *   node --import tsx bench/startup.ts [--reps 15] [--no-write]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'keel.js');
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
};
const REPS = Number(arg('reps', '15'));
const home = mkdtempSync(join(tmpdir(), 'keel-bench-startup-'));
const script = join(home, 'script.yaml');
writeFileSync(script, '- text: "Hello."\n');
const env = { ...process.env, KEEL_HOME: home, KEEL_PLUGINS: '', KEEL_STORE: '', OTEL_EXPORTER_OTLP_ENDPOINT: '' };

const cases: Record<string, string[]> = {
  'node -e 0': ['-e', '0'],
  'keel --version': [BIN, '--version'],
  'keel --help': [BIN, '--help'],
  // What a user gets: the bundled reference plugins (compiled JavaScript, as installed).
  'keel run (one scripted reply)': [BIN, 'run', '--model', `script:${script}`, 'hello'],
  // For comparison: plugins written in TypeScript start tsx's loader (the test fixtures hold one).
  'keel run, a TypeScript plugin': [
    BIN,
    'run',
    '--model',
    `script:${script}`,
    '--plugins',
    join(ROOT, 'test', 'fixtures', 'plugins'),
    'hello',
  ],
};
const times: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  for (let rep = 0; rep < REPS + 2; rep++) {
    for (const [name, args] of Object.entries(cases)) {
      const t0 = process.hrtime.bigint();
      const r = spawnSync(process.execPath, args, { env, encoding: 'utf8' });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r.status !== 0) throw new Error(`${name} exited ${r.status}: ${r.stderr}`);
      if (rep >= 2) times[name].push(ms); // two warm-up rounds (the OS file cache)
    }
  }
  const base = median(times['node -e 0']);
  const rows = Object.entries(times).map(([name, xs]) => ({ name, median_ms: median(xs), over_node_ms: median(xs) - base }));
  console.log('case                                median ms   over bare node');
  for (const r of rows)
    console.log(`${r.name.padEnd(34)} ${r.median_ms.toFixed(1).padStart(9)}   ${r.over_node_ms.toFixed(1).padStart(9)}`);
  const help = rows.find((r) => r.name === 'keel --help')?.over_node_ms ?? Number.NaN;
  const run = rows.find((r) => r.name === 'keel run (one scripted reply)')?.over_node_ms ?? Number.NaN;
  const targets = [
    `--help within 60 ms of bare Node: ${help <= 60 ? 'MEETS' : 'MISSES'} (${help.toFixed(1)} ms)`,
    `a one-reply scripted run within 150 ms of bare Node: ${run <= 150 ? 'MEETS' : 'MISSES'} (${run.toFixed(1)} ms)`,
  ];
  for (const t of targets) console.log(t);
  if (!process.argv.includes('--no-write')) {
    writeFileSync(
      join(ROOT, 'bench', 'results', 'startup.json'),
      `${JSON.stringify({ date: new Date().toISOString(), node: process.version, cpus: cpus().length, reps: REPS, rows, targets }, null, 2)}\n`,
    );
  }
} finally {
  rmSync(home, { recursive: true, force: true });
}
