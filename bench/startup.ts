/**
 * bench/startup: what a user waits for before Keel does anything — `keel --help`, `keel --version`,
 * a one-reply scripted `keel run` and a one-reply run against a local OpenAI-compatible server (the
 * wire tests' fake gateway, test/support/fake-gateway.ts, in a process of its own) as whole
 * processes — against bare `node -e 0` measured in the same run, interleaved. Targets: --help within
 * 60 ms of bare Node; a one-reply scripted run (the bundled plugins, as installed) within 150 ms; a
 * one-reply server run (pi-ai installed, as a provider needs) within 250 ms (issue 26). Reported
 * beside them: a run with a TypeScript plugin; the server run with token counting at its default
 * (on where ai-tokenizer is installed, as in this repository: counted in a process of its own, at best
 * effort, R30); and what importing pi-ai costs by the route a provider run takes now (one API's
 * module) and by its index (the route before).
 *
 * Then, not timed: the longest the main thread's event loop was held during the server run
 * (perf_hooks monitorEventLoopDelay, max; bench/support/loop-delay.mjs) with token counting off, at
 * its default and with KEEL_COUNT_TOKENS=1 — what a count on the main thread would cost live text.
 *
 *   node --import tsx bench/startup.ts [--reps 15] [--no-write]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScriptedReply } from '../test/support/fake-gateway.js';

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

/**
 * The fake gateway the wire tests use, in a process of its own (the runs are timed with spawnSync,
 * which holds this one's event loop), with one "Hello." reply for each server run the bench makes.
 */
async function startGateway(replies: number): Promise<{ url: string; stop: () => void }> {
  const reply: ScriptedReply = { text: 'Hello.' };
  const code = `import { FakeGateway } from ${JSON.stringify(join(ROOT, 'test', 'support', 'fake-gateway.ts'))};
    const g = await FakeGateway.start(Array.from({ length: ${replies} }, () => (${JSON.stringify(reply)})), { strict: true });
    console.log(g.openaiBaseUrl);
    process.stdin.on('end', () => g.close().then(() => process.exit(0))).resume();`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((res, rej) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
      const line = out.split('\n')[0];
      if (out.includes('\n')) res(line.trim());
    });
    child.once('exit', (c) => rej(new Error(`the fake gateway exited ${c} before it listened`)));
  });
  return { url, stop: () => child.stdin.end() };
}

interface Case {
  args: string[];
  env?: Record<string, string>;
}
/** The server runs use the gateway; the rest do not. */
const SERVER_RUN = 'keel run (one reply, openai-compatible server)';
const SERVER_RUN_COUNTED = 'keel run (one reply, server), token counts (default)';
const serverRuns = [SERVER_RUN, SERVER_RUN_COUNTED];
/** The event-loop delay runs: token counting off, at its default, and for every request. */
const LOOP_DELAY: Record<string, Record<string, string>> = {
  'token counts off (KEEL_COUNT_TOKENS=0)': { KEEL_COUNT_TOKENS: '0' },
  'token counts at the default': {},
  'token counts for every request (KEEL_COUNT_TOKENS=1)': { KEEL_COUNT_TOKENS: '1' },
};
const gateway = await startGateway((REPS + 2) * serverRuns.length + REPS * Object.keys(LOOP_DELAY).length);
const serverSpec = `openai-compatible:fake-model@${gateway.url}`;
const importCode = (code: string) => ['--input-type=module', '-e', code];

const cases: Record<string, Case> = {
  'node -e 0': { args: ['-e', '0'] },
  'keel --version': { args: [BIN, '--version'] },
  'keel --help': { args: [BIN, '--help'] },
  // What a user gets: the bundled reference plugins (compiled JavaScript, as installed).
  'keel run (one scripted reply)': { args: [BIN, 'run', '--model', `script:${script}`, 'hello'] },
  // For comparison: plugins written in TypeScript start tsx's loader (the test fixtures hold one).
  'keel run, a TypeScript plugin': {
    args: [BIN, 'run', '--model', `script:${script}`, '--plugins', join(ROOT, 'test', 'fixtures', 'plugins'), 'hello'],
  },
  // A provider as a user who installed pi-ai has it: no ai-tokenizer, so no token counts (src/prompt/tokens.ts).
  [SERVER_RUN]: { args: [BIN, 'run', '--model', serverSpec, 'hello'], env: { KEEL_COUNT_TOKENS: '0' } },
  // The same with ai-tokenizer installed (this repository has it): token counting at its default, on
  // (the counter, a process of its own, counts; the run does not wait for it, R30).
  [SERVER_RUN_COUNTED]: { args: [BIN, 'run', '--model', serverSpec, 'hello'], env: { KEEL_COUNT_TOKENS: '' } },
  // What importing pi-ai costs, alone: the route a provider run takes (src/models/provider.ts loadPi:
  // one API's module and the registry and JSON repair it imports itself), and pi-ai's index.
  'import pi-ai: openai-completions only': {
    args: importCode(
      `const i = import.meta.resolve('@mariozechner/pi-ai'); await Promise.all([import('@mariozechner/pi-ai/openai-completions'), import(new URL('./models.js', i).href), import(new URL('./utils/json-parse.js', i).href)]);`,
    ),
  },
  'import pi-ai: its index (before)': { args: importCode(`await import('@mariozechner/pi-ai');`) },
};
const times: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
/** Bare Node's start-up (median) on this kind of machine when the targets were set (bench/results, 2026-12). */
const REFERENCE_NODE_MS = 62;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];
const median = (xs: number[]) => quantile(xs, 0.5);

