// finance_workflows: the owner's accounts, transactions, bills, holdings and net worth, all read.
// Data lives in KEEL_HOME/data/finance_workflows.db, seeded on first use; dates are relative to the
// 'today' stored in the data, never the wall clock.
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type { PluginAPI } from '../../src/plugin-host/types.js';
import { currentPosition, seed } from './seed.js';

const PLUGIN = 'finance_workflows';
const WHATS = ['balances', 'transactions', 'spending'] as const;

export function dbPath(home: string): string {
  return join(home, 'data', `${PLUGIN}.db`);
}

const handles = new Map<string, Database.Database>();

function openDb(home: string): Database.Database {
  const file = dbPath(home);
  const open = handles.get(file);
  if (open?.open) return open;
  mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  const seeded = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
  if (!seeded) db.transaction(() => seed(db))();
  handles.set(file, db);
  return db;
}

function closeDb(home: string): void {
  const file = dbPath(home);
  handles.get(file)?.close();
  handles.delete(file);
}

/** Deletes this plugin's data and seeds it again (`keel data reset`). */
export async function reset(home: string): Promise<void> {
  closeDb(home);
  const file = dbPath(home);
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, { force: true });
  openDb(home);
  closeDb(home);
}

// ---- small helpers -----------------------------------------------------------------------------

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;
const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });
const money = (n: number) => usd.format(Math.round(n * 100) / 100);
const signed = (n: number) => (n >= 0 ? `+${money(n)}` : money(n));
const pct = (n: number) => `${n >= 0 ? '+' : ''}${n.toFixed(1)}%`;
const err = (content: string) => ({ content, is_error: true });

function addDays(day: string, n: number): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + n);
  return d.toISOString().slice(0, 10);
}

function dayDiff(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000);
}

function label(day: string): string {
  return new Date(`${day}T00:00:00Z`).toLocaleDateString('en-US', { weekday: 'short', month: 'short', day: 'numeric', timeZone: 'UTC' });
}

function monthLabel(month: string): string {
  return new Date(`${month}-01T00:00:00Z`).toLocaleDateString('en-US', { month: 'short', year: 'numeric', timeZone: 'UTC' });
}

function resolveDay(input: unknown, today: string, field: string): string | { error: string } {
  if (typeof input !== 'string') return { error: `${field} must be a date like 2026-09-01` };
  const s = input.trim().toLowerCase();
  if (s === 'today') return today;
  if (s === 'yesterday') return addDays(today, -1);
  const t = Date.parse(`${s}T00:00:00Z`);
  const ok = DAY.test(s) && !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === s;
  return ok ? s : { error: `${field} '${input}' is not a date: use YYYY-MM-DD, e.g. 2026-09-01` };
}

function monthEnd(month: string): string {
  const [y, m] = month.split('-').map(Number);
  return new Date(Date.UTC(y, m, 0)).toISOString().slice(0, 10);
}

interface Account {
  id: number;
  name: string;
  institution: string;
  type: string;
  last4: string;
  balance: number;
  credit_limit: number | null;
  rate: number | null;
}

const accountName = (a: Account) => `${a.institution} ${a.name}`.trim() + (a.last4 ? ` ••${a.last4}` : '');

function today(db: Database.Database): string {
  return (db.prepare("SELECT value FROM meta WHERE key = 'today'").get() as { value: string }).value;
}

