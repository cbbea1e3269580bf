// After `tsc` compiles the bundled plugins into dist/plugins, this copies what they need beside the
// code (plugin.yaml, data files, helper scripts): the CLI loads the compiled plugins, so a run does
// not pay for a TypeScript loader. Tests and TypeScript sources are left out.
import { cpSync, existsSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const from = join(root, 'plugins');
const to = join(root, 'dist', 'plugins');
if (!existsSync(to)) throw new Error('dist/plugins is missing: run tsc -p tsconfig.build.json first');
cpSync(from, to, {
  recursive: true,
  filter: (src) => {
    const rel = relative(from, src);
    if (rel.split(sep).includes('_test') || rel.split(sep).includes('node_modules')) return false;
    return !src.endsWith('.ts');
  },
});
