import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { pluginData, seedOnce } from '../_lib/plugin-data.js';
import { addDays } from '../_lib/util.js';
import { seed } from './seed.js';

export { addDays } from '../_lib/util.js';

export const CATEGORIES = ['promotions', 'social', 'updates', 'personal', 'finance'] as const;
export type Category = (typeof CATEGORIES)[number];

export function dbPath(home: string): string {
  return join(home, 'data', 'email_workflows.db');
}

const data = pluginData('email_workflows', seedOnce(seed));

export const openDb: (home: string) => Database.Database = data.open;
export const closeDb: (home: string) => void = data.close;

export const deleteDb: (home: string) => void = data.remove;

export interface Email {
  id: string;
  thread_id: string;
  from_name: string;
  from_addr: string;
  to_addr: string;
  subject: string;
  body: string;
  gist: string | null;
  date: string;
  category: Category;
  folder: 'inbox' | 'trash';
  unread: number;
  important: number;
  trashed_on: string | null;
  trash_batch: string | null;
  attachments: number;
}

export interface Attachment {
  id: number;
  email_id: string;
  filename: string;
  mime: string;
  size_kb: number;
}

const SELECT = 'SELECT e.*, (SELECT count(*) FROM attachments a WHERE a.email_id = e.id) AS attachments FROM emails e';

export function meta(db: Database.Database, key: string): string {
  return (db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string }).value;
}

export function today(db: Database.Database): string {
  return meta(db, 'today');
}

export function getEmail(db: Database.Database, id: string): Email | undefined {
  return db.prepare(`${SELECT} WHERE e.id = ?`).get(id) as Email | undefined;
}

export function attachmentsOf(db: Database.Database, id: string): Attachment[] {
  return db.prepare('SELECT * FROM attachments WHERE email_id = ? ORDER BY id').all(id) as Attachment[];
}

export function threadOf(db: Database.Database, threadId: string): Email[] {
  return db.prepare(`${SELECT} WHERE e.thread_id = ? ORDER BY e.date`).all(threadId) as Email[];
}

/** The next id for a group of moves to Trash, so that restore_email can take the whole group back. */
export function nextBatch(db: Database.Database, prefix: 'tc' | 'te'): string {
  const n = Number(meta(db, 'batch_seq')) + 1;
  db.prepare("UPDATE meta SET value = ? WHERE key = 'batch_seq'").run(String(n));
  return `${prefix}-${n}`;
}

// ---- dates and printing ------------------------------------------------------------------------

const DAY = /^\d{4}-\d{2}-\d{2}$/;

export function resolveDay(input: unknown, now: string, field: string): string | { error: string } {
  if (typeof input !== 'string') return { error: `${field} must be a date like 2026-09-14` };
  const s = input.trim().toLowerCase();
  if (s === 'today') return now;
  if (s === 'yesterday') return addDays(now, -1);
  const t = Date.parse(`${s}T00:00:00Z`);
  if (DAY.test(s) && !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === s) return s;
  return { error: `${field} '${input}' is not a date: use YYYY-MM-DD (e.g. 2026-09-14), 'today' or 'yesterday'` };
}

export function shortDate(date: string): string {
  const d = new Date(`${date.slice(0, 10)}T00:00:00Z`);
  const day = d.toLocaleDateString('en-US', { weekday: 'short', month: 'short', day: 'numeric', timeZone: 'UTC' });
  return date.length > 10 ? `${day} ${date.slice(11, 16)}` : day;
}

export const plural = (n: number, word: string, many = `${word}s`) => `${n} ${n === 1 ? word : many}`;

export function line(e: Email): string {
  const tags: string[] = [e.category];
  if (e.attachments) tags.push(plural(e.attachments, 'attachment'));
  if (e.important) tags.push('important');
  if (e.unread) tags.push('unread');
  if (e.folder === 'trash') tags.push('in Trash');
  return `${e.id} · ${shortDate(e.date)} · ${e.from_name} <${e.from_addr}> · ${e.subject} · ${tags.join(', ')}`;
}

export function kind(mime: string): string {
  if (mime === 'application/pdf') return 'PDF';
  if (mime.startsWith('image/')) return 'image';
  if (mime.includes('spreadsheet')) return 'spreadsheet';
  return 'file';
}

