/**
 * S1: `keel … | head -1` — a reader that stops early closes the pipe while keel still writes. The
 * command then ends quietly: no EPIPE stack, exit 0 (issue 27, item 11). Driven through a real pipe
 * from a child process: its read end is closed before (or after the first chunk of) what keel writes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { ensureBuilt, KEEL_BIN, ROOT, tempHome } from '../support/helpers.js';

interface Piped {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  read: string;
}

/** Runs keel with stdout on a pipe whose reader keeps `keepBytes` bytes (0: none) and then closes it. */
function piped(args: string[], keepBytes: number, env: Record<string, string> = {}): Promise<Piped> {
  ensureBuilt();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KEEL_BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let read = '';
    child.stderr.on('data', (d) => (stderr += d));
    const close = () => child.stdout.destroy();
    if (keepBytes === 0) close();
    else
      child.stdout.on('data', (d) => {
        read += d;
        if (read.length >= keepBytes) close();
      });
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`keel ${args.join(' ')} did not end after its reader closed the pipe; stderr:\n${stderr}`));
    }, 30_000);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(t);
      resolve({ code, signal, stderr, read });
    });
  });
}

function quiet(r: Piped, what: string): void {
  assert.doesNotMatch(r.stderr, /EPIPE|Unhandled 'error' event|at .*\(node:/, `${what}: no stack on stderr`);
  assert.equal(r.signal, null, `${what}: ended by itself`);
  assert.equal(r.code, 0, `${what}: exit 0 for a reader that stopped early; stderr:\n${r.stderr}`);
}

test('S1: keel help run | head — a reader that closed the pipe before keel wrote ends it quietly, exit 0', async () => {
  quiet(await piped(['help', 'run'], 0), 'help run, reader gone');
  quiet(await piped(['--help'], 0), '--help, reader gone');
});

test('S1: keel approvals list | head -1 and keel runs list | head -1 end quietly, exit 0', async () => {
  const home = tempHome();
  quiet(await piped(['approvals', 'list'], 0, { KEEL_HOME: home }), 'approvals list');
  quiet(await piped(['runs', 'list', '--json'], 0, { KEEL_HOME: home }), 'runs list --json');
});

test('S1: a reader that keeps the first line and then closes (head -1) — keel ends quietly, exit 0', async () => {
  const r = await piped(['help', 'run'], 1);
  quiet(r, 'help run | head -1');
  assert.match(r.read, /^Usage: keel run/, 'the reader got the start of the help');
});
