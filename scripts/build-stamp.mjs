// Lets `prepare` skip the build when dist/ is already built from the sources as they are, so that
// installing Keel from a folder (or `npm ci` again in a checkout) does not rebuild it every time.
//
//   node scripts/build-stamp.mjs begin   (first step of `npm run build`) hashes the inputs and
//                                        removes the stamp: a build that fails leaves none
//   node scripts/build-stamp.mjs end     (last step) writes dist/.build-stamp with that hash
//   node scripts/build-stamp.mjs check   (`prepare`) exits 0 when dist/ needs no build: the stamp
//                                        matches the inputs, or this is a packed Keel (no src/; its
//                                        dist/ ships built and it has no compiler); exits 1 otherwise
//
// The inputs are what the build reads: src/, plugins/ (without node_modules), the build's scripts,
// the tsconfig files and package.json. The hash is taken at `begin`, so a file changed during the
// build makes the stamp stale rather than wrongly fresh.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.build-stamp');
const pending = join(root, 'dist', '.build-stamp.pending');
const INPUTS = [
  'src',
  'plugins',
  'scripts/copy-plugin-assets.mjs',
  'scripts/bundle.mjs',
  'bin/keel.js',
  'scripts/build-stamp.mjs',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
];

function files(path) {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .filter((name) => name !== 'node_modules')
    .sort()
    .flatMap((name) => files(join(path, name)));
}

function inputsHash() {
  const h = createHash('sha256');
  for (const input of INPUTS) {
    for (const file of files(join(root, input))) {
      h.update(relative(root, file).split(sep).join('/'));
      h.update('\0');
      h.update(readFileSync(file));
      h.update('\0');
    }
  }
  return h.digest('hex');
}

const read = (file) => (existsSync(file) ? readFileSync(file, 'utf8').trim() : '');

switch (process.argv[2]) {
  case 'begin':
    rmSync(stamp, { force: true });
    mkdirSync(dirname(pending), { recursive: true });
    writeFileSync(pending, inputsHash());
    break;
  case 'end':
    if (existsSync(pending)) renameSync(pending, stamp);
    break;
  case 'check': {
    if (!existsSync(join(root, 'src'))) {
      console.log('keel: a packed Keel ships dist/ built; nothing to build');
      process.exit(0);
    }
    const built = read(stamp);
    const outputs = ['dist/cli/main.js', 'dist/src/index.js', 'dist/plugins'].every((f) => existsSync(join(root, f)));
    if (built && outputs && built === inputsHash()) {
      console.log('keel: dist/ is up to date with the sources (dist/.build-stamp); build skipped');
      process.exit(0);
    }
    process.exit(1);
    break;
  }
  default:
    console.error('usage: node scripts/build-stamp.mjs begin|end|check');
    process.exit(2);
}
