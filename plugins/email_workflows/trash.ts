// Moving mail to Trash and back: trash_email (destructive, approved per call), restore_email (its
// undo) and trash_category (one batch of a bulk category; its output is the account).
import type { ToolDefinition } from '../../src/types/index.js';
import { BULK, DATE_PROPS, type Db, err, idList, intArg, quote } from './helpers.js';
import { type Category, checkIds, type Email, getEmail, nextBatch, plural, resolveDay, search, shortDate, today } from './mailbox.js';

export function trashEmail(db: Db): ToolDefinition {
  return {
    name: 'trash_email',
    description:
      'Delete specific emails, such as spam or a newsletter, by moving them to Trash (they can be restored with restore_email). Takes the emails’ ids.',
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
