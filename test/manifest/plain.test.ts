/**
 * M6: the plain path (src/manifest/plain-yaml.ts, the plain shape in load.ts, plain-schema.ts)
 * decides nothing the full check would decide otherwise. Generated and mutated manifests go through
 * both: whenever the plain path accepts, the full check accepts the same manifest; and the plain
 * reader's value, whenever it gives one, is what the `yaml` package makes of the text. A parameter
 * schema the plain check calls valid is valid for ajv. And the common case really takes the plain
 * path (or these tests would pass with a path that never answers).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { PLAIN_FIELDS, parseManifest, parseManifestFull } from '../../src/manifest/load.js';
import { plainSchemaValid } from '../../src/manifest/plain-schema.js';
import { parsePlainYaml } from '../../src/manifest/plain-yaml.js';
import { manifestSchemas } from '../../src/manifest/schema.js';
import { PLAIN_KEYWORDS } from '../../src/tools/spec.js';
import { manifestsIn } from '../reliability/manifests.js';

const { ManifestSchema, McpSectionSchema, ToolDeclarationSchema } = manifestSchemas();

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** What `yaml` makes of the text, or 'error' when it reports an error (parseManifestFull's reading). */
function yamlValue(text: string): unknown {
  try {
    return parseYaml(text, { uniqueKeys: true, logLevel: 'silent' });
  } catch {
    return 'error';
  }
}

// --- generated manifests, written in the styles people use --------------------------------------

const word = fc.constantFrom('find', 'list', 'send', 'pay', 'trash', 'restore', 'bill', 'note', 'x1', 'open_pr', 'a');
const toolName = fc.array(word, { minLength: 1, maxLength: 3 }).map((ws) => ws.join('_'));
/** Mostly the first, sometimes the second: cases near the valid ones, where a wrong verdict would hide. */
const mostly = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>) =>
  fc.oneof({ arbitrary: good, weight: 6 }, { arbitrary: bad, weight: 1 }) as fc.Arbitrary<T | U>;
/** Prose as it appears in descriptions and guidance, now and then with a character YAML treats specially. */
const prose = fc
  .array(
    mostly(
      fc.constantFrom(
        'Use it',
        'when the user asks',
        'for bills',
        'first',
        'then one reminder per bill.',
        "the owner's",
        'C#',
        '50%',
        'e-mail',
        'café',
      ),
      fc.constantFrom(
        "it's",
        '"quoted"',
        'a: b',
        'x #y',
        '[list]',
        '{map}',
        '- dash',
        'ratio 3:1',
        'http://x.org/a',
        '1.0',
        'yes',
        'null',
        '*star',
        '&amp',
        '!bang',
        '|pipe',
        '>gt',
        '@at',
        '`tick`',
        'true',
        '~',
        '0x1F',
        '.5',
        '\u00a0nbsp',
        'tab\there',
        'end:',
      ),
    ),
    { minLength: 1, maxLength: 8 },
  )
  .map((ws) => ws.join(' '));

const optional = { requiredKeys: [] as never[] };
/** A declaration M4 accepts, for each effect. */
const validDeclaration = fc.oneof(
  fc.record(
    { effect: fc.constant('read'), guidance: prose, pinned: fc.boolean(), answers_directly: fc.boolean(), idempotent: fc.boolean() },
    {
      requiredKeys: ['effect'],
    },
  ),
  fc.record(
    {
      effect: fc.constant('write'),
      confirm: fc.constantFrom('once', 'never'),
      guidance: prose,
      contract_modes: fc.constantFrom('declare', 'hide'),
    },
    {
      requiredKeys: ['effect'],
    },
  ),
  fc.record(
    { effect: fc.constant('write'), approval: fc.constant('pinned'), pinned: fc.boolean() },
    { requiredKeys: ['effect', 'approval'] },
  ),
  fc.record(
    { effect: fc.constant('destructive'), guidance: prose, contract_modes: fc.constantFrom('declare', 'hide') },
    { requiredKeys: ['effect'] },
  ),
);
/** Anything near a declaration: wrong values, unknown fields, rules broken. */
const anyDeclaration = fc.record(
  {
    effect: fc.constantFrom('read', 'write', 'destructive', 'Read', 'delete'),
    confirm: fc.constantFrom('once', 'never', 'always'),
    approval: fc.constantFrom('pinned', 'yes'),
    guidance: prose,
    pinned: fc.constantFrom(true, false, 'true', 'yes'),
    answers_directly: fc.boolean(),
    undo: toolName,
    idempotent: fc.boolean(),
    contract_modes: fc.constantFrom('declare', 'hide', 'show'),
    colour: fc.constant('red'),
  },
  optional,
);

