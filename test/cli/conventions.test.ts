/** CLI conventions: `--version`; `keel run -` reads the request from stdin (and refuses an empty one). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { FIXTURES, json, keel, ROOT, script, tempHome } from '../support/helpers.js';

test('keel --version prints the package version on stdout and exits 0', async () => {
  const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
  for (const flag of ['--version', '-V']) {
    const r = await keel([flag]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.trim(), version);
    assert.equal(r.stderr, '');
  }
});

test('keel run - reads the request from stdin; an empty stdin is refused with exit 2', async () => {
  const home = tempHome();
  const model = script(home, [{ text: 'Noted.' }]);
  const r = await keel(
    ['run', '--json', '--model', model, '--plugins', FIXTURES, '-'],
    { KEEL_HOME: home },
    'remember the milk\nand the eggs\n',
  );
  assert.equal(r.code, 0, r.stderr);
  const out = json<{ run_id: string; answer: string }>(r);
  assert.equal(out.answer, 'Noted.');
  const shown = json<{ request: string }>(await keel(['runs', 'show', out.run_id, '--json'], { KEEL_HOME: home }));
  assert.equal(shown.request, 'remember the milk\nand the eggs');
  const empty = await keel(['run', '--model', model, '--plugins', FIXTURES, '-'], { KEEL_HOME: home }, '  \n');
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /stdin was empty/);
});

test("a usage error points to that command's own help, on stderr, with exit 2", async () => {
  const flag = await keel(['run', '--bogus', 'x']);
  assert.equal(flag.code, 2);
  assert.equal(flag.stdout, '');
  assert.match(flag.stderr, /unknown option '--bogus'\n\(keel run --help shows its usage\)/);
  const missing = await keel(['approvals', 'approve']);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /missing required argument 'id'\n\(keel approvals approve --help shows its usage\)/);
  const unknown = await keel(['nope']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /\(keel --help lists the commands\)/);
});
