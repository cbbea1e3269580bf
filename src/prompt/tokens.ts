/**
 * Token counts for the trace, with the optional ai-tokenizer. Counts only; never changes what is
 * sent.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { DeclaredTool } from '../types/index.js';
import { isInstalled, missingPackage, optionalImport } from '../util/optional.js';

export type Encoding = 'o200k_base' | 'claude';

/** What needs ai-tokenizer, an optional package (util/optional.ts). */
export const TOKEN_COUNTS = 'counting tokens into the trace (KEEL_COUNT_TOKENS=1)';

/**
 * Whether runs count tokens, and how (R30): KEEL_COUNT_TOKENS=1 counts every request and the run
 * waits for each count (`true`; an error naming the package when ai-tokenizer is not installed), 0
 * never; unset, real models are counted at best effort (`'best-effort'`: a count joins its request's
 * trace if it is ready in time, the run never waits for it) when ai-tokenizer is installed, and the
 * scripted model (tests, demos) is not counted.
 */
export function countsTokens(env: NodeJS.ProcessEnv, modelSpec: string): boolean | 'best-effort' {
  const asked = env.KEEL_COUNT_TOKENS;
  if (asked === '1') {
    if (!isInstalled('ai-tokenizer')) throw missingPackage('ai-tokenizer', TOKEN_COUNTS);
    return true;
  }
  return asked !== '0' && !modelSpec.startsWith('script:') && isInstalled('ai-tokenizer') && 'best-effort';
}

/** The encoding that best matches a model spec (Anthropic has its own; the rest are close to o200k). */
export function encodingFor(modelSpec: string): Encoding {
  return modelSpec.startsWith('anthropic:') ? 'claude' : 'o200k_base';
}

/** The declarations as a provider receives them: name, description and schema of each tool. */
export function declarationsText(tools: readonly DeclaredTool[]): string {
  return JSON.stringify(tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })));
}

/**
 * The counting process's code, plain JavaScript (a CommonJS script), so that the same string runs
 * from src/ through tsx and from the compiled dist/. It imports ai-tokenizer and an encoding from
 * the URLs Keel resolved (its first message), each once, on first use: loading an encoding takes
 * ~1 s of CPU, which on Keel's main thread held the event loop while the model's reply streamed in
 * (issue 26) — and which, in a worker thread, a process ending had to wait for, since a thread is
 * joined as its process exits and V8 cannot stop one mid-way through evaluating a module. A process
 * of its own is killed at once when Keel exits, and ends itself when Keel is gone (its channel
 * closes). Each message `{ id, enc, texts }` is answered `{ id, n }` (the tokens of all the texts)
 * or `{ id, error }`.
 */
const COUNTER_CODE = `
let where;
const tokenizers = new Map();
function tokenizer(enc) {
  let t = tokenizers.get(enc);
  if (!t) {
    t = Promise.all([import(where.lib), import(where.encodings[enc])]).then(([lib, encoding]) => new lib.default(encoding));
    tokenizers.set(enc, t);
  }
  return t;
}
process.on('disconnect', () => process.exit(0));
process.on('message', async (m) => {
  if (!where) { where = m; return; }
  const { id, enc, texts } = m;
  try {
    const t = await tokenizer(enc);
    let n = 0;
    for (const text of texts) n += t.count(text);
    process.send({ id, n });
  } catch (err) {
    process.send({ id, error: String((err && err.message) || err) });
  }
});
`;

interface Located {
  lib: string;
  encodings: Record<Encoding, string>;
}

/** A counting process that failed this many times is not started again: the counts are absent. */
const MAX_FAILURES = 2;

let located: Promise<Located> | undefined;
let worker: ChildProcess | undefined;
let failures = 0;
let lastId = 0;
/** The counts asked of the current counting process and not yet answered. */
const pending = new Map<number, (n: number) => void>();
/** Callers waiting for a count (waitForCount): while there are any, the counter keeps Keel's process alive. */
let waiting = 0;

