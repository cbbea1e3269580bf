/**
 * The layering of src/ (docs/rules.md, "Where the layers are"): each folder is a layer, and a
 * layer imports only from layers below it — type-only and dynamic imports included. So the shared
 * vocabulary (src/types) imports nothing of Keel's, and no folder cycle can form.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';

const SRC = join(ROOT, 'src');

/** Bottom first. '.' is the files directly in src/ (the public index): the top. */
export const LAYERS = [
  'types',
  'util',
  'config',
  'manifest',
  'tools',
  'policy',
  'models',
  'store',
  'prompt',
  'approvals',
  'plugin-host',
  'loop',
  'subagents',
  'keel',
  'server',
  'cli',
  '.',
] as const;

/**
 * Layers inside a layer, bottom first: a folder of src/server imports only from the folders of
 * src/server before it (and from the layers of src/ below server). '.' is the files directly in the
 * layer (serve.ts, index.ts): its top.
 */
export const SUBLAYERS: Record<string, readonly string[]> = {
  server: ['access', 'http', 'workers', 'alerts', 'mcp', 'console', 'ui', 'a2a', 'api', '.'],
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(p) ? [p] : [];
  });
}

/** A file's layer and, inside a layer that has sub-layers, its sub-layer ('.' for the layer's own files). */
function placeOf(src: string, file: string): { layer: string; sub?: string } {
  const parts = relative(src, file).split('/');
  if (parts.length === 1) return { layer: '.' };
  const layer = parts[0];
  if (!SUBLAYERS[layer]) return { layer };
  return { layer, sub: parts.length === 2 ? '.' : parts[1] };
}

const layerOf = (file: string) => placeOf(SRC, file).layer;

/** Every relative import of a file: static (`from '…'`, `import '…'`) and dynamic (`import('…')`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)'(\.{1,2}\/[^']+)'/gm)].map((m) => m[1]);
  return specs.map((s) => resolve(dirname(file), s));
}

/** Folders of `src` (and of each layer with sub-layers) that have no place in the order. */
export function unplaced(src: string): string[] {
  const dirs = (d: string) => readdirSync(d).filter((n) => statSync(join(d, n)).isDirectory());
  const out = dirs(src).filter((f) => !(LAYERS as readonly string[]).includes(f));
  for (const [layer, subs] of Object.entries(SUBLAYERS)) {
    if (!existsSync(join(src, layer))) continue;
    out.push(
      ...dirs(join(src, layer))
        .filter((f) => !subs.includes(f))
        .map((f) => `${layer}/${f}`),
    );
  }
  return out;
}

/** Every import of a file under `src` that points up (or sideways into another layer or sub-layer of the same rank). */
export function upwardImports(src: string): string[] {
  const rank = new Map<string, number>(LAYERS.map((l, i) => [l, i]));
  const upward: string[] = [];
  for (const file of files(src)) {
    const from = placeOf(src, file);
    for (const target of importsOf(file)) {
      const to = placeOf(src, target);
      const what = `${relative(src, file)} → ${relative(src, target)}`;
      if (to.layer !== from.layer) {
        if ((rank.get(to.layer) ?? Number.POSITIVE_INFINITY) >= (rank.get(from.layer) ?? -1)) {
          upward.push(`${what} (${from.layer} may not import ${to.layer})`);
        }
        continue;
      }
      const subs = SUBLAYERS[from.layer];
      if (!subs || to.sub === from.sub) continue;
      const a = subs.indexOf(from.sub ?? '.');
      const b = subs.indexOf(to.sub ?? '.');
      if (b < 0 || a < 0 || b >= a) upward.push(`${what} (${from.layer}/${from.sub} may not import ${from.layer}/${to.sub})`);
    }
  }
  return upward;
}

test('layers: every folder of src/, and of src/server, has a place in the layer order', () => {
  const missing = unplaced(SRC);
  assert.deepEqual(missing, [], `place these folders in LAYERS or SUBLAYERS: ${missing.join(', ')}`);
});

test("layers: no import points upward (or sideways into another layer of the same rank), src/server's folders included", () => {
  assert.deepEqual(upwardImports(SRC), []);
});

test('layers: the checker fails an upward import, between layers and between the folders of src/server, and an unplaced folder', () => {
  const src = join(mkdtempSync(join(tmpdir(), 'keel-layers-')), 'src');
  const put = (path: string, text: string) => {
    mkdirSync(dirname(join(src, path)), { recursive: true });
    writeFileSync(join(src, path), text);
  };
  put('types/index.ts', 'export type A = 1;\n');
  put('policy/gate.ts', "import type { A } from '../types/index.js';\nexport const g: A = 1;\n");
  put('server/access/tokens.ts', "import { g } from '../../policy/gate.js';\nexport const t = g;\n");
  put('server/api/app.ts', "import { t } from '../access/tokens.js';\nexport const a = t;\n");
  put('server/serve.ts', "import { a } from './api/app.js';\nexport const s = a;\n");
  assert.deepEqual(upwardImports(src), [], 'downward imports pass');
  assert.deepEqual(unplaced(src), []);
  put('types/bad.ts', "import { g } from '../policy/gate.js';\nexport const b = g;\n");
  put('server/access/bad.ts', "export const x = import('../api/app.js');\n");
  put('server/http/bad.ts', "import { s } from '../serve.js';\nexport const y = s;\n");
  put('server/newthing/x.ts', 'export const z = 1;\n');
  assert.deepEqual(upwardImports(src).sort(), [
    'server/access/bad.ts → server/api/app.js (server/access may not import server/api)',
    'server/http/bad.ts → server/serve.js (server/http may not import server/.)',
    'types/bad.ts → policy/gate.js (types may not import policy)',
  ]);
  assert.deepEqual(unplaced(src), ['server/newthing']);
});

test('layers: src/types imports nothing of Keel’s', () => {
  const outside = files(join(SRC, 'types')).flatMap((f) =>
    importsOf(f)
      .filter((t) => layerOf(t) !== 'types')
      .map((t) => `${relative(ROOT, f)} → ${relative(ROOT, t)}`),
  );
  assert.deepEqual(outside, []);
});

test('layers: the checker sees an upward import (it cannot pass by reading nothing)', () => {
  const gate = join(SRC, 'policy', 'gate.ts');
  assert.ok(
    importsOf(gate).some((t) => layerOf(t) === 'types'),
    'policy/gate.ts imports the shared types',
  );
  assert.ok(
    importsOf(join(SRC, 'cli', 'main.ts')).some((t) => layerOf(t) === 'keel'),
    'cli/main.ts imports the Keel facade',
  );
  assert.ok(
    importsOf(join(SRC, 'cli', 'main.ts')).some((t) => t.endsWith('demo.js')),
    'dynamic imports are read too',
  );
});

test('one table of sentences: the core writes no "not run" sentence into a result outside src/loop/sentences.ts', () => {
  const phrases = [/not run[:.]/i, /is unavailable in \$\{/, /Unknown tool '/, /outcome of .* is unknown/, /Repeat: /];
  const found: string[] = [];
  for (const file of files(SRC)) {
    if (file.endsWith(join('loop', 'sentences.ts'))) continue;
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      // Comments, and error messages (ModeDenied's is turned into SAY.deniedByMode by the pipeline), are not results.
      if (line.trim().startsWith('//') || line.trim().startsWith('*') || line.includes('super(')) return;
      if (phrases.some((p) => p.test(line))) found.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(found, []);
});
