/**
 * P2: the scripted model reads its replies from YAML; a parse is remembered across processes by the
 * text's hash (yamlParseCached), so a process that reads a script it has read before loads no YAML
 * parser. What is remembered is exactly what the parser gave, and a text that changes is parsed again.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseScript } from '../../src/models/script.js';
import { fileCache } from '../../src/util/file-cache.js';
import { yamlParse, yamlParseCached } from '../../src/util/yaml.js';
import { ROOT, tempHome } from '../support/helpers.js';

test('P2: a parsed script is remembered by its hash; the remembered value equals the parse, and a changed text is parsed anew', () => {
  const dir = join(tempHome('keel-script-cache-'), 'scripts');
  const text = '- tool_calls: [{ id: c1, name: upcoming_dues, args: { within_days: 15, tags: [a, "b c"] } }]\n- text: "Done."\n';
  const first = parseScript(text, 's.yaml', fileCache(dir));
  assert.deepEqual(first, yamlParse(text));
  assert.equal(readdirSync(dir).length, 1, 'one file for the text');
  assert.deepEqual(parseScript(text, 's.yaml', fileCache(dir)), first, 'read back from the cache');
  // What the file holds is what is returned: a changed file is what a later process reads.
  const [file] = readdirSync(dir);
  writeFileSync(join(dir, file), JSON.stringify([{ text: 'from the cache' }]));
  assert.deepEqual(parseScript(text, 's.yaml', fileCache(dir)), [{ text: 'from the cache' }]);
  assert.deepEqual(parseScript(`${text}- text: "More."\n`, 's.yaml', fileCache(dir)).length, 3, 'another text, another entry');
  assert.equal(readdirSync(dir).length, 2);
});

test('P2: values JSON would change (.inf, .nan, -0) are not remembered; a broken script is refused every time and never kept', () => {
  const dir = join(tempHome('keel-script-cache-'), 'scripts');
  const kept = () => (existsSync(dir) ? readdirSync(dir).length : 0);
  const odd = '- text: x\n  delay_ms: .inf\n- text: y\n  delay_ms: -0\n';
  const v = yamlParseCached(odd, fileCache(dir)) as { delay_ms: number }[];
  assert.equal(v[0].delay_ms, Number.POSITIVE_INFINITY);
  assert.ok(Object.is(v[1].delay_ms, -0));
  assert.equal(kept(), 0, 'nothing kept');
  for (let i = 0; i < 2; i++)
    assert.throws(() => parseScript('- text: [unclosed\n', 'bad.yaml', fileCache(dir)), /bad\.yaml: the script is not valid YAML/);
  assert.equal(kept(), 0);
});

test('P2: a keel run whose script was read before loads no YAML parser', () => {
  const home = tempHome('keel-script-home-');
  writeFileSync(join(home, 's.yaml'), '- text: "Hi."\n');
  const code = `
    import { createRequire } from 'node:module';
    const { Keel } = await import(${JSON.stringify(join(ROOT, 'dist', 'src', 'index.js'))});
    const keel = new Keel({ home: ${JSON.stringify(home)}, env: {} });
    const r = await keel.run('hello', { model: ${JSON.stringify(`script:${join(home, 's.yaml')}`)} });
    await keel.close();
    const loaded = Object.keys(createRequire(import.meta.url).cache).some((k) => /node_modules\\/yaml\\//.test(k));
    console.log(JSON.stringify({ answer: r.answer, loaded }));`;
  const runOnce = () => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as { answer: string; loaded: boolean };
  };
  assert.deepEqual(runOnce(), { answer: 'Hi.', loaded: true }, 'the first read parses the YAML');
  assert.deepEqual(runOnce(), { answer: 'Hi.', loaded: false }, 'the next reads what the first remembered');
  const dir = join(home, 'cache', 'scripts');
  assert.ok(readFileSync(join(dir, readdirSync(dir)[0]), 'utf8').includes('Hi.'), "kept in the Keel home given, not the environment's");
});
