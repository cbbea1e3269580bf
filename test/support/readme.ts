/**
 * The README's steps as a newcomer runs them (issue 40). A code block the tests run is marked in
 * README.md by the line `<!-- readme-test: NAME -->` right before it; `readmeBlock(NAME)` returns its
 * text (de-indented when the block sits in a list), so a README that drifts from what works fails a
 * test. `readmeApp()` is an app folder outside the repository where Keel is installed from its
 * tarball, as "Use Keel in your project" says, for steps that install more into the app.
 * `shellSteps` runs a `sh` block's commands one at a time, as typed at a prompt.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from './helpers.js';
import { installEnv, installedKeel } from './installed.js';

export function readmeBlock(name: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const marker = `<!-- readme-test: ${name} -->`;
  const at = readme.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no ${marker}`);
  const m = /^([ \t]*)```[a-z]*\n([\s\S]*?)^[ \t]*```/m.exec(readme.slice(at + marker.length));
  if (!m) throw new Error(`no code block after ${marker}`);
  const indent = m[1];
  return m[2]
    .split('\n')
    .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
    .join('\n');
}

/**
 * A new app folder with Keel installed: a copy of the shared installed project (so its
 * `../keel-0.1.0.tgz` is the same tarball and npm keeps the install as it is, nothing compiled
 * again), beside it outside the repository. The caller removes it.
 */
export async function readmeApp(prefix = 'readme-app-'): Promise<string> {
  const { project } = await installedKeel();
  const dir = mkdtempSync(join(dirname(project), prefix));
  cpSync(project, dir, { recursive: true, verbatimSymlinks: true });
  return dir;
}

export function removeApp(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export interface Step {
  line: string;
  cwd: string;
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a `sh` block's commands one by one in bash, from `cwd`, with the environment a user's shell
 * would have (`installEnv`, plus `env`): a `cd` carries on to the next command, a comment is only a
 * comment, and `fill(line, done)` may put in what a placeholder stands for (an id an earlier command
 * printed). Stops at the first command that fails, and returns every step run.
 */
export function shellSteps(
  block: string,
  cwd: string,
  env: Record<string, string> = {},
  fill: (line: string, done: Step[]) => string = (l) => l,
): Step[] {
  const done: Step[] = [];
  let here = cwd;
  const e = installEnv(env);
  delete e.NODE_OPTIONS;
  delete e.NODE_TEST_CONTEXT;
  for (const raw of block.split('\n')) {
    if (!raw.trim() || raw.trim().startsWith('#')) continue;
    const line = fill(raw, done);
    const r = spawnSync('bash', ['-c', `${line}\nstatus=$?\npwd >&3\nexit $status`], {
      cwd: here,
      env: e,
      encoding: 'utf8',
      timeout: 600_000,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    const step = { line, cwd: here, code: r.status, stdout: r.stdout, stderr: r.stderr };
    done.push(step);
    const pwd = String(r.output[3] ?? '').trim();
    if (pwd) here = pwd;
    if (r.status !== 0) break;
  }
  return done;
}

/** A step's whole output, for an assertion message. */
export function shown(steps: Step[]): string {
  return steps.map((s) => `$ ${s.line}   (in ${s.cwd}, exit ${s.code})\n${s.stdout}${s.stderr}`).join('\n');
}
