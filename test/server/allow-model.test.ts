/**
 * P2/S3: `keel serve --allow-model script:DIR/` lets a request choose a scripted model from DIR only
 * (issue 27, item 7). The path is resolved (symbolic links, `..`) and confined on whole path
 * segments; the file is opened off the event loop, never blocks on a FIFO, is a regular file and
 * bounded in size; and every refusal is one sentence, the same whether the path outside exists or not.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { allowedModel, createModel } from '../../src/models/index.js';
import { SCRIPT_MAX_BYTES, ScriptModel } from '../../src/models/script.js';
import { type RunningServer, startServer } from '../../src/server/serve.js';
import { FIXTURES, script, tempHome } from '../support/helpers.js';
import { call, type Reply } from '../support/server.js';

const root = tempHome('keel-allow-');
const home = join(root, 'home');
const allowed = join(root, 'scripts');
const sibling = join(root, 'scripts-evil');
let srv: RunningServer;
let token: string;

function fifo(path: string): void {
  const r = spawnSync('mkfifo', [path]);
  assert.equal(r.status, 0, `mkfifo ${path}: ${r.stderr}`);
}

before(async () => {
  for (const d of [home, allowed, sibling]) mkdirSync(d, { recursive: true });
  srv = await startServer({
    port: 0,
    pluginDirs: [FIXTURES],
    allowedModels: [`script:${allowed}/`],
    env: { ...process.env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '', KEEL_CONFIRM_ONCE_TOOLS: '' },
    log: () => {},
  });
  const made = await call(srv.url, 'POST', '/v1/tokens', { token: srv.adminToken as string, body: { name: 'ana', role: 'approver' } });
  token = made.body.token;
});
after(async () => {
  await srv?.close();
  rmSync(root, { recursive: true, force: true });
});

function start(model: string): Promise<Reply> {
  return call(srv.url, 'POST', '/v1/runs', { token, body: { request: 'hello', model } });
}

/** The refusal with the requested spec taken out: what it says about the path itself. */
function refusal(r: Reply, model: string): string {
  assert.equal(r.status, 403, JSON.stringify(r.body));
  assert.equal(r.body.errors[0].field, 'body.model');
  return JSON.stringify(r.body).replaceAll(JSON.stringify(model).slice(1, -1), 'SPEC');
}

test('P2/S3: a script inside the allowed folder runs; one reached with .. from it, or through a symbolic link out of it, is refused', async () => {
  const ok = script(allowed, [{ text: 'Hello from the allowed folder.' }], 'hello.yaml');
  const r = await start(ok);
  assert.equal(r.status, 202, JSON.stringify(r.body));

  writeFileSync(join(root, 'secret.yaml'), '- text: "the secret"\n');
  symlinkSync(join(root, 'secret.yaml'), join(allowed, 'link.yaml'));
  const escapes = [`script:${allowed}/../secret.yaml`, `script:${join(allowed, 'link.yaml')}`, `script:${join(root, 'secret.yaml')}`];
  const missing = [`script:${allowed}/../missing.yaml`, `script:${join(root, 'nowhere', 'x.yaml')}`];
  const said = new Set<string>();
  for (const m of [...escapes, ...missing]) said.add(refusal(await start(m), m));
  assert.equal(said.size, 1, `one sentence, whether the path outside exists or not:\n${[...said].join('\n')}`);
  assert.doesNotMatch([...said][0], /ENOENT|EACCES|exist|not found/i);
});

test('P2/S3: the folder is matched on whole path segments: script:DIR/ does not allow DIR-evil/', async () => {
  const evil = script(sibling, [{ text: 'from next door' }], 'x.yaml');
  refusal(await start(evil), evil);
  assert.equal(await allowedModel(evil, [`script:${allowed}`]), false, 'without the trailing slash too');
  assert.equal(await allowedModel(script(allowed, [{ text: 'x' }], 'y.yaml'), [`script:${allowed}`]), true);
  assert.equal(await allowedModel('openai:gpt-4o', ['openai:']), true, 'a provider prefix matches as text');
  assert.equal(await allowedModel('openai:gpt-4o', [`script:${allowed}/`]), false);
});

test('P2/S3: a FIFO in the allowed folder is refused at once and the server keeps serving; so is a folder and a file over the size bound', async () => {
  const pipe = join(allowed, 'pipe.yaml');
  fifo(pipe);
  const health = call(srv.url, 'GET', '/v1/health');
  const r = await Promise.race([
    start(`script:${pipe}`),
    new Promise<Reply>((_, rej) => setTimeout(() => rej(new Error('a FIFO held the request: the server blocked on it')), 10_000)),
  ]);
  const fifoSaid = refusal(r, `script:${pipe}`);
  assert.equal((await health).status, 200);
  mkdirSync(join(allowed, 'dir.yaml'));
  const big = join(allowed, 'big.yaml');
  writeFileSync(big, Buffer.alloc(SCRIPT_MAX_BYTES + 1, 0x20));
  assert.equal(refusal(await start(`script:${join(allowed, 'dir.yaml')}`), `script:${join(allowed, 'dir.yaml')}`), fifoSaid);
  assert.equal(refusal(await start(`script:${big}`), `script:${big}`), fifoSaid);
});

