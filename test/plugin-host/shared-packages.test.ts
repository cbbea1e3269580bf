/**
 * M1: a plugin outside Keel's package that imports `keel` or `zod` with nothing installed in its
 * folder gets the mounting Keel's own copies (src/plugin-host/shared-packages.ts, resolve-hook.ts);
 * a plugin that installs its own keeps it. Here from src/ (the hook's TypeScript source, under tsx);
 * test/e2e/plugin-outside.test.ts does the same with the installed package's CLI and library.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { namesSharedPackages } from '../../src/plugin-host/shared-packages.js';
import { mountForTest } from '../../src/testing.js';
import { tempHome } from '../support/helpers.js';

const scratch = tempHome('keel-shared-packages-');
after(() => rmSync(scratch, { recursive: true, force: true }));

function folder(name: string, files: Record<string, string>): string {
  const dir = join(scratch, name);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

const MANIFEST = (name: string, tool: string) => `name: ${name}\nversion: 0.1.0\nprovides: [tool]\ntools:\n  ${tool}:\n    effect: read\n`;

test('the fallback is installed only for a plugin whose own sources name keel or zod', () => {
  const names = (text: string, file = 'index.ts') => namesSharedPackages(folder(`names-${Math.random()}`, { [file]: text }));
  assert.equal(names("import { z } from 'zod';"), true);
  assert.equal(names('import type { PluginAPI } from "keel";'), true);
  assert.equal(names("export { defineTool } from 'keel';"), true);
  assert.equal(names("const { mountForTest } = await import('keel/testing');", 'lib/t.mjs'), true);
  assert.equal(names("const { z } = require('zod/v4');", 'index.cjs'), true);
  assert.equal(names("import 'zod';", 'index.js'), true);
  assert.equal(names("import { join } from 'node:path';\nconst keel = 'zod';\n"), false, 'a string is not an import');
  assert.equal(names("import { x } from 'zodiac';\nimport { y } from 'keeling';"), false);
  assert.equal(names("import { z } from 'zod';", 'notes.md'), false, 'only source files are read');
  assert.equal(
    namesSharedPackages(folder('in-deps', { 'index.js': 'export default () => {};', 'node_modules/x/index.js': "import 'zod';" })),
    false,
    "an installed package's imports are its own",
  );
});

test("M1: a plugin with nothing installed gets this Keel's keel and zod; one with its own zod keeps it", async (t) => {
  const bills = folder('bills', {
    'package.json': '{ "type": "module" }',
    'plugin.yaml': MANIFEST('bills', 'pay_bill'),
    'index.ts': `import { z } from 'zod';
import { defineTool, type PluginAPI } from 'keel';
export default function setup(api: PluginAPI): void {
  api.registerTool(defineTool({ name: 'pay_bill', description: 'Pay a bill', parameters: z.object({ bill: z.string() }), execute: async (args) => \`Paid \${args.bill}.\` }));
}
`,
  });
  // No package.json: tsx compiles the entry to CommonJS, and its imports become require() calls.
  const commonjs = folder('commonjs', {
    'plugin.yaml': MANIFEST('commonjs', 'count_bills'),
    'index.ts': `import { z } from 'zod';
import { defineTool } from 'keel';
export default function setup(api: any): void {
  api.registerTool(defineTool({ name: 'count_bills', description: 'Count bills', parameters: z.object({ n: z.number() }), execute: (args) => \`\${args.n} bills\` }));
}
`,
  });
  const compiled = folder('compiled', {
    'package.json': '{ "type": "module" }',
    'plugin.yaml': MANIFEST('compiled', 'list_bills'),
    'index.js': `import { z } from 'zod';
import { defineTool } from 'keel';
export default function setup(api) {
  api.registerTool(defineTool({ name: 'list_bills', description: 'List bills', parameters: z.object({ due: z.string() }), execute: (args) => \`due \${args.due}\` }));
}
`,
  });
  const own = folder('own', {
    'package.json': '{ "type": "module" }',
    'plugin.yaml': MANIFEST('own', 'which_zod'),
    'index.ts': `import { marker } from 'zod';
export default function setup(api: { registerTool(t: object): void }): void {
  api.registerTool({ name: 'which_zod', description: 'Which zod', parameters: { type: 'object', properties: {} }, execute: () => marker });
}
`,
    'node_modules/zod/package.json': '{ "name": "zod", "version": "0.0.1-own", "type": "module", "exports": "./index.js" }',
    'node_modules/zod/index.js': "export const marker = 'the plugin\\'s own zod 0.0.1-own';\n",
  });

  for (const [dir, tool, args, answer] of [
    [bills, 'pay_bill', { bill: 'water' }, 'Paid water.'],
    [commonjs, 'count_bills', { n: 3 }, '3 bills'],
    [compiled, 'list_bills', { due: 'today' }, 'due today'],
    [own, 'which_zod', {}, "the plugin's own zod 0.0.1-own"],
  ] as const) {
    const plugin = await mountForTest(dir);
    t.after(() => plugin.close());
    assert.equal(plugin.report.status, 'loaded', JSON.stringify(plugin.report));
    assert.deepEqual(await plugin.call(tool, args), { content: answer, is_error: false });
  }
  const bill = await mountForTest(bills);
  t.after(() => bill.close());
  assert.equal((await bill.call('pay_bill', {})).is_error, true, "the zod schema reached Keel's checks as JSON Schema");
});
