/**
 * Issue 41: the example useChat page (examples/chat-ui, built with esbuild, served beside keel
 * serve) in Chromium: a message starts a run, Keel's card shows as an approval part with the card's
 * words and buttons, the Approve button answers it (once, as the token's name), and the result and
 * the run's last words show in the same chat; a reload shows the truth.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { BrowserContext } from 'playwright-core';
import { launchTestBrowser } from '../support/chromium.js';
import { calls, ROOT, script, tempHome } from '../support/helpers.js';
import { type TestServer, testServer } from '../support/server.js';

let s: TestServer;
let browser: BrowserContext;
let page: ChildProcess;
let pageUrl: string;
const profile = tempHome('keel-chat-ui-chromium-');

before(async () => {
  execFileSync(process.execPath, [join(ROOT, 'examples/chat-ui/build.mjs')], { stdio: 'pipe' });
  s = await testServer();
  page = spawn(process.execPath, [join(ROOT, 'examples/chat-ui/serve.mjs'), '--port', '0', '--keel', s.url], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  pageUrl = await new Promise<string>((res, rej) => {
    let out = '';
    const t = setTimeout(() => rej(new Error(`the page server did not start: ${out}`)), 20_000);
    page.stdout?.on('data', (d) => {
      out += d;
      const m = /chat page on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(t);
        res(m[1]);
      }
    });
  });
  browser = await launchTestBrowser(profile);
});

after(async () => {
  await browser?.close();
  page?.kill();
  await s?.close();
  rmSync(profile, { recursive: true, force: true });
});

test('issue 41: the example page in Chromium — a card approved with its button, the result shown in the chat', async () => {
  const args = { to: 'ana', subject: 'hi' };
  const model = script(
    s.home,
    [{ text: 'I will send it.', tool_calls: [{ id: 't1', name: 'send_email', args }] }, { text: 'Sent it to ana.' }],
    'page.yaml',
  );
  const p = await browser.newPage();
  const errors: string[] = [];
  p.on('pageerror', (e) => errors.push(e.message));
  await p.goto(`${pageUrl}#token=${s.approver}&chat=page-chat&model=${encodeURIComponent(model)}`);
  await p.getByPlaceholder('Ask Keel').fill('send hi to ana');
  await p.getByRole('button', { name: 'Send' }).click();
  const card = p.locator('.card');
  await card.waitFor({ timeout: 20_000 });
  assert.match(String(await card.textContent()), /Send "hi" to ana/);
  assert.match(String(await card.textContent()), /cannot be undone/);
  assert.equal(calls(s.home, 'mail-calls.log').length, 0);
  await card.getByRole('button', { name: 'Approve' }).click();
  await p.locator('.result').waitFor({ timeout: 20_000 });
  assert.equal(await p.locator('.result').textContent(), 'send_email: Sent "hi" to ana.');
  await p.getByText('Sent it to ana.').waitFor({ timeout: 20_000 });
  assert.equal(await p.locator('.card').count(), 0);
  assert.deepEqual(calls(s.home, 'mail-calls.log'), [`send_email ${JSON.stringify(args)}`]);
  const approvals = (await s.api('GET', '/v1/approvals?status=approved', { token: s.viewer })).body.approvals;
  assert.equal(approvals[0].answered_by, 'ana-phone');
  // A reload shows the truth from GET /v1/ui/chat/{id}/messages.
  await p.reload();
  await p.locator('.result').waitFor({ timeout: 20_000 });
  await p.getByText('Sent it to ana.').waitFor();
  assert.equal(calls(s.home, 'mail-calls.log').length, 1);
  assert.deepEqual(errors, []);
});
