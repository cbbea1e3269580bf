/**
 * `keel plugins init NAME`: a working TypeScript plugin to start from — a manifest with one read,
 * one write and one destructive tool (with its undo), the entry with typed handlers, a test using
 * `keel/testing`, and a script to try it in a real run.
 *
 * The folder is a package that depends on the Keel that made it (`file:` its package folder) and on
 * the zod and tsx that Keel pins, so its own `npm install && npm test` needs no `keel` from a
 * registry. `keel plugins check` needs no install at all: a plugin's `keel` and `zod` imports
 * resolve to the mounting Keel's own copies (M1, src/plugin-host/shared-packages.ts).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../config/paths.js';
import { KeelError } from '../util/errors.js';

const MANIFEST = (name: string) => `# ${name}: a to-do list kept under KEEL_HOME. Every tool declares its effect; Keel turns that
# into the loop's behaviour (confirm-once for writes, an approval card for the destructive call).
name: ${name}
version: 0.1.0
description: A to-do list
provides: [tool]
tools:
  list_todos:
    effect: read
  add_todo:
    effect: write            # asks the user once per run before the first write (confirm: once)
  delete_todo:
    effect: destructive      # every call waits for an approval card
    undo: restore_todo       # the card says how to undo it
  restore_todo:
    effect: write
    confirm: never
`;

const ENTRY = `import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineTool, type PluginAPI } from 'keel';
import { z } from 'zod';

interface Todo {
  id: number;
  title: string;
  deleted: boolean;
}

export default function setup(api: PluginAPI): void {
  const file = join(api.home, '__NAME__.json');
  const load = (): Todo[] => (existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Todo[]) : []);
  const save = (todos: Todo[]) => writeFileSync(file, JSON.stringify(todos, null, 2));
  const find = (id: number) => load().find((t) => t.id === id);

  api.registerTool(
    defineTool({
      name: 'list_todos',
      description: 'List the to-dos that are not deleted.',
      parameters: { type: 'object', properties: {} },
      execute: () => {
        const open = load().filter((t) => !t.deleted);
        return open.length ? open.map((t) => \`#\${t.id} \${t.title}\`).join('\\n') : 'No to-dos.';
      },
    }),
  );

  api.registerTool(
    defineTool({
      name: 'add_todo',
      description: 'Add a to-do.',
      // A zod schema: the model is shown its JSON Schema, the handler gets the parsed arguments.
      parameters: z.object({ title: z.string().min(1) }),
      execute: (args) => {
        const todos = load();
        const todo = { id: todos.length + 1, title: args.title, deleted: false };
        save([...todos, todo]);
        return \`Added #\${todo.id} \${todo.title}.\`;
      },
    }),
  );

  api.registerTool(
    defineTool({
      name: 'delete_todo',
      description: 'Delete a to-do.',
      // Or a JSON Schema written inline: args.id is a number.
      parameters: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
      // Refused before any card is made: the owner is never asked about a to-do that is not there.
      validate: (args) => (find(args.id) ? undefined : \`there is no to-do #\${args.id}\`),
      // The card's own words (Keel adds the undo sentence from the manifest itself).
      describe: (args) => ({ title: 'Delete a to-do', lines: [\`#\${args.id} \${find(args.id)?.title ?? ''}\`] }),
      execute: (args) => {
        save(load().map((t) => (t.id === args.id ? { ...t, deleted: true } : t)));
        return \`Deleted #\${args.id}.\`;
      },
    }),
  );

  api.registerTool(
    defineTool({
      name: 'restore_todo',
      description: 'Restore a deleted to-do.',
      parameters: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
      execute: (args) => {
        save(load().map((t) => (t.id === args.id ? { ...t, deleted: false } : t)));
        return \`Restored #\${args.id}.\`;
      },
    }),
  );
}
`;

const TEST = `import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mountForTest } from 'keel/testing';

test('the manifest declares each effect, and the tools do what they say', async (t) => {
  const plugin = await mountForTest(import.meta.dirname);
  t.after(() => plugin.close());
  assert.equal(plugin.report.status, 'loaded', JSON.stringify(plugin.report));
  assert.equal(plugin.declaration('list_todos').effect, 'read');
  assert.equal(plugin.declaration('add_todo').effect, 'write');
  assert.equal(plugin.declaration('delete_todo').effect, 'destructive');

  assert.equal((await plugin.call('add_todo', { title: 'buy milk' })).content, 'Added #1 buy milk.');
  assert.equal((await plugin.call('list_todos')).content, '#1 buy milk');
  assert.equal((await plugin.call('delete_todo', { id: 1 })).content, 'Deleted #1.');
  assert.equal((await plugin.call('list_todos')).content, 'No to-dos.');
  assert.equal((await plugin.call('restore_todo', { id: 1 })).content, 'Restored #1.');
  assert.equal((await plugin.call('add_todo', {})).is_error, true, 'the schema is checked');
});
`;

/** The Keel that runs this command: its package folder and the versions it pins. */
function thisKeel(): { dir: string; pins: Record<string, string> } {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  return { dir: PACKAGE_ROOT, pins: { ...pkg.devDependencies, ...pkg.dependencies } };
}

