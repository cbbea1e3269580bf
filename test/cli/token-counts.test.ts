/**
 * R30 (issue 26): token counts are made in a process of its own (the counter), off the request path. With
 * KEEL_COUNT_TOKENS=1 every request of a real provider's run carries its count; by default (on for
 * real models when ai-tokenizer is installed) the run never waits for one, and the counter
 * never keeps a process alive — not even when a count never comes in. A counter that fails
 * leaves the counts absent, never a failed run. The slow and the failing counter are the test
 * fixtures test/fixtures/token-counter/{hang,fail}.cjs, given to node as `--require`, which the
 * counter takes with the process's other preloads (they leave Keel's own process alone).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { defineTool, Keel } from '../../src/index.js';
import { countRequestTokens, waitForCount } from '../../src/prompt/tokens.js';
import { FakeGateway } from '../support/fake-gateway.js';
import { type CliResult, ensureBuilt, FIXTURES, json, KEEL_BIN, ROOT, tempHome } from '../support/helpers.js';

const COUNTER = join(ROOT, 'test', 'fixtures', 'token-counter');

interface Traced {
  status: string;
  answer: string | null;
  model_calls: number;
  requests: { input_tokens?: number }[];
}

/**
 * `node [--import FIXTURE] ARGS…` from the project folder. A process still alive after `guardMs`
 * is killed (a hang guard, not a time assertion): `killed` then says the process would not end.
 */
function node(args: string[], env: Record<string, string>, guardMs = 120_000): Promise<CliResult & { killed: boolean }> {
  ensureBuilt();
  const base = { ...process.env };
  delete base.KEEL_PLUGINS;
  delete base.KEEL_COUNT_TOKENS;
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...base, KEEL_PLUGINS: '', KEEL_STORE: '', ...env } });
    let stdout = '';
    let stderr = '';
    let killed = false;
    const guard = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, guardMs);
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(guard);
      res({ code: code ?? -1, stdout, stderr, killed });
    });
    child.stdin.end();
  });
}

const preload = (fixture: 'hang' | 'fail') => ['--require', join(COUNTER, `${fixture}.cjs`)];

async function withGateway(replies: number, body: (spec: string, home: string, g: FakeGateway) => Promise<void>): Promise<void> {
  const g = await FakeGateway.start(
    Array.from({ length: replies }, (_, i) => ({ text: `Hello ${i + 1}.` })),
    { strict: true },
  );
  const home = tempHome('keel-token-counts-');
  try {
    await body(`openai-compatible:fake-model@${g.openaiBaseUrl}`, home, g);
  } finally {
    await g.close();
    rmSync(home, { recursive: true, force: true });
  }
}

test("R30/S1: with KEEL_COUNT_TOKENS=1 a real provider run through the CLI carries each request's input_tokens (`--json`)", async () => {
  await withGateway(1, async (spec, home) => {
    const r = await node([KEEL_BIN, 'run', '--json', '--model', spec, 'hello'], { KEEL_HOME: home, KEEL_COUNT_TOKENS: '1' });
    assert.equal(r.code, 0, r.stderr);
    const out = json<Traced>(r);
    assert.equal(out.status, 'done');
    assert.equal(out.answer, 'Hello 1.');
    assert.equal(out.requests.length, 1);
    // The system prompt and the bundled plugins' declarations: far more than a hundred tokens.
    assert.ok((out.requests[0].input_tokens ?? 0) > 100, JSON.stringify(out.requests));
  });
});

test('R30: a counter that never answers does not hold a run: the CLI answers and exits, the request uncounted', async () => {
  await withGateway(1, async (spec, home) => {
    const r = await node([...preload('hang'), KEEL_BIN, 'run', '--json', '--model', spec, 'hello'], { KEEL_HOME: home });
    assert.equal(r.killed, false, 'the CLI ended by itself');
    assert.equal(r.code, 0, r.stderr);
    const out = json<Traced>(r);
    assert.equal(out.answer, 'Hello 1.');
    assert.equal(out.requests[0].input_tokens, undefined);
  });
});

