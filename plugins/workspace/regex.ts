/**
 * A model-supplied regular expression runs in a worker thread with a deadline: a catastrophic
 * pattern such as `(a+)+$` over a crafted line cannot block Keel's event loop, it is stopped and
 * reported instead.
 */
import { Worker } from 'node:worker_threads';

export const REGEX_DEADLINE_MS = 2_000;

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const re = new RegExp(workerData.pattern, workerData.flags);
const hits = [];
workerData.lines.forEach((line, i) => { if (re.test(line)) hits.push(i); });
parentPort.postMessage(hits);
`;

/** Indexes of the lines the pattern matches, or 'timeout' when it ran past the deadline. */
export function matchLines(
  pattern: string,
  flags: string,
  lines: readonly string[],
  deadlineMs = REGEX_DEADLINE_MS,
): Promise<number[] | 'timeout'> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER, { eval: true, workerData: { pattern, flags, lines } });
    const timer = setTimeout(() => {
      void worker.terminate();
      resolve('timeout');
    }, deadlineMs);
    worker.once('message', (hits: number[]) => {
      clearTimeout(timer);
      void worker.terminate();
      resolve(hits);
    });
    worker.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}