const manifestArb = fc.record(
  {
    name: mostly(fc.constantFrom('shop', 'my-plugin', 'x_1', '1st'), fc.constantFrom('Shop', 'a b', '-x')),
    version: mostly(fc.constantFrom('1.0.0', '2.1.3-beta', 'v3'), fc.constantFrom('1', '0.1', '2.0', '')),
    description: prose,
    entry: fc.constantFrom('index.js', 'dist/main.mjs'),
    provides: mostly(
      fc.constant(['tool']),
      fc.array(fc.constantFrom('tool', 'skill', 'hook', 'a]b', 'x#y', 'x #y', 'a: b', '{x}', "'q'", '"q"', '-y', 'null', '1', 'to,ol'), {
        maxLength: 3,
      }),
    ),
    tools: fc.dictionary(toolName, mostly(validDeclaration, anyDeclaration), { maxKeys: 6 }),
    mcp: fc.record({ command: fc.constantFrom('npx', 'node', ''), args: fc.array(fc.constantFrom('-y', 'server.js'), { maxLength: 2 }) }),
  },
  { requiredKeys: ['name', 'version', 'provides', 'tools'] },
);

/** How a scalar is written: plain, single- or double-quoted, or (for prose) folded or literal. */
const styleArb = fc.record({
  quote: fc.constantFrom('plain', 'plain', 'single', 'double'),
  block: fc.constantFrom('none', 'none', '>-', '>', '|', '|-'),
  list: fc.constantFrom('flow', 'block'),
  comment: fc.boolean(),
  width: fc.integer({ min: 20, max: 90 }),
});
type Style = typeof styleArb extends fc.Arbitrary<infer T> ? T : never;

function scalarText(v: unknown, s: Style, indent: number): string {
  if (typeof v !== 'string') return String(v);
  if (s.block !== 'none' && v.includes(' ')) {
    const pad = ' '.repeat(indent + 2);
    const words = v.split(' ');
    const lines: string[] = [];
    let line = '';
    for (const w of words) {
      if (line && line.length + w.length + 1 > s.width) {
        lines.push(line);
        line = w;
      } else line = line ? `${line} ${w}` : w;
    }
    lines.push(line);
    return `${s.block}\n${lines.map((l) => pad + l).join('\n')}`;
  }
  if (s.quote === 'single') return `'${v.replaceAll("'", "''")}'`;
  if (s.quote === 'double') return JSON.stringify(v);
  return v;
}

function toYaml(value: Record<string, unknown>, s: Style, indent = 0): string {
  const pad = ' '.repeat(indent);
  const out: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    const comment = s.comment && k.length % 2 === 0 ? ' # note' : '';
    if (Array.isArray(v)) {
      if (s.list === 'flow' || v.length === 0) out.push(`${pad}${k}: [${v.join(', ')}]${comment}`);
      else out.push(`${pad}${k}:${comment}`, ...v.map((x) => `${pad}  - ${scalarText(x, s, indent + 2)}`));
    } else if (v !== null && typeof v === 'object') {
      out.push(`${pad}${k}:${comment}`, toYaml(v as Record<string, unknown>, s, indent + 2));
    } else {
      const text = scalarText(v, s, indent);
      out.push(`${pad}${k}: ${text}${text.includes('\n') ? '' : comment}`);
    }
  }
  if (s.comment && indent === 0) out.unshift('# a plugin');
  return out.filter((l) => l !== '').join('\n');
}

// --- mutations: the edits that take a manifest just outside (or just inside) the plain subset -------

