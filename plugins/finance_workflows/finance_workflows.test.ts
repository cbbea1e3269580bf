import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { cleanup, type FakeHost, mount } from '../_test/fake-api.js';
import setup, { dbPath, reset } from './index.js';

const DIR = dirname(fileURLToPath(import.meta.url));

describe('finance_workflows plugin', () => {
  let host: FakeHost;
  before(async () => {
    host = await mount(DIR, setup);
  });
  after(async () => {
    await host.close();
    cleanup(host.home);
  });

  it('registers exactly its declared tools, all read, with guidance on finance_lookup', () => {
    assert.deepEqual([...host.tools.keys()].sort(), ['finance_lookup', 'net_worth_trend', 'portfolio', 'upcoming_dues']);
    assert.deepEqual(Object.keys(host.manifest.tools).sort(), [...host.tools.keys()].sort());
    for (const d of Object.values(host.manifest.tools)) assert.equal(d.effect, 'read');
    assert.match(host.manifest.tools.finance_lookup.guidance ?? '', /search_inbox/);
    assert.match(host.manifest.tools.finance_lookup.guidance ?? '', /upcoming_dues/);
  });

  it('balances: every account and the net worth', async () => {
    const r = await host.call('finance_lookup', {});
    assert.equal(r.is_error, false);
    assert.match(r.content, /Woodgrove Bank Everyday Checking ••4821: \$6,842\.17/);
    assert.match(r.content, /Wingtip Bank Rewards Visa ••1094: \$3,150\.40 owed, limit \$15,000\.00 \(21% used\)/);
    assert.match(r.content, /Net worth: \$762,145\.71/);
    const one = await host.call('finance_lookup', { what: 'balances', account: 'savings' });
    assert.match(one.content, /High-Yield Savings/);
    assert.doesNotMatch(one.content, /Checking|Net worth/);
  });

  it('transactions: filtered by words, category, account and month', async () => {
    const r = await host.call('finance_lookup', { what: 'transactions', query: 'hotel', month: '2026-08' });
    assert.match(r.content, /^1 transaction matching 'hotel'/);
    assert.match(r.content, /Hotel Almada — Hotel deposit \[travel\]/);
    const cat = await host.call('finance_lookup', { category: 'income', start_date: '2026-09-01' });
    assert.match(cat.content, /Payroll direct deposit/);
    assert.match(cat.content, /\+\$4,215\.38/);
    const limited = await host.call('finance_lookup', { what: 'transactions', account: '1094', limit: 3 });
    assert.equal(limited.content.split('\n').filter((l) => l.startsWith('  20')).length, 3);
    assert.match(limited.content, /… \d+ more/);
  });

  it('a miss says so plainly (the guidance sends email-ish questions to the inbox)', async () => {
    const r = await host.call('finance_lookup', { what: 'transactions', query: 'Acme invoice' });
    assert.equal(r.is_error, false);
    assert.match(r.content, /^No transactions matching 'Acme invoice' between 2026-08-22 and 2026-09-20\.$/);
  });

  it('spending: by category and merchant, compared with the period before', async () => {
    const r = await host.call('finance_lookup', { what: 'spending', month: '2026-08' });
    assert.match(r.content, /^Spent \$[\d,.]+ between 2026-08-01 and 2026-08-31 \(31 days/);
    assert.match(r.content, /The 31 days before \(2026-07-01 to 2026-07-31\)/);
    assert.match(r.content, /travel +\$1,704\.00/);
    assert.match(r.content, /TAP Air Portugal/);
  });

  it('refuses bad finance_lookup arguments with what would work', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ what: 'taxes' }, /what must be one of balances, transactions, spending/],
      [{ account: 'Chase' }, /no account matches 'Chase'\. Accounts: Woodgrove Bank Everyday Checking/],
      [{ category: 'gambling' }, /category must be one of .*groceries/],
      [{ what: 'transactions', start_date: '2026-13-01' }, /not a date/],
      [{ what: 'transactions', start_date: '2026-09-10', end_date: '2026-09-01' }, /before start_date/],
      [{ what: 'spending', month: '2026-12' }, /in the future/],
      [{ month: '2026-08', start_date: '2026-08-01' }, /either month or start_date/],
    ];
    for (const [args, re] of cases) {
      const r = await host.raw('finance_lookup', args);
      assert.equal(r.is_error, true, JSON.stringify(args));
      assert.match(r.content, re);
    }
    assert.equal((await host.call('finance_lookup', { limit: 0 })).is_error, true);
    assert.equal((await host.call('finance_lookup', { nonsense: 1 })).is_error, true);
  });

  it('upcoming_dues: the next 14 days by default, overdue first, with what checking covers', async () => {
    const r = await host.call('upcoming_dues', {});
    assert.match(r.content, /^10 bills due in the next 14 days \(Sun, Sep 20 – Sun, Oct 4\), \$6,137\.33 in total:/);
    assert.match(r.content, /Lakeside Medical .* OVERDUE by 5 days/);
    assert.match(r.content, /Wingtip Bank — credit card statement \(Rewards Visa ••1094\): \$3,150\.40, minimum \$35\.00 · pay manually/);
    assert.match(r.content, /Contoso Energy — electricity: \$84\.10 · autopay/);
    assert.doesNotMatch(r.content, /Proseware/);
    const d = (r.details as { bills: { payee: string }[] }).bills;
    assert.equal(d.length, 10);
    const wide = await host.call('upcoming_dues', { within_days: 45 });
    assert.match(wide.content, /City of Riverside — property tax/);
    assert.match(wide.content, /short, so a deposit or a transfer from savings is needed first/);
    const none = await host.call('upcoming_dues', { within_days: 0 });
    assert.match(none.content, /^1 bill due today/);
    for (const bad of [-1, 91, 2.5, '7']) {
      const b = await host.raw('upcoming_dues', { within_days: bad });
      assert.equal(b.is_error, true, String(bad));
      assert.match(b.content, /within_days must be a whole number of days from 0 to 90/);
    }
  });

  it('portfolio: holdings with gains and the allocation', async () => {
    const r = await host.call('portfolio', {});
    assert.match(r.content, /^Investments: \$260,339\.30 across 2 accounts/);
    assert.match(r.content, /VTI +Total US Stock Market ETF: 180 × \$289\.40 = \$52,092\.00/);
    assert.match(r.content, /Allocation:\n {2}US stocks/);
    const k = await host.call('portfolio', { account: '401k', group_by: 'asset_class' });
    assert.match(k.content, /^Investments: \$154,668\.20 across 1 account/);
    assert.doesNotMatch(k.content, /VTI/);
    const bad = await host.raw('portfolio', { account: 'checking' });
    assert.equal(bad.is_error, true);
    assert.match(bad.content, /not an investment account/);
    assert.equal((await host.raw('portfolio', { group_by: 'sector' })).is_error, true);
  });

  it('net_worth_trend: month-ends up to now, ending on the current net worth', async () => {
    const r = await host.call('net_worth_trend', { months: 3 });
    const rows = r.content.split('\n').filter((l) => l.startsWith('end of') || l.startsWith('now'));
    assert.deepEqual(
      rows.map((l) => l.slice(0, 22).trim()),
      ['end of Jun 2026', 'end of Jul 2026', 'end of Aug 2026', 'now (Sun, Sep 20)'],
    );
    assert.match(rows[3], /\$762,145\.71/);
    assert.match(r.content, /^Net worth \$762,145\.71 now, \+\$/);
    for (const bad of [0, 24, 'six']) assert.equal((await host.raw('net_worth_trend', { months: bad })).is_error, true);
  });

  it('is deterministic: reset gives the same data, on first use of a new home too', async () => {
    const before = (await host.call('finance_lookup', { what: 'spending', month: '2026-07' })).content;
    await reset(host.home);
    assert.equal(existsSync(dbPath(host.home)), true);
    assert.equal((await host.call('finance_lookup', { what: 'spending', month: '2026-07' })).content, before);
    const other = await mount(DIR, setup);
    assert.equal((await other.call('finance_lookup', { what: 'spending', month: '2026-07' })).content, before);
    const db = new Database(dbPath(other.home), { readonly: true });
    const n = db.prepare('SELECT count(*) AS n FROM transactions').get() as { n: number };
    db.close();
    assert.ok(n.n > 150, `a realistic number of transactions (${n.n})`);
    await other.close();
    cleanup(other.home);
  });
});
