/**
 * A plugin made where a user stands (issue 24): the installed `keel plugins init NAME` in a temp
 * folder outside the repository and outside the app Keel is installed in, then `keel plugins check
 * NAME` with nothing installed in the plugin (M1: its `keel` and `zod` imports resolve to the
 * mounting Keel's own copies), then the plugin's own `npm install && npm test` (it links the Keel
 * that made it; no registry has a `keel`). Beside it, hand-written plugins importing zod (the
 * README's example: ES module, CommonJS under tsx, compiled JavaScript) check clean with nothing
 * installed, and a plugin with its own `zod` keeps it — through the CLI and through `keel/testing`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { tempHome } from '../support/helpers.js';
import { appDir, installEnv, installedKeel } from '../support/installed.js';

const work = tempHome('keel-plugin-outside-');
after(() => rmSync(work, { recursive: true, force: true }));

/**
 * As a user runs it: not as a child of this test runner (NODE_TEST_CONTEXT would fold the plugin's
 * own test report into ours; NODE_OPTIONS may carry this repository's --import tsx).
 */
function env(): NodeJS.ProcessEnv {
  const e = installEnv({ KEEL_HOME: join(work, 'home') });
  delete e.NODE_TEST_CONTEXT;
  delete e.NODE_OPTIONS;
  return e;
}

