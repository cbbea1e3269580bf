/**
 * Issue 39: the docs point at files that exist. Every path of the repository that docs/rules.md
 * names (each rule's "Enforced in"), and those the README and docs/ (decision records included)
 * name, is there — so a file moved or split cannot leave a rule pointing at nothing. A benchmark
 * named by its folder form (`bench/loop`) is its script (`bench/loop.ts`).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';

const TOP = /^(?:src|test|bench|docs|scripts|examples|plugins|bin|\.ci)\//;

/** The repository paths a Markdown text names in backticks (`src/loop/engine.ts`, `test/e2e/`, `src/x.ts:12`). */
export function pathsNamed(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(/`([^`\s]+)`/g)) {
    const p = m[1].replace(/[:#].*$/, '');
    if (!TOP.test(p) || /[*{}<>$]/.test(p)) continue;
    out.add(p);
  }
  return [...out];
}

const exists = (p: string) => existsSync(join(ROOT, p)) || (/^bench\/[\w-]+$/.test(p) && existsSync(join(ROOT, `${p}.ts`)));

const DOCS = [
  'docs/rules.md',
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md') && f !== 'rules.md')
    .map((f) => `docs/${f}`),
  ...readdirSync(join(ROOT, 'docs', 'decisions'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/decisions/${f}`),
];

test('issue 39: every path docs/rules.md names exists (each rule’s "Enforced in" points at a real file)', () => {
  const named = pathsNamed(readFileSync(join(ROOT, 'docs/rules.md'), 'utf8'));
  assert.ok(named.filter((p) => p.startsWith('src/')).length > 50, `docs/rules.md names its enforcing files (found ${named.length})`);
  assert.deepEqual(
    named.filter((p) => !exists(p)),
    [],
  );
});

test('issue 39: every repository path the README and docs/ name exists', () => {
  const missing = DOCS.flatMap((doc) =>
    pathsNamed(readFileSync(join(ROOT, doc), 'utf8'))
      .filter((p) => !exists(p))
      .map((p) => `${doc}: ${p}`),
  );
  assert.deepEqual(missing, []);
});

test('issue 39: the path reader finds a moved file (it cannot pass by reading nothing)', () => {
  const text = '*Enforced in:* `src/server/app.ts`, `src/loop/engine.ts:12`, `bench/loop`; not `keel serve` nor `src/*.ts`.';
  assert.deepEqual(pathsNamed(text), ['src/server/app.ts', 'src/loop/engine.ts', 'bench/loop']);
  assert.deepEqual(
    pathsNamed(text).filter((p) => !exists(p)),
    ['src/server/app.ts'],
  );
});
