/**
 * The installable console and its Notifications page (S7) in Chromium at a phone's 390×844: the
 * manifest is linked and valid, its icons decode at their sizes, the service worker registers and
 * controls the pages yet caches nothing; an approver subscribes through the page's form (the
 * subscription a browser's push service would give is filled in here: headless Chromium has no push
 * service) and a new card is then pushed to it; Revoke stops it; a viewer gets no button and a forged
 * form is refused.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { SERVICE_WORKER_JS } from '../../src/server/console/push.js';
import { CHROMIUM_ARGS, testChromium } from '../support/chromium.js';
import { script } from '../support/helpers.js';
import { type TestServer, testServer } from '../support/server.js';
import { browserKeys, decryptPush, pushService } from '../support/webpush.js';

let s: TestServer;
let browser: Browser;
let svc: Awaited<ReturnType<typeof pushService>>;

before(async () => {
  const bin = testChromium();
  svc = await pushService();
  s = await testServer({ KEEL_PUSH_SUBJECT: 'mailto:ops@example.com', KEEL_PUSH_TEST_ENDPOINTS: '1' });
  browser = await chromium.launch({
    executablePath: bin.executablePath,
    env: bin.env,
    headless: true,
    args: CHROMIUM_ARGS,
  });
});

after(async () => {
  await browser?.close();
  await s?.close();
  await svc?.close();
});

async function loggedIn(token: string): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const page = await ctx.newPage();
  await page.goto(`${s.url}/login`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Inbox' }).waitFor();
  return { ctx, page };
}

test('S7: the console is an installable app — a linked manifest (standalone, icons that decode), a service worker that registers and caches nothing', async () => {
  const { ctx, page } = await loggedIn(s.approver);
  try {
    await page.waitForFunction(() => document.documentElement.dataset.sw === 'registered');
    const app = await page.evaluate(async () => {
      const link = document.querySelector('link[rel=manifest]') as HTMLLinkElement;
      const manifest = await (await fetch(link.href)).json();
      const reg = await navigator.serviceWorker.ready;
      const sizes: number[][] = [];
      for (const icon of manifest.icons as { src: string }[]) {
        const img = new Image();
        img.src = icon.src;
        await img.decode();
        sizes.push([img.naturalWidth, img.naturalHeight]);
      }
      return { manifest, scope: reg.scope, script: reg.active?.scriptURL, sizes };
    });
    assert.equal(app.manifest.display, 'standalone');
    assert.equal(app.manifest.start_url, '/');
    assert.deepEqual(app.sizes, [
      [192, 192],
      [192, 192],
      [512, 512],
      [512, 512],
    ]);
    assert.equal(app.scope, `${s.url}/`);
    assert.equal(app.script, `${s.url}/sw.js`);

    // Pages with data, read while the worker controls them: it keeps none of them.
    for (const path of ['/', '/runs', '/push', '/plugins']) await page.goto(`${s.url}${path}`);
    const kept = await page.evaluate(async () => ({
      controlled: Boolean(navigator.serviceWorker.controller),
      caches: await caches.keys(),
    }));
    assert.equal(kept.controlled, true);
    assert.deepEqual(kept.caches, [], 'no cache at all');
    assert.ok(!/addEventListener\(\s*['"]fetch/.test(SERVICE_WORKER_JS), 'no fetch handler: every answer comes from the server');
    assert.equal(await page.evaluate(() => document.compatMode), 'CSS1Compat');
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 390, '/push does not scroll sideways');
  } finally {
    await ctx.close();
  }
});

test('S7: an approver subscribes through the Notifications page and a new card is pushed there; Revoke stops it', async () => {
  const { ctx, page } = await loggedIn(s.approver);
  try {
    await page.getByRole('link', { name: 'Alerts' }).click();
    await page.getByRole('heading', { name: 'Notifications' }).waitFor();
    const key = await page.locator('[data-push-key]').getAttribute('data-push-key');
    assert.equal(key, (await s.api('GET', '/v1/push', { token: s.approver })).body.public_key);
    assert.ok(await page.getByRole('button', { name: 'Turn on notifications' }).isVisible());

    // What pushManager.subscribe() would give, filled into the page's own form, which then posts as the script does.
    const phone = browserKeys();
    await page.getByLabel('Name it (optional)').fill('my phone');
    await page.evaluate(
      ({ endpoint, keys }) => {
        const form = document.querySelector('form[data-push-form]') as HTMLFormElement;
        (form.elements.namedItem('endpoint') as HTMLInputElement).value = endpoint;
        (form.elements.namedItem('p256dh') as HTMLInputElement).value = keys.p256dh;
        (form.elements.namedItem('auth') as HTMLInputElement).value = keys.auth;
        form.submit();
      },
      { endpoint: `${svc.url}/console-phone`, keys: phone.keys },
    );
    await page.getByText('This browser is subscribed').waitFor();
    assert.ok(await page.getByRole('cell', { name: 'my phone' }).isVisible());

    const model = script(s.home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m2'] } }] }, { text: 'Done.' }], 'c.yaml');
    const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'trash m2', model } });
    assert.equal(r.status, 202);
    for (let i = 0; i < 400 && svc.to('/console-phone').length === 0; i++) await new Promise((res) => setTimeout(res, 50));
    const pushed = JSON.parse(decryptPush(svc.to('/console-phone')[0].body, phone));
    assert.equal(pushed.title, 'Move 1 email(s) to Trash');
    assert.ok(pushed.url.startsWith(`/runs/${r.body.run_id}#card-`));

    // The link opens the card on the run page.
    await page.goto(`${s.url}${pushed.url}`);
    assert.ok(await page.locator(`#${pushed.url.split('#')[1]}`).isVisible());

    await page.goto(`${s.url}/push`);
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('The subscription is revoked').waitFor();
    assert.deepEqual((await s.api('GET', '/v1/push/subscriptions', { token: s.approver })).body.subscriptions, []);
  } finally {
    await ctx.close();
  }
});

test('S7: a viewer sees why not and no button; a forged subscription form is refused (role, then CSRF)', async () => {
  const { ctx, page } = await loggedIn(s.viewer);
  try {
    assert.equal(await page.getByRole('link', { name: 'Alerts' }).count(), 0);
    await page.goto(`${s.url}/push`);
    await page.getByText('notifications go to approvers and admins').waitFor();
    assert.equal(await page.locator('[data-push-key]').count(), 0);
    const csrf = await page.locator('input[name=csrf]').first().getAttribute('value');
    const keys = browserKeys().keys;
    const form = { csrf: csrf ?? '', endpoint: `${svc.url}/viewer`, p256dh: keys.p256dh, auth: keys.auth };
    const forged = await page.request.post(`${s.url}/push/subscribe`, { form });
    assert.equal(forged.status(), 403);
  } finally {
    await ctx.close();
  }
  const approver = await loggedIn(s.approver);
  try {
    const keys = browserKeys().keys;
    const noCsrf = await approver.page.request.post(`${s.url}/push/subscribe`, {
      form: { csrf: 'wrong', endpoint: `${svc.url}/forged`, p256dh: keys.p256dh, auth: keys.auth },
    });
    assert.equal(noCsrf.status(), 403);
    assert.deepEqual((await s.api('GET', '/v1/push/subscriptions', { token: s.approver })).body.subscriptions, []);
  } finally {
    await approver.ctx.close();
  }
});
