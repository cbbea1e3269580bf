#!/usr/bin/env node
// The CLI runs from dist/cli, bundled by `npm run build` (which `npm ci` runs through `prepare`).
import { readFileSync } from 'node:fs';

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

/**
 * `keel --help` and `keel --version` (issue 49: within 30 ms of bare Node): the help text the build
 * wrote from the program itself (dist/cli/help.txt, 80 columns: what the program prints on any
 * terminal at least that wide and in a pipe), and the version from package.json — without loading
 * the CLI. Anything else, or a missing file, takes the program's own way.
 */
function quick(args) {
  if (args.length !== 1) return undefined;
  const narrow = process.stdout.isTTY && process.stdout.columns && process.stdout.columns < 80;
  try {
    if ((args[0] === '--help' || args[0] === '-h') && !narrow) return readFileSync(new URL('../dist/cli/help.txt', import.meta.url), 'utf8');
    if (args[0] === '--version' || args[0] === '-V')
      return `${JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version}\n`;
  } catch {
    return undefined;
  }
  return undefined;
}

const text = quick(process.argv.slice(2));
if (text !== undefined) {
  process.stdout.write(text);
  exitWhenFlushed(0);
} else {
  import('../dist/cli/main.js').then(
    ({ main }) =>
      main(process.argv).then(exitWhenFlushed, (err) => {
        process.stderr.write(`keel: ${err?.stack ?? err}\n`);
        exitWhenFlushed(1);
      }),
    (err) => {
      process.stderr.write(`keel: ${err?.stack ?? err}\n`);
      exitWhenFlushed(1);
    },
  );
}
