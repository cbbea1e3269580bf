/**
 * What a one-reply run loads: not the OpenTelemetry API when nothing registered with it, and not
 * ajv when the manifests' verdicts are cached and no call is validated. These are tens of
 * milliseconds each on every `keel run` (bench/startup measures the whole).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { FIXTURES, ROOT } from '../support/helpers.js';

function runAndList(home: string): { answer: string; loaded: string[] } {
  const code = `
    import { createRequire } from 'node:module';
    const { Keel } = await import(${JSON.stringify(join(ROOT, 'dist', 'src', 'index.js'))});
    const keel = new Keel({ home: ${JSON.stringify(home)} });
    // A model of the test's own (a script would load yaml, which a real model does not need).
    const model = { spec: 'inline:hi', async *stream() { yield { type: 'done', reply: { text: 'Hi.', tool_calls: [] } }; } };
    const r = await keel.run('hello', { model, pluginDirs: [${JSON.stringify(join(FIXTURES, 'calendar'))}] });
    await keel.close();
    const heavy = /node_modules\\/(@opentelemetry\\/api|ajv|zod|yaml)\\//;
    const loaded = [...new Set(Object.keys(createRequire(import.meta.url).cache).map((k) => heavy.exec(k)?.[1]).filter(Boolean))];
    console.log(JSON.stringify({ answer: r.answer, loaded }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    encoding: 'utf8',
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: '', KEEL_STORE: '' },
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('a one-reply run with a warm manifest cache loads neither the OpenTelemetry API, nor ajv, nor zod, nor yaml', () => {
  const home = mkdtempSync(join(tmpdir(), 'keel-imports-'));
  runAndList(home); // fills the manifest cache
  assert.deepEqual(runAndList(home), { answer: 'Hi.', loaded: [] });
});

/** The modules a file imports statically (not `import type`, not `import()`), as written. */
function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^\s*import\s+(?!type\b)(?:[^'"]*?\bfrom\s+)?['"]([^'"]+)['"]/gm)].map((m) => m[1]);
}

test("the run path's static imports hold none of the heavy packages: they load on first use", () => {
  const start = join(ROOT, 'dist', 'src', 'keel', 'keel.js');
  const seen = new Set<string>();
  const packages = new Map<string, string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith('.')) walk(resolve(dirname(file), spec));
      else if (!spec.startsWith('node:')) packages.set(spec, file.slice(ROOT.length + 1));
    }
  };
  walk(start);
  assert.ok(seen.size > 20, `walked the run path (${seen.size} modules)`);
  const heavy = [...packages].filter(([p]) =>
    /^(zod|yaml|ajv|pg|pg-boss|@opentelemetry\/|@modelcontextprotocol\/|@mariozechner\/|ai-tokenizer|hono)/.test(p),
  );
  assert.deepEqual(heavy, []);
});
