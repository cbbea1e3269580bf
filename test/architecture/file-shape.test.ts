/**
 * Issue 39: files a newcomer can read in one sitting. Every source file opens with a comment that
 * says what it is for (and, where it matters, what it must never do), and none grows past
 * MAX_LINES: a file that does is two files, split along its seams (docs/rules.md, "Where the layers are").
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';

/** About 600 lines, with room for a comment or two: past this, split the file. */
export const MAX_LINES = 650;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : /\.tsx?$/.test(p) ? [p] : [];
  });
}

const SRC = sources(join(ROOT, 'src'));

test('issue 39: every source file opens with a comment saying what it is for', () => {
  assert.ok(SRC.length > 100);
  const bare = SRC.filter((f) => !/^(?:\/\*\*|\/\/)/.test(readFileSync(f, 'utf8'))).map((f) => relative(ROOT, f));
  assert.deepEqual(bare, []);
});

test(`issue 39: no source file is over ${MAX_LINES} lines`, () => {
  const long = SRC.map((f) => [relative(ROOT, f), readFileSync(f, 'utf8').split('\n').length] as const)
    .filter(([, n]) => n > MAX_LINES)
    .map(([f, n]) => `${f}: ${n} lines`);
  assert.deepEqual(long, []);
});
