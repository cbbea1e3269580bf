#!/usr/bin/env node
// The CLI runs from dist/cli, bundled by `npm run build` (which `npm ci` runs through `prepare`).
import { main } from '../dist/cli/main.js';

/**
 * Ends the process once its output is written. main() awaits everything a command does (a server
 * or a chat until it is stopped, a run until its store is closed); what the event loop still holds
 * then is the runtime's own housekeeping (a module file's close on the thread pool), which kept
 * every command alive ~20 ms longer (bench/startup).
 */
function exitWhenFlushed(code) {
  process.exitCode = code;
  // A stream whose reader closed it (`keel … | head -1`) never drains: nothing more can reach it.
  const pending = [process.stdout, process.stderr].filter((s) => s.writableLength > 0 && !s.destroyed);
  if (pending.length === 0) return process.exit();
  let left = pending.length;
  for (const s of pending)
    s.once('drain', () => {
      if (--left === 0) process.exit();
    });
}

main(process.argv).then(exitWhenFlushed, (err) => {
  process.stderr.write(`keel: ${err?.stack ?? err}\n`);
  exitWhenFlushed(1);
});
