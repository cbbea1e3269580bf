import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { SCHEMA_FILE, schemaText } from '../../scripts/write-schema.js';
import { parseManifest } from '../../src/manifest/load.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const committed = () => readFileSync(SCHEMA_FILE, 'utf8');

function validator(): ValidateFunction {
  // Plain draft-07 Ajv, as an editor's validator would use it.
  return new Ajv({ allErrors: true }).compile(JSON.parse(committed()));
}

const yaml = (...lines: string[]) => `${lines.join('\n')}\n`;
const HEAD = ['name: shop', 'version: 1.2.0', 'provides: [tool]', 'tools:'];

describe('M5: schema/plugin.schema.json', () => {
  test('M5: the committed file is what `npm run schema` writes now (fails while stale)', () => {
    assert.equal(SCHEMA_FILE, join(ROOT, 'schema', 'plugin.schema.json'));
    assert.ok(
      committed() === schemaText(),
      'schema/plugin.schema.json is stale: run `npm run schema` and commit the file (it is generated from src/manifest/schema.ts)',
    );
    assert.ok(committed().endsWith('}\n'), 'pretty JSON with a trailing newline');
    assert.ok(committed().includes('\n  "$schema": "http://json-schema.org/draft-07/schema#",\n'));
  });

  test('M5: the schema compiles as draft-07 and accepts a valid manifest', () => {
    const v = validator();
    const manifest = parseYaml(
      yaml(
        ...HEAD,
        '  search:',
        '    effect: read',
        '    pinned: true',
        '    answers_directly: true',
        '    guidance: Search first.',
        '  send:',
        '    effect: write',
        '    approval: pinned',
        '    contract_modes: declare',
        '  trash:',
        '    effect: destructive',
        '    undo: restore',
        '  restore:',
        '    effect: write',
        '    confirm: never',
        '    answers_directly: true',
      ),
    );
    assert.equal(v(manifest), true, JSON.stringify(v.errors));
    assert.equal(v({ name: 'bare', version: '0.0.1' }), true, JSON.stringify(v.errors));
  });

  test('M5: the schema rejects an unknown field at the top level and in a tool, at that field', () => {
    const v = validator();
    assert.equal(v({ name: 'shop', version: '1', homepage: 'x' }), false);
    assert.ok(
      v.errors?.some(
        (e) => e.keyword === 'additionalProperties' && (e.params as { additionalProperty: string }).additionalProperty === 'homepage',
      ),
      JSON.stringify(v.errors),
    );
    assert.equal(v({ name: 'shop', version: '1', provides: ['tool'], tools: { browse: { effect: 'read', guidence: 'typo' } } }), false);
    assert.ok(
      v.errors?.some(
        (e) =>
          e.instancePath === '/tools/browse' &&
          e.keyword === 'additionalProperties' &&
          (e.params as { additionalProperty: string }).additionalProperty === 'guidence',
      ),
      JSON.stringify(v.errors),
    );
  });
});

/**
 * The schema repeats the M4 rules draft-07 can say; the parser is the authority. For each manifest
 * below the two must agree, so a rule changed in one place and not the other fails here.
 */