test('P2: reading a script — off the event loop or not — refuses a FIFO, a folder and a file over the bound, naming why', async () => {
  const dir = tempHome();
  const pipe = join(dir, 'pipe.yaml');
  fifo(pipe);
  const big = join(dir, 'big.yaml');
  writeFileSync(big, Buffer.alloc(SCRIPT_MAX_BYTES + 1, 0x20));
  await assert.rejects(() => createModel(`script:${pipe}`), /cannot read script .*pipe\.yaml: not a regular file/);
  await assert.rejects(() => createModel(`script:${dir}`), /not a regular file/);
  await assert.rejects(() => createModel(`script:${big}`), new RegExp(`larger than ${SCRIPT_MAX_BYTES} bytes`));
  await assert.rejects(() => createModel(`script:${join(dir, 'none.yaml')}`), /cannot read script .*none\.yaml: no such file/);
  assert.throws(() => new ScriptModel(pipe), /not a regular file/);
  const ok = await createModel(script(dir, [{ text: 'hi' }]));
  assert.equal(ok.spec, `script:${join(dir, 'script.yaml')}`);
  rmSync(dir, { recursive: true, force: true });
});

/** A run started with `model`, as bytes: status, content type and the body's text, untouched. */
async function rawStart(model: string, base = srv.url, tok = token): Promise<string> {
  const res = await fetch(`${base}/v1/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    body: JSON.stringify({ request: 'hello', model }),
  });
  return `${res.status} ${res.headers.get('content-type')}\n${await res.text()}`;
}

/** Every answer to `specs`, one after another; they must all be one. */
async function oneAnswer(specs: string[], base?: string, tok?: string): Promise<string> {
  const said = new Map<string, string[]>();
  for (const m of specs) {
    const a = await rawStart(m, base, tok);
    said.set(a, [...(said.get(a) ?? []), m]);
  }
  assert.equal(
    said.size,
    1,
    `one answer, byte for byte, for every refused path:\n${[...said].map(([a, m]) => `${m.join(', ')}:\n  ${a}`).join('\n')}`,
  );
  const [answer] = said.keys();
  assert.match(answer, /^403 application\/problem\+json\n/);
  assert.doesNotMatch(answer, /YAML|ENOENT|EISDIR|exist|not found|root:|hunter2|\/tmp\//i);
  return answer;
}

test('P2/S3 (issue 40): script:DIR/ — a readable file outside DIR, a missing one, a folder, a symbolic link out of DIR and a file in DIR that is no script get one answer, byte for byte', async () => {
  const outside = join(root, 'outside.txt');
  writeFileSync(outside, 'root:x:0:0:root:/root:/bin/bash\n');
  const outsideScript = join(root, 'outside.yaml');
  writeFileSync(outsideScript, '- text: "a script, but not in DIR"\n');
  mkdirSync(join(root, 'a-folder'));
  symlinkSync(outsideScript, join(allowed, 'escape.yaml'));
  writeFileSync(join(allowed, 'notes.yaml'), 'just: a mapping\n');
  await oneAnswer(
    [
      outside,
      outsideScript,
      join(root, 'missing.yaml'),
      join(root, 'a-folder'),
      join(allowed, 'escape.yaml'),
      join(allowed, 'notes.yaml'),
      join(allowed, 'missing.yaml'),
      `${allowed}/../outside.txt`,
      '/etc/passwd',
    ].map((p) => `script:${p}`),
  );
  assert.equal((await start(script(allowed, [{ text: 'still fine' }], 'fine.yaml'))).status, 202);
});

test('P2/S3 (issue 40): a bare script: — a readable file that is no script is refused as a missing one is, never with the parser’s words; a script runs', async (t) => {
  const h = join(root, 'home-any');
  mkdirSync(h, { recursive: true });
  const any = await startServer({
    port: 0,
    pluginDirs: [FIXTURES],
    allowedModels: ['script:'],
    env: { ...process.env, KEEL_HOME: h, KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '', KEEL_CONFIRM_ONCE_TOOLS: '' },
    log: () => {},
  });
  t.after(() => any.close());
  const made = await call(any.url, 'POST', '/v1/tokens', { token: any.adminToken as string, body: { name: 'bo', role: 'approver' } });
  const text = join(root, 'readable.txt');
  writeFileSync(text, 'root:x:0:0:root:/root:/bin/bash\n');
  const mapping = join(root, 'mapping.yaml');
  writeFileSync(mapping, 'password: hunter2\n');
  const broken = join(root, 'broken.yaml');
  writeFileSync(broken, 'key: [unclosed\n');
  mkdirSync(join(root, 'folder-any'));
  await oneAnswer(
    [text, mapping, broken, '/etc/passwd', join(root, 'missing-any.yaml'), join(root, 'folder-any')].map((p) => `script:${p}`),
    any.url,
    made.body.token,
  );
  const ok = await call(any.url, 'POST', '/v1/runs', {
    token: made.body.token,
    body: { request: 'hello', model: script(root, [{ text: 'anywhere' }], 'any.yaml') },
  });
  assert.equal(ok.status, 202, JSON.stringify(ok.body));
});
