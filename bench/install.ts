/**
 * bench/install: what depending on Keel costs a new application that uses only SQLite — the
 * README's "Use Keel in your project" by tarball. Packs the current tree (building dist/ first when
 * it is stale: `npm run prepare`), installs the tarball into a new project in a temp folder, and
 * measures the install's wall and CPU time (best of --reps) and node_modules' size (du, MB = MiB).
 * Writes bench/results/install.json with these figures as `after` beside `before`.
 *
 * `before` is the package as it was before the optional packages (issue 24), measured once and kept
 * in the results file with its commit: the old commit cannot be re-measured cheaply on every run.
 * To measure a commit again: `--baseline COMMIT` (a git worktree of it, `npm ci` there — which
 * builds it — then `npm pack`; ~10 min on 2 cores), or `--baseline-tarball FILE --baseline COMMIT`
 * for a tarball already packed from that commit.
 *
 * Conditions, written into the file: the npm cache is warm (~/.npm holds every package from earlier
 * installs, so the time is npm's work and the native build, not downloads); better-sqlite3 compiles
 * from source at each install (no prebuilt binary is downloaded here). With a baseline, before and
 * after take turns, rep by rep. The wall time follows the machine's load; the CPU time (GNU time:
 * npm and all it ran) much less. An install with --ignore-scripts is timed beside each: npm's own
 * work (resolve, extract, link), without the native build.
 *
 *   node --import tsx bench/install.ts [--reps 2] [--no-write] [--baseline COMMIT [--baseline-tarball FILE]]
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS = join(ROOT, 'bench', 'results', 'install.json');
const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const REPS = Number(arg('reps') ?? '2');
const WRITE = !process.argv.includes('--no-write');
/** The goal set in issue 24: under half of the 294 MB the issue measured. */
const GOAL_MB = 147;

/** The new app's package.json, as the README writes it for a tarball install. */
const APP = {
  name: 'try-keel',
  private: true,
  type: 'module',
  allowScripts: { 'better-sqlite3': true },
};

interface Figures {
  commit: string;
  /** MiB of disk node_modules takes (du -sk / 1024). */
  node_modules_mb: number;
  /** MiB of its files' bytes (du --apparent-size). */
  apparent_mb: number;
  packages: number;
  /** Wall time of `npm install ../keel-0.1.0.tgz`, each rep. */
  install_s: number[];
  best_install_s: number;
  /** Wall time of `npm install --ignore-scripts`: npm's own work, without better-sqlite3's build. */
  install_without_scripts_s: number[];
  best_install_without_scripts_s: number;
  /** CPU time (user + system) of that npm and all it ran, each rep (GNU time). */
  install_cpu_s?: number[];
  best_install_cpu_s?: number;
  /** The largest top-level entries of node_modules (scopes as one), MiB. */
  largest: Record<string, number>;
  /** `npm ls typescript esbuild`: who brings a compiler along. */
  compilers: string;
}

function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_(lifecycle|package|command|config_local_prefix)/i.test(k)) e[k] = v;
  return { ...e, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
}

function sh(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, env: env(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
}

const mb = (kib: number) => Math.round((kib / 1024) * 10) / 10;
const duKib = (path: string, apparent = false) =>
  Number(sh('du', ['-sk', ...(apparent ? ['--apparent-size'] : []), path], ROOT).split('\t')[0]);

/** Packs `dir` (dist/ as built; no lifecycle scripts) into `out`; returns the tarball. */
function pack(dir: string, out: string): string {
  const [info] = JSON.parse(sh('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', out], dir)) as { filename: string }[];
  return join(out, info.filename);
}

