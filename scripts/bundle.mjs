// After `tsc`, this bundles what runs of Keel from the compiled modules in dist/src (decision 0008),
// so Node reads a handful of files instead of resolving, reading and linking ~90-150 ES modules one
// by one — a third of a one-reply `keel run`, and ~220 ms of every cold process that imports Keel
// (issue 49). Packages stay external; each import() made on first use stays a chunk of its own.
//
// - dist/cli: the CLI (dist/src/cli/main.js and what it imports), which bin/keel.js runs; and
//   dist/cli/help.txt, `keel --help` as the program prints it in a pipe (80 columns), which bin/keel.js
//   prints without loading the CLI (test/cli/startup-imports.test.ts checks the two agree).
// - dist/lib: the library's entry points (keel, keel/server, keel/internals, keel/testing), in one
//   build so they share one instance of each module (a KeelError keel/testing throws is keel's); their
//   types stay the tsc output in dist/src (package.json's "types" conditions).
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'dist', 'src');

async function bundle(entries, outdir, outbase) {
  rmSync(outdir, { recursive: true, force: true });
  await build({
    entryPoints: entries.map((e) => join(src, `${e}.js`)),
    outdir,
    outbase,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
}

// The CLI's single entry: its chunks sit beside main.js (dist/cli/main.js, as bin/keel.js imports it).
await bundle(['cli/main'], join(root, 'dist', 'cli'), join(src, 'cli'));
await bundle(['index', 'server/index', 'internals', 'testing'], join(root, 'dist', 'lib'), src);

// The help file is absent while this runs (dist/cli was just made anew), so the program answers.
const help = execFileSync(process.execPath, [join(root, 'bin', 'keel.js'), '--help'], {
  cwd: root,
  encoding: 'utf8',
  env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '' },
});
writeFileSync(join(root, 'dist', 'cli', 'help.txt'), help);
