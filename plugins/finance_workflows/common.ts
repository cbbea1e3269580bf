import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { pluginData, seedOnce } from '../_lib/plugin-data.js';
import { addDays, money } from '../_lib/util.js';
import { seed } from './seed.js';

export { addDays, money } from '../_lib/util.js';

export const PLUGIN = 'finance_workflows';
export const WHATS = ['balances', 'transactions', 'spending'] as const;

export function dbPath(home: string): string {
  return join(home, 'data', `${PLUGIN}.db`);
}

const data = pluginData(PLUGIN, seedOnce(seed));

export const openDb: (home: string) => Database.Database = data.open;
export const closeDb: (home: string) => void = data.close;

/** Deletes this plugin's data and seeds it again (`keel data reset`). */
export const reset: (home: string) => Promise<void> = data.reset;

// ---- small helpers -----------------------------------------------------------------------------

export const DAY = /^\d{4}-\d{2}-\d{2}$/;
export const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;
export const signed = (n: number) => (n >= 0 ? `+${money(n)}` : money(n));
export const pct = (n: number) => `${n >= 0 ? '+' : ''}${n.toFixed(1)}%`;
export const err = (content: string) => ({ content, is_error: true });

export function dayDiff(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000);
}

export function label(day: string): string {
  return new Date(`${day}T00:00:00Z`).toLocaleDateString('en-US', { weekday: 'short', month: 'short', day: 'numeric', timeZone: 'UTC' });
}

export function monthLabel(month: string): string {
  return new Date(`${month}-01T00:00:00Z`).toLocaleDateString('en-US', { month: 'short', year: 'numeric', timeZone: 'UTC' });
}

export function resolveDay(input: unknown, today: string, field: string): string | { error: string } {
  if (typeof input !== 'string') return { error: `${field} must be a date like 2026-09-01` };
  const s = input.trim().toLowerCase();
  if (s === 'today') return today;
  if (s === 'yesterday') return addDays(today, -1);
  const t = Date.parse(`${s}T00:00:00Z`);
  const ok = DAY.test(s) && !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === s;
  return ok ? s : { error: `${field} '${input}' is not a date: use YYYY-MM-DD, e.g. 2026-09-01` };
}

export function monthEnd(month: string): string {
  const [y, m] = month.split('-').map(Number);
  return new Date(Date.UTC(y, m, 0)).toISOString().slice(0, 10);
}

export interface Account {
  id: number;
  name: string;
  institution: string;
  type: string;
  last4: string;
  balance: number;
  credit_limit: number | null;
  rate: number | null;
}

export const accountName = (a: Account) => `${a.institution} ${a.name}`.trim() + (a.last4 ? ` ••${a.last4}` : '');

export function today(db: Database.Database): string {
  return (db.prepare("SELECT value FROM meta WHERE key = 'today'").get() as { value: string }).value;
}

/** Accounts matching free text (name, institution, type or last four digits), or all of them. */
export function matchAccounts(db: Database.Database, q: unknown): Account[] | { error: string } {
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

export interface Range {
  from: string;
  to: string;
}

export function resolveRange(args: Record<string, unknown>, now: string, defaultDays: number | 'month'): Range | { error: string } {
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
