import { join } from 'node:path';
import type Database from 'better-sqlite3';
import type { PluginAPI } from '../../src/plugin-host/types.js';
import { pluginData, seedOnce } from '../_lib/plugin-data.js';
import { addDays } from '../_lib/util.js';
import { seed } from './seed.js';

const PLUGIN = 'calendar';
const MAX_RANGE_DAYS = 62;
const CALENDARS = ['work', 'personal', 'family'] as const;

export function dbPath(home: string): string {
  return join(home, 'data', `${PLUGIN}.db`);
}

const data = pluginData(PLUGIN, seedOnce(seed));

const openDb: (home: string) => Database.Database = data.open;
const closeDb: (home: string) => void = data.close;

/** Deletes this plugin's data and seeds it again (`keel data reset`). */
export const reset: (home: string) => Promise<void> = data.reset;

// ---- dates -------------------------------------------------------------------------------------

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

function isRealDay(s: string): boolean {
  if (!DAY.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

function dayDiff(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000);
}

/** A day in YYYY-MM-DD, or 'today' / 'tomorrow' / 'yesterday' / a weekday name (the next one, today included). */
function resolveDay(input: unknown, today: string, field: string): string | { error: string } {
  if (typeof input !== 'string' || input.trim() === '') return { error: `${field} must be a date like 2026-09-21, 'today' or 'tomorrow'` };
  const s = input.trim().toLowerCase();
  if (s === 'today') return today;
  if (s === 'tomorrow') return addDays(today, 1);
  if (s === 'yesterday') return addDays(today, -1);
  const wd = WEEKDAYS.indexOf(s.replace(/^(next|this)\s+/, ''));
  if (wd >= 0) {
    const delta = (wd - new Date(`${today}T00:00:00Z`).getUTCDay() + 7) % 7;
    return addDays(today, s.startsWith('next ') && delta === 0 ? 7 : delta);
  }
  if (isRealDay(s)) return s;
  return { error: `${field} '${input}' is not a date: use YYYY-MM-DD (e.g. 2026-09-21), 'today', 'tomorrow' or a weekday name` };
}

function label(day: string, today: string): string {
  const name = new Date(`${day}T00:00:00Z`).toLocaleDateString('en-US', {
    weekday: 'short',
    month: 'short',
    day: 'numeric',
    timeZone: 'UTC',
  });
  const rel = day === today ? ' (today)' : day === addDays(today, 1) ? ' (tomorrow)' : day === addDays(today, -1) ? ' (yesterday)' : '';
  return `${name}${rel}`;
}

// ---- rows --------------------------------------------------------------------------------------

interface EventRow {
  id: number;
  title: string;
  start_day: string;
  end_day: string;
  start_time: string | null;
  end_time: string | null;
  all_day: number;
  location: string | null;
  calendar: string;
  attendees: string | null;
  notes: string | null;
}

interface ReminderRow {
  id: number;
  title: string;
  due_at: string;
  notes: string | null;
  status: string;
}

function today(db: Database.Database): string {
  return (db.prepare("SELECT value FROM meta WHERE key = 'today'").get() as { value: string }).value;
}

/** A multi-day event is shown in full once per listing, on its first day in the listing. */
function eventLine(e: EventRow, day: string, from: string): string {
  const when = e.all_day ? 'all day    ' : `${e.start_time}–${e.end_time}`;
  if (e.all_day && day !== e.start_day && day !== from) {
    return `  ${when}  ${e.title} (day ${dayDiff(e.start_day, day) + 1} of ${dayDiff(e.start_day, e.end_day) + 1})`;
  }
  const span = e.all_day && e.end_day !== e.start_day ? ` (${e.start_day} to ${e.end_day})` : '';
  const parts = [`${when}  ${e.title}${span}`];
  if (e.location) parts.push(e.location);
  parts.push(`[${e.calendar}]`);
  let line = `  ${parts.join(' · ')}`;
  if (e.attendees) line += `\n               with ${e.attendees}`;
  if (e.notes) line += `\n               note: ${e.notes}`;
  return line;
}

const err = (content: string) => ({ content, is_error: true });

// ---- tools -------------------------------------------------------------------------------------

function lookup(db: Database.Database, args: Record<string, unknown>) {
  const now = today(db);
  if (args.date !== undefined && (args.start_date !== undefined || args.end_date !== undefined)) {
    return err('give either date (one day) or start_date/end_date (a range), not both');
  }
  let from: string;
  let to: string;
  if (args.start_date !== undefined || args.end_date !== undefined) {
    const a = resolveDay(args.start_date ?? args.end_date, now, 'start_date');
    if (typeof a !== 'string') return err(a.error);
    const b = resolveDay(args.end_date ?? args.start_date, now, 'end_date');
    if (typeof b !== 'string') return err(b.error);
    if (b < a) return err(`end_date ${b} is before start_date ${a}`);
    if (dayDiff(a, b) + 1 > MAX_RANGE_DAYS)
      return err(`a range may span at most ${MAX_RANGE_DAYS} days; ${a} to ${b} is ${dayDiff(a, b) + 1}`);
    from = a;
    to = b;
  } else {
    const d = resolveDay(args.date ?? 'today', now, 'date');
    if (typeof d !== 'string') return err(d.error);
    from = to = d;
  }
  if (args.calendar !== undefined && !CALENDARS.includes(args.calendar as (typeof CALENDARS)[number])) {
    return err(`calendar must be one of ${CALENDARS.join(', ')}`);
  }
  const query = typeof args.query === 'string' ? args.query.trim().toLowerCase() : '';
  let events = db
    .prepare(
      `SELECT * FROM events WHERE start_day <= @to AND end_day >= @from AND (@cal IS NULL OR calendar = @cal)
       ORDER BY start_day, all_day DESC, start_time`,
    )
    .all({ from, to, cal: (args.calendar as string | undefined) ?? null }) as EventRow[];
  if (query) {
    const terms = query.split(/\s+/);
    events = events.filter((e) => {
      const hay = [e.title, e.location, e.attendees, e.notes].join(' ').toLowerCase();
      return terms.every((t) => hay.includes(t));
    });
  }
  const includeReminders = args.include_reminders !== false;
  const reminders = includeReminders
    ? (db
        .prepare("SELECT * FROM reminders WHERE substr(due_at, 1, 10) BETWEEN ? AND ? AND status = 'open' ORDER BY due_at")
        .all(from, to) as ReminderRow[])
    : [];
  const span = from === to ? label(from, now) : `${label(from, now)} – ${label(to, now)}`;
  const filter = [query && `matching '${query}'`, args.calendar && `on the ${args.calendar} calendar`].filter(Boolean).join(' ');
  const lines: string[] = [];
  if (events.length === 0) {
    lines.push(`No events ${filter ? `${filter} ` : ''}on ${span}.`);
  } else {
    lines.push(`${events.length} event${events.length === 1 ? '' : 's'} ${filter ? `${filter} ` : ''}on ${span}:`);
    for (let day = from; day <= to; day = addDays(day, 1)) {
      const onDay = events.filter((e) => e.start_day <= day && e.end_day >= day && (e.all_day || e.start_day === day));
      if (onDay.length === 0) continue;
      if (from !== to) lines.push(`${label(day, now)}:`);
      for (const e of onDay) lines.push(eventLine(e, day, from));
    }
  }
  if (reminders.length > 0) {
    lines.push('Reminders due:');
    for (const r of reminders) lines.push(`  ${r.due_at.replace('T', ' ')}  ${r.title}${r.notes ? ` — ${r.notes}` : ''}`);
  }
  return { content: lines.join('\n'), details: { from, to, events, reminders } };
}

function createReminder(db: Database.Database, args: Record<string, unknown>) {
  const now = today(db);
  const title = typeof args.title === 'string' ? args.title.trim() : '';
  if (!title) return err('title is required: what should the reminder say?');
  if (title.length > 200) return err('title is longer than 200 characters');
  const day = resolveDay(args.due_date, now, 'due_date');
  if (typeof day !== 'string') return err(day.error);
  if (day < now) return err(`due_date ${day} is in the past (today is ${now})`);
  let dueAt = day;
  if (args.due_time !== undefined) {
    if (typeof args.due_time !== 'string' || !TIME.test(args.due_time))
      return err(`due_time must be HH:MM in 24-hour time, got '${String(args.due_time)}'`);
    dueAt = `${day}T${args.due_time}`;
  }
  const notes = typeof args.notes === 'string' && args.notes.trim() ? args.notes.trim() : null;
  const same = db.prepare("SELECT * FROM reminders WHERE lower(title) = lower(?) AND due_at = ? AND status = 'open'").get(title, dueAt) as
    | ReminderRow
    | undefined;
  if (same) {
    return {
      content: `A reminder '${same.title}' due ${dueAt.replace('T', ' ')} already exists (#${same.id}); nothing new was created.`,
      details: { reminder: same, created: false },
    };
  }
  const info = db
    .prepare('INSERT INTO reminders (title, due_at, notes, status, created_on) VALUES (?, ?, ?, ?, ?)')
    .run(title, dueAt, notes, 'open', now);
  const reminder = db.prepare('SELECT * FROM reminders WHERE id = ?').get(info.lastInsertRowid) as ReminderRow;
  return {
    content: `Created reminder #${reminder.id}: '${title}' due ${label(day, now)}${args.due_time ? ` at ${args.due_time}` : ''}${notes ? ` (note: ${notes})` : ''}.`,
    details: { reminder, created: true },
  };
}

const DAY_DESC = "A day: YYYY-MM-DD (e.g. 2026-09-21), 'today', 'tomorrow', 'yesterday' or a weekday name such as 'friday'.";

export default function setup(api: PluginAPI): void {
  const db = () => openDb(api.home);
  api.onClose(() => closeDb(api.home));

  api.registerTool({
    name: 'calendar_lookup',
    description:
      "Look up the owner's schedule: the events, meetings and appointments (time, title, place, people, notes) on one day or " +
      'between two dates, showing when things happen and when the owner is free or busy, plus the open reminders due then.',
    parameters: {
      type: 'object',
      properties: {
        date: { type: 'string', description: `One day to show. ${DAY_DESC} Default: today.` },
        start_date: { type: 'string', description: `First day of a range (inclusive). ${DAY_DESC}` },
        end_date: { type: 'string', description: `Last day of a range (inclusive; at most ${MAX_RANGE_DAYS} days in all). ${DAY_DESC}` },
        query: {
          type: 'string',
          description: "Only events whose title, place, people or notes contain these words (e.g. 'dentist', 'Dana').",
        },
        calendar: { type: 'string', enum: [...CALENDARS], description: 'Only events on this calendar.' },
        include_reminders: { type: 'boolean', description: 'Also list open reminders due in the span (default true).' },
      },
      additionalProperties: false,
    },
    execute: (args) => lookup(db(), args),
  });

  api.registerTool({
    name: 'create_reminder',
    description:
      'Create one reminder in the owner’s calendar, due on a day (optionally at a time), so the owner does not forget something. Call it once per reminder. ' +
      'An identical open reminder (same title and due time) is not created twice.',
    parameters: {
      type: 'object',
      properties: {
        title: { type: 'string', minLength: 1, maxLength: 200, description: "What to be reminded of, e.g. 'Pay the Wingtip card bill'." },
        due_date: { type: 'string', description: `When it is due. ${DAY_DESC} Not in the past.` },
        due_time: { type: 'string', pattern: '^([01]\\d|2[0-3]):[0-5]\\d$', description: 'Optional time of day, HH:MM (24-hour).' },
        notes: { type: 'string', description: 'Optional detail, e.g. the amount or the account.' },
      },
      required: ['title', 'due_date'],
      additionalProperties: false,
    },
    execute: (args) => createReminder(db(), args),
  });
}