/** One install of `tarball` into a new app: its wall and CPU seconds, and the app (left for `figures`). */
function installOnce(tarball: string, extra: string[] = []): { wall: number; cpu: number | undefined; app: string } {
  const base = mkdtempSync(join(tmpdir(), 'keel-bench-install-'));
  const app = join(base, 'app');
  mkdirSync(app);
  copyFileSync(tarball, join(base, 'keel-0.1.0.tgz'));
  writeFileSync(join(app, 'package.json'), `${JSON.stringify(APP, null, 2)}\n`);
  // GNU time gives the CPU seconds of npm and everything it ran (the compiler among them): less
  // sensitive than the wall time to what else the machine is doing.
  const timeFile = join(base, 'time.txt');
  const timed = existsSync('/usr/bin/time');
  const [cmd, args] = timed
    ? ['/usr/bin/time', ['-f', '%U %S', '-o', timeFile, 'npm', 'install', ...extra, '../keel-0.1.0.tgz']]
    : ['npm', ['install', ...extra, '../keel-0.1.0.tgz']];
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd: app, env: env(), encoding: 'utf8' });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`npm install exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  const cpu = timed
    ? readFileSync(timeFile, 'utf8')
        .trim()
        .split('\n')
        .at(-1)
        ?.split(' ')
        .reduce((a, b) => a + Number(b), 0)
    : undefined;
  return { wall: Math.round(wall * 10) / 10, cpu: cpu === undefined ? undefined : Math.round(cpu * 10) / 10, app };
}

function figures(app: string, commit: string, runs: { wall: number; cpu: number | undefined }[], bare: number[]): Figures {
  const modules = join(app, 'node_modules');
  const entries = readdirSync(modules).filter((n) => !n.startsWith('.'));
  const sizes = entries.map((n) => [n, mb(duKib(join(modules, n)))] as const).sort((a, b) => b[1] - a[1]);
  const lock = JSON.parse(readFileSync(join(modules, '.package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
  const ls = spawnSync('npm', ['ls', 'typescript', 'esbuild'], { cwd: app, env: env(), encoding: 'utf8' });
  const cpus = runs.map((r) => r.cpu).filter((c): c is number => c !== undefined);
  return {
    commit,
    node_modules_mb: mb(duKib(modules)),
    apparent_mb: mb(duKib(modules, true)),
    packages: Object.keys(lock.packages).length,
    install_s: runs.map((r) => r.wall),
    best_install_s: Math.min(...runs.map((r) => r.wall)),
    ...(cpus.length ? { install_cpu_s: cpus, best_install_cpu_s: Math.min(...cpus) } : {}),
    install_without_scripts_s: bare,
    best_install_without_scripts_s: Math.min(...bare),
    largest: Object.fromEntries(sizes.slice(0, 12)),
    compilers: ls.stdout.trim().split('\n').slice(1).join('\n') || '(none)',
  };
}

/**
 * Installs each tarball `REPS` times, taking turns (before, after, before, after…) so that a busy
 * phase of the machine weighs on both alike; figures from the last install of each.
 */
function measure(tarballs: { tarball: string; commit: string; label: string }[]): Figures[] {
  const runs = tarballs.map(() => [] as { wall: number; cpu: number | undefined }[]);
  const bare = tarballs.map(() => [] as number[]);
  const last: string[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    tarballs.forEach((t, i) => {
      const b = installOnce(t.tarball, ['--ignore-scripts']);
      rmSync(dirname(b.app), { recursive: true, force: true });
      bare[i].push(b.wall);
      const r = installOnce(t.tarball);
      runs[i].push(r);
      console.log(
        `  ${t.label} (${t.commit}) install ${rep + 1}/${REPS}: ${r.wall} s wall${r.cpu === undefined ? '' : `, ${r.cpu} s CPU`}; without scripts ${b.wall} s`,
      );
      if (last[i]) rmSync(dirname(last[i]), { recursive: true, force: true });
      last[i] = r.app;
    });
  }
  return tarballs.map((t, i) => {
    const f = figures(last[i], t.commit, runs[i], bare[i]);
    rmSync(dirname(last[i]), { recursive: true, force: true });
    return f;
  });
}

function headCommit(): string {
  const sha = sh('git', ['rev-parse', '--short', 'HEAD'], ROOT).trim();
  const dirty = sh('git', ['status', '--porcelain', '--untracked-files=no'], ROOT).trim() !== '';
  return dirty ? `${sha} (with uncommitted changes)` : sha;
}

/** A commit's package, packed from a worktree built by its own `npm ci`. */
function packCommit(commit: string, out: string): string {
  const tree = mkdtempSync(join(tmpdir(), 'keel-bench-baseline-'));
  sh('git', ['worktree', 'add', '--detach', tree, commit], ROOT);
  try {
    console.log(`  npm ci in a worktree of ${commit} (builds it)…`);
    sh('npm', ['ci', '--prefer-offline'], tree);
    return pack(tree, out);
  } finally {
    sh('git', ['worktree', 'remove', '--force', tree], ROOT);
  }
}

const previous = existsSync(RESULTS) ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as Record<string, unknown>) : {};
const out = mkdtempSync(join(tmpdir(), 'keel-bench-pack-'));
try {
  let before = previous.before as Figures | undefined;
  const baseline = arg('baseline');
  const tarballs: { tarball: string; commit: string; label: string }[] = [];
  if (baseline) {
    const commit = sh('git', ['rev-parse', '--short', baseline], ROOT).trim();
    tarballs.push({ tarball: arg('baseline-tarball') ?? packCommit(baseline, out), commit, label: 'before' });
  }
  // dist/ as the sources are now: prepare builds only when dist/.build-stamp is stale.
  sh('npm', ['run', 'prepare'], ROOT);
  tarballs.push({ tarball: pack(ROOT, out), commit: headCommit(), label: 'after' });
  const measured = measure(tarballs);
  const after = measured.at(-1) as Figures;
  if (baseline) before = measured[0];

  const line = (label: string, f: Figures) =>
    `${label} (${f.commit}): ${f.node_modules_mb} MB, ${f.packages} packages, best install ${f.best_install_s} s wall${f.best_install_cpu_s === undefined ? '' : `, ${f.best_install_cpu_s} s CPU`}, ${f.best_install_without_scripts_s} s without scripts`;
  const lines = [...(before ? [line('before', before)] : []), line('after', after)];
  const verdict = `node_modules under ${GOAL_MB} MB (half of the 294 MB issue 24 measured): ${after.node_modules_mb < GOAL_MB ? 'MEETS' : 'MISSES'} (${after.node_modules_mb} MB${before ? `, ${Math.round((after.node_modules_mb / before.node_modules_mb) * 100)}% of before` : ''})`;
  for (const l of [...lines, verdict]) console.log(l);
  if (WRITE) {
    writeFileSync(
      RESULTS,
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          node: process.version,
          npm: sh('npm', ['--version'], ROOT).trim(),
          cpus: cpus().length,
          load_average_1m: loadavg()[0],
          app: APP,
          conditions:
            "npm cache warm (every package already in ~/.npm); better-sqlite3 compiles from source at each install (no prebuilt binary is downloaded); wall and CPU time of `npm install ../keel-0.1.0.tgz` in a new app, best of the reps, before and after taking turns; sizes from du (MiB). On a shared machine the wall time follows its load (load_average_1m); the CPU time much less. install_without_scripts_s: npm install --ignore-scripts, npm's own work without the native build",
          reps: REPS,
          before,
          after,
          goal: verdict,
          ...(previous.other_installs ? { other_installs: previous.other_installs } : {}),
        },
        null,
        2,
      )}\n`,
    );
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
