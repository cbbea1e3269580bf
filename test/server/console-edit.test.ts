/**
 * Issue 28 in a real browser (Chromium via test/support/chromium.ts), at 390×844 and 1280×800:
 * edit a card's arguments and approve — the tool runs once with the edited arguments (the mail
 * fixture's log shows them) — with the form generated from a flat schema, and with the JSON editor;
 * an edit the schema or the plugin's `validate` refuses is refused on the page and nothing runs
 * (A7); three cards approved in one action each run once (A8); a viewer can do none of it (S3).
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { launchTestBrowser } from '../support/chromium.js';
import { calls, FIXTURES, script, tempHome } from '../support/helpers.js';
import { type TestServer, testServer } from '../support/server.js';

let s: TestServer;
let browser: BrowserContext;
const profile = tempHome('keel-chromium-');
const SIZES = [
  { name: 'phone', width: 390, height: 844 },
  { name: 'desktop', width: 1280, height: 800 },
] as const;

before(async () => {
  s = await testServer({}, tempHome('keel-console-edit-'), [FIXTURES]);
  browser = await launchTestBrowser(profile);
});

after(async () => {
  await browser?.close();
  await s?.close();
  rmSync(profile, { recursive: true, force: true });
});

const logged = (tool: string) => calls(s.home, 'mail-calls.log').filter((l) => l.startsWith(tool));

async function login(token: string, size: { width: number; height: number }): Promise<Page> {
  const p = await browser.newPage();
  await p.setViewportSize(size);
  await p.goto(`${s.url}/login`);
  await p.getByLabel('Token').fill(token);
  await p.getByRole('button', { name: 'Log in' }).click();
  await p.getByRole('heading', { name: 'Inbox' }).waitFor();
  return p;
}

let n = 0;
async function cardRun(
  request: string,
  call: { name: string; args: Record<string, unknown> },
): Promise<{ run_id: string; approval_id: string }> {
  const model = script(s.home, [{ tool_calls: [{ id: 'c1', ...call }] }, { text: 'Done.' }], `edit-${++n}.yaml`);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request, model } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  for (let i = 0; i < 400; i++) {
    const run = await s.api('GET', `/v1/runs/${r.body.run_id}`, { token: s.viewer });
    if (run.body.approval) return { run_id: r.body.run_id, approval_id: run.body.approval.id };
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('the run never paused on its card');
}

async function doneRun(runId: string) {
  for (let i = 0; i < 600; i++) {
    const run = (await s.api('GET', `/v1/runs/${runId}`, { token: s.viewer })).body;
    if (run.status === 'done' || run.status === 'failed') return run;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error(`run ${runId} did not end`);
}

const noSideways = (p: Page) => p.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

for (const size of SIZES) {
  test(`A7 console (${size.name} ${size.width}×${size.height}): a flat schema's form — change a field, approve as edited, the tool runs once with it`, async () => {
    const before = logged('send_email').length;
    const a = await cardRun('send an email to bob', { name: 'send_email', args: { to: 'bob@example.com', subject: 'Hi' } });
    const page = await login(s.approver, size);
    const card = page.locator(`#card-${a.approval_id}`);
    await card.getByText('Edit the arguments, then approve').click();
    const to = card.getByLabel('to *');
    assert.equal(await to.inputValue(), 'bob@example.com', 'the form shows the model’s arguments');
    assert.equal(await card.getByLabel('subject *').inputValue(), 'Hi');
    assert.ok(await noSideways(page), 'the open form does not scroll sideways');
    await to.fill(`carol-${size.name}@example.com`);
    await card.getByRole('button', { name: 'Approve as edited' }).click();
    await page.waitForURL(/\?answered=/);
    const run = await doneRun(a.run_id);
    assert.equal(run.status, 'done');
    const sent = logged('send_email').slice(before);
    assert.deepEqual(sent, [`send_email {"to":"carol-${size.name}@example.com","subject":"Hi"}`], 'ran once, as edited');
    const step = run.steps.find((x: { call_id: string }) => x.call_id === 'c1');
    assert.deepEqual(step.edited_from, { to: 'bob@example.com', subject: 'Hi' });
    assert.equal(step.edited_by, 'ana-phone');
    // The run page shows the card as edited, by whom.
    await page.goto(`${s.url}/runs/${a.run_id}`);
    const row = (await page.locator('table.calls tr', { hasText: 'send_email' }).textContent()) ?? '';
    assert.match(
      row,
      new RegExp(
        `carol-${size.name}@example\\.com[\\s\\S]*edited by ana-phone; the model asked \\{"to":"bob@example\\.com","subject":"Hi"\\}`,
      ),
    );
    await page.close();
  });

  test(`A7 console (${size.name}): the JSON editor — an edit the schema or validate refuses is refused on the page, nothing runs; a good one runs once`, async () => {
    const before = logged('trash_email').length;
    const a = await cardRun('trash the deals mail', { name: 'trash_email', args: { ids: ['m1'] } });
    const page = await login(s.approver, size);
    const card = () => page.locator(`#card-${a.approval_id}`);
    const edit = async (json: string) => {
      const details = card().locator('details.edit');
      if (!(await details.evaluate((d) => (d as HTMLDetailsElement).open))) await details.locator('summary').click();
      await card().getByLabel('Arguments (JSON)').fill(json);
      await card().getByRole('button', { name: 'Approve as edited' }).click();
    };
    await edit('{"ids": "m2"}');
    await page.getByRole('heading', { name: 'Edit refused' }).waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /arguments: do not fit trash_email's parameters: ids must be array/);
    assert.ok(await noSideways(page));
    await edit('{"ids": ["m9"]}');
    await page.getByRole('heading', { name: 'Edit refused' }).waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /trash_email refuses them: no email with id m9/);
    await edit('{"ids": oops');
    await page.getByRole('heading', { name: 'Edit refused' }).waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /not valid JSON/);
    assert.equal(logged('trash_email').length, before, 'nothing ran');
    assert.equal((await s.api('GET', `/v1/approvals/${a.approval_id}`, { token: s.viewer })).body.status, 'pending');
    await edit('{"ids": ["m3"]}');
    await page.waitForURL(/\?answered=/);
    await doneRun(a.run_id);
    assert.deepEqual(logged('trash_email').slice(before), ['trash_email {"ids":["m3"]}']);
    await page.close();
  });

  test(`A8 console (${size.name}): three cards selected and approved in one action — each call runs once`, async () => {
    const before = logged('trash_email').length;
    const cards = [];
    for (const id of ['m1', 'm2', 'm3']) cards.push(await cardRun(`trash ${id}`, { name: 'trash_email', args: { ids: [id] } }));
    const page = await login(s.approver, size);
    for (const c of cards)
      await page
        .locator(`#card-${c.approval_id}`)
        .getByLabel(/^Select/)
        .check();
    await page.getByRole('button', { name: 'Approve selected' }).click();
    await page.getByRole('heading', { name: 'Answered' }).waitFor();
    const results = (await page.locator('ul.results').textContent()) ?? '';
    for (const c of cards) assert.match(results, new RegExp(`${c.approval_id} answered`));
    for (const c of cards) assert.equal((await doneRun(c.run_id)).status, 'done');
    assert.deepEqual(logged('trash_email').slice(before).sort(), [
      'trash_email {"ids":["m1"]}',
      'trash_email {"ids":["m2"]}',
      'trash_email {"ids":["m3"]}',
    ]);
    for (const c of cards) {
      const a = (await s.api('GET', `/v1/approvals/${c.approval_id}`, { token: s.viewer })).body;
      assert.equal(a.status, 'approved');
      assert.equal(a.answered_by, 'ana-phone');
    }
    await page.close();
  });

  test(`S8 console (${size.name}): a card that arrives live leaves what the viewer ticked and typed on the other cards as it was`, async () => {
    const a = await cardRun('trash, ticked', { name: 'trash_email', args: { ids: ['m1'] } });
    const b = await cardRun('trash, with a reason typed', { name: 'trash_email', args: { ids: ['m2'] } });
    const page = await login(s.approver, size);
    const select = (id: string) => page.locator(`#card-${id}`).getByLabel(/^Select/);
    const reason = (id: string) => page.locator(`#card-${id}`).getByLabel(/^Reason/);
    await select(a.approval_id).check();
    await reason(b.approval_id).fill('not this one');
    // Focus leaves the forms, so the update is not held back for typing.
    await page.locator('h1').first().click();
    const c = await cardRun('trash, arriving live', { name: 'trash_email', args: { ids: ['m3'] } });
    await page.locator(`#card-${c.approval_id}`).waitFor({ timeout: 10_000 });
    assert.equal(await select(a.approval_id).isChecked(), true, 'the ticked box stays ticked');
    assert.equal(await reason(b.approval_id).inputValue(), 'not this one', 'the typed reason stays');
    assert.equal(await select(c.approval_id).isChecked(), false, 'the new card is not ticked');
    assert.equal(await select(b.approval_id).isChecked(), false);
    for (const x of [a, b, c]) {
      const r = await s.api('POST', `/v1/approvals/${x.approval_id}`, { token: s.approver, body: { decision: 'reject' } });
      assert.equal(r.status, 200);
    }
    await page.close();
  });

  test(`S3 console (${size.name}): a viewer gets no edit form, no selection, and the server refuses their hand-made posts`, async () => {
    const before = logged('trash_email').length;
    const a = await cardRun('trash for the viewer', { name: 'trash_email', args: { ids: ['m1'] } });
    const b = await cardRun('trash more for the viewer', { name: 'trash_email', args: { ids: ['m2'] } });
    const page = await login(s.viewer, size);
    const card = page.locator(`#card-${a.approval_id}`);
    await card.waitFor();
    assert.equal(await card.locator('details.edit').count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Approve selected' }).count(), 0);
    assert.equal(await card.getByLabel(/^Select/).count(), 0);
    const statuses = await page.evaluate(
      async ([x, y]) => {
        const csrf = (document.querySelector('input[name=csrf]') as HTMLInputElement).value;
        const edit = new URLSearchParams({ csrf, decision: 'approve', edit: '1', 'json.0': '{"ids":["m3"]}' });
        const batch = new URLSearchParams({ csrf, decision: 'approve', [`id.${x}`]: '1', [`id.${y}`]: '1' });
        const noCsrf = new URLSearchParams({ decision: 'approve', [`id.${x}`]: '1' });
        return [
          (await fetch(`/approvals/${x}`, { method: 'POST', body: edit })).status,
          (await fetch('/approvals/answer', { method: 'POST', body: batch })).status,
          (await fetch('/approvals/answer', { method: 'POST', body: noCsrf })).status,
        ];
      },
      [a.approval_id, b.approval_id],
    );
    assert.deepEqual(statuses, [403, 403, 403]);
    for (const c of [a, b])
      assert.equal((await s.api('GET', `/v1/approvals/${c.approval_id}`, { token: s.viewer })).body.status, 'pending');
    assert.equal(logged('trash_email').length, before, 'nothing ran');
    await page.close();
    for (const c of [a, b]) await s.api('POST', `/v1/approvals/${c.approval_id}`, { token: s.approver, body: { decision: 'reject' } });
  });
}
