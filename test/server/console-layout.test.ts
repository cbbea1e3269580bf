/**
 * The console laid out phone first (S8, issue 28), in Chromium at a phone's 390×844 (a mobile
 * viewport with touch) and a desktop's 1280×800, each in a time zone of its own: every page is a
 * standards-mode document with an icon, nothing scrolls sideways, every table cell carries its
 * column's name (shown at phone width), the header is one line, the login page fits a phone, a card
 * has one title, an answer lands on the next card (or the inbox), and times read in the viewer's
 * zone with the relative time. Each page's weight (asserted under 50 KB) and first contentful paint
 * (reported, never asserted) go to figures.json; KEEL_WRITE_SCREENSHOTS=1 refreshes docs/screenshots.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { CHROMIUM_ARGS, testChromium } from '../support/chromium.js';
import { calls, FIXTURES, ROOT, script, tempHome } from '../support/helpers.js';
import { type TestServer, testServer } from '../support/server.js';

const BAD = join(ROOT, 'test', 'fixtures', 'bad-plugins');
const FILES = join(ROOT, 'test', 'fixtures', 'modes', 'files');
/** KEEL_WRITE_SCREENSHOTS=1 refreshes docs/screenshots (and figures.json); otherwise they go to a temp folder. */
const SHOTS = process.env.KEEL_WRITE_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'screenshots') : tempHome('keel-shots-');
const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1', 'm2'] } };
const TITLE = 'Move 2 email(s) to Trash';
/** Web Push on (S7), so its Notifications page is one of the pages checked. */
const PUSH = { KEEL_PUSH_SUBJECT: 'mailto:ops@example.com' };

/** Both sizes, each in a zone far from UTC (Kolkata is +05:30, New York −05:00 in December). */
const SIZES = [
  { name: 'phone', viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, timezoneId: 'Asia/Kolkata' },
  { name: 'desktop', viewport: { width: 1280, height: 800 }, isMobile: false, hasTouch: false, timezoneId: 'America/New_York' },
] as const;
type Size = (typeof SIZES)[number];

let s: TestServer;
let browser: Browser;
const contexts = new Map<string, BrowserContext>();
const figures: Record<string, number> = {};
/** A finished run with calls, and its session: the pages with tables. */
let done: { run_id: string; session_id: string };

