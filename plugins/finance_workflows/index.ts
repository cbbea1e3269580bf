// finance_workflows: the owner's accounts, transactions, bills, holdings and net worth, all read.
// Data lives in KEEL_HOME/data/finance_workflows.db, seeded on first use; dates are relative to the
// 'today' stored in the data, never the wall clock.
import type Database from 'better-sqlite3';
import type { PluginAPI } from '../../src/plugin-host/types.js';
import {
  type Account,
  accountName,
  addDays,
  closeDb,
  dayDiff,
  err,
  label,
  matchAccounts,
  money,
  monthLabel,
  openDb,
  pct,
  signed,
  today,
  WHATS,
} from './common.js';
import { financeLookup } from './lookup.js';
import { currentPosition } from './seed.js';

export { dbPath, reset } from './common.js';

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
