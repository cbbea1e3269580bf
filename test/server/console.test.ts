/**
 * The web console in a real browser (playwright-core driving Chromium: Debian's, or the one the
 * @sparticuz/chromium devDependency ships — test/support/chromium.ts): log in; a card a
 * scripted run makes appears live; approve it and the run page shows the call ran once and the run
 * finished; reject; a card answered elsewhere disappears; a viewer sees no buttons and is refused
 * anyway; the drift panel; a plan-mode run's page; a wrong token and a post without the CSRF token
 * are refused. The layout at phone and desktop width, each page's weight and first paint, and the
 * screenshots in docs/screenshots: console-layout.test.ts.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { launchTestBrowser } from '../support/chromium.js';
import { calls, FIXTURES, ROOT, script, tempHome } from '../support/helpers.js';
import { type TestServer, testServer } from '../support/server.js';

const BAD = join(ROOT, 'test', 'fixtures', 'bad-plugins');
const FILES = join(ROOT, 'test', 'fixtures', 'modes', 'files');
const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1', 'm2'] } };

let s: TestServer;
let browser: BrowserContext;
const profile = tempHome('keel-chromium-');

before(async () => {
  // KEEL_CHROMIUM, Debian's, or the packaged one; none: one line naming what to install (never a skip).
  s = await testServer({}, tempHome('keel-console-'), [FIXTURES, join(BAD, 'undeclared'), join(BAD, 'drift', 'declared_only'), FILES]);
  browser = await launchTestBrowser(profile);
});

after(async () => {
  await browser?.close();
  await s?.close();
  rmSync(profile, { recursive: true, force: true });
});

async function login(token: string, page?: Page): Promise<Page> {
  const p = page ?? (await browser.newPage());
  await p.goto(`${s.url}/login`);
  await p.getByLabel('Token').fill(token);
  await p.getByRole('button', { name: 'Log in' }).click();
  await p.getByRole('heading', { name: 'Inbox' }).waitFor();
  return p;
}

async function logout(p: Page): Promise<void> {
  await p.getByRole('button', { name: 'Log out' }).click();
  await p.waitForURL(/\/login$/);
}

async function startCardRun(request: string): Promise<{ run_id: string; approval_id: string }> {
  const model = script(s.home, [{ tool_calls: [TRASH] }, { text: 'Moved both to Trash.' }], `card-${Date.now()}-${Math.random()}.yaml`);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request, model } });
  assert.equal(r.status, 202);
  for (let i = 0; i < 200; i++) {
    const run = await s.api('GET', `/v1/runs/${r.body.run_id}`, { token: s.viewer });
    if (run.body.approval) return { run_id: r.body.run_id, approval_id: run.body.approval.id };
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('the run never paused on its card');
}

const trashed = () => calls(s.home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

test('console: a wrong token is refused; an approver logs in; a card appears live; approve — the run page shows the call ran once and the run finished', async () => {
  const page = await browser.newPage();
  await page.goto(`${s.url}/`);
  await page.waitForURL(/\/login$/);
  await page.getByLabel('Token').fill('keel_wrong');
  const refused = page.waitForResponse((r) => r.url().endsWith('/login') && r.request().method() === 'POST');
  await page.getByRole('button', { name: 'Log in' }).click();
  assert.equal((await refused).status(), 401);
  await page.getByText('That token is not valid').waitFor();

  await login(s.approver, page);
  await page.getByRole('heading', { name: 'Inbox' }).waitFor();
  // The live stream is open before the card exists: it must arrive without a reload.
  await page.waitForSelector('[data-live-open="1"]', { state: 'attached' });
  const { run_id, approval_id } = await startCardRun('trash the two promotions');
  const card = page.locator(`#card-${approval_id}`);
  await card.waitFor({ timeout: 10_000 });
  assert.match(await card.innerText(), /Your weekly deals[\s\S]*Flash sale ends tonight/);
  assert.match(await card.innerText(), /reversible with restore_email/);
  assert.match(await card.innerText(), /trash_email\(\{"ids":\["m1","m2"\]\}\)/);

  await card.getByRole('button', { name: 'Approve' }).click();
  // S8: an answer lands on the next card, or on the inbox when none is left, which says what was answered.
  await page.waitForURL(new RegExp(`/\\?answered=${approval_id}$`));
  await page
    .locator('.notice', { hasText: 'Approved' })
    .getByRole('link', { name: `run ${run_id}` })
    .click();
  await page.waitForURL(new RegExp(`/runs/${run_id}$`));
  await page.locator('.summary .b-done').waitFor({ timeout: 10_000 });
  const row = page.locator('table.calls tr', { hasText: 'trash_email' });
  assert.equal(await row.count(), 1, 'one call');
  assert.match(await row.innerText(), /t1[\s\S]*ran/);
  assert.match(await page.locator('#h-approvals + ul').innerText(), /approved by ana-phone/);
  assert.deepEqual(trashed(), ['trash_email {"ids":["m1","m2"]}'], 'ran exactly once');
  await page.close();
});

test('console: reject with a reason; a card answered elsewhere disappears from the inbox live', async () => {
  const page = await login(s.approver);
  const a = await startCardRun('trash the promotions');
  const card = page.locator(`#card-${a.approval_id}`);
  await card.waitFor();
  await card.getByLabel('Reason (optional)').fill('keep them');
  await card.getByRole('button', { name: 'Reject' }).click();
  await page.waitForURL(new RegExp(`/\\?answered=${a.approval_id}$`));
  await page.goto(`${s.url}/runs/${a.run_id}`);
  await page.locator('.summary .b-done').waitFor({ timeout: 10_000 });
  assert.match(await page.locator('#h-approvals + ul').innerText(), /rejected by ana-phone \(keep them\)/);
  assert.match(await page.locator('table.calls tr', { hasText: 'trash_email' }).innerText(), /rejected/);

  await page.goto(`${s.url}/`);
  await page.waitForSelector('[data-live-open="1"]', { state: 'attached' });
  const b = await startCardRun('trash them again');
  const other = page.locator(`#h-cards ~ #card-${b.approval_id}`);
  await other.waitFor();
  const answered = await s.api('POST', `/v1/approvals/${b.approval_id}`, { token: s.approver, body: { decision: 'reject' } });
  assert.equal(answered.status, 200);
  await other.waitFor({ state: 'detached', timeout: 10_000 });
  assert.match(await page.locator(`#card-${b.approval_id}`).innerText(), /Rejected by ana-phone/, 'shown as answered');
  await logout(page);
  await page.close();
});

test('console: a viewer sees no Approve button, and the server refuses a viewer’s answer anyway', async () => {
  const a = await startCardRun('trash for the viewer');
  const page = await login(s.viewer);
  const card = page.locator(`#card-${a.approval_id}`);
  await card.waitFor();
  assert.equal(await card.getByRole('button', { name: 'Approve' }).count(), 0);
  assert.equal(await page.getByRole('button', { name: 'Start' }).count(), 0);
  // A hand-made post with the viewer's own session and CSRF token: refused by role.
  const status = await page.evaluate(async (id) => {
    const csrf = (document.querySelector('input[name=csrf]') as HTMLInputElement).value;
    const body = new URLSearchParams({ csrf, decision: 'approve' });
    return (await fetch(`/approvals/${id}`, { method: 'POST', body })).status;
  }, a.approval_id);
  assert.equal(status, 403);
  assert.equal((await s.api('GET', `/v1/approvals/${a.approval_id}`, { token: s.viewer })).body.status, 'pending');
  await page.close();
  await s.api('POST', `/v1/approvals/${a.approval_id}`, { token: s.approver, body: { decision: 'reject' } });
});

test('console: a form post without the CSRF token is refused', async () => {
  const a = await startCardRun('trash without csrf');
  const page = await login(s.approver);
  await page.locator(`#card-${a.approval_id}`).waitFor();
  const status = await page.evaluate(async (id) => {
    const body = new URLSearchParams({ decision: 'approve' });
    return (await fetch(`/approvals/${id}`, { method: 'POST', body })).status;
  }, a.approval_id);
  assert.equal(status, 403);
  const forged = await page.evaluate(async (id) => {
    const body = new URLSearchParams({ decision: 'approve', csrf: 'forged' });
    return (await fetch(`/approvals/${id}`, { method: 'POST', body })).status;
  }, a.approval_id);
  assert.equal(forged, 403);
  assert.equal((await s.api('GET', `/v1/approvals/${a.approval_id}`, { token: s.viewer })).body.status, 'pending');
  assert.equal(trashed().length, 1, 'nothing more ran');
  await page.close();
  await s.api('POST', `/v1/approvals/${a.approval_id}`, { token: s.approver, body: { decision: 'reject' } });
});

test('console: the drift panel shows a degraded plugin with its refused tool and a declared-but-unregistered tool', async () => {
  const page = await login(s.viewer);
  await page.goto(`${s.url}/plugins`);
  const sneaky = page.locator('section.plugin', { has: page.getByRole('heading', { name: /sneaky/ }) });
  assert.match(await sneaky.innerText(), /degraded/);
  assert.match(await sneaky.locator('.row.refused').innerText(), /undeclared tool/);
  const drift = page.locator('section.plugin', { has: page.getByRole('heading', { name: /declared_only/ }) });
  assert.match(await drift.locator('.row.drift').first().innerText(), /declared not registered/);
  const mail = page.locator('section.plugin', { has: page.getByRole('heading', { name: /^mail/ }) });
  assert.match(await mail.locator('tr', { hasText: 'trash_email' }).innerText(), /destructive[\s\S]*approval/);
  await page.close();
});

test('console: a plan-mode run shows the restricted write declared as unavailable, and its denial with the same call id', async () => {
  const model = script(
    s.home,
    [{ tool_calls: [{ id: 'w1', name: 'write_file', args: { path: 'a.txt', content: 'x' } }] }, { text: 'I will plan it first.' }],
    'plan.yaml',
  );
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'write a.txt', model, mode: 'plan' } });
  const page = await login(s.viewer);
  await page.goto(`${s.url}/runs/${r.body.run_id}`);
  await page.locator('.summary .b-done').waitFor({ timeout: 10_000 });
  await page.locator('details.request-menu').first().locator('summary').click();
  const item = page.locator('details.request-menu').first().locator('li', { hasText: 'write_file' });
  assert.match(await item.innerText(), /write[\s\S]*declared, unavailable/);
  const denied = page.locator('table.calls tr', { hasText: 'write_file' });
  assert.match(await denied.innerText(), /w1[\s\S]*denied by mode/);
  await page.close();
});

test('console: a card that expires while shown says so, live, and its run ends without running anything (A4)', async (t) => {
  const e = await testServer({ KEEL_APPROVAL_TTL_MINUTES: '0.005', KEEL_SERVE_SWEEP_MS: '100' });
  t.after(() => e.close());
  const page = await browser.newPage();
  await page.goto(`${e.url}/login`);
  await page.getByLabel('Token').fill(e.approver);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForSelector('[data-live-open="1"]', { state: 'attached' });
  const model = script(e.home, [{ tool_calls: [TRASH] }, { text: 'never' }]);
  const r = await e.api('POST', '/v1/runs', { token: e.approver, body: { request: 'trash soon', model } });
  const card = page.locator('article.card', { hasText: 'trash soon' });
  await card.getByRole('button', { name: 'Approve' }).waitFor();
  await card.getByText(/Expired .*nothing ran/).waitFor({ timeout: 10_000 });
  assert.equal(await card.getByRole('button', { name: 'Approve' }).count(), 0, 'no button on an expired card');
  for (let i = 0; i < 100; i++) {
    if ((await e.api('GET', `/v1/runs/${r.body.run_id}`, { token: e.viewer })).body.reason === 'approval_expired') break;
    await new Promise((res) => setTimeout(res, 50));
  }
  assert.equal((await e.api('GET', `/v1/runs/${r.body.run_id}`, { token: e.viewer })).body.reason, 'approval_expired');
  assert.equal(calls(e.home, 'mail-calls.log').length, 0);
  await page.close();
});

test('console: a session page switches the mode (audited with the token name); a viewer has no switch', async () => {
  const model = script(s.home, [{ text: 'Hello.' }], 'hello.yaml');
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'say hello', model } });
  const viewer = await login(s.viewer);
  await viewer.goto(`${s.url}/sessions/${r.body.session_id}`);
  await viewer.getByRole('heading', { name: /Session/ }).waitFor();
  assert.equal(await viewer.getByRole('button', { name: 'Switch' }).count(), 0);
  await viewer.close();
  const page = await login(s.approver);
  await page.goto(`${s.url}/sessions/${r.body.session_id}`);
  await page.getByLabel('Switch to').selectOption('plan');
  await page.getByRole('button', { name: 'Switch' }).click();
  await page.waitForURL(new RegExp(`/sessions/${r.body.session_id}$`));
  assert.match(await page.locator('main').innerText(), /Mode: plan/);
  assert.equal((await s.api('GET', `/v1/sessions/${r.body.session_id}`, { token: s.viewer })).body.mode, 'plan');
  const audit = await s.srv.keel.store!.listAudit(r.body.session_id);
  assert.deepEqual(
    audit.map((a) => [a.actor, a.action]),
    [['ana-phone', 'set_mode']],
  );
  await page.close();
});
