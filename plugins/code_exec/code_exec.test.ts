import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cleanup, type FakeHost, mount } from '../_test/fake-api.js';
import setup, { childArgs, RUNNER } from './index.js';

const DIR = dirname(fileURLToPath(import.meta.url));

describe('code_exec plugin', () => {
  let host: FakeHost;
  let secretDir: string;
  let secret: string;
  before(async () => {
    host = await mount(DIR, setup);
    secretDir = mkdtempSync(join(tmpdir(), 'keel-secret-'));
    secret = join(secretDir, 'secret.txt');
    writeFileSync(secret, 'TOP-SECRET-CONTENT');
  });
  after(async () => {
    await host.close();
    cleanup(host.home);
    rmSync(secretDir, { recursive: true, force: true });
  });
  const run = (code: string, timeout_seconds?: number) => host.call('code_exec', timeout_seconds ? { code, timeout_seconds } : { code });

  it('registers code_exec as read, with guidance that its outputs are artifacts', () => {
    assert.deepEqual([...host.tools.keys()], ['code_exec']);
    const d = host.manifest.tools.code_exec;
    assert.equal(d.effect, 'read');
    assert.match(d.guidance ?? '', /artifact/);
  });

  it('returns what the code printed and the value of its last expression', async () => {
    const r = await run(
      'const rate = 0.05 / 12;\nconsole.log("monthly rate", rate.toFixed(5));\nconsole.log({ months: 36, list: [1, 2] });\nMath.round(1000 * rate / (1 - (1 + rate) ** -36) * 100) / 100',
    );
    assert.equal(r.is_error, false);
    assert.equal(r.content, 'Output:\nmonthly rate 0.00417\n{ months: 36, list: [ 1, 2 ] }\nResult: 29.97');
    const a = await run('(async () => { const xs = await Promise.all([1, 2, 3].map(async (n) => n * n)); return xs; })()');
    assert.equal(a.content, 'Result: [ 1, 4, 9 ]');
    const none = await run('let x = 1;');
    assert.equal(none.content, 'The code ran without output, and its last expression was undefined.');
  });

  it('an infinite loop times out, keeping what was printed before', async () => {
    const t0 = Date.now();
    const r = await run('console.log("starting"); while (true) {}', 0.5);
    assert.equal(r.is_error, true);
    assert.equal(r.content, 'Timed out: the code was stopped after 0.5 s.\nOutput:\nstarting');
    assert.ok(Date.now() - t0 < 4000, 'stopped promptly');
    const micro = await run('Promise.resolve().then(() => { for (;;) {} }); "queued"', 0.5);
    assert.match(micro.content, /^Timed out/);
  });

  it('cannot read a file, by any route tried', async () => {
    const p = JSON.stringify(secret);
    const attempts = [
      `require('fs').readFileSync(${p}, 'utf8')`,
      `process.mainModule.require('fs').readFileSync(${p}, 'utf8')`,
      `this.constructor.constructor('return process')().mainModule.require('fs').readFileSync(${p}, 'utf8')`,
      `console.log.constructor.constructor('return process')().binding('fs')`,
      `import('node:fs').then((fs) => fs.readFileSync(${p}, 'utf8'))`,
      `import('node:fs').catch((e) => e.constructor.constructor('return process')().mainModule.require('fs').readFileSync(${p}, 'utf8'))`,
      `(0, eval)("import('fs')").then((fs) => fs.readFileSync(${p}, 'utf8'))`,
      `Error.prepareStackTrace = (e, cs) => cs.map((c) => c.getThis()).find((t) => t && t.process); const s = new Error().stack; s.process.mainModule.require('fs').readFileSync(${p}, 'utf8')`,
      `try { null.f() } catch (e) { e.constructor.constructor('return process')().mainModule.require('fs').readFileSync(${p}, 'utf8') }`,
    ];
    for (const code of attempts) {
      const r = await run(code);
      assert.doesNotMatch(r.content, /TOP-SECRET/, code);
      assert.equal(r.is_error, true, `${code}\n→ ${r.content}`);
    }
  });

  it('the child process itself runs under the permission model: only the runner is readable, no subprocesses, no workers', () => {
    const args = childArgs();
    assert.ok(args.includes('--experimental-permission') || args.includes('--permission'));
    assert.deepEqual(
      args.filter((a) => a.startsWith('--allow-')),
      [`--allow-fs-read=${RUNNER}`],
    );
    assert.ok(args.includes('--max-old-space-size=64'));
    // The same flags around a script of our own (given on the command line) cannot read the secret.
    const flags = args.filter((a) => a !== RUNNER);
    const probe = spawnSync(process.execPath, [...flags, '-e', `require('fs').readFileSync(${JSON.stringify(secret)}, 'utf8')`], {
      encoding: 'utf8',
      env: {},
    });
    assert.notEqual(probe.status, 0);
    assert.match(probe.stderr, /ERR_ACCESS_DENIED/);
    const child = spawnSync(process.execPath, [...flags, '-e', "require('child_process').execSync('true')"], { encoding: 'utf8', env: {} });
    assert.match(child.stderr, /ERR_ACCESS_DENIED/);
  });

  it('has no fetch and no network', async () => {
    assert.equal((await run('typeof fetch')).content, 'Result: "undefined"');
    const f = await run('fetch("http://example.com")');
    assert.equal(f.is_error, true);
    assert.match(f.content, /ReferenceError: fetch is not defined/);
    for (const code of ['typeof WebSocket', 'typeof XMLHttpRequest', 'typeof require', 'typeof process', 'typeof setTimeout']) {
      assert.equal((await run(code)).content, 'Result: "undefined"', code);
    }
  });

  it('a memory bomb is stopped; large buffers are refused', async () => {
    const r = await run('const hog = []; while (true) hog.push(new Array(1e5).fill(Math.random()));', 10);
    assert.equal(r.is_error, true);
    assert.match(r.content, /^Stopped: the code ran out of memory/);
    const buf = await run('new Uint8Array(1e9)');
    assert.match(buf.content, /RangeError: code_exec: buffers are limited to 16777216 bytes/);
    const many = await run(
      'const keep = []; for (let i = 0; i < 64; i++) { const b = new ArrayBuffer(16 * 1024 * 1024); new Uint8Array(b).fill(1); keep.push(b); } keep.length',
      10,
    );
    assert.match(many.content, /^Stopped: the code ran out of memory/);
  });

  it('the buffer cap holds through an instance or prototype constructor and species methods', async () => {
    for (const code of [
      'new (new Uint8Array(1).constructor)(1e9)',
      'new Uint8Array.prototype.constructor(1e9)',
      'new (new ArrayBuffer(1).constructor)(1e9)',
      'Uint8Array.from({ length: 1e9 })',
    ]) {
      const r = await run(code);
      assert.match(r.content, /RangeError: code_exec: buffers are limited to 16777216 bytes/, code);
    }
  });

  it('a large last-expression value is cut, not reported as a crash', async () => {
    const r = await run("'x'.repeat(200000)");
    assert.notEqual(r.is_error, true, r.content.slice(0, 200));
    assert.match(r.content, /^Result: "x{100}/);
    assert.match(r.content, /… \(cut at 20000 characters\)$/);
  });

  it('reports what the code threw, and refuses bad arguments', async () => {
    const r = await run('console.log("before"); null.x');
    assert.equal(r.is_error, true);
    assert.equal(r.content, "The code threw TypeError: Cannot read properties of null (reading 'x')\nOutput:\nbefore");
    const s = await run('function f() { return f(); } f()');
    assert.match(s.content, /RangeError: Maximum call stack size exceeded/);
    assert.match((await run('throw "plain"')).content, /The code threw Uncaught "plain"/);
    assert.match((await run('let = ;')).content, /SyntaxError/);
    assert.equal((await host.call('code_exec', { code: '1', timeout_seconds: 31 })).is_error, true);
    assert.equal((await host.call('code_exec', { code: '' })).is_error, true);
    assert.match((await host.raw('code_exec', { code: '1', timeout_seconds: 0 })).content, /timeout_seconds must be more than 0/);
    assert.match((await host.raw('code_exec', { code: 42 })).content, /code must be JavaScript source text/);
  });
});
