import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import type { ScriptEntry } from '../../src/models/script.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const FIXTURES = join(ROOT, 'test', 'fixtures', 'plugins');
export const KEEL_BIN = join(ROOT, 'bin', 'keel.js');

const madeDirs: string[] = [];

/**
 * A new folder under the system's temp folder, removed when the test process exits (each test file
 * runs in a process of its own). KEEL_KEEP_TEST_DIRS=1 keeps them, to look at after a failure.
 */
export function tempHome(prefix = 'keel-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (process.env.KEEL_KEEP_TEST_DIRS === '1') return dir;
  if (!madeDirs.length) process.once('exit', removeMadeDirs);
  madeDirs.push(dir);
  return dir;
}

function removeMadeDirs(): void {
  for (const dir of madeDirs) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
    } catch {
      // A child process still writing there (a worker being stopped): the system's temp cleaning gets it.
    }
  }
}

/** Writes a script:FILE for the scripted model and returns the model spec. */
export function script(dir: string, entries: ScriptEntry[], name = 'script.yaml'): string {
  const file = join(dir, name);
  writeFileSync(file, stringify(entries));
  return `script:${file}`;
}

/** Lines of a plugin's call log under home (the fixture plugins log each execution). */
export function calls(home: string, log: string): string[] {
  const f = join(home, log);
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean) : [];
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** The signal that ended the process, if one did (a crash point's SIGKILL). */
  signal?: NodeJS.Signals | null;
}

/**
 * Runs the real CLI (dist/) as a user would, in a new process, from the project folder (so bare
 * server names resolve in its node_modules/.bin) and without inherited plugin settings.
 */
export function keel(args: string[], env: Record<string, string> = {}, input?: string): Promise<CliResult> {
  ensureBuilt();
  const base = { ...process.env };
  delete base.KEEL_PLUGINS;
  delete base.KEEL_CONFIRM_ONCE_TOOLS;
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [KEEL_BIN, ...args], {
      cwd: ROOT,
      env: { ...base, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', rej);
    child.on('close', (code, signal) => res({ code: code ?? -1, stdout, stderr, signal }));
    child.stdin.end(input ?? '');
  });
}

export function json<T = Record<string, unknown>>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`not one JSON object on stdout (exit ${r.code}):\n${r.stdout}\nstderr:\n${r.stderr}`);
  }
}

let built = false;
/**
 * The CLI runs from dist/; `npm ci` builds it (prepare), and so does `npm test`. A test run alone
 * after a change to src/ or plugins/ would test the build from before it: refused, naming the file.
 */
export function ensureBuilt(): void {
  if (built) return;
  const main = join(ROOT, 'dist', 'cli', 'main.js');
  if (!existsSync(main)) throw new Error('dist/ is missing: run `npm run build` (npm ci does it through prepare)');
  const at = statSync(main).mtimeMs;
  const newer = newerSource(at);
  if (newer) throw new Error(`dist/ is older than ${relative(ROOT, newer)}: run \`npm run build\` first (npm test does)`);
  built = true;
}

/** A TypeScript source under src/ or plugins/ (tests aside) changed after `than`, if there is one. */
function newerSource(than: number): string | undefined {
  const walk = (dir: string): string | undefined => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name === 'node_modules' || e.name === '_test') continue;
        const found = walk(path);
        if (found) return found;
      } else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.test.ts') && statSync(path).mtimeMs > than) return path;
    }
    return undefined;
  };
  return walk(join(ROOT, 'src')) ?? walk(join(ROOT, 'plugins'));
}
