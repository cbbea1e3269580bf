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
import { describeCall } from '../../src/approvals/card.js';
import type { ToolSpec } from '../../src/types/index.js';
import { ROOT, tempHome } from '../support/helpers.js';
import { removeFile, sendNote } from './typed/describe.js';
import { fromJsonSchema, fromZod } from './typed/tools.js';

const FIXTURE = join(ROOT, 'test', 'tools', 'typed', 'tools.ts');

/** TypeScript 7 (what builds Keel) and 5.9 (the `typescript-api` devDependency), as an application may have either. */
const COMPILERS = {
  '7': join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
  '5.9': join(ROOT, 'node_modules', 'typescript-api', 'bin', 'tsc'),
};

function tsc(file: string, compiler = COMPILERS['7']): { code: number | null; out: string } {
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
  const r = spawnSync(process.execPath, [compiler, '-p', config], { encoding: 'utf8' });
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

test('issue 47: a describe that gives a title alone compiles under TypeScript 7 and 5.9, and its card has no lines', () => {
  for (const [version, compiler] of Object.entries(COMPILERS)) {
    const r = tsc(join(ROOT, 'test', 'tools', 'typed', 'describe.ts'), compiler);
    assert.equal(r.code, 0, `TypeScript ${version}: ${r.out}`);
  }
  assert.deepEqual(describeCall(removeFile as unknown as ToolSpec, { name: 'a.txt' }), { title: 'Remove a.txt', lines: [] });
  assert.deepEqual(describeCall(sendNote as unknown as ToolSpec, { to: 'ana' }), { title: 'Send a note to ana', lines: [] });
});

test("issue 47: a describe of the wrong shape is blamed on describe, not on the zod schema's `required`", (t) => {
  const dir = mkdtempSync(join(ROOT, 'test', 'tools', 'typed', '.tmp-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const broken = join(dir, 'describe.ts');
  writeFileSync(
    broken,
    readFileSync(join(ROOT, 'test', 'tools', 'typed', 'describe.ts'), 'utf8')
      .replaceAll('({ title:', '({ titel:')
      .replaceAll("'../../../src/", "'../../../../src/"),
  );
  const lines = readFileSync(broken, 'utf8').split('\n');
  const describeLines = lines.flatMap((l, i) => (l.trimStart().startsWith('describe:') ? [i + 1] : []));
  assert.equal(describeLines.length, 2);
  for (const [version, compiler] of Object.entries(COMPILERS)) {
    const r = tsc(broken, compiler);
    assert.notEqual(r.code, 0, `TypeScript ${version}`);
    const at = [...r.out.matchAll(/describe\.ts\((\d+),\d+\): error/g)].map((m) => Number(m[1]));
    assert.deepEqual(at, describeLines, `TypeScript ${version}: each error on its describe line:\n${r.out}`);
    assert.doesNotMatch(r.out, /property 'required'|ObjectSchema|No overload/, `TypeScript ${version}: ${r.out}`);
    assert.match(r.out, /title/, `TypeScript ${version}: ${r.out}`);
  }
});