test('R30: the counter never keeps a process alive: a library run whose count never comes in ends, and the process with it', async () => {
  await withGateway(2, async (spec, home) => {
    const file = join(home, 'embed.mjs');
    // An application of its own: two runs, its Keel closed, and nothing else to do — the process must end.
    writeFileSync(
      file,
      `import { Keel } from ${JSON.stringify(join(ROOT, 'dist', 'src', 'index.js'))};
      const keel = new Keel({ home: ${JSON.stringify(home)} });
      const runs = [];
      for (const q of ['hello', 'hello again']) {
        const r = await keel.run(q, { model: ${JSON.stringify(spec)}, pluginDirs: [${JSON.stringify(join(FIXTURES, 'calendar'))}] });
        runs.push({ status: r.status, answer: r.answer, input_tokens: r.requests.map((q) => q.input_tokens ?? null) });
      }
      await keel.close();
      console.log(JSON.stringify(runs));`,
    );
    const r = await node([...preload('hang'), file], { KEEL_HOME: home });
    assert.equal(r.killed, false, 'the process ended by itself with the count still outstanding');
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [
      { status: 'done', answer: 'Hello 1.', input_tokens: [null] },
      { status: 'done', answer: 'Hello 2.', input_tokens: [null] },
    ]);
  });
});

test('R30: a counter that fails leaves the counts absent, never a failed run (also with KEEL_COUNT_TOKENS=1)', async () => {
  await withGateway(2, async (spec, home) => {
    for (const env of [{ KEEL_COUNT_TOKENS: '1' }, {}] as Record<string, string>[]) {
      const r = await node([...preload('fail'), KEEL_BIN, 'run', '--json', '--model', spec, 'hello'], { KEEL_HOME: home, ...env });
      assert.equal(r.killed, false);
      assert.equal(r.code, 0, r.stderr);
      const out = json<Traced>(r);
      assert.equal(out.status, 'done', JSON.stringify(env));
      assert.equal(out.requests[0].input_tokens, undefined);
    }
  });
});

test('R30: by default a count that comes in while the run is still going joins its request, in the result and in the store', async () => {
  // The tool waits for a count of its own; the counter answers in the order it was asked,
  // so step 1's count is in before the tool returns and the step is saved: it must join step 1.
  const probe = defineTool({
    name: 'probe_counts',
    description: 'Look at the counts',
    parameters: { type: 'object', properties: {} } as const,
    effect: 'read',
    execute: async () => `counted ${await waitForCount(countRequestTokens('a text of its own', [], 'o200k_base'))}`,
  });
  const g = await FakeGateway.start([{ tool_calls: [{ id: 'p1', name: 'probe_counts', args: {} }] }, { text: 'Probed.' }], {
    strict: true,
  });
  const home = tempHome('keel-token-counts-');
  const env: NodeJS.ProcessEnv = { ...process.env, KEEL_HOME: home, KEEL_STORE: '', KEEL_PLUGINS: '' };
  delete env.KEEL_COUNT_TOKENS;
  const keel = new Keel({ home, env, tools: [probe] });
  try {
    const r = await keel.run('probe the counts', { model: `openai-compatible:fake-model@${g.openaiBaseUrl}`, pluginDirs: [] });
    assert.equal(r.status, 'done', JSON.stringify(r));
    assert.equal(r.answer, 'Probed.');
    assert.match(r.steps[0]?.result ?? '', /^counted \d+$/);
    const first = r.requests[0].input_tokens;
    assert.ok(first !== undefined && first > 50, JSON.stringify(r.requests.map((q) => q.input_tokens)));
    const stored = await keel.getRun(r.run_id);
    assert.equal(stored.requests[0].input_tokens, first, 'the store holds what the result shows');
  } finally {
    await keel.close();
    await g.close();
    rmSync(home, { recursive: true, force: true });
  }
});
