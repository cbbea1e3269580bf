/**
 * The README's smaller steps a newcomer tries first (issue 47), run or checked as written in this
 * checkout: the one-test-file command; the Library app showing what a person must be shown (what
 * the run read, a confirmation's held calls, the warnings); and the chat page's try-out without a
 * model server — the token command, `keel serve` with the README's flags letting the page's model
 * through to a card, the page server's default matching keel serve's port, and the page's comment
 * naming flags the CLI takes. No fixed port is bound: the servers listen on port 0.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ensureBuilt, KEEL_BIN, keel, ROOT, tempHome } from '../support/helpers.js';
import { readmeBlock, shellSteps, shown } from '../support/readme.js';

test('issue 47: the README says how to run one test file, and the command runs it', () => {
  const block = readmeBlock('one-test-file');
  assert.match(block, /^node --import tsx --test test\/\S+\.test\.ts$/m);
  const steps = shellSteps(block, ROOT);
  assert.equal(steps.length, 1, shown(steps));
  assert.equal(steps[0].code, 0, shown(steps));
  assert.match(steps[0].stdout, /^# pass [1-9]\d*$/m);
  assert.match(steps[0].stdout, /^# fail 0$/m);
});

test("issue 47: the README's app shows what the person is asked about: what the run read, the held calls, the warnings", () => {
  const app = readmeBlock('app-ts');
  for (const shown of ["output: 'untrusted'", 'card.untrusted', 'r.confirm.items', 'r.confirm.untrusted', 'keel.confirm(', 'r.warnings'])
    assert.ok(app.includes(shown), `the app's loop shows ${shown}`);
  assert.match(readmeBlock('app-setup'), /^npm install zod@/m, 'the app imports zod: the README installs it');
});

/** `keel ARGS` from the checkout, until it prints `pattern`; the process, and what it printed. */
async function started(args: string[], env: Record<string, string>, pattern: RegExp, bin = KEEL_BIN) {
  ensureBuilt();
  const child = spawn(process.execPath, [bin, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const match = await new Promise<RegExpExecArray>((res, rej) => {
    const t = setTimeout(() => rej(new Error(`${args.join(' ')} did not start:\n${out}`)), 30_000);
    const look = (d: Buffer) => {
      out += d;
      const m = pattern.exec(out);
      if (m) {
        clearTimeout(t);
        res(m);
      }
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', (code) => rej(new Error(`${args.join(' ')} exited (${code}):\n${out}`)));
  });
  return { child, match };
}

test("issue 47: the chat page's try-out without a model: the README's commands make a token, let the page's script model through to a card, and agree on keel serve's port", async (t) => {
  const lines = readmeBlock('chat-ui')
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim());
  const home = tempHome('keel-readme-chat-');
  const env = { KEEL_HOME: home, KEEL_PLUGINS: '', KEEL_CONFIRM_ONCE_TOOLS: '', KEEL_COUNT_TOKENS: '0' };

  // keel tokens create …, as written.
  const create = lines.find((l) => l.startsWith('keel tokens create '));
  assert.ok(create, 'a token command');
  const made = await keel([...create.split(/\s+/).slice(1), '--json'], { KEEL_HOME: home });
  assert.equal(made.code, 0, made.stderr);
  const token = JSON.parse(made.stdout).token as string;

  // keel serve …, as written (on any free port instead of 7373, which this machine may be using).
  const serveLine = lines.find((l) => l.startsWith('keel serve '));
  assert.ok(serveLine, 'a keel serve command');
  const serve = await started([...serveLine.split(/\s+/).slice(1), '--port', '0'], env, /listening on (http:\/\/\S+)/);
  t.after(() => serve.child.kill());
  const url = serve.match[1];

  // The page's address names the model; keel serve lets it through, and the replies end on a card.
  const open = readmeBlock('chat-ui')
    .split('\n')
    .find((l) => l.startsWith('# open '));
  const model = decodeURIComponent(/[#&]model=([^&\s]+)/.exec(open ?? '')?.[1] ?? '');
  assert.match(model, /^script:examples\/chat-ui\/\S+\.yaml$/, open);
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const r = await fetch(`${url}/v1/runs`, { method: 'POST', headers: auth, body: JSON.stringify({ request: 'tidy my inbox', model }) });
  assert.equal(r.status, 202, await r.clone().text());
  const { run_id } = (await r.json()) as { run_id: string };
  let run: { status: string; reason: string; approval?: { card: { title: string } } } = { status: 'running', reason: '' };
  for (let i = 0; i < 200 && run.status === 'running'; i++) {
    await new Promise((res) => setTimeout(res, 100));
    run = (await (await fetch(`${url}/v1/runs/${run_id}`, { headers: auth })).json()) as typeof run;
  }
  assert.equal(run.reason, 'awaiting_approval', JSON.stringify(run));
  assert.match(run.approval?.card.title ?? '', /Trash|trash/);

  // The page server, as written (no --keel): its default is keel serve's own default port, which the README names.
  const serveHelp = await keel(['serve', '--help'], { KEEL_HOME: home });
  const keelPort = /--port <port>.*\(default: (\d+)\)/.exec(serveHelp.stdout)?.[1];
  assert.ok(keelPort, serveHelp.stdout);
  assert.ok(serveLine.length && readmeBlock('chat-ui').includes(`127.0.0.1:${keelPort}`), 'the README names keel serve’s port');
  const pageLine = lines.find((l) => l.startsWith('node examples/chat-ui/serve.mjs'));
  assert.equal(pageLine, 'node examples/chat-ui/serve.mjs', 'the page server needs no flags');
  const page = await started(['--port', '0'], {}, /keel serve at (\S+)\)/, join(ROOT, 'examples', 'chat-ui', 'serve.mjs'));
  t.after(() => page.child.kill());
  assert.equal(page.match[1], `http://127.0.0.1:${keelPort}`);

  // The page's own comment names a token command the CLI takes.
  const comment = /keel tokens create [^)\n]+/.exec(readFileSync(join(ROOT, 'examples', 'chat-ui', 'page.jsx'), 'utf8'))?.[0];
  assert.ok(comment);
  const again = await keel([...comment.replace('NAME', 'page-user').split(/\s+/).slice(1), '--json'], { KEEL_HOME: home });
  assert.equal(again.code, 0, `${comment}: ${again.stderr}`);
});
