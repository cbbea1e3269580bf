/** `keel plugins init NAME`: a working TypeScript plugin — `keel plugins check` passes and its own `npm test` passes. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { json, keel, ROOT, tempHome } from '../support/helpers.js';

test('keel plugins init todo && keel plugins check todo && npm test inside the new plugin pass', async () => {
  const work = tempHome('keel-scaffold-');
  const dir = join(work, 'todo');
  const made = await keel(['plugins', 'init', 'todo', '--out', dir], { KEEL_HOME: work });
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, /npm install && npm test/);
  const manifest = readFileSync(join(dir, 'plugin.yaml'), 'utf8');
  assert.match(manifest, /effect: read[\s\S]*effect: write[\s\S]*effect: destructive[\s\S]*undo: restore_todo/);
  // What `npm install` would give it: Keel (this checkout) and tsx.
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'keel'), 'dir');
  symlinkSync(join(ROOT, 'node_modules', 'tsx'), join(dir, 'node_modules', 'tsx'), 'dir');

  const check = await keel(['plugins', 'check', dir, '--json'], { KEEL_HOME: work });
  assert.equal(check.code, 0, check.stdout + check.stderr);
  const report = json<{ plugins: { name: string; status: string; tools: { name: string; gate: string }[] }[] }>(check);
  const todo = report.plugins.find((p) => p.name === 'todo');
  assert.equal(todo?.status, 'loaded');
  assert.deepEqual(Object.fromEntries(todo?.tools.map((t) => [t.name, t.gate]) ?? []), {
    list_todos: 'none',
    add_todo: 'confirm_once',
    delete_todo: 'approval',
    restore_todo: 'none',
  });

  // As a user runs it: not as a child of this test runner (NODE_TEST_CONTEXT would fold its report into ours).
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '' };
  delete env.NODE_TEST_CONTEXT;
  const npm = spawnSync('npm', ['test'], { cwd: dir, encoding: 'utf8', env });
  assert.equal(npm.status, 0, npm.stdout + npm.stderr);
  assert.match(npm.stdout, /# pass 1/);

  const again = await keel(['plugins', 'init', 'todo', '--out', dir], { KEEL_HOME: work });
  assert.equal(again.code, 2, 'an existing plugin is not overwritten without --force');
  const bad = await keel(['plugins', 'init', 'To Do', '--out', join(work, 'x')], { KEEL_HOME: work });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /lowercase letters/);
});
