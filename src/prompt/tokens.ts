import { Worker } from 'node:worker_threads';
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
 * The counting thread's code, plain JavaScript (a CommonJS script), so that the same string runs
 * from src/ through tsx and from the compiled dist/. It imports ai-tokenizer and an encoding from
 * the URLs the main thread resolved, each once, on first use: loading an encoding takes ~1 s of CPU,
 * which on the main thread held the event loop while the model's reply streamed in (issue 26).
 * Each message `{ id, enc, texts }` is answered `{ id, n }` (the tokens of all the texts) or
 * `{ id, error }`.
 */
const COUNTER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const tokenizers = new Map();
function tokenizer(enc) {
  let t = tokenizers.get(enc);
  if (!t) {
    t = Promise.all([import(workerData.lib), import(workerData.encodings[enc])]).then(([lib, encoding]) => new lib.default(encoding));
    tokenizers.set(enc, t);
  }
  return t;
}
parentPort.on('message', async ({ id, enc, texts }) => {
  try {
    const t = await tokenizer(enc);
    let n = 0;
    for (const text of texts) n += t.count(text);
    parentPort.postMessage({ id, n });
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
});
`;

interface Located {
  lib: string;
  encodings: Record<Encoding, string>;
}

/** A counting thread that failed this many times is not started again: the counts are absent. */
const MAX_FAILURES = 2;

let located: Promise<Located> | undefined;
let worker: Worker | undefined;
let failures = 0;
let lastId = 0;
/** The counts asked of the current thread and not yet answered. */
const pending = new Map<number, (n: number) => void>();
/** Callers waiting for a count (waitForCount): while there are any, the thread keeps the process alive. */
let waiting = 0;

/** Where ai-tokenizer and its encodings are, resolved here (the thread imports them by URL). */
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

/** R30: the counting thread never keeps the process alive, except while someone waits for a count. */
function holdOpen(): void {
  if (waiting > 0) worker?.ref();
  else worker?.unref();
}

/** The counting thread, started on first use; undefined once it has failed MAX_FAILURES times. */
function counter(where: Located): Worker | undefined {
  if (worker || failures >= MAX_FAILURES) return worker;
  const w = new Worker(COUNTER_CODE, { eval: true, workerData: where });
  // A thread that fails or ends: its unanswered counts are absent (-1), never a failed run.
  const lost = () => {
    if (worker !== w) return;
    worker = undefined;
    failures++;
    for (const answer of pending.values()) answer(-1);
    pending.clear();
    void w.terminate();
  };
  w.on('message', (m: { id?: unknown; n?: unknown }) => {
    const answer = typeof m?.id === 'number' ? pending.get(m.id) : undefined;
    if (!answer || typeof m.id !== 'number') return;
    pending.delete(m.id);
    answer(typeof m.n === 'number' && Number.isFinite(m.n) ? m.n : -1);
  });
  w.on('error', lost);
  w.on('messageerror', lost);
  w.on('exit', lost);
  worker = w;
  holdOpen();
  return w;
}

/**
 * Tokens of a request's fixed part: the system prompt plus the tool declarations, counted in a
 * worker thread (started on first use); -1 when that thread cannot count (it failed or ended).
 * Throws the missing-package error when ai-tokenizer is not installed. The thread never keeps the
 * process alive: a caller that must have the count waits for it with `waitForCount`.
 */
export async function countRequestTokens(system: string, tools: readonly DeclaredTool[], enc: Encoding): Promise<number> {
  const texts = [system, declarationsText(tools)];
  const w = counter(await locate());
  if (!w) return -1;
  const id = ++lastId;
  return new Promise<number>((resolve) => {
    pending.set(id, resolve);
    w.postMessage({ id, enc, texts });
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
