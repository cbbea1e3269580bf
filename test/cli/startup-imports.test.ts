/**
 * What a one-reply run loads: not the OpenTelemetry API when nothing registered with it, and not
 * ajv when the manifests' verdicts are cached and no call is validated. These are tens of
 * milliseconds each on every `keel run` (bench/startup measures the whole).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FIXTURES, ROOT } from '../support/helpers.js';

function runAndList(home: string): { answer: string; loaded: string[] } {
  const code = `
    import { createRequire } from 'node:module';
    const { Keel } = await import(${JSON.stringify(join(ROOT, 'dist', 'src', 'index.js'))});
    const keel = new Keel({ home: ${JSON.stringify(home)} });
    const r = await keel.run('hello', { model: ${JSON.stringify(`script:${join(home, 's.yaml')}`)}, pluginDirs: [${JSON.stringify(join(FIXTURES, 'calendar'))}] });
    await keel.close();
    const heavy = /node_modules\\/(@opentelemetry\\/api|ajv)\\//;
    const loaded = [...new Set(Object.keys(createRequire(import.meta.url).cache).map((k) => heavy.exec(k)?.[1]).filter(Boolean))];
    console.log(JSON.stringify({ answer: r.answer, loaded }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    encoding: 'utf8',
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: '', KEEL_STORE: '' },
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('a one-reply run with a warm manifest cache loads neither the OpenTelemetry API nor ajv', () => {
  const home = mkdtempSync(join(tmpdir(), 'keel-imports-'));
  writeFileSync(join(home, 's.yaml'), '- text: "Hi."\n');
  runAndList(home); // fills the manifest cache
  assert.deepEqual(runAndList(home), { answer: 'Hi.', loaded: [] });
});
