// The mailbox tools the model calls (registered with api.registerTool in index.ts).
import type Database from 'better-sqlite3';
import type { ToolDefinition } from '../../src/tools/types.js';
import {
  addDays,
  attachmentsOf,
  CATEGORIES,
  type Category,
  checkIds,
  type Email,
  getEmail,
  kind,
  line,
  nextBatch,
  plural,
  resolveDay,
  search,
  shortDate,
  terms,
  threadOf,
  today,
} from './mailbox.js';

type Db = () => Database.Database;
type Args = Record<string, unknown>;
const err = (content: string) => ({ content, is_error: true });
const BULK: readonly Category[] = ['promotions', 'social', 'updates'];
const quote = (s: string) => `“${s}”`;

function intArg(v: unknown, name: string, lo: number, hi: number, dflt: number): number | { error: string } {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi)
    return { error: `${name} must be a whole number from ${lo} to ${hi}` };
  return v;
}

function idList(v: unknown): string[] | { error: string } {
  if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'string'))
    return { error: 'ids must be a non-empty list of email ids such as ["m012", "m013"]' };
  return [...new Set(v as string[])];
}

const DATE_PROPS = {
  since: { type: 'string', description: "Only emails on or after this day: YYYY-MM-DD, 'today' or 'yesterday'." },
  until: { type: 'string', description: "Only emails on or before this day: YYYY-MM-DD, 'today' or 'yesterday'." },
};

export function searchInbox(db: Db): ToolDefinition {
  return {
    name: 'search_inbox',
    description:
      "Search the owner's email by words (sender, subject, body, attachment names), optionally narrowed by category, sender, " +
      'dates, unread or with attachments. Returns matching emails newest-best first with their ids (use read_email for the full text).',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: "Words to look for, e.g. 'wingtip statement' or 'housewarming chairs'." },
        category: { type: 'string', enum: [...CATEGORIES], description: 'Only this category.' },
        from: { type: 'string', description: "Only mail from this sender (part of the name or address), e.g. 'Dana'." },
        ...DATE_PROPS,
        unread_only: { type: 'boolean', description: 'Only unread emails.' },
        has_attachment: { type: 'boolean', description: 'Only emails with attachments.' },
        include_trash: { type: 'boolean', description: 'Also search Trash (default false).' },
        limit: { type: 'integer', minimum: 1, maximum: 50, description: 'Most results to list (default 10).' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    execute: (args) => {
      const limit = intArg(args.limit, 'limit', 1, 50, 10);
      if (typeof limit !== 'number') return err(limit.error);
      if (typeof args.query !== 'string') return err('query must be a string of words to look for');
      const r = search(db(), args as Args & { query: string });
      if ('error' in r) return err(r.error);
      const what = `matching '${args.query.trim()}'`;
      if (r.rows.length === 0) return { content: `No emails ${what}${args.include_trash ? '' : ' in the inbox'}.`, details: { ids: [] } };
      const head = r.loose
        ? `No email matches every word of '${args.query.trim()}'; ${plural(r.rows.length, 'email')} match some of them:`
        : `${plural(r.rows.length, 'email')} ${what}:`;
      const shown = r.rows.slice(0, limit);
      const more = r.rows.length > limit ? `\n… ${r.rows.length - limit} more (narrow the search or raise limit).` : '';
      return { content: `${head}\n${shown.map(line).join('\n')}${more}`, details: { ids: shown.map((e) => e.id), total: r.rows.length } };
    },
  };
}