describe('M5: the published schema agrees with parseManifest', () => {
  const cases: Record<string, string> = {
    'valid: read, write, destructive with undo': yaml(
      ...HEAD,
      '  a:',
      '    effect: read',
      '  b:',
      '    effect: destructive',
      '    undo: c',
      '  c:',
      '    effect: write',
      '    confirm: never',
    ),
    'valid: no tools, provides other kinds': yaml('name: shop', 'version: 1.2.0', 'provides: [hook]'),
    'valid: answers_directly on a confirm: never write': yaml(
      ...HEAD,
      '  a:',
      '    effect: write',
      '    confirm: never',
      '    answers_directly: true',
    ),
    'valid: answers_directly: false on a destructive tool': yaml(...HEAD, '  a:', '    effect: destructive', '    answers_directly: false'),
    'valid: contract_modes on a destructive tool': yaml(...HEAD, '  a:', '    effect: destructive', '    contract_modes: declare'),
    'unknown top-level field': yaml(...HEAD, '  a:', '    effect: read', 'homepage: x'),
    'unknown tool field': yaml(...HEAD, '  a:', '    effect: read', '    colour: red'),
    'unknown effect': yaml(...HEAD, '  a:', '    effect: delete'),
    'missing effect': yaml(...HEAD, '  a:', '    pinned: true'),
    'missing version': yaml('name: shop'),
    'confirm on read': yaml(...HEAD, '  a:', '    effect: read', '    confirm: once'),
    'confirm on destructive': yaml(...HEAD, '  a:', '    effect: destructive', '    confirm: never'),
    'approval on read': yaml(...HEAD, '  a:', '    effect: read', '    approval: pinned'),
    'approval on destructive': yaml(...HEAD, '  a:', '    effect: destructive', '    approval: pinned'),
    'approval with confirm': yaml(...HEAD, '  a:', '    effect: write', '    confirm: never', '    approval: pinned'),
    'undo on write': yaml(...HEAD, '  a:', '    effect: write', '    undo: b', '  b:', '    effect: write', '    confirm: never'),
    'undo on read': yaml(...HEAD, '  a:', '    effect: read', '    undo: b', '  b:', '    effect: write', '    confirm: never'),
    'answers_directly on destructive': yaml(...HEAD, '  a:', '    effect: destructive', '    answers_directly: true'),
    'answers_directly on a default confirm-once write': yaml(...HEAD, '  a:', '    effect: write', '    answers_directly: true'),
    'answers_directly on a pinned write': yaml(...HEAD, '  a:', '    effect: write', '    approval: pinned', '    answers_directly: true'),
    'contract_modes on read': yaml(...HEAD, '  a:', '    effect: read', '    contract_modes: hide'),
    'tools without provides': yaml('name: shop', 'version: 1.2.0', 'tools:', '  a:', '    effect: read'),
    'tools while provides lacks tool': yaml('name: shop', 'version: 1.2.0', 'provides: [hook]', 'tools:', '  a:', '    effect: read'),
    'tool name with uppercase': yaml(...HEAD, '  sendMail:', '    effect: read'),
    'tool name with a dash': yaml(...HEAD, '  send-mail:', '    effect: read'),
    'plugin name with a space': yaml('name: my shop', 'version: 1.2.0'),
    'a list, not a mapping': yaml('- name: shop'),
  };

  for (const [label, text] of Object.entries(cases)) {
    test(`M4/M5: ${label}`, () => {
      const parsed = parseManifest(text, 'plugin.yaml', 'x');
      const v = validator();
      const schemaOk = v(parseYaml(text));
      assert.equal(parsed.ok, label.startsWith('valid'), 'the case label says whether the parser accepts it');
      assert.equal(schemaOk, parsed.ok, `schema says ${schemaOk}, parser says ${parsed.ok}: ${JSON.stringify(v.errors)}`);
    });
  }

  test('M4: what the schema cannot say (undo naming an undeclared tool, or one that is not a confirm: never write) only the parser refuses', () => {
    for (const text of [
      yaml(...HEAD, '  a:', '    effect: destructive', '    undo: missing'),
      yaml(...HEAD, '  a:', '    effect: destructive', '    undo: b', '  b:', '    effect: write'),
    ]) {
      assert.equal(parseManifest(text, 'plugin.yaml', 'x').ok, false);
    }
  });

  test('M5: every fixture plugin.yaml that parses as YAML gets the same verdict from both', () => {
    const files: string[] = [];
    const walk = (d: string) => {
      for (const n of readdirSync(d)) {
        const p = join(d, n);
        if (statSync(p).isDirectory()) walk(p);
        else if (n === 'plugin.yaml') files.push(p);
      }
    };
    walk(join(ROOT, 'test', 'fixtures'));
    assert.ok(files.length >= 15, `found ${files.length} fixture manifests`);
    const v = validator();
    let compared = 0;
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      let data: unknown;
      try {
        data = parseYaml(text);
      } catch {
        continue; // a YAML syntax error: nothing for a schema to look at
      }
      compared++;
      assert.equal(v(data), parseManifest(text, f, 'x').ok, relative(ROOT, f));
    }
    assert.ok(compared >= 14);
  });
});
