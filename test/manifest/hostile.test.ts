/**
 * M4: a hostile or broken plugin.yaml is that plugin's failed row, with file:line:col — never an
 * exception that stops other plugins from mounting, and never minutes of parsing.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { MAX_MANIFEST_TOOLS, parseManifest } from '../../src/manifest/load.js';
import { mountPlugins } from '../../src/plugin-host/host.js';
import { tempHome } from '../support/helpers.js';

const HEAD = 'name: x\nversion: "1"\nprovides: [tool]\ntools:\n';
const issues = (text: string) => {
  const r = parseManifest(text, 'plugin.yaml', 'x');
  return r.ok ? [] : r.issues.map((i) => `${i.line}:${i.col} ${i.message}`);
};

test('M4: an unresolved alias is an issue at the alias', () => {
  assert.deepEqual(issues(`${HEAD}  a: *nope\n`), [
    '5:6 YAML aliases cannot be expanded: Unresolved alias (the anchor must be set before the alias): nope',
  ]);
});

test('M4: an alias bomb is refused, not expanded', () => {
  const bomb = [
    'a: &a ["x","x","x","x","x","x","x","x","x"]',
    'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]',
    'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]',
    'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]',
    'e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]',
  ].join('\n');
  assert.deepEqual(issues(bomb), ['2:8 YAML aliases cannot be expanded: too many aliases (an alias bomb?)']);
});

test('M4: a tool key __proto__ is refused at its position (a JavaScript object would drop it silently)', () => {
  assert.deepEqual(issues(`${HEAD}  __proto__:\n    effect: read\n`), ["5:3 '__proto__' cannot be used as a name"]);
});

test('M4: a null tool key is reported at its own position', () => {
  assert.deepEqual(issues(`${HEAD}  ok_tool:\n    effect: read\n  ~:\n    effect: read\n`), [
    "7:3 tool name '' must be lowercase letters, digits and _",
  ]);
});

test('M4: a key given twice is an issue at the second one', () => {
  assert.deepEqual(issues(`${HEAD}  a:\n    effect: read\n  a:\n    effect: write\n`), [
    "7:3 YAML does not parse: Map keys must be unique ('a' appears twice in one mapping)",
  ]);
});

test('M4: size is bounded — 100,000 tools are refused at once, not parsed for minutes; over the tool limit is refused', () => {
  let big = HEAD;
  for (let i = 0; i < 100_000; i++) big += `  t${i}:\n    effect: read\n`;
  assert.match(issues(big)[0], /^1:1 the manifest is \d+ characters long, over the limit of 1000000$/);
  let many = HEAD;
  for (let i = 0; i <= MAX_MANIFEST_TOOLS; i++) many += `  t${i}:\n    effect: read\n`;
  assert.deepEqual(issues(many), [`4:1 ${MAX_MANIFEST_TOOLS + 1} tools in one manifest, over the limit of ${MAX_MANIFEST_TOOLS}`]);
});

test('M4/R8: one bad plugin.yaml fails only its own plugin; the others mount', async (t) => {
  const home = tempHome();
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const dir = join(home, 'plugins');
  for (const [name, yaml] of [
    ['a_bad', `name: a_bad\nversion: "1"\nprovides: [tool]\ntools:\n  a: *nope\n`],
    ['b_good', `name: b_good\nversion: "1"\nprovides: [tool]\ntools:\n  b_lookup:\n    effect: read\n`],
  ]) {
    mkdirSync(join(dir, name), { recursive: true });
    writeFileSync(join(dir, name, 'plugin.yaml'), yaml);
    writeFileSync(
      join(dir, name, 'index.mjs'),
      `export default (api) => api.registerTool({ name: 'b_lookup', description: 'b', parameters: { type: 'object' }, execute: () => 'b' });\n`,
    );
  }
  const reg = await mountPlugins([dir], { home });
  assert.deepEqual(
    reg.plugins.map((p) => [p.name, p.status]),
    [
      ['a_bad', 'failed'],
      ['b_good', 'loaded'],
    ],
  );
  assert.match(reg.plugins[0].failures[0].message, /plugin\.yaml:5:6/);
  assert.equal(reg.byName.has('b_lookup'), true);
});