export function readEmail(db: Db): ToolDefinition {
  return {
    name: 'read_email',
    description: 'Read one email in full: sender, recipients, date, subject, attachments, its place in a thread, and the body.',
    parameters: {
      type: 'object',
      properties: { id: { type: 'string', description: "The email's id, e.g. 'm087' (from search_inbox or list_by_category)." } },
      required: ['id'],
      additionalProperties: false,
    },
    execute: (args) => {
      const e = typeof args.id === 'string' ? getEmail(db(), args.id.trim()) : undefined;
      if (!e) return err(`No email with id '${String(args.id)}'. Ids look like m001–m120; find them with search_inbox.`);
      const files = attachmentsOf(db(), e.id);
      const thread = threadOf(db(), e.thread_id);
      const out = [
        `${e.id} (${e.category}${e.important ? ', important' : ''}${e.unread ? ', unread' : ''}${e.folder === 'trash' ? ', in Trash' : ''})`,
        `From: ${e.from_name} <${e.from_addr}>`,
        `To: ${e.to_addr}`,
        `Date: ${shortDate(e.date.slice(0, 10))}, ${e.date.slice(0, 4)} ${e.date.slice(11, 16)}`,
        `Subject: ${e.subject}`,
      ];
      if (files.length) out.push(`Attachments: ${files.map((f) => `${f.filename} (${kind(f.mime)}, ${f.size_kb} KB)`).join('; ')}`);
      if (thread.length > 1) {
        out.push(
          `Thread: ${thread.length} messages (${thread.map((t) => t.id).join(', ')}); this is message ${thread.findIndex((t) => t.id === e.id) + 1}.`,
        );
      }
      out.push('', e.body);
      return { content: out.join('\n'), details: { email: e, attachments: files } };
    },
  };
}

export function findAttachment(db: Db): ToolDefinition {
  return {
    name: 'find_attachment',
    description:
      'Find attachments (statements, receipts, bills, pay stubs, quotes, photos) by words in the file name, subject or sender, ' +
      'by file type and by date. Returns each file with the email it came in.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: "Words to match, e.g. 'wingtip statement', 'receipt desk', 'pay stub'." },
        type: { type: 'string', enum: ['pdf', 'image', 'spreadsheet', 'any'], description: "File type (default 'any')." },
        from: { type: 'string', description: 'Only from this sender (part of the name or address).' },
        ...DATE_PROPS,
        limit: { type: 'integer', minimum: 1, maximum: 50, description: 'Most files to list (default 10).' },
      },
      additionalProperties: false,
    },
    execute: (args) => {
      const limit = intArg(args.limit, 'limit', 1, 50, 10);
      if (typeof limit !== 'number') return err(limit.error);
      const type = args.type ?? 'any';
      if (!['pdf', 'image', 'spreadsheet', 'any'].includes(type as string))
        return err("type must be 'pdf', 'image', 'spreadsheet' or 'any'");
      const r = search(db(), {
        query: typeof args.query === 'string' ? args.query : undefined,
        from: args.from as string,
        since: args.since as string,
        until: args.until as string,
        has_attachment: true,
      });
      if ('error' in r) return err(r.error);
      const found: string[] = [];
      const ids: string[] = [];
      for (const e of r.rows) {
        for (const f of attachmentsOf(db(), e.id)) {
          const k = kind(f.mime).toLowerCase();
          if (type !== 'any' && k !== type) continue;
          found.push(
            `${f.filename} · ${kind(f.mime)}, ${f.size_kb} KB · in ${e.id} from ${e.from_name}, ${shortDate(e.date)}: ${quote(e.subject)}`,
          );
          ids.push(e.id);
        }
      }
      const what = [args.query && `matching '${args.query}'`, type !== 'any' && `of type ${type}`, args.from && `from ${args.from}`]
        .filter(Boolean)
        .join(' ');
      if (found.length === 0) return { content: `No attachments ${what || 'found'}.`, details: { ids: [] } };
      const head = `${plural(found.length, 'attachment')}${what ? ` ${what}` : ''}${r.loose ? ' (matching some of the words)' : ''}:`;
      const more = found.length > limit ? `\n… ${found.length - limit} more.` : '';
      return { content: `${head}\n${found.slice(0, limit).join('\n')}${more}`, details: { ids: ids.slice(0, limit) } };
    },
  };
}

