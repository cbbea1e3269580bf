// After `tsc`, this bundles the library's entry points (keel, keel/server, keel/internals,
// keel/testing: dist/src/{index,server/index,internals,testing}.js and what they import) into
// dist/lib, as scripts/bundle-cli.mjs does for the CLI: an application's `import 'keel'` reads a
// handful of files instead of ~150 modules resolved, read and linked one by one (issue 49: ~60 ms of
// every cold process that embeds Keel). One build with code splitting: the entry points share their
// modules' single instances (a KeelError from `keel` is the one `keel/testing` throws), and each
// import() the library makes on first use stays a chunk of its own. Packages stay external; the
// types stay the tsc output in dist/src (package.json's "types" conditions). Decision 0008.
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'dist', 'src');
const outdir = join(root, 'dist', 'lib');
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: ['index', 'server/index', 'internals', 'testing'].map((e) => join(src, `${e}.js`)),
  outdir,
  outbase: src,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
});
