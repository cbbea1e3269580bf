// send_email: a write that waits on the owner's approval card for every call (approval: pinned).
// This reference mailbox has no network: a sent email is recorded in the sent table.
import type Database from 'better-sqlite3';
import type { ToolDefinition } from '../../src/types/index.js';
import { type Args, type Db, err, quote } from './helpers.js';
import { getEmail, terms, today } from './mailbox.js';

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
    description:
      "Email someone: write and send a new email, or a reply, from the owner's address. The owner sees the exact message before it goes.",
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
