#!/usr/bin/env node
// The CLI runs from dist/ (built by `npm run build`, which `npm ci` runs through `prepare`).
import { main } from '../dist/src/cli/main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`keel: ${err?.stack ?? err}\n`);
    process.exitCode = 1;
  },
);