/** Accounts matching free text (name, institution, type or last four digits), or all of them. */
function matchAccounts(db: Database.Database, q: unknown): Account[] | { error: string } {
  const all = db.prepare('SELECT * FROM accounts ORDER BY id').all() as Account[];
  if (q === undefined) return all;
  if (typeof q !== 'string' || !q.trim()) return { error: 'account must be a non-empty string' };
  const terms = q
    .toLowerCase()
    .replace(/[()•*]/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
  const hits = all.filter((a) => {
    const hay = `${a.institution} ${a.name} ${a.type.replace('_', ' ')} ${a.last4}`.toLowerCase().replace(/[()]/g, '');
    return terms.every((t) => hay.includes(t) || (t === 'credit' && a.type === 'credit_card') || (t === '401k' && a.name === '401(k)'));
  });
  if (hits.length === 0) {
    return { error: `no account matches '${q}'. Accounts: ${all.map(accountName).join('; ')}` };
  }
  return hits;
}

interface Range {
  from: string;
  to: string;
}

function resolveRange(args: Record<string, unknown>, now: string, defaultDays: number | 'month'): Range | { error: string } {
  if (args.month !== undefined) {
    if (args.start_date !== undefined || args.end_date !== undefined)
      return { error: 'give either month or start_date/end_date, not both' };
    if (typeof args.month !== 'string' || !MONTH.test(args.month))
      return { error: `month must be YYYY-MM, e.g. 2026-08; got '${String(args.month)}'` };
    if (args.month > now.slice(0, 7)) return { error: `month ${args.month} is in the future (today is ${now})` };
    const end = monthEnd(args.month);
    return { from: `${args.month}-01`, to: end > now ? now : end };
  }
  const from =
    args.start_date !== undefined
      ? resolveDay(args.start_date, now, 'start_date')
      : defaultDays === 'month'
        ? `${now.slice(0, 7)}-01`
        : addDays(now, -(defaultDays - 1));
  if (typeof from !== 'string') return from;
  const to = args.end_date !== undefined ? resolveDay(args.end_date, now, 'end_date') : now;
  if (typeof to !== 'string') return to;
  if (to < from) return { error: `end_date ${to} is before start_date ${from}` };
  return { from, to };
}

// ---- finance_lookup ----------------------------------------------------------------------------

function balances(db: Database.Database, args: Record<string, unknown>) {
  const accounts = matchAccounts(db, args.account);
  if (!Array.isArray(accounts)) return err(accounts.error);
  const groups: [string, string[]][] = [
    ['Cash', ['checking', 'savings']],
    ['Credit cards', ['credit_card']],
    ['Investments', ['brokerage', 'retirement']],
    ['Loans', ['loan', 'mortgage']],
    ['Property', ['property']],
  ];
  const lines = [`Balances as of ${label(today(db))}:`];
  for (const [title, types] of groups) {
    const rows = accounts.filter((a) => types.includes(a.type));
    if (rows.length === 0) continue;
    lines.push(`${title}:`);
    for (const a of rows) {
      let extra = '';
      if (a.type === 'credit_card' && a.credit_limit) {
        extra = ` owed, limit ${money(a.credit_limit)} (${Math.round((-a.balance / a.credit_limit) * 100)}% used), APR ${a.rate}%`;
      } else if (a.type === 'savings' && a.rate) extra = `, ${a.rate}% APY`;
      else if ((a.type === 'loan' || a.type === 'mortgage') && a.rate) extra = ` owed at ${a.rate}%`;
      const shown = a.balance < 0 ? money(-a.balance) : money(a.balance);
      lines.push(`  ${accountName(a)}: ${shown}${extra}`);
    }
  }
  if (args.account === undefined) {
    const { assets, liabilities } = currentPosition(db);
    lines.push(`Net worth: ${money(assets - liabilities)} (assets ${money(assets)}, liabilities ${money(liabilities)}).`);
  }
  return { content: lines.join('\n'), details: { accounts } };
}

interface TxRow {
  id: number;
  date: string;
  account_id: number;
  merchant: string;
  description: string;
  category: string;
  amount: number;
  account: string;
}

function categories(db: Database.Database): string[] {
  return (db.prepare('SELECT DISTINCT category FROM transactions ORDER BY category').all() as { category: string }[]).map(
    (r) => r.category,
  );
}

function selectTx(db: Database.Database, args: Record<string, unknown>, range: Range): TxRow[] | { error: string } {
  const accounts = matchAccounts(db, args.account);
  if (!Array.isArray(accounts)) return accounts;
  if (args.category !== undefined) {
    const cats = categories(db);
    if (typeof args.category !== 'string' || !cats.includes(args.category.toLowerCase())) {
      return { error: `category must be one of ${cats.join(', ')}; got '${String(args.category)}'` };
    }
  }
  const rows = db
    .prepare(
      `SELECT t.*, a.institution || ' ' || a.name || ' ••' || a.last4 AS account FROM transactions t JOIN accounts a ON a.id = t.account_id
       WHERE t.date BETWEEN ? AND ? ORDER BY t.date DESC, t.id DESC`,
    )
    .all(range.from, range.to) as TxRow[];
  const ids = new Set(accounts.map((a) => a.id));
  const terms =
    typeof args.query === 'string'
      ? args.query
          .toLowerCase()
          .split(/\s+/)
          .filter((t) => t.length > 0)
      : [];
  return rows.filter(
    (t) =>
      ids.has(t.account_id) &&
      (args.category === undefined || t.category === String(args.category).toLowerCase()) &&
      terms.every((term) => `${t.merchant} ${t.description} ${t.category}`.toLowerCase().includes(term)),
  );
}

function listTransactions(db: Database.Database, args: Record<string, unknown>) {
  const now = today(db);
  const range = resolveRange(args, now, 30);
  if ('error' in range) return err(range.error);
  const rows = selectTx(db, args, range);
  if (!Array.isArray(rows)) return err(rows.error);
  const filters = [args.query && `matching '${args.query}'`, args.category && `in ${args.category}`, args.account && `on ${args.account}`]
    .filter(Boolean)
    .join(' ');
  const span = `between ${range.from} and ${range.to}`;
  if (rows.length === 0)
    return { content: `No transactions ${filters ? `${filters} ` : ''}${span}.`, details: { range, transactions: [] } };
  const limit = typeof args.limit === 'number' ? Math.max(1, Math.min(100, Math.floor(args.limit))) : 20;
  const spent = rows.filter((t) => t.amount < 0 && t.category !== 'transfer').reduce((s, t) => s - t.amount, 0);
  const received = rows.filter((t) => t.amount > 0 && t.category !== 'transfer').reduce((s, t) => s + t.amount, 0);
  const lines = [
    `${rows.length} transaction${rows.length === 1 ? '' : 's'} ${filters ? `${filters} ` : ''}${span}: spent ${money(spent)}, received ${money(received)} (transfers not counted).`,
  ];
  for (const t of rows.slice(0, limit)) {
    lines.push(`  ${t.date}  ${signed(t.amount).padStart(11)}  ${t.merchant} — ${t.description} [${t.category}] · ${t.account}`);
  }
  if (rows.length > limit) lines.push(`  … ${rows.length - limit} more (narrow the dates or raise limit, up to 100).`);
  return { content: lines.join('\n'), details: { range, transactions: rows.slice(0, limit), total: rows.length } };
}

function spending(db: Database.Database, args: Record<string, unknown>) {
  const now = today(db);
  const range = resolveRange(args, now, 'month');
  if ('error' in range) return err(range.error);
  const rows = selectTx(db, args, range);
  if (!Array.isArray(rows)) return err(rows.error);
  const out = rows.filter((t) => t.amount < 0 && t.category !== 'transfer');
  const days = dayDiff(range.from, range.to) + 1;
  const prevRange = { from: addDays(range.from, -days), to: addDays(range.from, -1) };
  const prev = selectTx(db, args, prevRange);
  const prevTotal = Array.isArray(prev)
    ? prev.filter((t) => t.amount < 0 && t.category !== 'transfer').reduce((s, t) => s - t.amount, 0)
    : 0;
  const total = out.reduce((s, t) => s - t.amount, 0);
  const what = args.category ? `on ${args.category}` : '';
  if (out.length === 0) return { content: `No spending ${what} between ${range.from} and ${range.to}.`, details: { range, total: 0 } };
  const sum = (key: 'category' | 'merchant') => {
    const m = new Map<string, number>();
    for (const t of out) m.set(t[key], (m.get(t[key]) ?? 0) - t.amount);
    return [...m.entries()].sort((a, b) => b[1] - a[1]);
  };
  const lines = [
    `Spent ${money(total)} ${what ? `${what} ` : ''}between ${range.from} and ${range.to} (${days} days, ${out.length} purchases).`,
  ];
  if (prevTotal > 0) {
    lines.push(
      `The ${days} days before (${prevRange.from} to ${prevRange.to}): ${money(prevTotal)}, so ${pct(((total - prevTotal) / prevTotal) * 100)}.`,
    );
  }
  if (!args.category) {
    lines.push('By category:');
    for (const [c, v] of sum('category')) lines.push(`  ${c.padEnd(14)} ${money(v).padStart(10)}  ${Math.round((v / total) * 100)}%`);
  }
  lines.push('Top merchants:');
  for (const [m, v] of sum('merchant').slice(0, 5)) lines.push(`  ${m.padEnd(22)} ${money(v).padStart(10)}`);
  return { content: lines.join('\n'), details: { range, total, by_category: Object.fromEntries(sum('category')) } };
}

function financeLookup(db: Database.Database, args: Record<string, unknown>) {
  const what = args.what ?? (args.query || args.category || args.start_date || args.month ? 'transactions' : 'balances');
  if (!WHATS.includes(what as (typeof WHATS)[number])) return err(`what must be one of ${WHATS.join(', ')}`);
  if (args.limit !== undefined && (typeof args.limit !== 'number' || args.limit < 1)) return err('limit must be a positive integer');
  if (what === 'balances') return balances(db, args);
  if (what === 'transactions') return listTransactions(db, args);
  return spending(db, args);
}

// ---- upcoming_dues -----------------------------------------------------------------------------

interface Bill {
  id: number;
  payee: string;
  kind: string;
  amount: number;
  due_date: string;
  autopay: number;
  account_id: number;
  status: string;
  min_payment: number | null;
  account: string;
}

export function dueBills(db: Database.Database, withinDays: number): { today: string; until: string; overdue: Bill[]; upcoming: Bill[] } {
  const now = today(db);
  const until = addDays(now, withinDays);
  const rows = db
    .prepare(
      `SELECT b.*, a.institution || ' ' || a.name || ' ••' || a.last4 AS account FROM bills b JOIN accounts a ON a.id = b.account_id
       WHERE b.status = 'due' AND b.due_date <= ? ORDER BY b.due_date, b.id`,
    )
    .all(until) as Bill[];
  return { today: now, until, overdue: rows.filter((b) => b.due_date < now), upcoming: rows.filter((b) => b.due_date >= now) };
}

function upcomingDues(db: Database.Database, args: Record<string, unknown>) {
  const within = args.within_days ?? 14;
  if (typeof within !== 'number' || !Number.isInteger(within) || within < 0 || within > 90) {
    return err(`within_days must be a whole number of days from 0 to 90; got ${JSON.stringify(args.within_days)}`);
  }
  const { today: now, until, overdue, upcoming } = dueBills(db, within);
  const all = [...overdue, ...upcoming];
  const total = all.reduce((s, b) => s + b.amount, 0);
  const lines: string[] = [];
  const window = within === 0 ? 'today' : `in the next ${within} days (${label(now)} – ${label(until)})`;
  if (all.length === 0) return { content: `No bills due ${window}.`, details: { bills: [] } };
  lines.push(`${all.length} bill${all.length === 1 ? '' : 's'} due ${window}, ${money(total)} in total:`);
  const line = (b: Bill) => {
    const how = b.autopay ? `autopay from ${b.account}` : `pay manually (usually from ${b.account})`;
    const min = b.min_payment ? `, minimum ${money(b.min_payment)}` : '';
    return `  ${label(b.due_date)}  ${b.payee} — ${b.kind}: ${money(b.amount)}${min} · ${how}`;
  };
  for (const b of overdue) lines.push(`${line(b)} · OVERDUE by ${dayDiff(b.due_date, now)} days`);
  for (const b of upcoming) lines.push(line(b));
  const manual = all.filter((b) => !b.autopay);
  if (manual.length > 0) {
    lines.push(`Needs a manual payment: ${manual.map((b) => `${b.payee} ${money(b.amount)} by ${label(b.due_date)}`).join('; ')}.`);
  }
  const checking = db.prepare("SELECT * FROM accounts WHERE type = 'checking' ORDER BY id LIMIT 1").get() as Account | undefined;
  if (checking) {
    const fromChecking = all.filter((b) => b.account_id === checking.id).reduce((s, b) => s + b.amount, 0);
    const left = checking.balance - fromChecking;
    lines.push(
      `${accountName(checking)} has ${money(checking.balance)}; after the ${money(fromChecking)} it pays in this window it would have ${money(left)} before any deposits${left < 0 ? ': short, so a deposit or a transfer from savings is needed first' : ''}.`,
    );
  }
  return { content: lines.join('\n'), details: { today: now, until, bills: all, total } };
}

// ---- portfolio ---------------------------------------------------------------------------------

interface Holding {
  account_id: number;
  symbol: string;
  name: string;
  asset_class: string;
  shares: number;
  price: number;
  cost_basis: number;
}

function portfolio(db: Database.Database, args: Record<string, unknown>) {
  const groupBy = args.group_by ?? 'holding';
  if (groupBy !== 'holding' && groupBy !== 'asset_class') return err("group_by must be 'holding' or 'asset_class'");
  const matched = matchAccounts(db, args.account);
  if (!Array.isArray(matched)) return err(matched.error);
  const accounts = matched.filter((a) => a.type === 'brokerage' || a.type === 'retirement');
  if (accounts.length === 0) return err(`'${args.account}' is not an investment account; investment accounts: brokerage, 401(k)`);
  const holdings = db.prepare('SELECT * FROM holdings ORDER BY account_id, shares * price DESC').all() as Holding[];
  const mine = holdings.filter((h) => accounts.some((a) => a.id === h.account_id));
  const value = mine.reduce((s, h) => s + h.shares * h.price, 0);
  const cost = mine.reduce((s, h) => s + h.shares * h.cost_basis, 0);
  const lines = [
    `Investments: ${money(value)} across ${accounts.length} account${accounts.length === 1 ? '' : 's'}; cost ${money(cost)}, unrealized gain ${signed(value - cost)} (${pct(((value - cost) / cost) * 100)}). Prices as of ${label(today(db))}.`,
  ];
  if (groupBy === 'holding') {
    for (const a of accounts) {
      const hs = mine.filter((h) => h.account_id === a.id);
      const v = hs.reduce((s, h) => s + h.shares * h.price, 0);
      lines.push(`${accountName(a)}: ${money(v)}`);
      for (const h of hs) {
        const hv = h.shares * h.price;
        const gain = h.cost_basis === h.price ? '' : `, ${pct(((h.price - h.cost_basis) / h.cost_basis) * 100)}`;
        const qty = h.symbol === 'CASH' ? '' : ` ${h.shares} × ${money(h.price)}`;
        lines.push(`  ${h.symbol.padEnd(6)} ${h.name}:${qty} = ${money(hv)} (${((hv / value) * 100).toFixed(1)}% of total${gain})`);
      }
    }
  }
  const byClass = new Map<string, number>();
  for (const h of mine) byClass.set(h.asset_class, (byClass.get(h.asset_class) ?? 0) + h.shares * h.price);
  lines.push('Allocation:');
  for (const [c, v] of [...byClass.entries()].sort((x, y) => y[1] - x[1])) {
    lines.push(`  ${c.padEnd(22)} ${money(v).padStart(12)}  ${((v / value) * 100).toFixed(1)}%`);
  }
  return { content: lines.join('\n'), details: { value, cost, holdings: mine, allocation: Object.fromEntries(byClass) } };
}

// ---- net_worth_trend ---------------------------------------------------------------------------

function netWorthTrend(db: Database.Database, args: Record<string, unknown>) {
  const months = args.months ?? 6;
  if (typeof months !== 'number' || !Number.isInteger(months) || months < 1 || months > 23) {
    return err(`months must be a whole number from 1 to 23; got ${JSON.stringify(args.months)}`);
  }
  const now = today(db);
  const hist = (
    db.prepare('SELECT month, assets, liabilities FROM net_worth_history ORDER BY month DESC LIMIT ?').all(months) as {
      month: string;
      assets: number;
      liabilities: number;
    }[]
  ).reverse();
  const cur = currentPosition(db);
  const points = [
    ...hist.map((h) => ({ when: `end of ${monthLabel(h.month)}`, ...h, net: h.assets - h.liabilities })),
    { when: `now (${label(now)})`, month: now.slice(0, 7), ...cur, net: cur.assets - cur.liabilities },
  ];
  const first = points[0];
  const last = points[points.length - 1];
  const change = last.net - first.net;
  const lines = [
    `Net worth ${money(last.net)} now, ${signed(change)} (${pct((change / first.net) * 100)}) since ${first.when}.`,
    `${'when'.padEnd(22)} ${'assets'.padStart(13)} ${'liabilities'.padStart(13)} ${'net worth'.padStart(13)}  change`,
  ];
  let prev: number | undefined;
  for (const p of points) {
    const delta = prev === undefined ? '' : signed(p.net - prev);
    lines.push(
      `${p.when.padEnd(22)} ${money(p.assets).padStart(13)} ${money(p.liabilities).padStart(13)} ${money(p.net).padStart(13)}  ${delta}`,
    );
    prev = p.net;
  }
  const best = points.slice(1).reduce(
    (b, p, i) => {
      const d = p.net - points[i].net;
      return d > b.d ? { d, when: p.when } : b;
    },
    { d: Number.NEGATIVE_INFINITY, when: '' },
  );
  if (points.length > 2) lines.push(`Biggest monthly gain: ${signed(best.d)} (${best.when}).`);
  return { content: lines.join('\n'), details: { points } };
}

// ---- setup -------------------------------------------------------------------------------------

const RANGE_PROPS = {
  start_date: { type: 'string', description: 'First day (YYYY-MM-DD), inclusive.' },
  end_date: { type: 'string', description: 'Last day (YYYY-MM-DD), inclusive. Default: today.' },
  month: {
    type: 'string',
    pattern: '^\\d{4}-(0[1-9]|1[0-2])$',
    description: 'A whole calendar month, YYYY-MM (e.g. 2026-08), instead of start/end dates.',
  },
};

export default function setup(api: PluginAPI): void {
  const db = () => openDb(api.home);
  api.onClose(() => closeDb(api.home));

  api.registerTool({
    name: 'finance_lookup',
    description:
      "Look up the owner's accounts. what='balances': balances of checking, savings, cards (with credit used), investments, " +
      "loans and net worth. what='transactions': individual transactions, filtered by words (merchant or description), " +
      "category, account and dates (default the last 30 days). what='spending': totals by category and merchant over a " +
      'period (default this month so far) compared with the period before.',
    parameters: {
      type: 'object',
      properties: {
        what: {
          type: 'string',
          enum: [...WHATS],
          description: "What to look up. Default 'balances' (or 'transactions' when a filter is given).",
        },
        account: {
          type: 'string',
          description: "Only this account: part of its name, bank, type or last four digits (e.g. 'checking', 'Wingtip', '1094').",
        },
        query: { type: 'string', description: "Words to match in merchant or description (e.g. 'Osteria', 'hotel')." },
        category: {
          type: 'string',
          description:
            'One category: groceries, dining, transport, shopping, utilities, subscriptions, health, entertainment, travel, housing, income or transfer.',
        },
        ...RANGE_PROPS,
        limit: { type: 'integer', minimum: 1, maximum: 100, description: 'Most transactions to list (default 20).' },
      },
      additionalProperties: false,
    },
    execute: (args) => financeLookup(db(), args),
  });

  api.registerTool({
    name: 'upcoming_dues',
    description:
      'Bills due soon: payee, amount, due date, whether autopay covers it (and from which account), overdue bills, the ' +
      'minimum payment on card statements, and whether checking covers what it pays in the window.',
    parameters: {
      type: 'object',
      properties: {
        within_days: {
          type: 'integer',
          minimum: 0,
          maximum: 90,
          description: 'How many days ahead to look (default 14; 0 = due today). Overdue bills are always listed.',
        },
      },
      additionalProperties: false,
    },
    execute: (args) => upcomingDues(db(), args),
  });

  api.registerTool({
    name: 'portfolio',
    description:
      'Investment holdings in the brokerage and 401(k) accounts: each holding with shares, price, value, gain since purchase ' +
      'and share of the total, plus the allocation by asset class.',
    parameters: {
      type: 'object',
      properties: {
        account: { type: 'string', description: "Only one account, e.g. 'brokerage' or '401k'. Default: both." },
        group_by: {
          type: 'string',
          enum: ['holding', 'asset_class'],
          description: "'holding' (default) lists every holding; 'asset_class' only the allocation.",
        },
      },
      additionalProperties: false,
    },
    execute: (args) => portfolio(db(), args),
  });

  api.registerTool({
    name: 'net_worth_trend',
    description: 'Net worth (assets minus liabilities) month by month up to today, with the change over the period and month to month.',
    parameters: {
      type: 'object',
      properties: {
        months: { type: 'integer', minimum: 1, maximum: 23, description: 'How many past month-ends to show before today (default 6).' },
      },
      additionalProperties: false,
    },
    execute: (args) => netWorthTrend(db(), args),
  });
}
