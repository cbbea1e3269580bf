/**
 * What a one-reply run loads: not the OpenTelemetry API when nothing registered with it, and not
 * ajv when the manifests' verdicts are cached and no call is validated; against a model server, of
 * pi-ai only the module of that server's API and its SDK (P1, issue 26). These are tens to hundreds
 * of milliseconds each on every `keel run` (bench/startup measures the whole). And what `keel --help`
 * loads: the commands' registrations, commander and a few small helpers — no rendering, no config,
 * no node:crypto (issue 47).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FakeGateway } from '../support/fake-gateway.js';
import { type CliResult, FIXTURES, keel, ROOT, tempHome } from '../support/helpers.js';

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
  const home = tempHome('keel-imports-');
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

const LOAD_LIST = join(ROOT, 'test', 'fixtures', 'load-list', 'register.mjs');

/** Every module URL a `keel` command imported, as the load-list hook recorded them. */
async function modulesLoaded(args: string[], env: Record<string, string> = {}): Promise<{ r: CliResult; urls: string[] }> {
  const list = join(tempHome('keel-load-list-'), 'loaded.txt');
  const r = await keel(args, { ...env, NODE_OPTIONS: `--import=${pathToFileURL(LOAD_LIST).href}`, KEEL_TEST_LOAD_LIST: list });
  return { r, urls: existsSync(list) ? [...new Set(readFileSync(list, 'utf8').split('\n').filter(Boolean))] : [] };
}

/**
 * What `keel --help` may load of Keel's own code (issue 47): the entry, each command's registration
 * and the small helpers those need to declare their options. A command's work — rendering runs and
 * cards, the config, the live view, a server's client — loads when its action runs. A module added
 * here costs every `keel --help` (and every command: each starts the same way) its load time.
 */
const HELP_MODULES = new Set([
  'cli/main.js',
  'cli/context.js',
  'cli/help.js',
  'cli/colour.js',
  ...['approvals', 'data', 'db', 'init', 'mcp', 'plugins', 'policy', 'run', 'runs', 'serve', 'tokens', 'worker'].map(
    (c) => `cli/${c}-command.js`,
  ),
  'config/paths.js',
  'models/types.js',
  'types/tools.js',
  'util/errors.js',
  'util/redact.js',
  'util/terminal.js',
  'util/user.js',
]);

test("issue 47: keel --help loads only the commands' registrations: commander, no rendering, no config, no node:crypto", async () => {
  // `keel --help` and `--version` alone never load the CLI (issue 49, below); a command's help does.
  for (const args of [['runs', '--help'], ['help'], ['--help', '--server', 'http://x']]) {
    const { r, urls } = await modulesLoaded(args);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(
      urls.some((u) => u.includes('/dist/cli/main.js')),
      `the hook saw the CLI load: ${urls.join(' ')}`,
    );
    const packages = new Set(urls.map((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1]).filter(Boolean));
    assert.deepEqual([...packages], ['commander'], `keel ${args.join(' ')}: packages`);
    const builtins = urls.filter((u) => u.startsWith('node:'));
    assert.deepEqual(
      builtins.filter((u) => !['node:fs', 'node:os', 'node:path', 'node:url', 'node:module'].includes(u)),
      [],
      `keel ${args.join(' ')}: built-in modules (node:crypto alone is ~6 ms)`,
    );
    // The bundle's chunks name the modules they were made from (esbuild's `// dist/src/…` comments).
    const modules = new Set(
      urls
        .filter((u) => u.includes('/dist/cli/'))
        .flatMap((u) => [...readFileSync(fileURLToPath(u), 'utf8').matchAll(/^\/\/ dist\/src\/(\S+\.js)$/gm)].map((m) => m[1])),
    );
    assert.ok(modules.has('cli/main.js'), [...modules].join(' '));
    assert.deepEqual(
      [...modules].filter((m) => !HELP_MODULES.has(m)).sort(),
      [],
      `keel ${args.join(' ')} loaded more than the registrations`,
    );
  }
});

test('issue 49: keel --help and keel --version print without loading the CLI, and say what the program says', async () => {
  const { main } = await import(pathToFileURL(join(ROOT, 'dist', 'cli', 'main.js')).href);
  const fromProgram = async (args: string[]) => {
    let out = '';
    const code = await main(
      ['node', 'keel', ...args],
      { out: (t: string) => (out += t), err: () => {}, env: { NO_COLOR: '1' } },
      { stdout: {}, stderr: {} },
    );
    return { code, out };
  };
  for (const args of [['--help'], ['-h'], ['--version'], ['-V']]) {
    const { r, urls } = await modulesLoaded(args);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      urls.filter((u) => u.includes('/dist/') || u.includes('/node_modules/')),
      [],
      `keel ${args.join(' ')} loaded the CLI`,
    );
    const program = await fromProgram(args);
    assert.equal(program.code, 0);
    assert.equal(r.stdout, program.out, `keel ${args.join(' ')}: the quick text is the program's`);
  }
  // On a wide terminal the program wraps its help at 80 columns too, as the quick text does.
  const wide = await main(
    ['node', 'keel', '--help'],
    { out: () => {}, err: () => {}, env: {} },
    { stdout: { isTTY: true, columns: 200 }, stderr: {} },
  );
  assert.equal(wide, 0);
  const { helpWidth } = await import(pathToFileURL(join(ROOT, 'dist', 'cli', 'main.js')).href);
  assert.deepEqual([helpWidth({ isTTY: true, columns: 200 }), helpWidth({ isTTY: true, columns: 60 }), helpWidth({})], [80, 60, 80]);
});