export function listByCategory(db: Db): ToolDefinition {
  return {
    name: 'list_by_category',
    description:
      'List the inbox emails of one category (promotions, social, updates, personal, finance), newest first, with how many there are.',
    parameters: {
      type: 'object',
      properties: {
        category: { type: 'string', enum: [...CATEGORIES], description: 'The category to list.' },
        ...DATE_PROPS,
        unread_only: { type: 'boolean', description: 'Only unread emails.' },
        limit: { type: 'integer', minimum: 1, maximum: 50, description: 'How many to list (default 20).' },
        offset: { type: 'integer', minimum: 0, description: 'Skip this many of the newest (for the next page).' },
      },
      required: ['category'],
      additionalProperties: false,
    },
    execute: (args) => {
      const limit = intArg(args.limit, 'limit', 1, 50, 20);
      if (typeof limit !== 'number') return err(limit.error);
      const offset = intArg(args.offset, 'offset', 0, 10_000, 0);
      if (typeof offset !== 'number') return err(offset.error);
      if (!CATEGORIES.includes(args.category as Category)) return err(`category must be one of ${CATEGORIES.join(', ')}`);
      const r = search(db(), {
        category: args.category as string,
        since: args.since as string,
        until: args.until as string,
        unread_only: args.unread_only === true,
      });
      if ('error' in r) return err(r.error);
      const unread = r.rows.filter((e) => e.unread).length;
      if (r.rows.length === 0)
        return {
          content: `No ${args.category} emails in the inbox${args.since || args.until ? ' in that window' : ''}.`,
          details: { ids: [] },
        };
      const page = r.rows.slice(offset, offset + limit);
      const head = `${args.category}: ${plural(r.rows.length, 'email')} in the inbox (${unread} unread); ${page.length ? `showing ${offset + 1}–${offset + page.length}, newest first` : 'none on this page'}:`;
      const rest = r.rows.length - offset - page.length;
      const more = rest > 0 ? `\n… ${rest} more (offset ${offset + page.length}).` : '';
      return { content: `${head}\n${page.map(line).join('\n')}${more}`, details: { ids: page.map((e) => e.id), total: r.rows.length } };
    },
  };
}

function senders(rows: Email[], n: number): string {
  const counts = new Map<string, number>();
  for (const e of rows) counts.set(e.from_name, (counts.get(e.from_name) ?? 0) + 1);
  const top = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([s]) => s);
  if (top.length <= n) return top.join(', ').replace(/, ([^,]*)$/, ' and $1');
  return `${top.slice(0, n).join(', ')} and ${plural(top.length - n, 'other sender')}`;
}

