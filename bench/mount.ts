/**
 * bench/mount: how long mountPlugins takes to load and validate 100 plugins of 20 tools each
 * (target from the "Foundation" issue and #18: under 300 ms in a fresh process with an empty cache).
 *
 *   node --import tsx bench/mount.ts [--runs 9] [--plugins 100] [--tools 20] [--baseline ROOT] [--no-write]
 *
 * The plugins are generated into a temp folder: realistic manifests (every effect, confirm once and
 * never, pinned writes, destructive tools with an undo, guidance, pinned, answers_directly,
 * contract_modes) and plain .js entry modules whose tools have JSON Schema parameters of 2-6
 * properties. Every measurement runs in a fresh `node` process importing dist/ (what the CLI runs),
 * so neither the ESM module cache nor a warmed-up JIT carries over between runs:
 *
 * - bare `node -e 0`, measured between the processes below in the same run: what any fresh process
 *   costs on this machine now, so every figure can be read against it;
 * - fresh process, empty cache (cold_ms): the first mountPlugins call in a process with a new
 *   KEEL_HOME (median over --runs processes; the first of them also alone as first_ms), and the whole
 *   process's wall time, spawn to exit, over bare node (process.cold_over_node_ms);
 * - fresh process, warm cache (cached_ms): the same in one KEEL_HOME whose manifest cache an earlier
 *   process filled — every later `keel` command — with its whole-process time too;
 * - in-process (warm_ms, in_process_ms): one process mounting fresh copies of the tree again (JIT
 *   warm, Keel's modules loaded, entry modules not cached, no manifest cache);
 * - phases, each alone in fresh processes: reading+parsing+validating the 100 manifests, compiling
 *   the 2,000 parameter schemas with ajv (and, for comparison, only checking them against the
 *   meta-schema), importing the 100 entry modules;
 * - import_ms (loading Keel's own modules, not part of mountPlugins) and cli_ms (wall time of
 *   `keel plugins check DIR --json`, node start-up included), for context.
 *
 * With --baseline ROOT (another build's root, whose dist/ holds the code before a change), each
 * cold run is paired with one against ROOT, alternating which goes first, so a before/after
 * comparison sees the same machine load.
 *
 * Writes bench/results/mount.json.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST_HOST = join(ROOT, 'dist', 'src', 'plugin-host', 'host.js');

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}
const RUNS = Number(arg('runs', '9'));
const PLUGINS = Number(arg('plugins', '100'));
const TOOLS = Number(arg('tools', '20'));
const WARM_COPIES = 5;
const WRITE = !process.argv.includes('--no-write');
const BASELINE = arg('baseline', '');
const TARGET_MS = 300;

// --- a deterministic generator --------------------------------------------------------------

let seed = 42;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];

const NOUNS = ['invoice', 'contact', 'ticket', 'order', 'report', 'event', 'file', 'note', 'task', 'message', 'account', 'payment'];
const VERBS_READ = ['find', 'list', 'get', 'search', 'summarize'];
const VERBS_WRITE = ['create', 'update', 'tag', 'assign', 'schedule'];
const PROPS: [string, Record<string, unknown>][] = [
  ['query', { type: 'string', description: 'Words to look for', minLength: 1 }],
  ['id', { type: 'string', description: 'The record id', pattern: '^[a-z0-9-]+$' }],
  ['limit', { type: 'integer', minimum: 1, maximum: 100, description: 'How many at most' }],
  ['status', { type: 'string', enum: ['open', 'pending', 'closed'] }],
  ['tags', { type: 'array', items: { type: 'string' }, maxItems: 10 }],
  ['since', { type: 'string', format: 'date', description: 'ISO date' }],
  ['notify', { type: 'boolean', description: 'Tell the owner' }],
  ['amount', { type: 'number', minimum: 0 }],
  ['owner', { type: 'object', properties: { name: { type: 'string' }, email: { type: 'string' } }, required: ['email'] }],
];

interface GenTool {
  name: string;
  manifest: string[];
  parameters: Record<string, unknown>;
}

/** Tool i of a plugin: in each block of ten, 5 reads, 2 confirm-once writes, 1 confirm-never write (the undo), 1 pinned write, 1 destructive. */
function genTool(plugin: string, i: number): GenTool {
  const kind = i % 10;
  const noun = NOUNS[(i + plugin.length) % NOUNS.length];
  const verb = kind <= 4 ? VERBS_READ[kind] : kind === 7 ? 'restore' : kind === 9 ? 'delete' : pick(VERBS_WRITE);
  const name = `${plugin}_${verb}_${noun}_${i}`;
  const m: string[] = [`  ${name}:`];
  if (kind <= 4) {
    m.push('    effect: read');
    if (kind === 0 && rand() < 0.3) m.push('    pinned: true');
    if (kind === 4 && rand() < 0.3) m.push('    answers_directly: true');
  } else if (kind === 5) {
    m.push('    effect: write');
  } else if (kind === 6) {
    m.push('    effect: write', '    confirm: once');
    if (rand() < 0.3) m.push('    contract_modes: declare');
  } else if (kind === 7) {
    m.push('    effect: write', '    confirm: never');
  } else if (kind === 8) {
    m.push('    effect: write', '    approval: pinned');
  } else {
    m.push('    effect: destructive', `    undo: ${plugin}_restore_${NOUNS[(i - 2 + plugin.length) % NOUNS.length]}_${i - 2}`);
  }
  if (rand() < 0.3) m.push(`    guidance: Use ${name} only when the user names a ${noun}; say which one you picked.`);
  const n = 2 + Math.floor(rand() * 5);
  const chosen = [...PROPS].sort(() => rand() - 0.5).slice(0, n);
  const parameters = {
    type: 'object',
    properties: Object.fromEntries(chosen.map(([k, v]) => [k, structuredClone(v)])),
    required: [chosen[0][0]],
    additionalProperties: false,
  };
  return { name, manifest: m, parameters };
}