before(async () => {
  const bin = testChromium();
  s = await testServer(PUSH, tempHome('keel-layout-'), [FIXTURES, join(BAD, 'undeclared'), join(BAD, 'drift', 'declared_only'), FILES]);
  browser = await chromium.launch({
    executablePath: bin.executablePath,
    env: bin.env,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  for (const size of SIZES) contexts.set(size.name, await newContext(size));
  mkdirSync(SHOTS, { recursive: true });
  const a = await startCardRun('trash the two promotions');
  await answer(a.approval_id, 'approve');
  done = { run_id: a.run_id, session_id: (await waitRun(a.run_id, (r) => r.status === 'done')).session_id };
});

after(async () => {
  await browser?.close();
  await s?.close();
  if (Object.keys(figures).length) {
    console.log(`console figures: ${JSON.stringify(figures)}`);
    writeFileSync(join(SHOTS, 'figures.json'), `${JSON.stringify(figures, null, 2)}\n`);
  }
});

/** A context of one size, empty (no cookies, no cache). */
function newContext(size: Size): Promise<BrowserContext> {
  return browser.newContext({
    viewport: size.viewport,
    isMobile: size.isMobile,
    hasTouch: size.hasTouch,
    timezoneId: size.timezoneId,
    locale: 'en-US',
  });
}

/** A page of the size's context, logged in as the approver (once per context). */
async function pageOf(size: Size): Promise<Page> {
  const ctx = contexts.get(size.name) as BrowserContext;
  const page = await ctx.newPage();
  if (!(await ctx.cookies()).some((c) => c.httpOnly && c.path === '/')) {
    await page.goto(`${s.url}/login`);
    await page.getByLabel('Token').fill(s.approver);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
  }
  return page;
}

async function waitRun(id: string, until: (r: { status: string; session_id: string; approval?: { id: string } }) => boolean, srv = s) {
  for (let i = 0; i < 400; i++) {
    const r = (await srv.api('GET', `/v1/runs/${id}`, { token: srv.viewer })).body;
    if (until(r)) return r;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error(`run ${id} never got there`);
}

async function startCardRun(request: string, srv = s): Promise<{ run_id: string; approval_id: string }> {
  const model = script(srv.home, [{ tool_calls: [TRASH] }, { text: 'Moved both to Trash.' }], `card-${Date.now()}-${Math.random()}.yaml`);
  const r = await srv.api('POST', '/v1/runs', { token: srv.approver, body: { request, model } });
  assert.equal(r.status, 202);
  const run = await waitRun(r.body.run_id, (x) => Boolean(x.approval), srv);
  return { run_id: r.body.run_id, approval_id: (run.approval as { id: string }).id };
}

async function answer(id: string, decision: 'approve' | 'reject', srv = s, reason?: string): Promise<void> {
  const r = await srv.api('POST', `/v1/approvals/${id}`, { token: srv.approver, body: { decision, ...(reason ? { reason } : {}) } });
  assert.equal(r.status, 200);
}

/** Every pending card rejected, so a test starts from an empty inbox. */
async function clearCards(): Promise<void> {
  for (const a of (await s.api('GET', '/v1/approvals?status=pending', { token: s.viewer })).body.approvals ?? [])
    await answer(a.id, 'reject');
}

const trashed = () => calls(s.home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length;

/** The pages a user reaches, logged in (the login page is checked logged out). */
const PAGES = () => [
  { name: 'inbox', path: '/' },
  { name: 'runs', path: '/runs', cells: true },
  { name: 'run', path: `/runs/${done.run_id}`, cells: true },
  { name: 'plugins', path: '/plugins', cells: true },
  { name: 'session', path: `/sessions/${done.session_id}`, cells: true },
  { name: 'alerts', path: '/push' },
  { name: 'not-found', path: '/runs/run_nosuchrun' },
];

/** What a page's layout is, measured in the page. */
function measure(page: Page) {
  // (No named functions inside: the test's transpiler would wrap them in a helper the page lacks.)
  return page.evaluate(() => {
    const header = document.querySelector('header') as HTMLElement;
    const items = [...header.querySelectorAll('.brand, nav a, .who > span, .who button')];
    return {
      compat: document.compatMode,
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth,
      icons: [...document.querySelectorAll('link[rel=icon]')].map((l) => (l as HTMLLinkElement).href),
      headerItems: items.map((e) => {
        const r = e.getBoundingClientRect();
        return { text: (e as HTMLElement).innerText, mid: r.top + r.height / 2, left: r.left, right: r.right, width: r.width };
      }),
      headerOverflow: header.scrollWidth - header.clientWidth,
      headsShown: [...document.querySelectorAll('th')].filter((e) => e.getBoundingClientRect().height > 0).length,
      cells: [...document.querySelectorAll('td')].map((td) => {
        const r = td.getBoundingClientRect();
        const before = getComputedStyle(td, '::before');
        return {
          label: (td as HTMLElement).dataset.label ?? '',
          shown: before.content,
          display: before.display,
          visible: r.width > 0 && r.height > 0,
          right: r.right,
        };
      }),
    };
  });
}

test('console: /favicon.ico is a 32×32 icon the browser decodes, and /favicon.svg too', async () => {
  const page = await pageOf(SIZES[0]);
  const ico = await fetch(`${s.url}/favicon.ico`);
  assert.equal(ico.status, 200);
  assert.equal(ico.headers.get('content-type'), 'image/x-icon');
  assert.deepEqual([...new Uint8Array(await ico.arrayBuffer()).subarray(0, 4)], [0, 0, 1, 0], 'an ICO header');
  const sizes = await page.evaluate(async () => {
    const out: number[][] = [];
    for (const src of ['/favicon.ico', '/favicon.svg']) {
      const img = new Image();
      img.src = src;
      await img.decode();
      out.push([img.naturalWidth, img.naturalHeight]);
    }
    return out;
  });
  assert.deepEqual(sizes[0], [32, 32]);
  assert.ok(sizes[1][0] > 0, 'the SVG decodes');
  await page.close();
});

for (const size of SIZES) {
  test(`console (${size.name}): every page is in standards mode with an icon, nothing scrolls sideways, every table cell shows its column, the header is one line`, async () => {
    const page = await pageOf(size);
    for (const p of PAGES()) {
      const res = await page.goto(`${s.url}${p.path}`);
      assert.equal(res?.status(), p.name === 'not-found' ? 404 : 200, p.name);
      const m = await measure(page);
      assert.equal(m.compat, 'CSS1Compat', `${p.name}: a doctype, not quirks mode`);
      assert.ok(m.scrollWidth <= m.innerWidth, `${p.name}: ${m.scrollWidth} px wide in a ${m.innerWidth} px window`);
      assert.ok(m.icons.length > 0, `${p.name}: a link rel=icon`);
      // Fetched by the page itself (a fresh socket per try), not by a kept-alive socket the server may have closed.
      const statuses = await page.evaluate((hrefs) => Promise.all(hrefs.map((h) => fetch(h).then((r) => r.status))), m.icons);
      assert.deepEqual(
        statuses,
        m.icons.map(() => 200),
        `${p.name}: ${m.icons.join(', ')}`,
      );
      if (p.cells) assert.ok(m.cells.length > 0, `${p.name} has a table`);
      for (const c of m.cells) {
        assert.ok(c.label, `${p.name}: a cell without data-label`);
        assert.ok(c.visible && c.right <= m.innerWidth, `${p.name}: the ${c.label} cell is on the screen`);
        if (size.name === 'phone') {
          assert.equal(c.shown, `"${c.label}: "`, `${p.name}: the ${c.label} cell shows its label at 390 px`);
          assert.notEqual(c.display, 'none');
        } else {
          assert.equal(c.shown, 'none', `${p.name}: no labels beside a table header`);
        }
      }
      if (size.name === 'phone') assert.equal(m.headsShown, 0, `${p.name}: no table header row on a phone`);
      else if (p.cells) assert.ok(m.headsShown > 0, `${p.name}: the table header row on a desktop`);
      // One line: every item of the header shares its middle with the Log out button.
      const button = m.headerItems.at(-1) as { mid: number; text: string };
      assert.equal(button.text, 'Log out');
      assert.ok(m.headerItems.length >= 6, 'Keel, three links, the name, Log out');
      for (const i of m.headerItems) {
        assert.ok(Math.abs(i.mid - button.mid) < 4, `${p.name}: "${i.text}" is on the header's line`);
        assert.ok(i.left >= 0 && i.right <= m.innerWidth && i.width > 0, `${p.name}: "${i.text}" is on the screen`);
      }
      assert.ok(m.headerOverflow <= 0, `${p.name}: the header does not overflow`);
    }
    await page.close();
  });

  test(`console (${size.name}): the login page fits the screen — a full-width token field and button — in standards mode`, async () => {
    const ctx = await newContext(size);
    const page = await ctx.newPage();
    await page.goto(`${s.url}/`);
    await page.waitForURL(/\/login$/);
    const m = await page.evaluate(() => {
      const [form, input, button] = ['form.login', 'input[name=token]', 'form.login button'].map(
        (sel) => document.querySelector(sel) as HTMLElement,
      );
      return {
        compat: document.compatMode,
        scrollWidth: document.documentElement.scrollWidth,
        innerWidth,
        form: form.getBoundingClientRect().toJSON(),
        input: input.getBoundingClientRect().toJSON(),
        button: button.getBoundingClientRect().toJSON(),
        fontPx: Number.parseFloat(getComputedStyle(input).fontSize),
      };
    });
    assert.equal(m.compat, 'CSS1Compat');
    assert.ok(m.scrollWidth <= m.innerWidth);
    assert.ok(m.fontPx >= 16, 'a 16 px field (a phone does not zoom into it)');
    assert.ok(
      Math.abs(m.input.width - m.button.width) < 2 && m.button.top > m.input.bottom,
      'the button is as wide as the field, below it',
    );
    if (size.name === 'phone') assert.ok(m.input.width >= 0.85 * m.innerWidth, `the field is ${m.input.width} px of ${m.innerWidth}`);
    else assert.ok(Math.abs(m.form.left - (m.innerWidth - m.form.right)) < 2 && m.form.width < 500, 'a centred form');
    await page.getByLabel('Token').fill(s.viewer);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await ctx.close();
  });

  test(`console (${size.name}): a card's title is printed once, in the inbox and on its run page`, async () => {
    const a = await startCardRun('trash for one title');
    const page = await pageOf(size);
    for (const path of ['/', `/runs/${a.run_id}`]) {
      await page.goto(`${s.url}${path}`);
      const text = await page.locator(`#card-${a.approval_id}`).innerText();
      assert.equal(text.split(TITLE).length - 1, 1, `${path}: "${TITLE}" once in ${JSON.stringify(text)}`);
      assert.match(text, /trash_email/, 'the tool beside it');
    }
    await page.close();
    await answer(a.approval_id, 'reject');
  });

  test(`console (${size.name}): Approve lands on the next pending card, the last answer on the inbox (which says what was answered), an answered question on the card waiting`, async () => {
    await clearCards();
    const a = await startCardRun('trash the first');
    const b = await startCardRun('trash the second');
    const before = trashed();
    const page = await pageOf(size);
    await page.goto(`${s.url}/`);
    await page.locator(`#card-${a.approval_id}`).getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(new RegExp(`/\\?answered=${a.approval_id}#card-${b.approval_id}$`));
    assert.match(await page.locator('.notice').innerText(), new RegExp(`Approved: ${TITLE.replace(/[()]/g, '\\$&')} · run ${a.run_id}`));
    const next = page.locator(`#card-${b.approval_id}`);
    assert.ok(await next.evaluate((e) => e.matches(':target')), 'the next card is the target');
    const top = await next.evaluate((e) => e.getBoundingClientRect().top);
    assert.ok(top >= -1 && top < size.viewport.height, `the next card is in view (top ${top})`);
    await waitRun(a.run_id, (r) => r.status === 'done');
    assert.equal(trashed(), before + 1, 'the approved call ran once');

    // Answered from its run page, the last card also leads to the inbox: no card is left.
    await page.goto(`${s.url}/runs/${b.run_id}`);
    await page.locator(`#card-${b.approval_id}`).getByRole('button', { name: 'Reject' }).click();
    await page.waitForURL(new RegExp(`/\\?answered=${b.approval_id}$`));
    assert.match(await page.locator('.notice').innerText(), /^Rejected: /);
    await page.getByText('Nothing waits for approval.').waitFor();
    assert.equal(trashed(), before + 1, 'nothing more ran');

    // A question answered in the inbox leads to the card waiting meanwhile.
    const model = script(
      s.home,
      [{ tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Which folder?' } }] }, { text: 'Filed.' }],
      `q-${size.name}.yaml`,
    );
    const asked = (await s.api('POST', '/v1/runs', { token: s.approver, body: { request: 'file my receipts', model } })).body
      .run_id as string;
    await waitRun(asked, (r) => r.status === 'paused');
    const c = await startCardRun('trash the third');
    await page.goto(`${s.url}/`);
    const question = page.locator('article.question', { hasText: 'Which folder?' });
    await question.getByLabel('Answer').fill('Receipts');
    await question.getByRole('button', { name: 'Answer' }).click();
    await page.waitForURL(new RegExp(`/\\?answered=${asked}#card-${c.approval_id}$`));
    assert.match(await page.locator('.notice').innerText(), new RegExp(`^Answered · run ${asked}`));
    await waitRun(asked, (r) => r.status === 'done');
    await page.close();
    await answer(c.approval_id, 'reject');
  });

  test(`console (${size.name}): times read in the viewer's zone (${size.timezoneId}) with the relative time — also on a card that arrives live — and as UTC without the script`, async () => {
    await clearCards();
    const page = await pageOf(size);
    await page.goto(`${s.url}/`);
    await page.waitForSelector('[data-live-open="1"]', { state: 'attached' });
    const a = await startCardRun('trash at a time');
    const card = page.locator(`#card-${a.approval_id}`);
    await card.waitFor({ timeout: 10_000 });
    const expires = (await s.api('GET', `/v1/approvals/${a.approval_id}`, { token: s.viewer })).body.expires_at as string;
    const time = card.locator('time');
    assert.equal(await time.getAttribute('datetime'), expires);
    // An expiry on another day in the viewer's zone (an hour before local midnight) also names the day.
    const inZone = (d: Date, o: Intl.DateTimeFormatOptions) =>
      new Intl.DateTimeFormat('en-US', { timeZone: size.timezoneId, ...o }).format(d);
    const sameDay = inZone(new Date(expires), { dateStyle: 'short' }) === inZone(new Date(), { dateStyle: 'short' });
    const local = inZone(
      new Date(expires),
      sameDay ? { hour: 'numeric', minute: '2-digit' } : { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' },
    );
    const utc = new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', hour: 'numeric', minute: '2-digit' }).format(new Date(expires));
    assert.notEqual(local, utc);
    await page
      .waitForFunction((id) => /^in \d+ min/.test(document.querySelector(`#card-${id} time`)?.textContent ?? ''), a.approval_id, {
        timeout: 10_000,
      })
      .catch(async (e) => assert.fail(`${e}: the time reads ${JSON.stringify(await time.innerText())}`));
    const text = await time.innerText();
    assert.match(text, /^in (59|60) min \(/, 'an hour to go (the default expiry)');
    assert.ok(text.endsWith(`(${local})`), `${JSON.stringify(text)} ends with the local time, ${local}`);

    await page.goto(`${s.url}/runs`);
    const updated = page.locator('td[data-label=Updated] time').first();
    assert.match(await updated.innerText(), /^(just now|\d+ min ago) \(/);

    // Without the script: the same <time>, as readable UTC.
    const html = await page.evaluate(() => fetch('/').then((r) => r.text()));
    const fallback = `${expires.slice(0, 16).replace('T', ' ')} UTC`;
    assert.ok(html.includes(`<time datetime="${expires}">${fallback}</time>`), `the UTC fallback ${fallback}`);
    await page.close();
    await answer(a.approval_id, 'reject');
  });

  test(`console (${size.name}): each page weighs under 50 KB with its assets; its first contentful paint is reported`, async () => {
    const cookies = await (contexts.get(size.name) as BrowserContext).cookies();
    for (const p of [{ name: 'login', path: '/login' }, ...PAGES().filter((x) => x.name !== 'not-found')]) {
      // An empty cache each time: the weight of a first visit, the page and everything it loads.
      const ctx = await newContext(size);
      if (p.name !== 'login') await ctx.addCookies(cookies);
      const page = await ctx.newPage();
      let bytes = 0;
      const pending: Promise<void>[] = [];
      page.on('response', (res) => {
        if (new URL(res.url()).pathname.startsWith('/v1/')) return; // the live stream is not page weight
        pending.push(
          res.body().then(
            (b) => void (bytes += b.length),
            () => {},
          ),
        );
      });
      await page.goto(`${s.url}${p.path}`, { waitUntil: 'load' });
      const paint = await page.evaluate(
        () =>
          new Promise<number>((res) => {
            new PerformanceObserver((list) => {
              const e = list.getEntries().find((x) => x.name === 'first-contentful-paint');
              if (e) res(e.startTime);
            }).observe({ type: 'paint', buffered: true });
            setTimeout(() => res(-1), 3000);
          }),
      );
      await Promise.all(pending);
      figures[`${p.name}_bytes`] = bytes;
      figures[`${p.name}_first_contentful_paint_ms_${size.name}`] = Math.round(paint);
      assert.ok(bytes > 1000 && bytes < 50_000, `${p.name}: ${bytes} bytes`);
      assert.ok(paint > 0, `${p.name} painted`);
      await ctx.close();
    }
  });
}

test('console: screenshots of every page at both sizes, on a server of their own (docs/screenshots with KEEL_WRITE_SCREENSHOTS=1)', async (t) => {
  // What an owner sees on a working day: a call approved and one rejected, two cards and a question waiting.
  const shots = await testServer(PUSH, tempHome('keel-shots-home-'), [
    FIXTURES,
    join(BAD, 'undeclared'),
    join(BAD, 'drift', 'declared_only'),
    FILES,
  ]);
  t.after(() => shots.close());
  const approved = await startCardRun('trash the two promotions', shots);
  await answer(approved.approval_id, 'approve', shots);
  await waitRun(approved.run_id, (r) => r.status === 'done', shots);
  const rejected = await startCardRun('trash the newsletters', shots);
  await answer(rejected.approval_id, 'reject', shots, 'keep the newsletters');
  await startCardRun('clear out the weekly deals', shots);
  await startCardRun('trash the flash sale mails', shots);
  const q = script(
    shots.home,
    [{ tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Which folder should the receipts go to?' } }] }, { text: 'Filed.' }],
    'q.yaml',
  );
  const asked = await shots.api('POST', '/v1/runs', { token: shots.approver, body: { request: 'file my receipts', model: q } });
  await waitRun(asked.body.run_id, (r) => r.status === 'paused', shots);
  for (const size of SIZES) {
    const ctx = await newContext(size);
    const page = await ctx.newPage();
    await page.goto(`${shots.url}/login`);
    await page.screenshot({ path: join(SHOTS, `login-${size.name}.png`), fullPage: true });
    await page.getByLabel('Token').fill(shots.approver);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    for (const [name, path] of [
      ['inbox', '/'],
      ['run', `/runs/${approved.run_id}`],
      ['runs', '/runs'],
      ['plugins', '/plugins'],
      ['alerts', '/push'],
    ]) {
      await page.goto(`${shots.url}${path}`, { waitUntil: 'load' });
      // The inbox as an owner uses it: the second card ticked for the batch, the first card's edit form open.
      if (name === 'inbox') {
        await page.locator('article.card label.select input').nth(1).check();
        await page.locator('article.card details.edit summary').first().click();
      }
      await page.screenshot({ path: join(SHOTS, `${name}-${size.name}.png`), fullPage: true });
    }
    await ctx.close();
  }
});