export function inboxDigest(db: Db): ToolDefinition {
  return {
    name: 'inbox_digest',
    description:
      'A narrated digest of recent email, ready to show the owner: how many arrived and are unread, what needs attention, ' +
      'what people wrote, money mail, updates, social and promotions, counted per category.',
    parameters: {
      type: 'object',
      properties: { days: { type: 'integer', minimum: 1, maximum: 30, description: 'How many days back, today included (default 7).' } },
      additionalProperties: false,
    },
    execute: (args) => {
      const days = intArg(args.days, 'days', 1, 30, 7);
      if (typeof days !== 'number') return err(days.error);
      const now = today(db());
      const since = addDays(now, -(days - 1));
      const r = search(db(), { since });
      if ('error' in r) return err(r.error);
      const rows = r.rows;
      const span = days === 1 ? 'today' : `the last ${days} days (${shortDate(since)} – ${shortDate(now)})`;
      if (rows.length === 0) return { content: `No new email in ${span}.` };
      const by = (c: Category) => rows.filter((e) => e.category === c);
      const out = [
        `${days === 1 ? 'Today' : `In ${span}`} you received ${plural(rows.length, 'email')}, ${rows.filter((e) => e.unread).length} still unread.`,
      ];
      const important = rows.filter((e) => e.important);
      if (important.length) {
        out.push('', 'Needs your attention:');
        for (const e of important) out.push(`• ${e.gist ?? `${e.from_name}: ${e.subject}`}.`);
      }
      // Sections leave out what 'Needs your attention' already said; 'more' says so.
      const more = (c: Category, n: number) => (important.some((e) => e.category === c) ? `${n} more` : String(n));
      const people = by('personal').filter((e) => !e.important);
      if (people.length) {
        out.push('', `From people (${more('personal', people.length)}):`);
        for (const e of people.slice(0, 6)) out.push(`• ${e.gist ?? `${e.from_name} wrote about ${quote(e.subject)}`}.`);
        if (people.length > 6) out.push(`• …and ${plural(people.length - 6, 'more message')}.`);
      }
      const money = by('finance').filter((e) => !e.important);
      if (money.length) {
        const withFiles = money.filter((e) => e.attachments > 0).length;
        out.push(
          '',
          `Money (${more('finance', money.length)}${withFiles ? `, ${withFiles} with attachments` : ''}): ${money.map((e) => `${e.subject} (${e.from_name})`).join('; ')}.`,
        );
      }
      const updates = by('updates').filter((e) => !e.important);
      if (updates.length) {
        const shown = updates.slice(0, 4).map((e) => e.subject);
        out.push(
          '',
          `Updates (${more('updates', updates.length)}): ${shown.join('; ')}${updates.length > 4 ? `; and ${updates.length - 4} more` : ''}.`,
        );
      }
      const social = by('social');
      if (social.length) out.push('', `Social (${social.length}): notifications from ${senders(social, 3)}.`);
      const promos = by('promotions');
      if (promos.length) {
        const allPromos = search(db(), { category: 'promotions' });
        const total = 'error' in allPromos ? promos.length : allPromos.rows.length;
        out.push(
          '',
          `Promotions (${promos.length}): from ${senders(promos, 3)}. There are ${total} promotions in the inbox in all; say 'clear my promotions' to move them to Trash (you can restore them).`,
        );
      }
      const counts = CATEGORIES.map((c) => `${c} ${by(c).length}`).join(', ');
      out.push('', `By category: ${counts}.`);
      return {
        content: out.join('\n'),
        details: { since, until: now, total: rows.length, by_category: Object.fromEntries(CATEGORIES.map((c) => [c, by(c).length])) },
      };
    },
  };
}

export function trashEmail(db: Db): ToolDefinition {
  return {
    name: 'trash_email',
    description: 'Move the given emails to Trash (they can be restored with restore_email). Takes the emails’ ids.',
    parameters: {
      type: 'object',
      properties: {
        ids: {
          type: 'array',
          items: { type: 'string' },
          minItems: 1,
          maxItems: 50,
          description: "The ids of the emails to move, e.g. ['m012', 'm031'].",
        },
      },
      required: ['ids'],
      additionalProperties: false,
    },
    validate: (args) => {
      const ids = idList(args.ids);
      if (!Array.isArray(ids)) return ids.error;
      const { unknown, trashed } = checkIds(db(), ids);
      const problems: string[] = [];
      if (unknown.length) problems.push(`no email with id ${unknown.join(', ')}`);
      if (trashed.length) problems.push(`already in Trash: ${trashed.map((e) => e.id).join(', ')}`);
      return problems.length ? `Not moved: ${problems.join('; ')}. Check the ids with search_inbox.` : undefined;
    },
    describe: (args) => {
      const ids = Array.isArray(args.ids) ? (args.ids as string[]) : [];
      const lines = ids.slice(0, 25).map((id) => {
        const e = getEmail(db(), id);
        return e ? `${e.from_name} <${e.from_addr}>: ${e.subject} (${shortDate(e.date)})` : `${id}: no such email`;
      });
      if (ids.length > 25) lines.push(`…and ${ids.length - 25} more`);
      return { title: `Move ${ids.length} email(s) to Trash`, lines };
    },
    execute: (args) => {
      const ids = idList(args.ids);
      if (!Array.isArray(ids)) return err(ids.error);
      const d = db();
      const { unknown, trashed, inbox } = checkIds(d, ids);
      if (inbox.length === 0)
        return err(
          `Nothing moved: ${[unknown.length && `no email with id ${unknown.join(', ')}`, trashed.length && `already in Trash: ${trashed.map((e) => e.id).join(', ')}`].filter(Boolean).join('; ')}.`,
        );
      const batch = nextBatch(d, 'te');
      const move = d.prepare("UPDATE emails SET folder = 'trash', trashed_on = ?, trash_batch = ? WHERE id = ?");
      d.transaction(() => {
        for (const e of inbox) move.run(today(d), batch, e.id);
      })();
      const list = inbox.map((e) => `${quote(e.subject)} from ${e.from_name}`).join('; ');
      const skipped = [...unknown.map((id) => `${id} (no such email)`), ...trashed.map((e) => `${e.id} (already in Trash)`)];
      return {
        content: `Moved ${plural(inbox.length, 'email')} to Trash: ${list}.${skipped.length ? ` Skipped ${skipped.join(', ')}.` : ''} To undo, restore batch ${batch}.`,
        details: { batch, moved: inbox.map((e) => e.id) },
      };
    },
  };
}

