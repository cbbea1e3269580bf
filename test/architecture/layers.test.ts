/**
 * The layering of src/ (docs/rules.md, "Where the layers are"): each folder is a layer, and a
 * layer imports only from layers below it — type-only and dynamic imports included. So the shared
 * vocabulary (src/types) imports nothing of Keel's, and no folder cycle can form.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
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

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(p) ? [p] : [];
  });
}

const layerOf = (file: string) => {
  const rel = relative(SRC, file);
  return rel.includes('/') ? rel.split('/')[0] : '.';
};

/** Every relative import of a file: static (`from '…'`, `import '…'`) and dynamic (`import('…')`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)'(\.{1,2}\/[^']+)'/gm)].map((m) => m[1]);
  return specs.map((s) => resolve(dirname(file), s));
}

test('layers: every folder of src/ has a place in the layer order', () => {
  const folders = readdirSync(SRC).filter((n) => statSync(join(SRC, n)).isDirectory());
  const unplaced = folders.filter((f) => !(LAYERS as readonly string[]).includes(f));
  assert.deepEqual(unplaced, [], `place these folders in LAYERS: ${unplaced.join(', ')}`);
});

test('layers: no import points upward (or sideways into another layer of the same rank)', () => {
  const rank = new Map<string, number>(LAYERS.map((l, i) => [l, i]));
  const upward: string[] = [];
  for (const file of files(SRC)) {
    const from = layerOf(file);
    for (const target of importsOf(file)) {
      const to = layerOf(target);
      if (to === from) continue;
      if ((rank.get(to) ?? Number.POSITIVE_INFINITY) >= (rank.get(from) ?? -1)) {
        upward.push(`${relative(ROOT, file)} → ${relative(ROOT, target)} (${from} may not import ${to})`);
      }
    }
  }
  assert.deepEqual(upward, []);
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