function run(cmd: string, args: string[], cwd: string) {
  const r = spawnSync(cmd, args, { cwd, env: env(), encoding: 'utf8', timeout: 600_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, all: `${r.stdout}\n${r.stderr}` };
}

interface CheckReport {
  plugins: { name: string; status: string; failures?: unknown[]; tools: { name: string; gate: string }[] }[];
}

function write(dir: string, files: Record<string, string>): string {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

test('keel plugins init notes outside the repository: keel plugins check passes with nothing installed, then npm install && npm test in the plugin', {
  timeout: 1_500_000,
}, async () => {
  const { project, bin } = await installedKeel();
  const keelDir = realpathSync(join(project, 'node_modules', 'keel'));
  const keelFiles = readdirSync(keelDir).sort();
  const cwd = mkdtempSync(join(work, 'user-'));
  const notes = join(cwd, 'notes');

  const made = run(bin, ['plugins', 'init', 'notes'], cwd);
  assert.equal(made.code, 0, made.all);
  assert.match(made.stdout, /keel plugins check .*notes \(nothing to install\)/);
  assert.match(made.stdout, /npm install && npm test/);
  const manifest = readFileSync(join(notes, 'plugin.yaml'), 'utf8');
  assert.match(manifest, /effect: read[\s\S]*effect: write[\s\S]*effect: destructive[\s\S]*undo: restore_todo/);
  const pkg = JSON.parse(readFileSync(join(notes, 'package.json'), 'utf8'));
  const keelPins = JSON.parse(readFileSync(join(keelDir, 'package.json'), 'utf8')).dependencies;
  assert.deepEqual(
    { ...pkg.dependencies, ...pkg.devDependencies },
    { keel: `file:${keelDir}`, zod: keelPins.zod, tsx: keelPins.tsx },
    'the Keel that made it, and the zod and tsx that Keel pins',
  );
  assert.match(readFileSync(join(notes, 'index.ts'), 'utf8'), /from 'zod'/, 'the template uses zod');

  const check = run(bin, ['plugins', 'check', 'notes', '--json'], cwd);
  assert.equal(check.code, 0, check.all);
  const todo = (JSON.parse(check.stdout) as CheckReport).plugins.find((p) => p.name === 'notes');
  assert.equal(todo?.status, 'loaded', check.stdout);
  assert.deepEqual(Object.fromEntries(todo?.tools.map((t) => [t.name, t.gate]) ?? []), {
    list_todos: 'none',
    add_todo: 'confirm_once',
    delete_todo: 'approval',
    restore_todo: 'none',
  });
  assert.ok(!existsSync(join(notes, 'node_modules')), 'nothing was installed in the plugin');

  const again = run(bin, ['plugins', 'init', 'notes'], cwd);
  assert.equal(again.code, 2, 'an existing plugin is not overwritten without --force');
  const bad = run(bin, ['plugins', 'init', 'To Do'], cwd);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /lowercase letters/);

  const install = run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], notes);
  assert.equal(install.code, 0, install.all);
  assert.ok(lstatSync(join(notes, 'node_modules', 'keel')).isSymbolicLink(), 'keel is linked from its folder');
  assert.equal(realpathSync(join(notes, 'node_modules', 'keel')), keelDir);
  assert.deepEqual(readdirSync(keelDir).sort(), keelFiles, "npm neither built nor installed anything in Keel's folder");
  const npmTest = run('npm', ['test'], notes);
  assert.equal(npmTest.code, 0, npmTest.all);
  assert.match(npmTest.stdout, /# pass 1/);
  assert.match(npmTest.stdout, /# fail 0/);
});

test("M1: hand-written plugins importing zod check clean with nothing installed; a plugin's own zod is its own", {
  timeout: 1_500_000,
}, async () => {
  const { bin } = await installedKeel();
  const plugins = mkdtempSync(join(work, 'plugins-'));
  const manifest = (name: string, tool: string) =>
    `name: ${name}\nversion: 1.0.0\nprovides: [tool]\ntools:\n  ${tool}:\n    effect: destructive\n`;
  // The README's example, as an ES module package.
  write(join(plugins, 'bills'), {
    'package.json': '{ "type": "module" }\n',
    'plugin.yaml': manifest('bills', 'pay_bill'),
    'index.ts': `import { z } from 'zod';
import { defineTool, type PluginAPI } from 'keel';

export default function setup(api: PluginAPI): void {
  api.registerTool(
    defineTool({
      name: 'pay_bill',
      description: 'Pay a bill now',
      parameters: z.object({ bill: z.string() }),
      validate: (args) => (args.bill === 'nope' ? 'no such bill' : undefined),
      describe: (args) => ({ title: \`Pay \${args.bill}\`, lines: ['from Everyday Checking'] }),
      execute: async (args) => \`Paid \${args.bill}.\`,
    }),
  );
}
`,
  });
  // No package.json at all: tsx compiles the entry to CommonJS, and its imports become require() calls.
  write(join(plugins, 'bills_cjs'), {
    'plugin.yaml': manifest('bills_cjs', 'pay_bill_cjs'),
    'index.ts': `import { z } from 'zod';
import { defineTool, type PluginAPI } from 'keel';
export default function setup(api: PluginAPI): void {
  api.registerTool(defineTool({ name: 'pay_bill_cjs', description: 'Pay a bill', parameters: z.object({ bill: z.string() }), execute: (args) => \`Paid \${args.bill}.\` }));
}
`,
  });
  // Compiled JavaScript, with the import in a module beside the entry.
  write(join(plugins, 'bills_js'), {
    'package.json': '{ "type": "module" }\n',
    'plugin.yaml': manifest('bills_js', 'pay_bill_js'),
    'index.js': "import { payBill } from './tools.js';\nexport default function setup(api) {\n  api.registerTool(payBill);\n}\n",
    'tools.js': `import { z } from 'zod';
import { defineTool } from 'keel';
export const payBill = defineTool({ name: 'pay_bill_js', description: 'Pay a bill', parameters: z.object({ bill: z.string() }), execute: (args) => \`Paid \${args.bill}.\` });
`,
  });
  // Its own zod (a tiny fake with a version marker): normal resolution goes first, so it keeps it.
  write(join(plugins, 'own'), {
    'package.json': '{ "type": "module" }\n',
    'plugin.yaml': manifest('own', 'own_zod'),
    'index.ts': `import { version } from 'zod';
if (version !== '0.0.1-own') throw new Error(\`got zod \${version}, not the plugin's own\`);
export default function setup(api: { registerTool(t: object): void }): void {
  api.registerTool({ name: 'own_zod', description: 'Which zod', parameters: { type: 'object', properties: {} }, execute: () => \`zod \${version}\` });
}
`,
    'node_modules/zod/package.json': '{ "name": "zod", "version": "0.0.1-own", "type": "module", "exports": "./index.js" }\n',
    'node_modules/zod/index.js': "export const version = '0.0.1-own';\n",
  });

  const check = run(bin, ['plugins', 'check', plugins, '--json'], work);
  assert.equal(check.code, 0, check.all);
  const report = JSON.parse(check.stdout) as CheckReport;
  assert.deepEqual(
    Object.fromEntries(report.plugins.map((p) => [p.name, [p.status, p.tools.map((t) => `${t.name}:${t.gate}`)]])),
    {
      bills: ['loaded', ['pay_bill:approval']],
      bills_cjs: ['loaded', ['pay_bill_cjs:approval']],
      bills_js: ['loaded', ['pay_bill_js:approval']],
      own: ['loaded', ['own_zod:approval']],
    },
    check.stdout,
  );
  for (const p of ['bills', 'bills_cjs', 'bills_js']) assert.ok(!existsSync(join(plugins, p, 'node_modules')));

  // The library's path (dist/src, not the CLI's bundle): keel/testing mounts the same folders and calls the tools.
  const app = await appDir('plugin-outside-');
  writeFileSync(
    join(app, 'call.mjs'),
    `import { mountForTest } from 'keel/testing';
const out = {};
for (const [name, tool, args] of [['bills', 'pay_bill', { bill: 'water' }], ['bills_cjs', 'pay_bill_cjs', { bill: 'gas' }], ['bills_js', 'pay_bill_js', { bill: 'rent' }], ['own', 'own_zod', {}], ['bills', 'pay_bill', {}]]) {
  const plugin = await mountForTest(${JSON.stringify(plugins)} + '/' + name);
  out[tool + (Object.keys(args).length ? '' : ' {}')] = plugin.report.status === 'loaded' ? (await plugin.call(tool, args)) : plugin.report;
  await plugin.close();
}
console.log(JSON.stringify(out));
`,
  );
  const called = run(process.execPath, ['call.mjs'], app);
  assert.equal(called.code, 0, called.all);
  const { 'pay_bill {}': refused, ...answers } = JSON.parse(called.stdout);
  assert.deepEqual(answers, {
    pay_bill: { content: 'Paid water.', is_error: false },
    pay_bill_cjs: { content: 'Paid gas.', is_error: false },
    pay_bill_js: { content: 'Paid rent.', is_error: false },
    'own_zod {}': { content: 'zod 0.0.1-own', is_error: false },
  });
  assert.equal(refused.is_error, true, "the zod schema reached Keel's argument check as JSON Schema");
  assert.match(refused.content, /invalid arguments: .*'bill'/);
});