export function restoreEmail(db: Db): ToolDefinition {
  return {
    name: 'restore_email',
    description: 'Move emails back from Trash to the inbox: give the ids, or the batch name a trash action reported (e.g. tc-1).',
    parameters: {
      type: 'object',
      properties: {
        ids: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 100, description: 'Ids of emails in Trash.' },
        batch: { type: 'string', description: "A batch name from trash_email or trash_category, e.g. 'tc-1'." },
      },
      additionalProperties: false,
    },
    execute: (args) => {
      const d = db();
      let emails: Email[];
      const notes: string[] = [];
      if (args.batch !== undefined) {
        if (args.ids !== undefined) return err('give either ids or batch, not both');
        if (typeof args.batch !== 'string') return err('batch must be a string such as tc-1');
        const inBatch = d.prepare('SELECT id FROM emails WHERE trash_batch = ?').all(args.batch) as { id: string }[];
        if (inBatch.length === 0) return err(`No batch '${args.batch}': batch names come from trash_email and trash_category (e.g. tc-1).`);
        emails = checkIds(
          d,
          inBatch.map((r) => r.id),
        ).trashed;
        if (emails.length === 0) return err(`Batch ${args.batch} is already back in the inbox; nothing to restore.`);
      } else {
        const ids = idList(args.ids);
        if (!Array.isArray(ids)) return err('give the ids of the emails to restore, or a batch name such as tc-1');
        const c = checkIds(d, ids);
        if (c.unknown.length) notes.push(`no email with id ${c.unknown.join(', ')}`);
        if (c.inbox.length) notes.push(`already in the inbox: ${c.inbox.map((e) => e.id).join(', ')}`);
        emails = c.trashed;
        if (emails.length === 0) return err(`Nothing restored: ${notes.join('; ')}.`);
      }
      // trash_batch stays, so that restoring a batch twice says it is already back.
      const back = d.prepare("UPDATE emails SET folder = 'inbox', trashed_on = NULL WHERE id = ?");
      d.transaction(() => {
        for (const e of emails) back.run(e.id);
      })();
      const sample = emails.slice(0, 3).map((e) => quote(e.subject));
      const rest = emails.length > 3 ? ` and ${emails.length - 3} more` : '';
      const from = args.batch ? ` (batch ${args.batch})` : '';
      return {
        content: `Restored ${plural(emails.length, 'email')} from Trash to the inbox${from}: ${sample.join(', ')}${rest}.${notes.length ? ` Not restored: ${notes.join('; ')}.` : ''}`,
        details: { restored: emails.map((e) => e.id) },
      };
    },
  };
}