const PACKAGE = (name: string, keel: { dir: string; pins: Record<string, string> }) =>
  `${JSON.stringify(
    {
      name: `keel-plugin-${name}`,
      version: '0.1.0',
      private: true,
      type: 'module',
      scripts: {
        test: `node --import tsx --test ${name}.test.ts`,
        check: 'keel plugins check .',
        try: "keel run --plugins . 'add buy milk to my to-do list'",
      },
      // When Keel mounts the plugin, `zod` (like `keel`) is Keel's own unless this folder installs one.
      dependencies: { zod: keel.pins.zod ?? '^4' },
      // The Keel that made this plugin, linked from its folder: no registry has a `keel` to give.
      devDependencies: { keel: `file:${keel.dir}`, tsx: keel.pins.tsx ?? '^4' },
    },
    null,
    2,
  )}\n`;

/**
 * npm runs a linked folder's `prepare` script on every install: here Keel's own build, which an
 * installed Keel cannot run (it ships dist/, not its sources). Nothing this plugin installs needs a script.
 */
const NPMRC = `# keel is a file: link to the Keel that made this plugin; without this line npm would run that
# package's build (its prepare script) at every install. Remove it if you add a dependency that
# must build at install (a native addon), and run its build with npm rebuild NAME.
ignore-scripts=true
`;

const README = (name: string) => `# ${name}

A Keel plugin. \`keel plugins check ${name}\` checks it as it is: Keel gives a plugin its own \`keel\`
and \`zod\` when the folder has none installed. For the plugin's own test, \`npm install\` (it links
the Keel that made it, from its folder — nothing comes from a registry but zod and tsx), then:

- \`npm test\` — the tools' own test (\`${name}.test.ts\`, with \`keel/testing\`).
- \`npm run check\` — \`keel plugins check .\`: the manifest, the registrations, drift.
- \`npm run try\` — a real run with this plugin (set \`KEEL_MODEL\`, e.g. \`ollama:qwen2.5:7b\`).

Each tool declares its effect in \`plugin.yaml\`; Keel asks once before the first write of a run,
and shows an approval card for every \`delete_todo\` (with the undo from the manifest).
`;

export function scaffoldPlugin(name: string, outDir: string | undefined, force = false): { dir: string; files: string[] } {
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(name)) {
    throw new KeelError('bad_input', `plugin name ${JSON.stringify(name)}: use lowercase letters, digits, - and _ (e.g. todo)`);
  }
  const dir = resolve(outDir ?? name);
  if (existsSync(join(dir, 'plugin.yaml')) && !force)
    throw new KeelError('conflict', `${dir} holds a plugin already (--force overwrites it)`);
  mkdirSync(dir, { recursive: true });
  const files: [string, string][] = [
    ['plugin.yaml', MANIFEST(name)],
    ['index.ts', ENTRY.replaceAll('__NAME__', name)],
    [`${name}.test.ts`, TEST],
    ['package.json', PACKAGE(name, thisKeel())],
    ['.npmrc', NPMRC],
    ['README.md', README(name)],
  ];
  for (const [file, text] of files) writeFileSync(join(dir, file), text);
  return { dir, files: files.map(([f]) => f) };
}
