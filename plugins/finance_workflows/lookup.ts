// finance_lookup: balances, transactions and spending.
import type Database from 'better-sqlite3';
import {
  accountName,
  addDays,
  dayDiff,
  err,
  label,
  matchAccounts,
  money,
  pct,
  type Range,
  resolveRange,
  signed,
  today,
  WHATS,
} from './common.js';
import { currentPosition } from './seed.js';

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

export function financeLookup(db: Database.Database, args: Record<string, unknown>) {
  const what = args.what ?? (args.query || args.category || args.start_date || args.month ? 'transactions' : 'balances');
  if (!WHATS.includes(what as (typeof WHATS)[number])) return err(`what must be one of ${WHATS.join(', ')}`);
  if (args.limit !== undefined && (typeof args.limit !== 'number' || args.limit < 1)) return err('limit must be a positive integer');
  if (what === 'balances') return balances(db, args);
  if (what === 'transactions') return listTransactions(db, args);
  return spending(db, args);
}