export function trashCategory(db: Db): ToolDefinition {
  return {
    name: 'trash_category',
    description:
      'Move one batch (default 25, oldest first) of a bulk category (promotions, social or updates), optionally within a date ' +
      'window, from the inbox to Trash. Reports how many moved, a sample, how many remain and how to undo. Call it again for the next batch.',
    parameters: {
      type: 'object',
      properties: {
        category: { type: 'string', enum: [...BULK], description: 'The bulk category to clear.' },
        ...DATE_PROPS,
        batch_size: { type: 'integer', minimum: 1, maximum: 50, description: 'Most emails to move in this call (default 25).' },
      },
      required: ['category'],
      additionalProperties: false,
    },
    execute: (args) => {
      if (!BULK.includes(args.category as Category)) {
        return err(
          `trash_category only clears bulk mail (${BULK.join(', ')}); '${String(args.category)}' mail is moved one email at a time with trash_email, which asks the owner first.`,
        );
      }
      const size = intArg(args.batch_size, 'batch_size', 1, 50, 25);
      if (typeof size !== 'number') return err(size.error);
      const d = db();
      const cat = args.category as Category;
      const r = search(d, { category: cat, since: args.since as string, until: args.until as string });
      if ('error' in r) return err(r.error);
      const windowed = args.since !== undefined || args.until !== undefined;
      const window = windowed
        ? ` from ${args.since ? shortDate(resolveDay(args.since, today(d), 'since') as string) : 'the start'} to ${args.until ? shortDate(resolveDay(args.until, today(d), 'until') as string) : 'today'}`
        : '';
      if (r.rows.length === 0)
        return { content: `No ${cat} emails in the inbox${window}; nothing was moved.`, details: { moved: [], remaining: 0 } };
      const batchRows = [...r.rows].reverse().slice(0, size);
      const batch = nextBatch(d, 'tc');
      const move = d.prepare("UPDATE emails SET folder = 'trash', trashed_on = ?, trash_batch = ? WHERE id = ?");
      d.transaction(() => {
        for (const e of batchRows) move.run(today(d), batch, e.id);
      })();
      const remaining = r.rows.length - batchRows.length;
      const total = d.prepare("SELECT count(*) AS n FROM emails WHERE folder = 'inbox' AND category = ?").get(cat) as { n: number };
      const first = batchRows[0].date;
      const last = batchRows[batchRows.length - 1].date;
      const sample = batchRows.slice(0, 3).map((e) => `${quote(e.subject)} (${e.from_name})`);
      const out = [
        `Moved ${plural(batchRows.length, `${cat} email`)} to Trash (${shortDate(first.slice(0, 10))} – ${shortDate(last.slice(0, 10))}), as batch ${batch}. Among them: ${sample.join(', ')}${batchRows.length > 3 ? `, and ${batchRows.length - 3} more` : ''}.`,
      ];
      if (remaining > 0) {
        out.push(
          `${plural(remaining, `${cat} email`)}${window} ${remaining === 1 ? 'is' : 'are'} still in the inbox; ask again to move the next ${Math.min(size, remaining)}.`,
        );
      } else {
        out.push(
          `No ${cat} emails${window} are left in the inbox${windowed && total.n > 0 ? ` (${total.n} outside that window remain)` : ''}.`,
        );
      }
      out.push(`Nothing was deleted: to undo, restore batch ${batch}.`);
      return { content: out.join('\n'), details: { batch, moved: batchRows.map((e) => e.id), remaining, remaining_in_category: total.n } };
    },
  };
}

const ADDRESS = /^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/;

function addresses(v: unknown): string[] {
  const list = typeof v === 'string' ? v.split(',') : Array.isArray(v) ? v : [];
  return list
    .map((x) => String(x).trim())
    .filter(Boolean)
    .map((x) => x.match(/<([^>]+)>/)?.[1] ?? x);
}

