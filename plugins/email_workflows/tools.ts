// The mailbox's read tools (registered with api.registerTool in index.ts).
import type { ToolDefinition } from '../../src/types/index.js';
import { type Args, DATE_PROPS, type Db, err, intArg, quote } from './helpers.js';
import {
  addDays,
  attachmentsOf,
  CATEGORIES,
  type Category,
  type Email,
  getEmail,
  kind,
  line,
  plural,
  search,
  shortDate,
  threadOf,
  today,
} from './mailbox.js';

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
      return {
        content: `${head}\n${shown.map(line).join('\n')}${more}`,
        details: { ids: shown.map((e) => e.id), total: r.rows.length },
        // U1: whose words the results carry (shown to the owner when the run later asks for consent).
        source: `search "${args.query.trim()}": ${plural(shown.length, 'email')} from ${[...new Set(shown.map((e) => e.from_addr))].slice(0, 3).join(', ')}`,
      };
    },
  };
}

export function readEmail(db: Db): ToolDefinition {
  return {
    name: 'read_email',
    description:
      'Open one email and read the whole message: sender, recipients, date, subject, attachments, its place in a thread, and the body.',
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
      return {
        content: out.join('\n'),
        details: { email: e, attachments: files },
        source: `email ${e.id} from ${e.from_addr}: ${e.subject}`,
      };
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