const SPLICES = [
  ':',
  ': ',
  '#',
  ' #',
  ' ',
  '  ',
  '-',
  '- ',
  "'",
  '"',
  '\\',
  '[',
  ']',
  '{',
  '}',
  ',',
  '>',
  '|',
  '&a ',
  '*a',
  '!',
  '~',
  '?',
  '%',
  '@',
  '`',
  '\t',
  '\r',
  '\n',
  '\n\n',
  '\u00a0',
  '\ufeff',
  '\u2028',
  'null',
  'true',
  '1e3',
  '0o7',
  '.inf',
  '---',
  '...',
  '__proto__',
  'effect',
  'effect: read',
  'tools:',
  'x',
  '1',
];
type Edit = { kind: 'splice'; at: number; text: string } | { kind: 'drop' | 'double' | 'indent' | 'dedent' | 'cut'; at: number };
const editArb: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({
    kind: fc.constant('splice' as const),
    at: fc.nat(),
    text: fc.oneof(fc.constantFrom(...SPLICES), fc.string({ maxLength: 3 })),
  }),
  fc.record({
    kind: fc.constantFrom('drop' as const, 'double' as const, 'indent' as const, 'dedent' as const, 'cut' as const),
    at: fc.nat(),
  }),
);

function applyEdits(text: string, edits: readonly Edit[]): string {
  let t = text;
  for (const e of edits) {
    if (e.kind === 'splice') {
      const at = e.at % (t.length + 1);
      t = t.slice(0, at) + e.text + t.slice(at);
      continue;
    }
    if (e.kind === 'cut') {
      t = t.slice(0, e.at % (t.length + 1));
      continue;
    }
    const lines = t.split('\n');
    const i = e.at % Math.max(1, lines.length);
    if (e.kind === 'drop') lines.splice(i, 1);
    else if (e.kind === 'double') lines.splice(i, 0, lines[i] ?? '');
    else if (e.kind === 'indent') lines[i] = ` ${lines[i] ?? ''}`;
    else lines[i] = (lines[i] ?? '').replace(/^ /, '');
    t = lines.join('\n');
  }
  return t;
}

/** The manifest text of a case: generated, sometimes ending with a newline, then edited. */
const caseArb = fc
  .tuple(manifestArb, styleArb, fc.oneof(fc.constant([]), fc.array(editArb, { minLength: 1, maxLength: 3 })), fc.boolean())
  .map(([m, s, edits, nl]) => applyEdits(toYaml(m as Record<string, unknown>, s) + (nl ? '\n' : ''), edits));

/** Checks one text; returns which path decided. */
function samePath(text: string): 'plain' | 'full' {
  const plain = parsePlainYaml(text);
  if (plain !== undefined) assert.deepStrictEqual(plain, yamlValue(text), `the plain reader differs from yaml on:\n${text}`);
  const both = parseManifest(text, 'plugin.yaml', 'folder');
  const full = parseManifestFull(text, 'plugin.yaml', 'folder');
  assert.deepStrictEqual(both, full, `parseManifest and the full check disagree on:\n${text}`);
  return plain !== undefined && both.ok ? 'plain' : 'full';
}

test('M6: on generated and mutated manifests the plain path and the full check give the same verdict and value', (t) => {
  const counts = { plain: 0, full: 0, ok: 0 };
  fc.assert(
    fc.property(caseArb, (text) => {
      counts[samePath(text)]++;
      if (parseManifest(text, 'plugin.yaml', 'folder').ok) counts.ok++;
    }),
    { numRuns: 3000, seed: 18 },
  );
  t.diagnostic(`3000 cases: ${counts.plain} accepted on the plain path, ${counts.ok} accepted in all, ${counts.full} by the full check`);
  // Not vacuous: many cases take the plain path, and many are refused by both.
  assert.ok(counts.plain > 200, `plain path taken ${counts.plain} times of 3000`);
  assert.ok(counts.full > 1000, `full check taken ${counts.full} times of 3000`);
});

test('M6: the plain reader agrees with yaml on generated text before any validation (every value it gives)', () => {
  let given = 0;
  fc.assert(
    fc.property(caseArb, (text) => {
      const plain = parsePlainYaml(text);
      if (plain === undefined) return;
      given++;
      assert.deepStrictEqual(plain, yamlValue(text), text);
    }),
    { numRuns: 3000, seed: 6 },
  );
  assert.ok(given > 500, `the plain reader gave a value ${given} times of 3000`);
});

