// P1 through the real CLI (bin/keel.js → dist/): an unreachable Ollama fails fast with a message
// that says which URL was tried and what to do; pi-ai is loaded only by commands that call a model.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { tempHome } from '../support/helpers.js';
import { LOAD_TRACE, ROOT, WIRE_PLUGINS } from './wire-support.js';

const BIN = join(ROOT, 'bin', 'keel.js');

function newestMtime(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newestMtime(p) : e.name.endsWith('.ts') ? statSync(p).mtimeMs : 0);
  }
  return t;
}

/** The CLI runs from dist/: rebuild when any source is newer than the provider's build. */
before(() => {
  const built = join(ROOT, 'dist', 'src', 'models', 'provider.js');
  if (existsSync(built) && statSync(built).mtimeMs >= newestMtime(join(ROOT, 'src'))) return;
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
      stdio: 'pipe',
    });
  } catch (err) {
    // tsc still emits on type errors elsewhere in the tree; only a missing build is fatal here.
    if (!existsSync(built)) throw err;
  }
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function cli(args: string[], env: Record<string, string>, nodeArgs: string[] = []): Promise<Run> {
  const started = Date.now();
  return new Promise((res, rej) => {
    // A clean environment: no real keys or model settings from the machine running the tests.
    const child = spawn(process.execPath, [...nodeArgs, BIN, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(kill);
      res({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

test('P1: keel run --model ollama:… with Ollama down exits non-zero fast, naming the URL and how to start Ollama', async () => {
  const home = tempHome('keel-cli-');
  try {
    const port = await closedPort();
    const r = await cli(['run', '--model', 'ollama:qwen2.5:7b', '--plugins', WIRE_PLUGINS, 'hi'], {
      KEEL_HOME: home,
      OLLAMA_HOST: `http://127.0.0.1:${port}`,
    });
    const out = r.stdout + r.stderr;
    assert.notEqual(r.code, 0, out);
    assert.ok(r.ms < 10_000, `took ${r.ms} ms`);
    assert.ok(out.includes(`http://127.0.0.1:${port}/v1`), out);
    assert.ok(out.includes('ollama serve'), out);
    assert.ok(out.includes('ollama pull qwen2.5:7b'), out);
    assert.ok(out.includes('--model'), out);
    assert.match(out, /model_error/);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('P1: keel run --json with OLLAMA_HOST as host:port (no scheme) reports the normalised URL in the failure', async () => {
  const home = tempHome('keel-cli-');
  try {
    const port = await closedPort();
    const r = await cli(['run', '--json', '--model', 'ollama:llama3.2', '--plugins', WIRE_PLUGINS, 'hi'], {
      KEEL_HOME: home,
      OLLAMA_HOST: `127.0.0.1:${port}`,
    });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const result = JSON.parse(r.stdout);
    assert.equal(result.status, 'failed');
    assert.equal(result.reason, 'model_error');
    assert.ok(result.answer.includes(`http://127.0.0.1:${port}/v1`), result.answer);
    assert.ok(result.answer.includes('ollama pull llama3.2'), result.answer);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('P1: a missing API key is a config error naming the variable, before any request', async () => {
  const home = tempHome('keel-cli-');
  try {
    for (const [spec, envVar] of [
      ['openai:gpt-4o-mini', 'OPENAI_API_KEY'],
      ['anthropic:claude-sonnet-4-5', 'ANTHROPIC_API_KEY'],
      ['google:gemini-2.5-flash', 'GEMINI_API_KEY'],
    ]) {
      const r = await cli(['run', '--model', spec, '--plugins', WIRE_PLUGINS, 'hi'], { KEEL_HOME: home });
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.ok(r.stderr.includes(envVar), r.stderr);
      assert.ok(!r.stderr.includes('unexpected error'), r.stderr);
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('DESIGN: pi-ai is imported lazily: not by keel --help, not by a script-model run, only by a provider run', async () => {
  const home = tempHome('keel-cli-');
  try {
    const trace = ['--import', LOAD_TRACE];
    const help = await cli(['--help'], { KEEL_HOME: home }, trace);
    assert.equal(help.code, 0, help.stderr);
    assert.ok(!help.stderr.includes('KEEL-TEST-LOADED'), help.stderr);

    const script = join(home, 'script.yaml');
    writeFileSync(script, '- text: "hello"\n');
    const scripted = await cli(['run', '--model', `script:${script}`, '--plugins', WIRE_PLUGINS, 'hi'], { KEEL_HOME: home }, trace);
    assert.equal(scripted.code, 0, scripted.stdout + scripted.stderr);
    assert.ok(!scripted.stderr.includes('KEEL-TEST-LOADED'), scripted.stderr);

    // The control: the hook does see pi-ai when a provider model is used.
    const port = await closedPort();
    const real = await cli(
      ['run', '--model', 'ollama:x', '--plugins', WIRE_PLUGINS, 'hi'],
      { KEEL_HOME: home, OLLAMA_HOST: `127.0.0.1:${port}` },
      trace,
    );
    assert.ok(real.stderr.includes('KEEL-TEST-LOADED @mariozechner/pi-ai'), real.stderr);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
