/**
 * Packaging: `npm pack` ships what `keel demo` needs (the examples) and no tests; the packed tarball,
 * installed into a fresh project, runs `keel demo` and imports as a library.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT, tempHome } from '../support/helpers.js';

test('npm pack ships the examples and no tests; the tarball installed elsewhere runs keel demo and imports as a library', {
  timeout: 600_000,
}, () => {
  const out = tempHome('keel-pack-');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
  delete env.NODE_TEST_CONTEXT;
  execFileSync('npm', ['pack', '--pack-destination', out, '--ignore-scripts'], { cwd: ROOT, env, stdio: 'pipe' });
  const tarball = join(out, readdirSync(out).find((f) => f.endsWith('.tgz')) as string);
  const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).split('\n');
  assert.ok(
    files.some((f) => f.startsWith('package/examples/')),
    'the examples keel demo works',
  );
  assert.ok(files.includes('package/dist/src/index.js'));
  assert.ok(files.includes('package/dist/src/cli/main.js'));
  assert.ok(!files.some((f) => f.startsWith('package/test/') || f.startsWith('package/dist/test/')), 'no tests');
  assert.ok(!files.some((f) => f.startsWith('package/bench/')), 'no benchmarks');

  const project = tempHome('keel-install-');
  // better-sqlite3 builds its native addon at install (npm runs only the scripts a project allows).
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'try-keel', private: true, type: 'module', allowScripts: { 'better-sqlite3': true, esbuild: true } }),
  );
  const install = spawnSync('npm', ['install', tarball], { cwd: project, env, encoding: 'utf8' });
  assert.equal(install.status, 0, install.stdout + install.stderr);

  const demo = spawnSync(join(project, 'node_modules', '.bin', 'keel'), ['demo'], { cwd: project, env, encoding: 'utf8' });
  assert.equal(demo.status, 0, demo.stdout + demo.stderr);
  assert.match(demo.stdout, /10 passed, 0 failed/);
  // The installed CLI runs the compiled reference plugins (no TypeScript loader).
  assert.ok(files.includes('package/dist/plugins/calendar/index.js'));

  writeFileSync(
    join(project, 'use.mjs'),
    "import { Keel, defineTool } from 'keel';\nimport { mountForTest } from 'keel/testing';\nimport { RunLeg } from 'keel/internals';\nconsole.log(typeof Keel, typeof defineTool, typeof mountForTest, typeof RunLeg);\n",
  );
  const lib = spawnSync(process.execPath, ['use.mjs'], { cwd: project, env, encoding: 'utf8' });
  assert.equal(lib.status, 0, lib.stderr);
  assert.equal(lib.stdout.trim(), 'function function function function');
});
