/**
 * defineTool: a handler typed from its zod schema and one from an `as const` JSON Schema compile
 * under `strict` with no casts, and a wrong property access fails to compile; at run time a zod tool
 * gives the model JSON Schema and its handler the parsed arguments.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT, tempHome } from '../support/helpers.js';
import { fromJsonSchema, fromZod } from './typed/tools.js';

const FIXTURE = join(ROOT, 'test', 'tools', 'typed', 'tools.ts');

function tsc(file: string): { code: number | null; out: string } {
  const dir = tempHome('keel-types-');
  const config = join(dir, 'tsconfig.json');
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(ROOT, 'tsconfig.json'),
      compilerOptions: { noEmit: true, strict: true, rootDir: ROOT, typeRoots: [join(ROOT, 'node_modules', '@types')] },
      include: [],
      files: [file],
    }),
  );
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', config], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

test('defineTool: typed handlers (zod and `as const` JSON Schema) compile under strict with no casts', () => {
  const r = tsc(FIXTURE);
  assert.equal(r.code, 0, r.out);
});

test('defineTool: a wrong property access fails to compile', (t) => {
  // Beside the fixture (so 'zod' resolves the same way), removed when the test ends.
  const dir = mkdtempSync(join(ROOT, 'test', 'tools', 'typed', '.tmp-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const broken = join(dir, 'tools.ts');
  writeFileSync(
    broken,
    readFileSync(FIXTURE, 'utf8').replaceAll('// @ts-expect-error: no such property', '').replaceAll("'../../../src/", "'../../../../src/"),
  );
  const r = tsc(broken);
  assert.notEqual(r.code, 0);
  assert.match(r.out, /Property 'titel' does not exist/);
  assert.match(r.out, /Property 'dnoe' does not exist/);
});

test('defineTool: a zod tool gives the model JSON Schema and its handler the parsed arguments (defaults applied)', async () => {
  const p = fromZod.parameters as { type: string; properties: Record<string, unknown>; required: string[] };
  assert.equal(p.type, 'object');
  assert.deepEqual(Object.keys(p.properties).sort(), ['due', 'priority', 'title']);
  assert.deepEqual(p.required, ['title']);
  assert.ok(!('$schema' in p));
  const ctx = { run_id: 'r', call_id: 'c', mode: 'agent' as const, request: 'x', signal: new AbortController().signal };
  assert.equal(await fromZod.execute({ title: 'milk' }, ctx), 'milk  low');
  assert.equal(await fromJsonSchema.execute({ done: true, limit: 3 }, ctx), 'true 3 undefined undefined');
});

test('defineTool: a zod schema from another copy of zod (an application’s own install) is still read as zod', async (t) => {
  const { cpSync } = await import('node:fs');
  const { pathToFileURL } = await import('node:url');
  const { defineTool } = await import('../../src/tools/define.js');
  const dir = tempHome('keel-zod-copy-');
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(ROOT, 'node_modules', 'zod'), join(dir, 'zod'), { recursive: true });
  const { z } = (await import(pathToFileURL(join(dir, 'zod', 'index.js')).href)) as typeof import('zod');
  const tool = defineTool({
    name: 'greet',
    description: 'Greet someone',
    parameters: z.object({ name: z.string(), times: z.number().default(1) }),
    execute: ({ name, times }) => `hi ${name} ×${times}`,
  });
  assert.deepEqual((tool.parameters as { required?: string[] }).required, ['name']);
  assert.equal(await tool.execute({ name: 'ana' }, {} as never), 'hi ana ×1', 'parsed by the copy: the default applies');
});
