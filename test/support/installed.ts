/**
 * Keel as a user gets it: this repository packed (`npm pack --ignore-scripts`, from the dist/ that
 * `npm test` has just built) and the tarball installed with `npm install ../keel-0.1.0.tgz` into a new
 * project in a temp folder outside the repository, as the README's "Use Keel in your project" says.
 *
 * Contract of `installedKeel()`:
 * - Resolves to `{ project, tarball, bin }`: `project` is the installed app's folder (its package.json
 *   is `APP_PACKAGE_JSON`, `keel` is in its node_modules), `tarball` the packed file it was installed
 *   from (beside `project`), `bin` the installed CLI (`project/node_modules/.bin/keel`).
 * - One install per tarball content, shared: memoized in the process, and cached across the test
 *   processes of a run (the suite runs files two at a time in separate processes, and better-sqlite3
 *   compiles at every install, ~90 s). The cache is a folder under os.tmpdir() named by the tarball's
 *   sha256; a `mkdir` lock makes a second process wait for the first one's install instead of
 *   repeating it. A changed tree packs to a different sha and gets a fresh install.
 * - The project is shared and read-only: never `npm install` into it, nor change its package.json or
 *   node_modules. Put your own files in a folder of your own inside it (`appDir()`), where `keel`
 *   resolves from the shared node_modules; a test that needs more packages gives its folder its own
 *   package.json and installs them there.
 * - Run the installed CLI with `bin` (or `node_modules/.bin/keel` from inside `project`), with an env
 *   from `installEnv()` so the outer `npm test`'s npm_* variables do not leak into it.
 * - Rejects with npm's output when packing or installing fails; a failed install leaves no cache
 *   behind, so the next caller tries again.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './helpers.js';

export interface InstalledKeel {
  /** The app folder: package.json (APP_PACKAGE_JSON) and node_modules with keel in it. */
  project: string;
  /** The packed tarball the app was installed from (`../keel-0.1.0.tgz` from `project`). */
  tarball: string;
  /** The installed CLI: `project/node_modules/.bin/keel`. */
  bin: string;
}

/** The new app's package.json, as the README tells a user to write it. */
export const APP_PACKAGE_JSON = {
  name: 'try-keel',
  private: true,
  type: 'module',
  // better-sqlite3 builds its native addon at install; npm runs only the scripts a project allows.
  allowScripts: { 'better-sqlite3': true },
};

/** The install-wide wait for another process's install (better-sqlite3 compiles: minutes on 2 cores). */
const WAIT_MS = 20 * 60_000;
/** A lock with no pid written after this long is taken to be a crashed process's. */
const STALE_LOCK_MS = 30_000;

let memo: Promise<InstalledKeel> | undefined;

export function installedKeel(): Promise<InstalledKeel> {
  memo ??= install().catch((err) => {
    memo = undefined;
    throw err;
  });
  return memo;
}

/** A new empty folder inside the installed project, for one test's own files. */
export async function appDir(prefix = 'app-'): Promise<string> {
  const { project } = await installedKeel();
  return mkdtempSync(join(project, prefix));
}

/**
 * process.env without what `npm test` adds (npm_lifecycle_*, npm_package_*, npm_config_local_prefix…,
 * which would point an inner npm at this repository) and without the test runner's context.
 */
export function installEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const keep = new Set([
    'npm_config_cache',
    'npm_config_userconfig',
    'npm_config_globalconfig',
    'npm_config_cafile',
    'npm_config_nodedir',
    'npm_config_registry',
  ]);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) && !keep.has(k.toLowerCase())) continue;
    env[k] = v;
  }
  delete env.NODE_TEST_CONTEXT;
  delete env.KEEL_PLUGINS;
  delete env.KEEL_CONFIRM_ONCE_TOOLS;
  env.npm_config_audit = 'false';
  env.npm_config_fund = 'false';
  env.npm_config_update_notifier = 'false';
  return { ...env, ...extra };
}

async function install(): Promise<InstalledKeel> {
  const packed = await pack();
  const sha = createHash('sha256').update(readFileSync(packed)).digest('hex');
  const base = join(tmpdir(), `keel-installed-${sha.slice(0, 16)}`);
  const lock = `${base}.lock`;
  const ready = join(base, 'ready.json');
  const result: InstalledKeel = {
    project: join(base, 'app'),
    tarball: join(base, 'keel-0.1.0.tgz'),
    bin: join(base, 'app', 'node_modules', '.bin', 'keel'),
  };
  const deadline = Date.now() + WAIT_MS;
  try {
    for (;;) {
      if (existsSync(ready)) return result;
      if (takeLock(lock)) {
        try {
          if (existsSync(ready)) return result;
          rmSync(base, { recursive: true, force: true });
          mkdirSync(result.project, { recursive: true });
          copyFileSync(packed, result.tarball);
          writeFileSync(join(result.project, 'package.json'), `${JSON.stringify(APP_PACKAGE_JSON, null, 2)}\n`);
          await run('npm', ['install', '--prefer-offline', '../keel-0.1.0.tgz'], result.project);
          if (!existsSync(result.bin)) throw new Error(`npm install left no ${result.bin}`);
          writeFileSync(ready, `${JSON.stringify({ ...result, sha256: sha }, null, 2)}\n`);
          pruneOld(base);
          return result;
        } catch (err) {
          rmSync(base, { recursive: true, force: true });
          throw err;
        } finally {
          rmSync(lock, { recursive: true, force: true });
        }
      }
      if (Date.now() > deadline) throw new Error(`waited ${WAIT_MS / 60_000} min for another process's install at ${base}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    rmSync(join(packed, '..'), { recursive: true, force: true });
  }
}

/** mkdir is atomic: whoever creates the lock folder installs; a dead holder's lock is removed. */
function takeLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    writeFileSync(join(lock, 'pid'), String(process.pid));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  let pid = Number.NaN;
  try {
    pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    // not written yet, or just removed
  }
  const stale = Number.isFinite(pid) && pid > 0 ? !alive(pid) : ageMs(lock) > STALE_LOCK_MS;
  if (stale) rmSync(lock, { recursive: true, force: true });
  return false;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/** Installs older than a day are other trees' leftovers (~100 MB each). */
function pruneOld(keep: string): void {
  const dir = tmpdir();
  for (const name of readdirSync(dir)) {
    if (!name.startsWith('keel-installed-') || name.endsWith('.lock')) continue;
    const path = join(dir, name);
    if (path === keep || existsSync(`${path}.lock`)) continue;
    if (ageMs(join(path, 'ready.json')) > 24 * 3600_000) rmSync(path, { recursive: true, force: true });
  }
}

/** Packs ROOT (dist/ as built; no lifecycle scripts) into a new temp folder; returns the tarball. */
async function pack(): Promise<string> {
  const out = mkdtempSync(join(tmpdir(), 'keel-pack-'));
  const stdout = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', out], ROOT);
  const [info] = JSON.parse(stdout) as { filename: string }[];
  return join(out, info.filename);
}

function run(cmd: string, args: string[], cwd: string): Promise<string> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd, env: installEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', rej);
    child.on('close', (code) =>
      code === 0 ? res(stdout) : rej(new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${code}:\n${stdout}\n${stderr}`)),
    );
  });
}