// ---- search ------------------------------------------------------------------------------------

const STOP = new Set(
  'a an and any about all are as at be by email emails for from get i in inbox is it mail me message messages my of on or please show that the this these those to what which with find'.split(
    ' ',
  ),
);

/** Lowercase word stems: enough for 'statements' to find 'statement'. */
export function terms(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? [])
    .filter((t) => !STOP.has(t))
    .map((t) => (t.length > 3 && t.endsWith('s') ? t.slice(0, -1) : t));
}

export interface SearchOptions {
  query?: string;
  category?: string;
  from?: string;
  since?: string;
  until?: string;
  unread_only?: boolean;
  has_attachment?: boolean;
  include_trash?: boolean;
}

export interface SearchResult {
  rows: Email[];
  /** No email matched every word; these match some of them. */
  loose: boolean;
}

export function search(db: Database.Database, o: SearchOptions): SearchResult | { error: string } {
  const now = today(db);
  const where: string[] = [];
  const params: unknown[] = [];
  if (!o.include_trash) where.push("e.folder = 'inbox'");
  if (o.category !== undefined) {
    if (!CATEGORIES.includes(o.category as Category)) return { error: `category must be one of ${CATEGORIES.join(', ')}` };
    where.push('e.category = ?');
    params.push(o.category);
  }
  if (o.since !== undefined) {
    const d = resolveDay(o.since, now, 'since');
    if (typeof d !== 'string') return d;
    where.push('substr(e.date, 1, 10) >= ?');
    params.push(d);
  }
  if (o.until !== undefined) {
    const d = resolveDay(o.until, now, 'until');
    if (typeof d !== 'string') return d;
    where.push('substr(e.date, 1, 10) <= ?');
    params.push(d);
  }
  if (o.unread_only) where.push('e.unread = 1');
  if (o.has_attachment) where.push('EXISTS (SELECT 1 FROM attachments a WHERE a.email_id = e.id)');
  const rows = db.prepare(`${SELECT} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY e.date DESC`).all(...params) as Email[];
  const fromTerms = o.from ? terms(o.from) : [];
  const byFrom = fromTerms.length
    ? rows.filter((e) => fromTerms.every((t) => terms(`${e.from_name} ${e.from_addr}`).some((w) => w.startsWith(t))))
    : rows;
  const q = o.query ? terms(o.query) : [];
  if (q.length === 0) return { rows: byFrom, loose: false };
  const files = new Map<string, string>();
  for (const a of db.prepare('SELECT email_id, filename FROM attachments').all() as { email_id: string; filename: string }[]) {
    files.set(a.email_id, `${files.get(a.email_id) ?? ''} ${a.filename}`);
  }
  const scored = byFrom.map((e) => {
    const fields: [string[], number][] = [
      [terms(e.subject), 3],
      [terms(`${e.from_name} ${e.from_addr}`), 3],
      [terms(files.get(e.id) ?? ''), 2],
      [terms(`${e.body} ${e.gist ?? ''} ${e.category}`), 1],
    ];
    let score = 0;
    let matched = 0;
    for (const t of q) {
      const s = fields.reduce((sum, [words, w]) => sum + (words.some((x) => x === t || (t.length >= 4 && x.startsWith(t))) ? w : 0), 0);
      if (s > 0) matched++;
      score += s;
    }
    return { e, score, matched };
  });
  const all = scored.filter((s) => s.matched === q.length);
  const pool = all.length > 0 ? all : scored.filter((s) => s.matched > 0);
  pool.sort((a, b) => b.matched - a.matched || b.score - a.score || b.e.date.localeCompare(a.e.date));
  return { rows: pool.map((s) => s.e), loose: all.length === 0 && pool.length > 0 };
}

/** Ids the mailbox does not have, and ids that are (or are not) in Trash. */
export function checkIds(db: Database.Database, ids: readonly string[]): { unknown: string[]; trashed: Email[]; inbox: Email[] } {
  const unknown: string[] = [];
  const trashed: Email[] = [];
  const inbox: Email[] = [];
  for (const id of ids) {
    const e = getEmail(db, id);
    if (!e) unknown.push(id);
    else if (e.folder === 'trash') trashed.push(e);
    else inbox.push(e);
  }
  return { unknown, trashed, inbox };
}
