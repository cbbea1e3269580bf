/**
 * Packaging: `npm pack` ships what `keel demo` needs (dist/, the examples) and no tests; the packed
 * tarball, installed into a new project outside the repository (test/support/installed.ts), runs
 * `keel demo` and imports as a library, without the optional packages (src/util/optional.ts), and a
 * feature that needs one of them says which to install.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { installCommand, OPTIONAL_PACKAGES } from '../../src/util/optional.js';
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
  // The library runs from its bundle (issue 49), its types from the tsc output.
  assert.ok(files.includes('package/dist/lib/index.js') && files.includes('package/dist/src/index.d.ts'));
  assert.ok(files.includes('package/dist/src/cli/main.js'));
  assert.ok(!files.some((f) => f.startsWith('package/test/') || f.startsWith('package/dist/test/')), 'no tests');
  assert.ok(!files.some((f) => f.startsWith('package/bench/')), 'no benchmarks');

  const demo = spawnSync(bin, ['demo'], { cwd: project, env, encoding: 'utf8' });
  assert.equal(demo.status, 0, demo.stdout + demo.stderr);
  assert.match(demo.stdout, /12 passed, 0 failed/);
  // The installed CLI runs the compiled reference plugins (no TypeScript loader).
  assert.ok(files.includes('package/dist/plugins/calendar/index.js'));

  const app = await appDir('use-');
  writeFileSync(
    join(app, 'use.mjs'),
    // The entry points share one copy of each module: the error keel/testing throws is keel's KeelError.
    "import { Keel, defineTool, KeelError } from 'keel';\nimport { mountForTest } from 'keel/testing';\nimport { RunLeg } from 'keel/internals';\nconst same = await mountForTest('/nowhere').then(() => false, (e) => e instanceof KeelError);\nconsole.log(typeof Keel, typeof defineTool, typeof mountForTest, typeof RunLeg, same);\n",
  );
  const lib = spawnSync(process.execPath, ['use.mjs'], { cwd: app, env, encoding: 'utf8' });
  assert.equal(lib.status, 0, lib.stderr);
  assert.equal(lib.stdout.trim(), 'function function function function true');
});

test('the installed Keel has none of the optional packages, nor a compiler; what needs one fails with exit 2 naming the npm install', {
  timeout: 1_200_000,
}, async () => {
  const { project, bin } = await installedKeel();
  const modules = join(project, 'node_modules');
  for (const group of Object.values(OPTIONAL_PACKAGES)) {
    for (const name of Object.keys(group)) assert.ok(!existsSync(join(modules, name)), `${name} is not installed`);
  }
  // tsx (TypeScript plugins on Node 20) brings esbuild; nothing brings the TypeScript compiler.
  assert.ok(!existsSync(join(modules, 'typescript')), 'no typescript');

  const home = await appDir('home-');
  const env = installEnv({ KEEL_HOME: home });
  const keel = (args: string[], extra: Record<string, string> = {}) =>
    spawnSync(bin, args, { cwd: project, env: { ...env, ...extra }, encoding: 'utf8' });

  const pg = keel(['runs', 'list', '--store', 'postgres://x@127.0.0.1:1/db']);
  assert.equal(pg.status, 2, pg.stdout + pg.stderr);
  assert.ok(pg.stderr.includes('PostgreSQL store'), pg.stderr);
  assert.ok(pg.stderr.includes(installCommand('pg')), pg.stderr);
  assert.ok(!pg.stderr.includes('    at '), 'one message, no stack');

  const model = keel(['run', '--model', 'openai:gpt-4o-mini', 'hello'], { OPENAI_API_KEY: 'sk-test' });
  assert.equal(model.status, 2, model.stdout + model.stderr);
  assert.ok(model.stderr.includes('openai:gpt-4o-mini'), model.stderr);
  assert.ok(model.stderr.includes(installCommand('@mariozechner/pi-ai')), model.stderr);

  const reply = `script:${join(home, 'reply.yaml')}`;
  writeFileSync(join(home, 'reply.yaml'), '- text: hello\n');
  const plain = keel(['run', '--model', reply, 'hi']);
  assert.equal(plain.status, 0, plain.stdout + plain.stderr);

  const tokens = keel(['run', '--model', reply, 'hi'], { KEEL_COUNT_TOKENS: '1' });
  assert.equal(tokens.status, 2, tokens.stdout + tokens.stderr);
  assert.ok(tokens.stderr.includes(installCommand('ai-tokenizer')), tokens.stderr);

  const otlp = keel(['run', '--model', reply, 'hi'], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' });
  assert.equal(otlp.status, 2, otlp.stdout + otlp.stderr);
  assert.ok(otlp.stderr.includes(installCommand('@opentelemetry/sdk-trace-base')), otlp.stderr);

  // S7: push turned on without web-push: the server does not start (it would not stay silent).
  const push = spawnSync(bin, ['serve', '--port', '0'], {
    cwd: project,
    env: { ...env, KEEL_PUSH_SUBJECT: 'mailto:ops@example.com' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(push.status, 2, push.stdout + push.stderr);
  assert.ok(push.stderr.includes(installCommand('web-push')), push.stderr);
});
