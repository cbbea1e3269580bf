// code_exec: runs JavaScript in runner.mjs, in a separate node process under the permission model
// (it may read only the runner itself; no child processes, no workers), with a 64 MB heap, an empty
// environment, a wall-clock limit and a resident-memory watchdog. See runner.mjs for the vm side.
import { spawn } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PluginAPI } from '../../src/plugin-host/types.js';

export const RUNNER = realpathSync(join(dirname(fileURLToPath(import.meta.url)), 'runner.mjs'));
export const DEFAULT_TIMEOUT_S = 5;
export const MAX_TIMEOUT_S = 30;
export const HEAP_MB = 64;
/** Resident memory at which the watchdog stops the process (heap cap plus node's own footprint). */
export const RSS_LIMIT_MB = 256;
const MAX_OUTPUT = 20_000;
const MAX_BUFFER_BYTES = 16 * 1024 * 1024;
const MAX_CODE = 100_000;

/** No data of its own: `keel data reset` may still call it. */
export async function reset(_home: string): Promise<void> {}

/** Node 20 spells it --experimental-permission; later versions --permission. */
function permissionFlag(): string {
  return process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission';
}

export function childArgs(): string[] {
  return [
    permissionFlag(),
    `--allow-fs-read=${RUNNER}`,
    `--max-old-space-size=${HEAP_MB}`,
    // The runner's own realm never needs eval; the sandbox context keeps its own setting.
    '--disallow-code-generation-from-strings',
    // Lets the runner answer import() itself, with an error made inside the sandbox (see runner.mjs).
    '--experimental-vm-modules',
    '--no-warnings',
    RUNNER,
  ];
}

export interface RunOutcome {
  output: string;
  truncated: boolean;
  value?: string;
  error?: string;
  /** Why the process was stopped, if it was. */
  stopped?: 'timeout' | 'memory' | 'crash';
  detail?: string;
  ms: number;
}

function rssMb(pid: number): number | undefined {
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)\s+kB/);
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

export function runSandboxed(code: string, timeoutMs: number, signal?: AbortSignal): Promise<RunOutcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, childArgs(), { env: {}, cwd: tmpdir(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let stopped: RunOutcome['stopped'];
    const stop = (why: NonNullable<RunOutcome['stopped']>) => {
      stopped ??= why;
      child.kill('SIGKILL');
    };
    // The vm timeout stops the code itself; this one also covers startup and anything outside it.
    const timer = setTimeout(() => stop('timeout'), timeoutMs + 1500);
    const watchdog = setInterval(() => {
      const mb = child.pid ? rssMb(child.pid) : undefined;
      if (mb !== undefined && mb > RSS_LIMIT_MB) stop('memory');
    }, 100);
    const onAbort = () => stop('timeout');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      if (stdout.length < 4 * MAX_OUTPUT) stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      if (stderr.length < 8000) stderr += d;
    });
    child.stdin.on('error', () => {}); // the child may die before reading everything
    child.stdin.end(JSON.stringify({ code, timeoutMs, maxOutput: MAX_OUTPUT, maxBytes: MAX_BUFFER_BYTES }));
    child.on('close', (exitCode, sig) => {
      clearTimeout(timer);
      clearInterval(watchdog);
      signal?.removeEventListener('abort', onAbort);
      const ms = Date.now() - started;
      if (stopped) return resolve({ output: '', truncated: false, stopped, ms });
      if (/heap out of memory|Reached heap limit|allocation failed/i.test(stderr))
        return resolve({ output: '', truncated: false, stopped: 'memory', ms });
      try {
        const r = JSON.parse(stdout) as { output: string; truncated: boolean; value?: string; error?: string; timedOut: boolean };
        return resolve({
          output: r.output,
          truncated: r.truncated,
          value: r.value,
          error: r.error,
          stopped: r.timedOut ? 'timeout' : undefined,
          ms,
        });
      } catch {
        const why = stderr.trim().split('\n').slice(-3).join(' ').slice(0, 400);
        return resolve({ output: '', truncated: false, stopped: 'crash', detail: why || `exit ${exitCode ?? sig}`, ms });
      }
    });
  });
}

function render(r: RunOutcome, timeoutS: number) {
  const out = r.output ? `Output:\n${r.output}${r.truncated ? `\n… (output cut at ${MAX_OUTPUT} characters)` : ''}` : '';
  if (r.stopped === 'timeout') {
    return {
      content: `Timed out: the code was stopped after ${timeoutS} s.${out ? `\n${out}` : ' It printed nothing.'}`,
      is_error: true,
      details: r,
    };
  }
  if (r.stopped === 'memory') {
    return { content: `Stopped: the code ran out of memory (the sandbox allows a ${HEAP_MB} MB heap).`, is_error: true, details: r };
  }
  if (r.stopped === 'crash') return { content: `The sandbox crashed: ${r.detail}.`, is_error: true, details: r };
  if (r.error) return { content: `The code threw ${r.error}${out ? `\n${out}` : ''}`, is_error: true, details: r };
  const value = r.value === undefined || r.value === 'undefined' ? '' : `Result: ${r.value}`;
  const parts = [out, value].filter(Boolean);
  return { content: parts.length ? parts.join('\n') : 'The code ran without output, and its last expression was undefined.', details: r };
}

export default function setup(api: PluginAPI): void {
  api.registerTool({
    name: 'code_exec',
    description:
      'Run JavaScript in an isolated sandbox to calculate or check something exactly (math, loans and interest, days between dates, ' +
      'converting CSV to JSON, testing a regex) and get what it printed (console.log) and the value of its last expression ' +
      `(promises are awaited). No files, network, timers, packages or require; ${HEAP_MB} MB of memory.`,
    parameters: {
      type: 'object',
      properties: {
        code: {
          type: 'string',
          minLength: 1,
          maxLength: MAX_CODE,
          description: "JavaScript source, e.g. 'const r = 0.05 / 12; 1000 * r / (1 - (1 + r) ** -36)'.",
        },
        timeout_seconds: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: MAX_TIMEOUT_S,
          description: `Seconds before the code is stopped (default ${DEFAULT_TIMEOUT_S}, at most ${MAX_TIMEOUT_S}).`,
        },
      },
      required: ['code'],
      additionalProperties: false,
    },
    execute: async (args, ctx) => {
      if (typeof args.code !== 'string' || !args.code.trim()) return { content: 'code must be JavaScript source text', is_error: true };
      if (args.code.length > MAX_CODE) return { content: `code is longer than ${MAX_CODE} characters`, is_error: true };
      const t = args.timeout_seconds ?? DEFAULT_TIMEOUT_S;
      if (typeof t !== 'number' || !(t > 0) || t > MAX_TIMEOUT_S)
        return { content: `timeout_seconds must be more than 0 and at most ${MAX_TIMEOUT_S}`, is_error: true };
      return render(await runSandboxed(args.code, Math.round(t * 1000), ctx?.signal), t);
    },
  });
}
