/**
 * Optional packages (src/util/optional.ts): what an app without them is told, that package.json
 * declares each one as an optional peer at the version the table names, and that src/ loads them
 * only through `optionalImport`.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { KeelError } from '../../src/util/errors.js';
import { installCommand, isInstalled, OPTIONAL_PACKAGES, optionalImport } from '../../src/util/optional.js';
import { ROOT, tempHome } from '../support/helpers.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const ALL: Record<string, string> = Object.assign({}, ...Object.values(OPTIONAL_PACKAGES));

/** Imports `spec` from a module in a temp folder, where no node_modules can provide it: the real error. */
async function importFromNowhere(spec: string): Promise<unknown> {
  const dir = tempHome('keel-optional-');
  try {
    const file = join(dir, 'load.mjs');
    writeFileSync(file, `export default await import(${JSON.stringify(spec)});\n`);
    return await import(pathToFileURL(file).href);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('optional packages: each is an optional peer (caret of the tested version) and a devDependency at that version, not a dependency', () => {
  for (const [name, version] of Object.entries(ALL)) {
    assert.equal(pkg.peerDependencies[name], `^${version}`, `peerDependencies.${name}`);
    assert.equal(pkg.peerDependenciesMeta[name]?.optional, true, `peerDependenciesMeta.${name}.optional`);
    assert.equal(pkg.devDependencies[name], version, `devDependencies.${name}`);
    assert.equal(pkg.dependencies[name], undefined, `${name} is not a dependency`);
  }
  assert.deepEqual(Object.keys(pkg.peerDependencies).sort(), Object.keys(ALL).sort(), 'every peer is in the table');
});

test('optionalImport: a package that is not installed is a config error naming what needs it and the command that adds it', async () => {
  const err = await optionalImport('pg', 'the PostgreSQL store (--store postgres://…)', () => importFromNowhere('pg')).then(
    () => assert.fail('resolved'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof KeelError);
  assert.equal(err.code, 'config');
  assert.equal(
    err.message,
    'the PostgreSQL store (--store postgres://…) needs the package pg, which is not installed: npm install pg@8.23.1 pg-boss@10.4.2',
  );
});

test('optionalImport: a subpath of a missing package, a scoped package, and a companion of the group count as missing', async () => {
  await assert.rejects(
    optionalImport('ai-tokenizer', 'counting tokens', () => importFromNowhere('ai-tokenizer/encoding/claude')),
    (e: unknown) => e instanceof KeelError && /npm install ai-tokenizer@1\.0\.6$/.test(e.message),
  );
  await assert.rejects(
    optionalImport('@mariozechner/pi-ai', 'the model openai:gpt-4o-mini', () => importFromNowhere('@mariozechner/pi-ai')),
    (e: unknown) =>
      e instanceof KeelError &&
      e.message ===
        'the model openai:gpt-4o-mini needs the package @mariozechner/pi-ai, which is not installed: npm install @mariozechner/pi-ai@0.73.1',
  );
  await assert.rejects(
    optionalImport('pg-boss', 'the job queue', () => importFromNowhere('pg-boss')),
    (e: unknown) => e instanceof KeelError && e.message.endsWith('npm install pg@8.23.1 pg-boss@10.4.2'),
  );
});

test('optionalImport: another missing package (a dependency of the optional one) or a broken package is thrown as it is', async () => {
  await assert.rejects(
    optionalImport('pg', 'the PostgreSQL store', () => importFromNowhere('pg-native-not-here')),
    (e: unknown) => !(e instanceof KeelError) && (e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND',
  );
  const broken = new Error('boom');
  await assert.rejects(
    optionalImport('pg', 'the PostgreSQL store', () => Promise.reject(broken)),
    (e: unknown) => e === broken,
  );
});

test('optionalImport: an installed package loads as it is; isInstalled sees it without loading it', async () => {
  const pg = await optionalImport('pg', 'the PostgreSQL store', () => import('pg'));
  assert.equal(typeof pg.default.Pool, 'function');
  assert.equal(isInstalled('ai-tokenizer'), true);
  assert.equal(installCommand('@opentelemetry/resources').split(' ').length, 5, 'the three OpenTelemetry packages together');
});

test('src/ loads an optional package only through optionalImport (a type import is free)', () => {
  const names = Object.keys(ALL).map((n) => n.replace(/[/.]/g, '\\$&'));
  const any = new RegExp(`(?:from\\s+|import\\s*\\(\\s*|require\\)?\\(\\s*)'(?:${names.join('|')})(?:/[^']*)?'`, 'g');
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((n) => {
      const p = join(dir, n);
      return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
    });
  const bare: string[] = [];
  for (const file of files(join(ROOT, 'src'))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(any)) {
      const line = text.slice(text.lastIndexOf('\n', m.index) + 1, text.indexOf('\n', m.index));
      if (/^\s*import type /.test(line) || /^\s*\*/.test(line) || /^\s*\/\//.test(line)) continue;
      // Inside optionalImport(…, () => import('x')), or a subpath loaded after its package was (ai-tokenizer's encodings).
      // The loader may sit on its own line of a call that spans several: look back to the statement's start.
      const before = text.slice(Math.max(0, text.lastIndexOf(';', m.index)), m.index);
      if (/optionalImport\(/.test(line) || /optionalImport\(/.test(before) || /import\('ai-tokenizer\/encoding\//.test(line)) continue;
      bare.push(`${relative(ROOT, file)}: ${line.trim()}`);
    }
  }
  assert.deepEqual(bare, []);
});