/** The packages (by name) a `keel` command imported, from the URLs the load-list hook recorded. */
async function packagesLoaded(
  args: string[],
  env: Record<string, string>,
): Promise<{ r: CliResult; packages: Set<string>; counter: Set<string> }> {
  const list = join(tempHome('keel-load-list-'), 'loaded.txt');
  const r = await keel(args, { ...env, NODE_OPTIONS: `--import=${pathToFileURL(LOAD_LIST).href}`, KEEL_TEST_LOAD_LIST: list });
  const read = (file: string) => {
    const urls = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
    return new Set(urls.map((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1]).filter((p): p is string => !!p));
  };
  // The token counter's own imports (a process of its own): see test/fixtures/load-list/register.mjs.
  return { r, packages: read(list), counter: read(`${list}.counter`) };
}

test('P1 (issue 26): a one-reply run against a server loads of pi-ai only what its API needs: that SDK, no other, no TypeBox', async () => {
  // What pi-ai could bring: itself and every package it depends on (each provider's SDK among them).
  const piDeps = JSON.parse(readFileSync(join(ROOT, 'node_modules', '@mariozechner', 'pi-ai', 'package.json'), 'utf8'));
  const piPackages = new Set(['@mariozechner/pi-ai', ...Object.keys(piDeps.dependencies)]);
  assert.ok(piPackages.has('@anthropic-ai/sdk') && piPackages.has('@google/genai') && piPackages.has('typebox'), [...piPackages].join(' '));
  const g = await FakeGateway.start([{ text: 'Hello from OpenAI.' }, { text: 'Hello from Anthropic.' }], { strict: true });
  const home = tempHome('keel-imports-');
  try {
    const runs: { args: string[]; env: Record<string, string>; answer: string; expected: string[] }[] = [
      {
        args: ['run', '--model', `openai-compatible:fake-model@${g.openaiBaseUrl}`, 'hello'],
        env: {},
        answer: 'Hello from OpenAI.',
        expected: ['@mariozechner/pi-ai', 'openai', 'partial-json'],
      },
      {
        args: ['run', '--model', 'anthropic:claude-sonnet-4-5', 'hello'],
        env: { ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: g.anthropicBaseUrl },
        answer: 'Hello from Anthropic.',
        expected: ['@anthropic-ai/sdk', '@mariozechner/pi-ai', 'partial-json'],
      },
    ];
    for (const run of runs) {
      const { r, packages } = await packagesLoaded(run.args, { KEEL_HOME: home, KEEL_PLUGINS: '', KEEL_COUNT_TOKENS: '0', ...run.env });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.ok(r.stdout.includes(run.answer), r.stdout);
      assert.deepEqual(
        [...packages].filter((p) => piPackages.has(p)).sort(),
        run.expected,
        `${run.args[2]} loaded ${[...packages].join(' ')}`,
      );
    }
    assert.deepEqual(
      g.requests.map((q) => q.status),
      [200, 200],
    );
  } finally {
    await g.close();
    rmSync(home, { recursive: true, force: true });
  }
});

test("R30 (issue 26): with token counting on (by default, and with KEEL_COUNT_TOKENS=1) ai-tokenizer never loads in Keel's process", async () => {
  // The load-list hook records Keel's process's imports; the counter's (a process of its own) go to a list of their own.
  const g = await FakeGateway.start([{ text: 'Counted by default.' }, { text: 'Counted always.' }], { strict: true });
  const home = tempHome('keel-imports-');
  try {
    const spec = `openai-compatible:fake-model@${g.openaiBaseUrl}`;
    for (const [counting, answer] of [
      ['', 'Counted by default.'],
      ['1', 'Counted always.'],
    ]) {
      const { r, packages, counter } = await packagesLoaded(['run', '--json', '--model', spec, 'hello'], {
        KEEL_HOME: home,
        KEEL_PLUGINS: '',
        KEEL_COUNT_TOKENS: counting,
      });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const out = JSON.parse(r.stdout) as { answer: string; requests: { input_tokens?: number }[] };
      assert.equal(out.answer, answer);
      // Counting did happen (KEEL_COUNT_TOKENS=1 waits for it), only not here.
      if (counting === '1') assert.ok((out.requests[0].input_tokens ?? 0) > 100, JSON.stringify(out.requests));
      assert.ok(packages.has('@mariozechner/pi-ai'), `the hook saw the run's imports: ${[...packages].join(' ')}`);
      assert.equal(packages.has('ai-tokenizer'), false, `KEEL_COUNT_TOKENS=${counting}: ai-tokenizer loaded in Keel's process`);
      if (counting === '1') assert.ok(counter.has('ai-tokenizer'), `the counter loaded it: ${[...counter].join(' ')}`);
    }
  } finally {
    await g.close();
    rmSync(home, { recursive: true, force: true });
  }
});