test('M6: every plugin.yaml in the repository takes the plain path or the full check with the same outcome; the reference plugins take the plain path', () => {
  const files = manifestsIn(ROOT, ['plugins', 'test/fixtures', 'examples']);
  assert.ok(files.length >= 20, `${files.length} manifests`);
  for (const f of files) samePath(f.text);
  for (const f of files.filter((f) => f.file.startsWith('plugins/'))) {
    assert.notEqual(parsePlainYaml(f.text), undefined, `${f.file} is plain YAML`);
  }
});

test('M6: the plain reader leaves alone what it does not know (the full check then says where the mistake is)', () => {
  const HEAD = 'name: x\nversion: "1"\nprovides: [tool]\ntools:\n';
  for (const text of [
    `${HEAD}  a:\n    effect: read\n  a:\n    effect: write\n`, // a duplicate key
    `${HEAD}  __proto__:\n    effect: read\n`,
    `${HEAD}  a: &d\n    effect: read\n  b: *d\n`, // anchors and aliases
    `${HEAD}  a: {effect: read}\n`, // a flow mapping
    `${HEAD}  a:\n    effect: read\n    guidance: one\n      two\n`, // a plain scalar over two lines
    `${HEAD}  a:\n    effect: read\n    guidance: "a \\"b\\""\n`, // escapes
    `${HEAD}  a:\n    effect: read\n    guidance: >\n      one\n\n      two\n`, // a blank line inside a folded scalar
    `${HEAD}  a:\n    effect: read\n    pinned: 1\n`, // a number
    `${HEAD}  a:\n    effect:\tread\n`, // a tab
    `${HEAD}  a:\n    effect: read\r\n`, // CRLF
    `---\n${HEAD}  a:\n    effect: read\n`, // a document marker
    'provides:\n- tool\nname: x\nversion: "1"\n', // a sequence at its key's indentation
    'name: x\nversion: "1"\nprovides: [to]ol]\n', // flow indicators inside a flow sequence
    'name: x\nversion: "1"\nprovides: [tool, {a]\n',
    'name: x\nversion: "1"\nprovides: [tool, a: b]\n', // a mapping inside a flow sequence
    "name: x\nversion: '1'\nprovides: ['to, ol']\n", // a comma inside quotes
  ]) {
    assert.equal(parsePlainYaml(text), undefined, text);
    samePath(text);
  }
  // …and reads what it knows exactly as yaml does.
  const known = `# c\nname: x # a comment\nversion: '1.0'\ndescription: >-\n  one\n  two # not a comment\nprovides:\n  - tool\ntools:\n  a:\n    effect: read\n    guidance: |\n      line one\n      line: two\n    pinned: true\n`;
  assert.deepEqual(parsePlainYaml(known), yamlValue(known));
  assert.equal(samePath(known), 'plain');
});

test('M6: the plain shape knows exactly the fields of the manifest schema', () => {
  assert.deepEqual(Object.keys(PLAIN_FIELDS.manifest).sort(), Object.keys(ManifestSchema.shape).sort());
  assert.deepEqual(Object.keys(PLAIN_FIELDS.tool).sort(), Object.keys(ToolDeclarationSchema.shape).sort());
  assert.deepEqual(Object.keys(PLAIN_FIELDS.mcp).sort(), Object.keys(McpSectionSchema.shape).sort());
});

// --- parameter schemas ------------------------------------------------------------------------

const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false, addUsedSchema: false });

/** Parameter schemas: mostly well formed, with wrong values and unknown keywords mixed in. */
const schemaArb: fc.Arbitrary<unknown> = fc.letrec<{ schema: unknown }>((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.boolean(),
    fc.dictionary(
      // Every keyword the plain check knows, and some it does not.
      fc.constantFrom(...PLAIN_KEYWORDS, '$schema', '$ref', 'nullable', 'x-extra'),
      fc.oneof(
        fc.constantFrom(
          'object',
          'string',
          'integer',
          'date',
          ['string', 'null'],
          ['string', 'string'],
          [],
          0,
          -1,
          1.5,
          3,
          true,
          null,
          '^[a-z]+$',
          '(',
          '\\p{L}',
          ['a', 'b'],
          ['a', 'a'],
          [1, '1'],
          [{}, {}],
          'http://json-schema.org/draft-07/schema#',
          'https://json-schema.org/draft/2020-12/schema',
        ),
        fc.dictionary(fc.constantFrom('a', 'b', 'c'), tie('schema'), { maxKeys: 3 }),
        fc.array(tie('schema'), { maxLength: 3 }),
        tie('schema'),
      ),
      { maxKeys: 5 },
    ),
  ),
})).schema;

