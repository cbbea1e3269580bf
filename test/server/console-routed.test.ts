/**
 * A9 in a real browser (Chromium via test/support/chromium.ts): a card routed to the group finance
 * (set where the gate will set it, test/support/routed.ts) is shown to an approver outside finance
 * without Approve, Reject, its edit form or a batch box, saying "Only FINANCE may answer this card"
 * and which policy asked; a forged post of its form is refused (403) and the card stays pending. A
 * finance token's browser sees the buttons and approves it, and the call runs once.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { launchTestBrowser } from '../support/chromium.js';
import { calls, script, tempHome } from '../support/helpers.js';
import { byTool, routeCards } from '../support/routed.js';
import { type TestServer, testServer } from '../support/server.js';

let s: TestServer;
let browser: BrowserContext;
let fay: string;
const profile = tempHome('keel-chromium-');

before(async () => {
  s = await testServer();
  const store = s.srv.keel.store;
  assert.ok(store);
  routeCards(store, byTool(['trash_email'], ['finance'], ['big-trash']));
  fay = (await s.api('POST', '/v1/tokens', { token: s.admin, body: { name: 'fay', role: 'approver', groups: ['finance'] } })).body.token;
  browser = await launchTestBrowser(profile);
});

after(async () => {
  await browser?.close();
  await s?.close();
  rmSync(profile, { recursive: true, force: true });
});

async function login(token: string): Promise<Page> {
  const p = await browser.newPage();
  await p.goto(`${s.url}/login`);
  await p.getByLabel('Token').fill(token);
  await p.getByRole('button', { name: 'Log in' }).click();
  await p.getByRole('heading', { name: 'Inbox' }).waitFor();
  return p;
}

let n = 0;
async function cardRun(tool: string, args: Record<string, unknown>): Promise<{ run_id: string; approval_id: string }> {
  const model = script(s.home, [{ tool_calls: [{ id: 't1', name: tool, args }] }, { text: 'Done.' }], `routed-${++n}.yaml`);
  const r = await s.api('POST', '/v1/runs', { token: s.approver, body: { request: `${tool} please`, model } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  for (let i = 0; i < 400; i++) {
    const run = await s.api('GET', `/v1/runs/${r.body.run_id}`, { token: s.viewer });
    if (run.body.approval) return { run_id: r.body.run_id as string, approval_id: run.body.approval.id as string };
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('the run never paused on a card');
}

const trashed = () => calls(s.home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

test('A9 console: a routed card shows no buttons to an approver outside its group ("Only FINANCE may answer this card"); a finance token approves it once', async () => {
  const routed = await cardRun('trash_email', { ids: ['m1'] });
  const plain = await cardRun('send_email', { to: 'bob', subject: 'hi' });

  const ana = await login(s.approver);
  const card = ana.locator(`#card-${routed.approval_id}`);
  await card.waitFor();
  assert.equal(await card.locator('p.routed').textContent(), 'Only FINANCE may answer this card');
  assert.equal(await card.locator('p.policy').textContent(), 'Asked by policy big-trash');
  assert.equal(await card.getByRole('button', { name: 'Approve' }).count(), 0, 'no Approve for an outsider');
  assert.equal(await card.getByRole('button', { name: 'Reject' }).count(), 0, 'no Reject for an outsider');
  assert.equal(await card.locator('form').count(), 0, 'no answer or edit form');
  assert.equal(await card.locator('input[type=checkbox]').count(), 0, 'no batch box');
  // The card it may answer keeps its buttons, and no routing line.
  const other = ana.locator(`#card-${plain.approval_id}`);
  assert.equal(await other.getByRole('button', { name: 'Approve' }).count(), 1);
  assert.equal(await other.locator('p.routed').count(), 0);
  // The run's page too.
  await ana.goto(`${s.url}/runs/${routed.run_id}`);
  const onRun = ana.locator(`#card-${routed.approval_id}`);
  await onRun.waitFor();
  assert.equal(await onRun.getByRole('button', { name: 'Approve' }).count(), 0);
  assert.match((await onRun.locator('p.routed').textContent()) ?? '', /Only FINANCE may answer this card/);

  // A post the page did not offer (its session's CSRF token, the card's action): refused, nothing answered.
  const csrf = await ana.locator('input[name=csrf]').first().getAttribute('value');
  const forged = await ana.evaluate(
    async ({ id, csrf }) => {
      const r = await fetch(`/approvals/${id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf: csrf ?? '', decision: 'approve' }).toString(),
      });
      return { status: r.status, text: await r.text() };
    },
    { id: routed.approval_id, csrf },
  );
  assert.equal(forged.status, 403, forged.text);
  assert.match(forged.text, /routed to the group finance/);
  assert.equal((await s.api('GET', `/v1/approvals/${routed.approval_id}`, { token: s.viewer })).body.status, 'pending');
  assert.deepEqual(trashed(), [], 'nothing ran');
  await ana.close();

  const member = await login(fay);
  const mine = member.locator(`#card-${routed.approval_id}`);
  await mine.waitFor();
  assert.equal(await mine.locator('p.routed').textContent(), 'Only FINANCE may answer this card');
  await mine.getByRole('button', { name: 'Approve' }).click();
  await member.waitForURL((u) => !u.pathname.startsWith('/approvals'));
  const answered = (await s.api('GET', `/v1/approvals/${routed.approval_id}`, { token: s.viewer })).body;
  assert.equal(answered.status, 'approved');
  assert.equal(answered.answered_by, 'fay');
  for (let i = 0; i < 200 && trashed().length === 0; i++) await new Promise((r) => setTimeout(r, 25));
  assert.deepEqual(trashed(), ['trash_email {"ids":["m1"]}'], 'the approved call ran once');
  await member.close();
});