/** Where ai-tokenizer and its encodings are, resolved here (the counter imports them by URL). */
function locate(): Promise<Located> {
  located ??= optionalImport('ai-tokenizer', TOKEN_COUNTS, async () => ({
    lib: import.meta.resolve('ai-tokenizer'),
    encodings: {
      o200k_base: import.meta.resolve('ai-tokenizer/encoding/o200k_base'),
      claude: import.meta.resolve('ai-tokenizer/encoding/claude'),
    },
  }));
  return located;
}

/** R30: the counter never keeps Keel's process alive, except while someone waits for a count. */
function holdOpen(): void {
  const w = worker as (ChildProcess & { channel?: { ref(): void; unref(): void } }) | undefined;
  if (waiting > 0) {
    w?.ref();
    w?.channel?.ref();
  } else {
    w?.unref();
    w?.channel?.unref();
  }
}

/** The node options a counter takes from Keel's process: its preloads (a loader, a --require), nothing else. */
function preloads(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const m = /^(--require|-r|--import|--loader|--experimental-loader)(=.*)?$/.exec(argv[i]);
    if (!m) continue;
    out.push(argv[i]);
    if (m[2] === undefined && i + 1 < argv.length) out.push(argv[++i]);
  }
  return out;
}

/** Kills the counter as Keel's process exits: it never outlives it, nor makes it wait. */
function killCounter(): void {
  worker?.kill();
}

/**
 * The counting process, started on first use; undefined once it has failed MAX_FAILURES times. It
 * runs with the process's own node options (a preload given to node applies to it too) and, by
 * KEEL_TOKEN_COUNTER=1 in its environment, knows itself for what it is.
 */
function counter(where: Located): ChildProcess | undefined {
  if (worker || failures >= MAX_FAILURES) return worker;
  const w = spawn(process.execPath, [...preloads(process.execArgv), '-e', COUNTER_CODE], {
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    env: { ...process.env, KEEL_TOKEN_COUNTER: '1' },
  });
  // A counter that fails or ends: its unanswered counts are absent (-1), never a failed run.
  const lost = () => {
    if (worker !== w) return;
    worker = undefined;
    process.off('exit', killCounter);
    failures++;
    for (const answer of pending.values()) answer(-1);
    pending.clear();
    w.kill();
  };
  w.on('message', (m: { id?: unknown; n?: unknown }) => {
    const answer = typeof m?.id === 'number' ? pending.get(m.id) : undefined;
    if (!answer || typeof m.id !== 'number') return;
    pending.delete(m.id);
    answer(typeof m.n === 'number' && Number.isFinite(m.n) ? m.n : -1);
  });
  w.on('error', lost);
  w.on('exit', lost);
  w.send(where);
  process.on('exit', killCounter);
  worker = w;
  holdOpen();
  return w;
}

/**
 * Tokens of a request's fixed part: the system prompt plus the tool declarations, counted in a
 * process of its own (started on first use); -1 when that process cannot count (it failed or
 * ended). Throws the missing-package error when ai-tokenizer is not installed. The counter never
 * keeps Keel's process alive: a caller that must have the count waits for it with `waitForCount`.
 */
export async function countRequestTokens(system: string, tools: readonly DeclaredTool[], enc: Encoding): Promise<number> {
  const texts = [system, declarationsText(tools)];
  const where = await locate();
  // Starting the counter (a process: ~10-30 ms of this thread's time to spawn) waits for the turn of
  // the event loop after this one, so the request it counts goes to the model first (issue 49).
  if (!worker) await new Promise((resolve) => setImmediate(resolve));
  const w = counter(where);
  if (!w) return -1;
  const id = ++lastId;
  return new Promise<number>((resolve) => {
    pending.set(id, resolve);
    w.send({ id, enc, texts }, (err) => {
      if (err && pending.delete(id)) resolve(-1);
    });
  });
}

/** Waits for a count from countRequestTokens, keeping the process alive until it is in (KEEL_COUNT_TOKENS=1). */
export async function waitForCount(count: Promise<number>): Promise<number> {
  waiting++;
  holdOpen();
  try {
    return await count;
  } finally {
    waiting--;
    holdOpen();
  }
}