function sendProblem(d: Database.Database, args: Args): string | undefined {
  const to = addresses(args.to);
  const cc = addresses(args.cc);
  if (to.length === 0) return 'to must list at least one email address';
  const bad = [...to, ...cc].filter((a) => !ADDRESS.test(a));
  if (bad.length) {
    const known = d.prepare("SELECT DISTINCT from_name, from_addr FROM emails WHERE category = 'personal'").all() as {
      from_name: string;
      from_addr: string;
    }[];
    const hints = bad
      .flatMap((b) => known.filter((k) => terms(k.from_name).some((t) => terms(b).includes(t))))
      .map((k) => `${k.from_name} <${k.from_addr}>`);
    return `not an email address: ${bad.join(', ')}${hints.length ? ` (did you mean ${[...new Set(hints)].join(' or ')}?)` : ''}`;
  }
  if (typeof args.subject !== 'string' || !args.subject.trim()) return 'subject must not be empty';
  if (typeof args.body !== 'string' || !args.body.trim()) return 'body must not be empty';
  if (args.in_reply_to !== undefined && (typeof args.in_reply_to !== 'string' || !getEmail(d, args.in_reply_to)))
    return `in_reply_to: no email with id '${String(args.in_reply_to)}'`;
  return undefined;
}

export function sendEmail(db: Db): ToolDefinition {
  return {
    name: 'send_email',
    description: "Send an email from the owner's address. The owner sees the exact message (recipients, subject, body) before it goes.",
    parameters: {
      type: 'object',
      properties: {
        to: {
          type: 'array',
          items: { type: 'string' },
          minItems: 1,
          maxItems: 20,
          description: "Recipient addresses, e.g. ['priya.nair@example.com'].",
        },
        cc: { type: 'array', items: { type: 'string' }, maxItems: 20, description: 'Copy these addresses.' },
        subject: { type: 'string', minLength: 1, description: 'Subject line.' },
        body: { type: 'string', minLength: 1, description: 'The message, as plain text.' },
        in_reply_to: { type: 'string', description: 'Id of the email this answers, if it is a reply.' },
      },
      required: ['to', 'subject', 'body'],
      additionalProperties: false,
    },
    validate: (args) => sendProblem(db(), args),
    describe: (args) => {
      const to = addresses(args.to);
      const cc = addresses(args.cc);
      const lines = [`To: ${to.join(', ')}`];
      if (cc.length) lines.push(`Cc: ${cc.join(', ')}`);
      lines.push(`Subject: ${String(args.subject ?? '')}`);
      if (typeof args.in_reply_to === 'string') {
        const e = getEmail(db(), args.in_reply_to);
        if (e) lines.push(`In reply to: ${e.from_name}, ${quote(e.subject)}`);
      }
      lines.push('', ...String(args.body ?? '').split('\n'));
      return { title: `Send email to ${to.join(', ')}`, lines };
    },
    execute: (args) => {
      const d = db();
      const problem = sendProblem(d, args);
      if (problem) return err(`Not sent: ${problem}.`);
      const to = addresses(args.to);
      const cc = addresses(args.cc);
      const info = d
        .prepare('INSERT INTO sent (to_addr, cc, subject, body, in_reply_to, sent_on) VALUES (?, ?, ?, ?, ?, ?)')
        .run(
          to.join(', '),
          cc.length ? cc.join(', ') : null,
          String(args.subject).trim(),
          String(args.body),
          (args.in_reply_to as string) ?? null,
          today(d),
        );
      return {
        content: `Sent ${quote(String(args.subject).trim())} to ${to.join(', ')}${cc.length ? ` (cc ${cc.join(', ')})` : ''}; it is in Sent as s${info.lastInsertRowid}.`,
        details: { sent_id: Number(info.lastInsertRowid) },
      };
    },
  };
}
