#!/usr/bin/env node
// The CLI runs from dist/cli, bundled by `npm run build` (which `npm ci` runs through `prepare`).
import { main } from '../dist/cli/main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`keel: ${err?.stack ?? err}\n`);
    process.exitCode = 1;
  },
);
