// After `tsc`, this bundles the CLI (dist/src/cli/main.js and what it imports, statically or on first
// use) into dist/cli: a handful of files instead of ~90 modules for Node to resolve, read and link
// one by one, which was ~40 ms of every one-reply `keel run` (bench/startup). Packages stay external
// (loaded from node_modules as before); the library's entry points stay the tsc output in dist/src.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'cli');
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: [join(root, 'dist', 'src', 'cli', 'main.js')],
  outdir,
  bundle: true,
  // Each dynamic import() stays a chunk of its own, loaded on first use (keel --help loads no store).
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
});

// `keel --help` as the program prints it in a pipe (80 columns), written beside the bundle so that
// bin/keel.js prints it without loading the CLI (issue 49). The file is absent while this runs, so
// the program itself answers; test/cli/quick-help.test.ts checks the two agree.
const help = execFileSync(process.execPath, [join(root, 'bin', 'keel.js'), '--help'], {
  cwd: root,
  encoding: 'utf8',
  env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '' },
});
writeFileSync(join(outdir, 'help.txt'), help);
