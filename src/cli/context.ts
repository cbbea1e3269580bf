/**
 * What every `keel` command's registration shares with the entry (main.ts): the io object, the exit
 * codes, the context a command runs in (its Keel, its run's end, its server), the option parsers
 * and where a command looked. Never holds a command's state itself: main() makes a fresh context for
 * each invocation, and a command prints only through its io, which escapes text for the terminal.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keelHome, PACKAGE_ROOT } from '../config/paths.js';
import type { Keel } from '../keel/keel.js';
import type { LoopEvent, RunResult } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { redact } from '../util/redact.js';
import { forTerminal } from '../util/terminal.js';
import type { Remote } from './remote.js';

/** Keel's version, from its package.json. */
export const VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
})();

export interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
  env: NodeJS.ProcessEnv;
}

/** Whether stdout and stderr are terminals (colour is for terminals only). */
export interface Tty {
  stdout: { isTTY?: boolean; columns?: number };
  stderr: { isTTY?: boolean; columns?: number };
}

/** How a command that ends with a run shows it. */
export interface Shown {
  json?: boolean;
  quiet?: boolean;
}

/** The exit codes, documented in the README and in `keel --help`. */
export const EXIT = {
  /** Done, or nothing to report. */
  ok: 0,
  /** The run failed (or a check found a failed, degraded or drifting plugin). */
  failed: 1,
  /** Bad input: a flag, an id, a file, the configuration. */
  usage: 2,
  /** The run is paused for the user: a question, a confirmation or an approval card. */
  paused: 3,
} as const;

/** What main() gives each command it registers: one per invocation. */
export interface CommandContext {
  /** Everything printed, escaped for the terminal (and coloured on one). */
  io: Io;
  /** A command that reads or writes runs opens the store; one that only looks at plugins does not. */
  getKeel: (withStore?: boolean) => Promise<Keel>;
  /** Spans to an OTLP collector when OTEL_EXPORTER_OTLP_ENDPOINT is set; returns how to stop them. */
  telemetry: () => Promise<(() => Promise<void>) | undefined>;
  /** The server named by --server or KEEL_SERVER, if any: the commands that can, talk to it. */
  remote: () => Remote | undefined;
  /** A run's end: its output, and the exit code (done, failed or paused). */
  finish: (r: RunResult, o: Shown) => void;
  /** The tool trace (and live output on a terminal), as the run goes: none with --json or --quiet. */
  printer: (o: Shown) => ((e: LoopEvent) => void) | undefined;
  /** Stops the live output, if any (before a result is printed). */
  stopLive: () => void;
  /** The command's exit code. */
  setCode: (code: number) => void;
  /** While a server runs: how a signal (or a closed pipe) stops it. */
  onStop: (stop: () => void) => void;
}

/**
 * Where a command looked (S4): the server, the store KEEL_STORE or --store names (its password
 * hidden), else the home's SQLite file's folder — so an empty list says which home it is.
 */
export function storeName(env: NodeJS.ProcessEnv, server: Remote | undefined): string {
  if (server) return server.base;
  const spec = env.KEEL_STORE?.trim();
  return spec ? redact(spec) : keelHome(env);
}

export function collectList(v: string, prev: string[]): string[] {
  return [...prev, v];
}

/** A yes/no question on the terminal (only called when stdin is a TTY). */
export async function askYesNo(
  question: string,
  streams: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream } = { input: process.stdin, output: process.stdout },
): Promise<boolean> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: streams.input, output: streams.output });
  // The question may hold a run's own question, a model's words: escaped for the terminal as all
  // the CLI prints (readline writes it straight to the output, past the io the CLI escapes).
  const shown = forTerminal(question);
  try {
    for (;;) {
      const a = (await rl.question(shown)).trim().toLowerCase();
      if (a === 'y' || a === 'yes') return true;
      if (a === 'n' || a === 'no') return false;
    }
  } finally {
    rl.close();
  }
}

export function positiveNumber(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new KeelError('bad_input', `${flag} must be a positive number, got "${v}"`);
  return n;
}

export function portNumber(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new KeelError('bad_input', `--port must be a port number (0-65535), got "${v}"`);
  return n;
}

export function positiveInt(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new KeelError('bad_input', `${flag} must be a positive integer, got "${v}"`);
  return n;
}