/** Every keyword of `s`, at every depth, is one of PLAIN_KEYWORDS (`$schema` at the root only). */
function onlyPlainKeywords(s: unknown, root = false): boolean {
  if (typeof s === 'boolean') return true;
  if (!s || typeof s !== 'object' || Array.isArray(s)) return false;
  return Object.entries(s).every(([k, v]) => {
    if (k === '$schema') return root;
    if (!PLAIN_KEYWORDS.has(k)) return false;
    if (k === 'properties') return Object.values(v as object).every((x) => onlyPlainKeywords(x));
    if (k === 'items' || k === 'additionalProperties' || k === 'not') return onlyPlainKeywords(v);
    if (k === 'anyOf' || k === 'oneOf' || k === 'allOf') return (v as unknown[]).every((x) => onlyPlainKeywords(x));
    return true;
  });
}

test('M6: a parameter schema the plain check calls valid is valid for ajv (draft-07 meta-schema)', () => {
  let plainValid = 0;
  let ajvValid = 0;
  fc.assert(
    fc.property(schemaArb, (s) => {
      let ok = false;
      try {
        ok = ajv.validateSchema(s as object) as boolean;
      } catch {
        // ajv throws for some malformed schemas ($schema not a string): not valid
      }
      if (ok) ajvValid++;
      if (plainSchemaValid(s)) {
        plainValid++;
        assert.equal(ok, true, `plain check accepts what ajv refuses: ${JSON.stringify(s)} (${ajv.errorsText(ajv.errors)})`);
        // spec.ts takes the plain path on this check alone (issue 49): what it accepts is made of PLAIN_KEYWORDS.
        assert.ok(onlyPlainKeywords(s, true), `plain check accepts a keyword outside PLAIN_KEYWORDS: ${JSON.stringify(s)}`);
      }
    }),
    { numRuns: 5000, seed: 18 },
  );
  assert.ok(plainValid > 500, `the plain check accepted ${plainValid} of 5000 (ajv ${ajvValid})`);
  // The schemas tools are made of.
  for (const s of [
    { type: 'object' },
    {
      type: 'object',
      properties: { q: { type: 'string', description: 'Words', minLength: 1 } },
      required: ['q'],
      additionalProperties: false,
    },
    {
      type: 'object',
      properties: { when: { type: 'string', format: 'date' }, tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } } },
    },
    { type: 'object', properties: { n: { type: 'integer', minimum: 0, maximum: 10 }, id: { type: 'string', pattern: '^[a-z0-9-]+$' } } },
  ]) {
    assert.equal(plainSchemaValid(s), true, JSON.stringify(s));
  }
});

test('M6: mounting plugins whose manifests and parameter schemas are plain loads neither yaml nor ajv', () => {
  const script = `
    import { createRequire } from 'node:module';
    import { mkdtempSync } from 'node:fs';
    import { tmpdir } from 'node:os';
    import { join } from 'node:path';
    const { mountPlugins } = await import(${JSON.stringify(join(ROOT, 'src', 'plugin-host', 'host.ts'))});
    const home = mkdtempSync(join(tmpdir(), 'keel-plain-'));
    const reg = await mountPlugins([${JSON.stringify(join(ROOT, 'plugins'))}], { home });
    const loaded = (name) => Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('/node_modules/' + name + '/')).length;
    process.stdout.write(JSON.stringify({ plugins: reg.plugins.map((p) => p.status), yaml: loaded('yaml'), ajv: loaded('ajv') }));
    await reg.close();
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { plugins: string[]; yaml: number; ajv: number };
  assert.ok(out.plugins.length >= 5 && out.plugins.every((s) => s === 'loaded'), JSON.stringify(out.plugins));
  assert.equal(out.yaml, 0, 'the yaml package was loaded by a mount of plain manifests');
  // …and plain parameter schemas are checked without ajv (which loads on first use: src/tools/spec.ts).
  assert.equal(out.ajv, 0, 'ajv was loaded by a mount of plugins whose parameter schemas are plain');
});
