import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { mountPlugins } from '../../src/plugin-host/host.js';
import { tempHome } from '../support/helpers.js';

function plugin(root: string, manifest: string): string {
  const dir = join(root, 'plugins', 'p');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'plugin.yaml'), manifest);
  writeFileSync(
    join(dir, 'index.js'),
    // Plain keywords the plain check leaves to ajv (an enum of objects): ajv's meta-schema verdict, kept.
    "export default (api) => api.registerTool({ name: 'look', description: 'd', parameters: { type: 'object', properties: { v: { enum: [{ a: 1 }, { b: 2 }] } } }, execute: () => 'ok' });\n",
  );
  return join(root, 'plugins');
}

const GOOD = 'name: p\nversion: 1.0.0\nprovides: [tool]\ntools:\n  look:\n    effect: read\n';

test('manifest cache: a validated manifest is reused by content; an edited one is validated again (no stale verdict)', async () => {
  const home = tempHome();
  const dirs = [plugin(home, GOOD)];
  const first = await mountPlugins(dirs, { home });
  assert.equal(first.plugins[0].status, 'loaded');
  const files = readdirSync(join(home, 'cache'));
  assert.equal(files.length, 1, `one cache file: ${files}`);
  const cached = JSON.parse(readFileSync(join(home, 'cache', files[0]), 'utf8'));
  assert.equal(Object.keys(cached.manifests).length, 1, 'the valid manifest is cached');
  assert.equal(Object.keys(cached.schemas).length, 1, "the tool's parameter schema verdict (ajv's) is cached");

  // The cached verdict is what a second mount uses: tamper with it to prove it is consulted.
  const key = Object.keys(cached.manifests)[0];
  cached.manifests[key].version = '9.9.9-from-cache';
  writeFileSync(join(home, 'cache', files[0]), JSON.stringify(cached));
  const second = await mountPlugins(dirs, { home });
  assert.equal(second.plugins[0].version, '9.9.9-from-cache');

  // An edited manifest has another key: it is parsed and validated afresh.
  plugin(home, GOOD.replace('effect: read', 'effect: read\n    confirm: once'));
  const third = await mountPlugins(dirs, { home });
  assert.equal(third.plugins[0].status, 'failed');
  assert.match(
    third.plugins[0].failures[0].message,
    /plugin\.yaml:7:5: plugin p, tool look, field confirm: 'confirm' applies only to write tools/,
  );
  const after = JSON.parse(readFileSync(join(home, 'cache', files[0]), 'utf8'));
  assert.equal(Object.keys(after.manifests).length, 1, 'a manifest with errors is never cached');
});

test('schema verdicts: only valid parameter schemas are remembered; an invalid one is refused on every mount', async () => {
  const home = tempHome();
  const root = join(home, 'bad');
  mkdirSync(join(root, 'q'), { recursive: true });
  writeFileSync(join(root, 'q', 'plugin.yaml'), 'name: q\nversion: 1.0.0\nprovides: [tool]\ntools:\n  odd:\n    effect: read\n');
  writeFileSync(
    join(root, 'q', 'index.js'),
    "export default (api) => api.registerTool({ name: 'odd', description: 'd', parameters: { type: 'object', properties: { a: { type: 'nonsense' } } }, execute: () => 'ok' });\n",
  );
  for (let i = 0; i < 2; i++) {
    const reg = await mountPlugins([root], { home });
    assert.equal(reg.plugins[0].status, 'degraded', `mount ${i + 1}`);
    assert.match(reg.plugins[0].degraded[0].message, /not a valid JSON Schema/);
  }
});

test('schema verdicts: a plain schema is judged by the plain check and never hashed into the cache (issue 49)', async () => {
  const home = tempHome();
  const dir = join(home, 'plain', 'p');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'plugin.yaml'), GOOD);
  writeFileSync(
    join(dir, 'index.js'),
    "export default (api) => api.registerTool({ name: 'look', description: 'd', parameters: { type: 'object', properties: { q: { type: 'string' } } }, execute: () => 'ok' });\n",
  );
  const reg = await mountPlugins([join(home, 'plain')], { home });
  assert.equal(reg.plugins[0].status, 'loaded');
  const [file] = readdirSync(join(home, 'cache'));
  const cached = JSON.parse(readFileSync(join(home, 'cache', file), 'utf8'));
  assert.equal(Object.keys(cached.manifests).length, 1, 'the manifest is cached');
  assert.deepEqual(cached.schemas, {}, 'no verdict kept for a schema the plain check settles');
});