export function generate(dir: string): { tools: number; schemas: Record<string, unknown>[] } {
  const schemas: Record<string, unknown>[] = [];
  for (let p = 0; p < PLUGINS; p++) {
    const plugin = `bench${String(p).padStart(3, '0')}`;
    const tools = Array.from({ length: TOOLS }, (_, i) => genTool(plugin, i));
    const pdir = join(dir, plugin);
    mkdirSync(pdir, { recursive: true });
    const manifest = [
      `name: ${plugin}`,
      'version: 1.0.0',
      `description: Generated plugin ${p} for bench/mount`,
      'provides: [tool]',
      'tools:',
      ...tools.flatMap((t) => t.manifest),
    ];
    writeFileSync(join(pdir, 'plugin.yaml'), `${manifest.join('\n')}\n`);
    const defs = tools.map(
      (t) => `  api.registerTool({
    name: ${JSON.stringify(t.name)},
    description: ${JSON.stringify(`${t.name.replaceAll('_', ' ')} (generated)`)},
    parameters: ${JSON.stringify(t.parameters)},
    execute: async (args) => ${JSON.stringify(`${t.name} ok`)} + JSON.stringify(args),
  });`,
    );
    writeFileSync(join(pdir, 'index.js'), `// Generated by bench/mount.ts\nexport default function setup(api) {\n${defs.join('\n')}\n}\n`);
    schemas.push(...tools.map((t) => t.parameters));
  }
  return { tools: PLUGINS * TOOLS, schemas };
}

// --- the child process ------------------------------------------------------------------------