try {
  for (let rep = 0; rep < REPS + 2; rep++) {
    for (const [name, c] of Object.entries(cases)) {
      const t0 = process.hrtime.bigint();
      const r = spawnSync(process.execPath, c.args, { env: { ...env, ...c.env }, cwd: ROOT, encoding: 'utf8' });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r.status !== 0) throw new Error(`${name} exited ${r.status}: ${r.stderr}`);
      if (serverRuns.includes(name) && !r.stdout.includes('Hello.'))
        throw new Error(`${name} did not print the server's reply: ${r.stdout}`);
      if (rep >= 2) times[name].push(ms); // two warm-up rounds (the OS file cache)
    }
  }
  // Paired: each case against the bare Node started just before it in the same round, so a phase
  // in which this (virtual) machine runs slow for a while weighs on both sides alike.
  const node = times['node -e 0'];
  const base = median(node);
  const rows = Object.entries(times).map(([name, xs]) => {
    const paired = xs.map((x, i) => x - node[i]);
    const over = median(paired);
    return {
      name,
      median_ms: median(xs),
      p90_ms: quantile(xs, 0.9),
      min_ms: Math.min(...xs),
      over_node_ms: over,
      over_node_p90_ms: quantile(paired, 0.9),
      // The same, in units of bare Node's start-up now: comparable across a machine's fast and slow phases.
      over_node_in_node_starts: over / base,
    };
  });
  console.log(`${'case'.padEnd(56)} median ms    p90 ms    min ms   over bare node (paired: median, p90)   in node starts`);
  for (const r of rows)
    console.log(
      `${r.name.padEnd(56)} ${r.median_ms.toFixed(1).padStart(9)} ${r.p90_ms.toFixed(1).padStart(9)} ${r.min_ms.toFixed(1).padStart(9)}   ${r.over_node_ms.toFixed(1).padStart(9)} ms ${r.over_node_p90_ms.toFixed(1).padStart(9)} ms ${r.over_node_in_node_starts.toFixed(2).padStart(20)}`,
    );
  const row = (name: string) => rows.find((r) => r.name === name);
  // The targets were set in milliseconds when bare Node started in REFERENCE_NODE_MS on this kind of
  // machine; on a slower phase the same work takes longer on both sides, so each target is judged as
  // measured and as scaled to that reference (over_node_in_node_starts × REFERENCE_NODE_MS).
  const judge = (what: string, name: string, limit: number) => {
    const r = row(name);
    const ms = r?.over_node_ms ?? Number.NaN;
    const scaled = (r?.over_node_in_node_starts ?? Number.NaN) * REFERENCE_NODE_MS;
    return `${what} within ${limit} ms of bare Node: ${ms <= limit ? 'MEETS' : 'MISSES'} as measured (${ms.toFixed(1)} ms, bare Node ${base.toFixed(1)} ms); ${scaled <= limit ? 'MEETS' : 'MISSES'} scaled to a ${REFERENCE_NODE_MS} ms bare Node (${scaled.toFixed(1)} ms)`;
  };
  const targets = [
    judge('--help', 'keel --help', 60),
    judge('a one-reply scripted run', 'keel run (one scripted reply)', 150),
    judge('a one-reply run against a local OpenAI-compatible server', SERVER_RUN, 250),
  ];
  for (const t of targets) console.log(t);
  // The main thread's event loop during the server run: its longest delay in each process (ms).
  const delayFile = join(home, 'loop-delay.txt');
  const delays: Record<string, number[]> = Object.fromEntries(Object.keys(LOOP_DELAY).map((k) => [k, []]));
  for (let rep = 0; rep < REPS; rep++) {
    for (const [name, counting] of Object.entries(LOOP_DELAY)) {
      writeFileSync(delayFile, '');
      const args = ['--import', join(ROOT, 'bench', 'support', 'loop-delay.mjs'), BIN, 'run', '--model', serverSpec, 'hello'];
      const r = spawnSync(process.execPath, args, {
        env: { ...env, ...counting, KEEL_BENCH_LOOP_DELAY: delayFile },
        cwd: ROOT,
        encoding: 'utf8',
      });
      if (r.status !== 0 || !r.stdout.includes('Hello.')) throw new Error(`${name} exited ${r.status}: ${r.stdout}${r.stderr}`);
      delays[name].push(Number(readFileSync(delayFile, 'utf8').trim()));
    }
  }
  const loopDelay = Object.entries(delays).map(([name, xs]) => ({
    name,
    max_delay_median_ms: median(xs),
    max_delay_p90_ms: quantile(xs, 0.9),
    max_delay_max_ms: Math.max(...xs),
  }));
  console.log(`\n${'server run, main thread event-loop delay (max)'.padEnd(60)} median ms    p90 ms    max ms`);
  for (const d of loopDelay)
    console.log(
      `${d.name.padEnd(60)} ${d.max_delay_median_ms.toFixed(1).padStart(9)} ${d.max_delay_p90_ms.toFixed(1).padStart(9)} ${d.max_delay_max_ms.toFixed(1).padStart(9)}`,
    );
  if (!process.argv.includes('--no-write')) {
    writeFileSync(
      join(ROOT, 'bench', 'results', 'startup.json'),
      `${JSON.stringify({ date: new Date().toISOString(), node: process.version, cpus: cpus().length, load_average_1m: loadavg()[0], reps: REPS, reference_node_ms: REFERENCE_NODE_MS, rows, targets, loop_delay: loopDelay }, null, 2)}\n`,
    );
  }
} finally {
  gateway.stop();
  rmSync(home, { recursive: true, force: true });
}
