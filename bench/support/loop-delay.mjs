// bench/startup: `node --import ./bench/support/loop-delay.mjs bin/keel.js …` with KEEL_BENCH_LOOP_DELAY=FILE
// appends to FILE, as the process exits, the longest the main thread's event loop was held (perf_hooks
// monitorEventLoopDelay, max, in ms) while it ran: a token count or anything else done on the main
// thread while the model works shows here (live text deltas stall for as long). A bench tool only.
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

const file = process.env.KEEL_BENCH_LOOP_DELAY;
if (file && isMainThread) {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  process.once('exit', () => {
    h.disable();
    appendFileSync(file, `${(h.max / 1e6).toFixed(1)}\n`);
  });
}