/** Runs in a fresh `node` process; prints one JSON object. */
const DRIVER = `
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
const [mode, root, ...dirs] = process.argv.slice(2);
const now = () => performance.now();
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const dist = (p) => import(pathToFileURL(join(root, 'dist', 'src', p)).href);
const out = {};
if (mode === 'mount') {
  const t0 = now();
  const { mountPlugins } = await dist('plugin-host/host.js');
  out.import_ms = now() - t0;
  out.mounts = [];
  out.mounts_cpu = [];
  for (const dir of dirs) {
    const t1 = now();
    const c1 = cpu();
    const reg = await mountPlugins([dir], { home: process.env.BENCH_HOME || dir });
    out.mounts.push(now() - t1);
    out.mounts_cpu.push(cpu() - c1);
    const bad = reg.plugins.filter((p) => p.status !== 'loaded' || p.drift.length);
    if (bad.length) throw new Error('bench plugins did not all load: ' + JSON.stringify(bad[0]));
    out.plugins = reg.plugins.length;
    out.tools = reg.pool.length;
  }
} else if (mode === 'manifests') {
  const { loadManifestFile } = await dist('manifest/load.js');
  const names = readdirSync(dirs[0]).sort();
  const t0 = now();
  const c0 = cpu();
  for (const n of names) {
    const r = await loadManifestFile(join(dirs[0], n, 'plugin.yaml'), n);
    if (!r.ok) throw new Error(JSON.stringify(r.issues[0]));
  }
  out.ms = now() - t0;
  out.cpu_ms = cpu() - c0;
} else if (mode === 'ajv' || mode === 'ajv_validate_schema') {
  const { Ajv } = await import(pathToFileURL(join(root, 'node_modules', 'ajv', 'dist', 'ajv.js')).href);
  const schemas = JSON.parse(readFileSync(join(dirs[0], '..', 'schemas.json'), 'utf8'));
  const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false });
  const t0 = now();
  const c0 = cpu();
  for (const s of schemas) {
    if (mode === 'ajv') ajv.compile({ type: 'object', ...s });
    else if (!ajv.validateSchema({ type: 'object', ...s })) throw new Error('invalid');
  }
  out.ms = now() - t0;
  out.cpu_ms = cpu() - c0;
} else if (mode === 'imports') {
  const names = readdirSync(dirs[0]).sort();
  const t0 = now();
  const c0 = cpu();
  for (const n of names) await import(pathToFileURL(join(dirs[0], n, 'index.js')).href);
  out.ms = now() - t0;
  out.cpu_ms = cpu() - c0;
}
process.stdout.write(JSON.stringify(out));
`;

