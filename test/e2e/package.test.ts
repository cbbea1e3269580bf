/**
 * Packaging: `npm pack` ships what `keel demo` needs (dist/, the examples) and no tests; the packed
 * tarball, installed into a new project outside the repository (test/support/installed.ts), runs
 * `keel demo` and imports as a library.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { appDir, installEnv, installedKeel } from '../support/installed.js';

test('npm pack ships dist/ and the examples and no tests; the tarball installed elsewhere runs keel demo and imports as a library', {
  timeout: 1_200_000,
}, async () => {
  const { project, tarball, bin } = await installedKeel();
  const env = installEnv();
  const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).split('\n');
  assert.ok(
    files.some((f) => f.startsWith('package/examples/')),
    'the examples keel demo works',
  );
  assert.ok(files.includes('package/dist/src/index.js'));
  assert.ok(files.includes('package/dist/src/cli/main.js'));
  assert.ok(!files.some((f) => f.startsWith('package/test/') || f.startsWith('package/dist/test/')), 'no tests');
  assert.ok(!files.some((f) => f.startsWith('package/bench/')), 'no benchmarks');

  const demo = spawnSync(bin, ['demo'], { cwd: project, env, encoding: 'utf8' });
  assert.equal(demo.status, 0, demo.stdout + demo.stderr);
  assert.match(demo.stdout, /10 passed, 0 failed/);
  // The installed CLI runs the compiled reference plugins (no TypeScript loader).
  assert.ok(files.includes('package/dist/plugins/calendar/index.js'));

  const app = await appDir('use-');
  writeFileSync(
    join(app, 'use.mjs'),
    "import { Keel, defineTool } from 'keel';\nimport { mountForTest } from 'keel/testing';\nimport { RunLeg } from 'keel/internals';\nconsole.log(typeof Keel, typeof defineTool, typeof mountForTest, typeof RunLeg);\n",
  );
  const lib = spawnSync(process.execPath, ['use.mjs'], { cwd: app, env, encoding: 'utf8' });
  assert.equal(lib.status, 0, lib.stderr);
  assert.equal(lib.stdout.trim(), 'function function function function');
});
