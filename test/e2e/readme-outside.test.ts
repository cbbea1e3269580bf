/**
 * The README's steps, run as written from folders outside the repository (issue 40): the Library
 * section's app (type-checked by TypeScript 7 and 5.9, run with tsx and the scripted model, its home
 * read by the CLI), the MCP Inspector's commands, and a plugin made and checked from a folder
 * outside any app with `keel` on the PATH. Each block is found by its `<!-- readme-test: NAME -->`
 * marker (test/support/readme.ts), so the README cannot drift from what works.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT, tempHome } from '../support/helpers.js';
import { APP_PACKAGE_JSON, installEnv, installedKeel } from '../support/installed.js';
import { readmeApp, readmeBlock, removeApp, shellSteps, shown } from '../support/readme.js';

function ok(steps: ReturnType<typeof shellSteps>, count: number): void {
  assert.equal(steps.length, count, shown(steps));
  assert.ok(
    steps.every((s) => s.code === 0),
    shown(steps),
  );
}

test("the README's app: installed into, type-checked by TypeScript 7 and 5.9 under strict, run with the scripted model; the CLI reads its home", {
  timeout: 1_200_000,
}, async (t) => {
  const { name: _n, ...pkg } = JSON.parse(readmeBlock('app-package-json'));
  const { name: _m, ...installed } = APP_PACKAGE_JSON;
  assert.deepEqual(pkg, installed, "the README's package.json is the one the installed app has");
  const dir = await readmeApp();
  t.after(() => removeApp(dir));

  // Issue 47: the app imports zod itself, so the README installs it — the version Keel depends on.
  const keelZod = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).dependencies.zod as string;
  assert.match(readmeBlock('app-setup'), new RegExp(`^npm install zod@${keelZod.replaceAll('.', '\\.')}\\s`, 'm'));
  ok(shellSteps(readmeBlock('app-setup'), dir), 2);
  const appZod = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).dependencies?.zod as string | undefined;
  assert.equal(appZod?.replace(/^\^/, ''), keelZod, 'the app depends on zod itself, at the version Keel uses');
  writeFileSync(join(dir, 'tsconfig.json'), readmeBlock('app-tsconfig'));
  writeFileSync(join(dir, 'app.ts'), readmeBlock('app-ts'));
  writeFileSync(join(dir, 'replies.yaml'), readmeBlock('app-replies'));
  const tsVersion = () => JSON.parse(readFileSync(join(dir, 'node_modules', 'typescript', 'package.json'), 'utf8')).version as string;
  // What `npm install -D typescript` gives today is TypeScript 7; should that change, 7 is still checked.
  if (!tsVersion().startsWith('7.')) ok(shellSteps('npm install -D typescript@7', dir), 1);
  assert.match(tsVersion(), /^7\./);

  const steps = shellSteps(readmeBlock('app-run'), dir);
  ok(steps, 3);
  assert.equal(steps[0].stdout + steps[0].stderr, '', `TypeScript ${tsVersion()}: no error`);
  assert.equal(steps[1].stdout, 'Delete note #1\n  buy milk; cannot be undone\ndone Deleted the note about milk.\n', shown(steps));
  assert.match(steps[2].stdout, /^run_\S+\s+done\s.*Delete the note about milk/m, 'the CLI lists the run the app made');

  // Keel's own declarations need no @types/node: an app that uses nothing of Node's checks without it.
  const bare = join(dir, 'bare');
  mkdirSync(bare);
  writeFileSync(
    join(bare, 'bare.ts'),
    "import { Keel, type RunResult } from 'keel';\nawait using keel = new Keel({ home: './.keel' });\nexport const r: RunResult | undefined = undefined;\n",
  );
  writeFileSync(
    join(bare, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, target: 'esnext', module: 'nodenext', types: [], noEmit: true }, include: ['*.ts'] }),
  );
  const noNode = shellSteps('npx tsc -p bare', dir);
  ok(noNode, 1);

  // TypeScript 5.9 on the same app, the same tsconfig.json: the repository's `typescript-api`
  // devDependency (Keel itself is built with TypeScript 7).
  const ts59Package = join(ROOT, 'node_modules', 'typescript-api');
  assert.match(JSON.parse(readFileSync(join(ts59Package, 'package.json'), 'utf8')).version, /^5\.9\./);
  const ts59 = spawnSync(process.execPath, [join(ts59Package, 'bin', 'tsc'), '-p', '.'], {
    cwd: dir,
    encoding: 'utf8',
    env: installEnv(),
  });
  assert.equal(ts59.status, 0, ts59.stdout + ts59.stderr);
});

test("the README's MCP Inspector commands on Node 20: the card's id, approved with keel approvals, then the call's result", {
  timeout: 1_200_000,
}, async (t) => {
  const dir = await readmeApp();
  t.after(() => removeApp(dir));
  const home = tempHome('keel-readme-mcp-');
  const steps = shellSteps(readmeBlock('mcp-inspector'), dir, { KEEL_HOME: home }, (line, done) => {
    const id = done.map((s) => /approval (apr_\w+)/.exec(s.stdout)?.[1]).find(Boolean);
    return id ? line.replaceAll('apr_…', id) : line;
  });
  ok(steps, 5);
  assert.match(steps[2].stdout, /Waiting for approval apr_\w+|approval apr_\w+/, shown(steps));
  assert.match(steps[3].stdout, /approved/);
  assert.match(steps[4].stdout, /Moved 1 email/, shown(steps));
});

test("the README's plugin steps from a folder outside any app, with keel on the PATH as npm link puts it", {
  timeout: 1_200_000,
}, async () => {
  const { project } = await installedKeel();
  const keelDir = realpathSync(join(project, 'node_modules', 'keel'));
  const work = tempHome('keel-readme-plugin-');
  const bin = join(work, 'bin');
  mkdirSync(bin);
  symlinkSync(join(keelDir, 'bin', 'keel.js'), join(bin, 'keel'));
  const user = join(work, 'user');
  mkdirSync(user);
  const steps = shellSteps(readmeBlock('plugin-steps'), user, {
    PATH: `${bin}:${process.env.PATH}`,
    KEEL_HOME: join(work, 'home'),
  });
  ok(steps, 4);
  assert.match(steps[0].stdout, /Made .*notes/);
  assert.match(steps[1].stdout, /notes .*loaded|loaded/);
  assert.match(steps[2].stdout, /# pass 1/);
  assert.match(steps[3].stdout, /1 plugin\(s\): 1 loaded, 0 failed, 0 degraded, 0 drift row\(s\)/);
});