function child(driver: string, args: string[], env: Record<string, string> = {}): Record<string, unknown> {
  const r = spawnSync(process.execPath, [driver, ...args], { encoding: 'utf8', cwd: ROOT, env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`bench child failed (${args[0]}):\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const round = (x: number) => Math.round(x * 10) / 10;

// --- main -------------------------------------------------------------------------------------

function main(): void {
  if (!existsSync(DIST_HOST)) execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  const work = mkdtempSync(join(tmpdir(), 'keel-bench-mount-'));
  try {
    const plugins = join(work, 'plugins');
    const { tools, schemas } = generate(plugins);
    writeFileSync(join(work, 'schemas.json'), JSON.stringify(schemas));
    const copies = Array.from({ length: WARM_COPIES }, (_, i) => {
      const c = join(work, `copy${i}`);
      cpSync(plugins, c, { recursive: true });
      return c;
    });
    const driver = join(work, 'driver.mjs');
    writeFileSync(driver, DRIVER);

    type MountOut = { import_ms: number; mounts: number[]; mounts_cpu: number[]; plugins: number; tools: number };
    /** A child's output and its wall time from spawn to exit (node start-up, Keel's imports and the mount). */
    const timed = (args: string[], env: Record<string, string> = {}) => {
      const t0 = performance.now();
      const out = child(driver, args, env) as MountOut;
      const wall = performance.now() - t0;
      if (out.plugins !== PLUGINS || out.tools !== tools) throw new Error(`mounted ${out.plugins} plugins, ${out.tools} tools`);
      return { out, wall };
    };
    /** Bare `node -e 0`: what any fresh process costs on this machine now, measured between the runs it is compared with. */
    const node: number[] = [];
    const bareNode = () => {
      const t0 = performance.now();
      const r = spawnSync(process.execPath, ['-e', '0']);
      node.push(performance.now() - t0);
      if (r.status !== 0) throw new Error('node -e 0 failed');
    };

    // Fresh process, empty cache: a new KEEL_HOME per process, the first mount a user ever does.
    const cold: number[] = [];
    const coldCpu: number[] = [];
    const coldWall: number[] = [];
    const imports: number[] = [];
    const base = { cold: [] as number[], cpu: [] as number[] };
    const baselineRun = () => {
      const r = child(driver, ['mount', resolve(BASELINE), plugins], { BENCH_HOME: mkdtempSync(join(work, 'home-base-')) }) as MountOut;
      base.cold.push(r.mounts[0]);
      base.cpu.push(r.mounts_cpu[0]);
    };
    for (let i = 0; i < RUNS; i++) {
      if (BASELINE && i % 2 === 1) baselineRun();
      bareNode();
      const { out: r, wall } = timed(['mount', ROOT, plugins], { BENCH_HOME: mkdtempSync(join(work, 'home-')) });
      if (BASELINE && i % 2 === 0) baselineRun();
      cold.push(r.mounts[0]);
      coldCpu.push(r.mounts_cpu[0]);
      coldWall.push(wall);
      imports.push(r.import_ms);
    }
    const first = cold[0];
    // Fresh process, warm cache: later mounts in one KEEL_HOME (every `keel` command mounts every plugin).
    const sharedHome = mkdtempSync(join(work, 'home-shared-'));
    child(driver, ['mount', ROOT, plugins], { BENCH_HOME: sharedHome });
    const cached: number[] = [];
    const cachedWall: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      bareNode();
      const { out, wall } = timed(['mount', ROOT, plugins], { BENCH_HOME: sharedHome });
      cached.push(out.mounts[0]);
      cachedWall.push(wall);
    }
    // In-process: one process mounting fresh copies of the tree again and again (JIT warm, Keel's
    // modules loaded, the entry modules not cached; a new KEEL_HOME, so no manifest cache).
    const inProcess = timed(['mount', ROOT, plugins, ...copies], { BENCH_HOME: mkdtempSync(join(work, 'home-')) }).out;
    const warm = inProcess.mounts.slice(1);
    const warmCpu = inProcess.mounts_cpu.slice(1);
    const phase = (mode: string) => {
      const rs = Array.from({ length: RUNS }, () => child(driver, [mode, ROOT, plugins]) as { ms: number; cpu_ms: number });
      return { wall_ms: round(median(rs.map((r) => r.ms))), cpu_ms: round(median(rs.map((r) => r.cpu_ms))) };
    };
    const phases = {
      manifests_parse_validate: phase('manifests'),
      ajv_compile: phase('ajv'),
      ajv_validate_schema_only: phase('ajv_validate_schema'),
      entry_import: phase('imports'),
    };
    const cli: number[] = [];
    for (let i = 0; i < Math.min(RUNS, 5); i++) {
      const t0 = performance.now();
      const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'keel.js'), 'plugins', 'check', plugins, '--json'], {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, KEEL_HOME: work },
      });
      cli.push(performance.now() - t0);
      if (r.status !== 0) throw new Error(`keel plugins check exited ${r.status}: ${r.stderr}`);
    }

    const result = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      cpu: cpus()[0]?.model ?? 'unknown',
      loadavg_1m: round(loadavg()[0]),
      plugins: PLUGINS,
      tools,
      runs: RUNS,
      target_ms: TARGET_MS,
      node_e0_ms: round(median(node)),
      first_ms: round(first),
      cold_ms: round(median(cold)),
      median_ms: round(median(cold)),
      cached_ms: round(median(cached)),
      cold_min_ms: round(Math.min(...cold)),
      cold_max_ms: round(Math.max(...cold)),
      cold_cpu_ms: round(median(coldCpu)),
      warm_ms: round(median(warm)),
      warm_cpu_ms: round(median(warmCpu)),
      within_target: median(cold) < TARGET_MS,
      // Whole processes (spawn to exit: node start-up, Keel's imports, the mount), against bare node.
      process: {
        node_e0_ms: round(median(node)),
        cold_ms: round(median(coldWall)),
        cold_over_node_ms: round(median(coldWall) - median(node)),
        cached_ms: round(median(cachedWall)),
        cached_over_node_ms: round(median(cachedWall) - median(node)),
      },
      in_process_ms: round(median(warm)),
      in_process_over_node_e0: round(median(warm) / median(node)),
      phases,
      import_keel_ms: round(median(imports)),
      cli_plugins_check_ms: round(median(cli)),
      ...(BASELINE
        ? {
            baseline: {
              root: resolve(BASELINE),
              cold_ms: round(median(base.cold)),
              cold_min_ms: round(Math.min(...base.cold)),
              cold_cpu_ms: round(median(base.cpu)),
            },
          }
        : {}),
    };
    const f = (p: { wall_ms: number; cpu_ms: number }) => `${p.wall_ms} ms (cpu ${p.cpu_ms})`;
    console.log(
      `bench/mount: ${PLUGINS} plugins × ${TOOLS} tools = ${tools} tools, ${RUNS} fresh processes (node ${process.version}, ${result.cpus} cpus, load ${result.loadavg_1m})`,
    );
    const vsNode = (ms: number) => `${round(ms - median(node))} ms over bare node, ×${(ms / median(node)).toFixed(1)}`;
    console.log(`  bare \`node -e 0\`   median ${result.node_e0_ms} ms (the same run, between the processes below)`);
    console.log(
      `  fresh process, empty cache: whole process ${result.process.cold_ms} ms (${vsNode(median(coldWall))}); mountPlugins ${result.cold_ms} ms`,
    );
    console.log(
      `  fresh process, warm cache:  whole process ${result.process.cached_ms} ms (${vsNode(median(cachedWall))}); mountPlugins ${result.cached_ms} ms`,
    );
    console.log(
      `  in-process (JIT warm, modules loaded): mountPlugins ${result.in_process_ms} ms (×${result.in_process_over_node_e0} bare node)`,
    );
    console.log(
      `  mountPlugins cold   median ${result.cold_ms} ms (cpu ${result.cold_cpu_ms}; first ${result.first_ms}, min ${result.cold_min_ms}, max ${result.cold_max_ms})  target < ${TARGET_MS} ms: ${result.within_target ? 'met' : 'MISSED'}`,
    );
    console.log(`  mountPlugins warm   median ${result.warm_ms} ms (cpu ${result.warm_cpu_ms}; same process, fresh copies)`);
    console.log(
      `  mountPlugins cached median ${result.cached_ms} ms (fresh process, a KEEL_HOME whose manifest cache is warm: every later keel command)  target < ${TARGET_MS} ms: ${result.cached_ms < TARGET_MS ? 'met' : 'MISSED'}`,
    );
    console.log(
      `  phases, each alone in fresh processes: manifests ${f(phases.manifests_parse_validate)} · ajv compile ${f(phases.ajv_compile)} · ajv validateSchema only ${f(phases.ajv_validate_schema_only)} · entry imports ${f(phases.entry_import)}`,
    );
    if (result.baseline) {
      const b = result.baseline;
      console.log(
        `  baseline (${b.root}): cold median ${b.cold_ms} ms (cpu ${b.cold_cpu_ms}, min ${b.cold_min_ms}), interleaved with the runs above`,
      );
    }
    console.log(
      `  context: importing Keel's modules ${result.import_keel_ms} ms · \`keel plugins check\` wall ${result.cli_plugins_check_ms} ms`,
    );
    if (WRITE) {
      mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
      writeFileSync(join(ROOT, 'bench', 'results', 'mount.json'), `${JSON.stringify(result, null, 2)}\n`);
      console.log('  wrote bench/results/mount.json');
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && pathToFileURL(resolve(process.argv[1])).href === import.meta.url) main();
