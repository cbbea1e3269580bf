// planner: daily_plan merges the calendar, tasks, follow-ups and bills into one view of a day;
// configure_brief edits which sections it shows and how. Dates are relative to the 'today' stored
// in the data, never the wall clock.
import type Database from 'better-sqlite3';
import type { PluginAPI } from '../../src/plugin-host/types.js';
import { addDays, money } from '../_lib/util.js';
import {
  closeDb,
  deleteDb,
  OPTION_DEFAULTS,
  type Options,
  openDb,
  openSibling,
  options,
  SECTIONS,
  type Section,
  sections,
} from './data.js';

export { dbPath } from './data.js';

/** Deletes this plugin's data and seeds it again (`keel data reset`). Leaves other plugins' data alone. */
export async function reset(home: string): Promise<void> {
  deleteDb(home);
  openDb(home);
  closeDb(home);
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const TITLES: Record<Section, string> = {
  schedule: 'Schedule',
  tasks: 'Tasks',
  followups: 'Follow-ups',
  bills: 'Bills',
  focus: 'Suggested plan',
};
const err = (content: string) => ({ content, is_error: true });

function dayDiff(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000);
}

function resolveDay(input: unknown, now: string): string | { error: string } {
  if (typeof input !== 'string') return { error: 'date must be a string' };
  const s = input.trim().toLowerCase();
  if (s === 'today') return now;
  if (s === 'tomorrow') return addDays(now, 1);
  const wd = WEEKDAYS.indexOf(s);
  if (wd >= 0) return addDays(now, (wd - new Date(`${now}T00:00:00Z`).getUTCDay() + 7) % 7);
  const t = Date.parse(`${s}T00:00:00Z`);
  if (DAY.test(s) && !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === s) return s;
  return { error: `date '${input}' is not a date: use YYYY-MM-DD, 'today', 'tomorrow' or a weekday name` };
}

function label(day: string, now: string): string {
  const name = new Date(`${day}T00:00:00Z`).toLocaleDateString('en-US', {
    weekday: 'short',
    month: 'short',
    day: 'numeric',
    timeZone: 'UTC',
  });
  const d = dayDiff(now, day);
  return `${name}${d === 0 ? ' (today)' : d === 1 ? ' (tomorrow)' : ''}`;
}

function due(day: string | null, ref: string, now: string): string {
  if (!day) return 'no due date';
  const d = dayDiff(ref, day);
  if (d < 0) return `${-d} day${d === -1 ? '' : 's'} overdue`;
  if (d === 0) return 'due today';
  return `due ${label(day, now)}`;
}

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

interface Event {
  title: string;
  start_time: string | null;
  end_time: string | null;
  all_day: number;
  location: string | null;
}
interface Task {
  id: number;
  title: string;
  due_date: string | null;
  priority: 'high' | 'normal' | 'low';
  project: string;
  estimate_min: number | null;
}
interface Followup {
  person: string;
  topic: string;
  channel: string;
  due_date: string;
}
interface Bill {
  payee: string;
  kind: string;
  amount: number;
  due_date: string;
  autopay: number;
}

const RANK = { high: 0, normal: 1, low: 2 };

function openTasks(db: Database.Database, day: string): Task[] {
  const rows = db.prepare("SELECT * FROM tasks WHERE status = 'open'").all() as Task[];
  return rows.sort(
    (a, b) =>
      Number((a.due_date ?? '9999') > day) - Number((b.due_date ?? '9999') > day) ||
      RANK[a.priority] - RANK[b.priority] ||
      (a.due_date ?? '9999').localeCompare(b.due_date ?? '9999') ||
      a.id - b.id,
  );
}

/** Free stretches between timed events within the working day, at least `min` minutes long. */
function gaps(events: Event[], o: Options): [number, number][] {
  const busy = events
    .filter((e) => !e.all_day && e.start_time && e.end_time)
    .map((e) => [minutes(e.start_time!), minutes(e.end_time!)] as [number, number])
    .sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  let at = minutes(o.day_start);
  const end = minutes(o.day_end);
  for (const [s, e] of busy) {
    if (s - at >= o.focus_block_min) out.push([at, Math.min(s, end)]);
    at = Math.max(at, e);
  }
  if (end - at >= o.focus_block_min) out.push([at, end]);
  return out.filter(([s, e]) => e - s >= o.focus_block_min);
}

async function dailyPlan(api: PluginAPI, args: Record<string, unknown>) {
  const db = openDb(api.home);
  const now = (db.prepare("SELECT value FROM meta WHERE key = 'today'").get() as { value: string }).value;
  const day = resolveDay(args.date ?? 'today', now);
  if (typeof day !== 'string') return err(day.error);
  const o = options(db);
  let order: Section[];
  if (args.sections !== undefined) {
    const asked = args.sections;
    if (!Array.isArray(asked) || asked.length === 0 || !asked.every((s) => SECTIONS.includes(s))) {
      return err(`sections must list some of ${SECTIONS.join(', ')}`);
    }
    order = [...new Set(asked as Section[])];
  } else {
    order = sections(db)
      .filter((s) => s.enabled)
      .map((s) => s.section);
  }
  const notes: string[] = [];
  let events: Event[] = [];
  let reminders: { title: string; due_at: string }[] = [];
  if (order.includes('schedule') || order.includes('focus')) {
    const cal = await openSibling(api.home, api.dir, 'calendar');
    if ('unavailable' in cal) notes.push(`Calendar unavailable: ${cal.unavailable}.`);
    else {
      try {
        events = cal
          .prepare('SELECT * FROM events WHERE start_day <= ? AND end_day >= ? ORDER BY all_day DESC, start_time')
          .all(day, day) as Event[];
        reminders = cal
          .prepare("SELECT title, due_at FROM reminders WHERE substr(due_at, 1, 10) = ? AND status = 'open' ORDER BY due_at")
          .all(day) as typeof reminders;
      } catch (e) {
        notes.push(`Calendar unavailable: ${(e as Error).message}.`);
      } finally {
        cal.close();
      }
    }
  }
  let bills: Bill[] = [];
  if (order.includes('bills')) {
    const fin = await openSibling(api.home, api.dir, 'finance_workflows');
    if ('unavailable' in fin) notes.push(`Bills unavailable: ${fin.unavailable}.`);
    else {
      try {
        bills = fin
          .prepare("SELECT payee, kind, amount, due_date, autopay FROM bills WHERE status = 'due' AND due_date <= ? ORDER BY due_date")
          .all(addDays(day, o.bills_window_days)) as Bill[];
      } catch (e) {
        notes.push(`Bills unavailable: ${(e as Error).message}.`);
      } finally {
        fin.close();
      }
    }
  }
  const tasks = openTasks(db, day);
  const dueTasks = tasks.filter((t) => t.due_date && t.due_date <= day);
  const followups = db.prepare("SELECT * FROM followups WHERE status = 'open' AND due_date <= ? ORDER BY due_date").all(day) as Followup[];
  const timed = events.filter((e) => !e.all_day);

  const summary = [
    timed.length ? `${timed.length} event${timed.length === 1 ? '' : 's'} from ${timed[0].start_time}` : 'no timed events',
    `${dueTasks.length} task${dueTasks.length === 1 ? '' : 's'} due`,
    `${followups.length} follow-up${followups.length === 1 ? '' : 's'}`,
    bills.length
      ? `${bills.length} bill${bills.length === 1 ? '' : 's'} (${money(bills.reduce((s, b) => s + b.amount, 0))}) within ${o.bills_window_days} days`
      : 'no bills due soon',
  ];
  const out = [`Your day: ${label(day, now)}. ${summary.join(', ')}.`];
  const render: Record<Section, () => string[]> = {
    schedule: () => {
      const lines = events.map(
        (e) => `  ${e.all_day ? 'all day    ' : `${e.start_time}–${e.end_time}`}  ${e.title}${e.location ? ` · ${e.location}` : ''}`,
      );
      for (const r of reminders) lines.push(`  reminder     ${r.title}${r.due_at.length > 10 ? ` (${r.due_at.slice(11)})` : ''}`);
      return lines.length ? lines : ['  Nothing on the calendar.'];
    },
    tasks: () => {
      if (tasks.length === 0) return ['  No open tasks.'];
      const shown = tasks
        .slice(0, o.task_limit)
        .map(
          (t) =>
            `  • [${t.priority}] ${t.title} (${t.project}) — ${due(t.due_date, day, now)}${t.estimate_min ? `, ~${t.estimate_min} min` : ''}`,
        );
      if (tasks.length > o.task_limit) shown.push(`  …and ${tasks.length - o.task_limit} more open tasks.`);
      return shown;
    },
    followups: () =>
      followups.length
        ? followups.map((f) => `  • ${f.person}: ${f.topic} (${f.channel}) — ${due(f.due_date, day, now)}`)
        : ['  No follow-ups due.'],
    bills: () =>
      bills.length
        ? bills.map(
            (b) =>
              `  • ${b.payee} (${b.kind}) ${money(b.amount)} — ${due(b.due_date, day, now)}, ${b.autopay ? 'autopay' : 'pay manually'}`,
          )
        : [`  No bills due within ${o.bills_window_days} days.`],
    focus: () => {
      const free = gaps(events, o);
      const plan: string[] = [];
      // Only what is pressing: due within three days (or overdue), or high priority; six blocks at most.
      const todo = tasks.filter((t) => t.estimate_min && ((t.due_date && dayDiff(day, t.due_date) <= 3) || t.priority === 'high'));
      for (const [s, e] of free) {
        if (plan.length >= 6) break;
        let at = s;
        for (let i = 0; i < todo.length; i++) {
          const t = todo[i];
          if (at + t.estimate_min! > e || plan.length >= 6) continue;
          plan.push(`  ${hhmm(at)}–${hhmm(at + t.estimate_min!)}  ${t.title} [${t.priority}]`);
          at += t.estimate_min!;
          todo.splice(i--, 1);
        }
      }
      if (plan.length === 0) return [`  No free block of ${o.focus_block_min} minutes or more between ${o.day_start} and ${o.day_end}.`];
      return plan.sort();
    },
  };
  for (const s of order) {
    const title = s === 'tasks' ? `${TITLES.tasks} (${tasks.length} open)` : TITLES[s];
    out.push('', `${title}:`, ...render[s]());
  }
  if (notes.length) out.push('', ...notes);
  return {
    content: out.join('\n'),
    details: { date: day, sections: order, events, tasks: tasks.slice(0, o.task_limit), followups, bills },
  };
}

function configureBrief(db: Database.Database, args: Record<string, unknown>) {
  const list = (v: unknown, name: string): Section[] | { error: string } => {
    if (v === undefined) return [];
    if (!Array.isArray(v) || !v.every((s) => SECTIONS.includes(s)))
      return { error: `${name} must list sections from ${SECTIONS.join(', ')}` };
    return [...new Set(v as Section[])];
  };
  const enable = list(args.enable, 'enable');
  const disable = list(args.disable, 'disable');
  const order = list(args.order, 'order');
  for (const x of [enable, disable, order]) if (!Array.isArray(x)) return err(x.error);
  const en = enable as Section[];
  const dis = disable as Section[];
  const ord = order as Section[];
  const both = en.filter((s) => dis.includes(s));
  if (both.length) return err(`${both.join(', ')} cannot be both enabled and disabled`);
  const before = options(db);
  const next: Options = { ...before };
  const ints: [keyof Options, number, number][] = [
    ['task_limit', 1, 20],
    ['bills_window_days', 0, 30],
    ['focus_block_min', 15, 240],
  ];
  for (const [k, lo, hi] of ints) {
    const v = args[k];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) return err(`${k} must be a whole number from ${lo} to ${hi}`);
    (next[k] as number) = v;
  }
  for (const k of ['day_start', 'day_end'] as const) {
    const v = args[k];
    if (v === undefined) continue;
    if (typeof v !== 'string' || !TIME.test(v)) return err(`${k} must be HH:MM (24-hour)`);
    next[k] = v;
  }
  if (minutes(next.day_start) >= minutes(next.day_end)) return err(`day_start ${next.day_start} must be before day_end ${next.day_end}`);
  const changes: string[] = [];
  const current = sections(db);
  if (
    en.length + dis.length + ord.length === 0 &&
    Object.keys(next).every((k) => next[k as keyof Options] === before[k as keyof Options])
  ) {
    return err(
      `Nothing to change. The brief shows ${current.map((s) => `${s.section}${s.enabled ? '' : ' (off)'}`).join(', ')}; options: ${Object.entries(
        before,
      )
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}.`,
    );
  }
  db.transaction(() => {
    const setEnabled = db.prepare('UPDATE brief_sections SET enabled = ? WHERE section = ?');
    for (const s of en) if (!current.find((c) => c.section === s)?.enabled) changes.push(`turned on ${s}`);
    for (const s of dis) if (current.find((c) => c.section === s)?.enabled) changes.push(`turned off ${s}`);
    for (const s of en) setEnabled.run(1, s);
    for (const s of dis) setEnabled.run(0, s);
    if (ord.length) {
      const rest = current.map((c) => c.section).filter((s) => !ord.includes(s));
      const setPos = db.prepare('UPDATE brief_sections SET position = ? WHERE section = ?');
      [...ord, ...rest].forEach((s, i) => {
        setPos.run(i + 1, s);
      });
      changes.push(`order ${[...ord, ...rest].join(', ')}`);
    }
    const setOpt = db.prepare('INSERT INTO brief_options (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
    for (const k of Object.keys(OPTION_DEFAULTS) as (keyof Options)[]) {
      if (next[k] !== before[k]) {
        setOpt.run(k, String(next[k]));
        changes.push(`${k} ${before[k]} → ${next[k]}`);
      }
    }
  })();
  const after = sections(db);
  const on = after.filter((s) => s.enabled).map((s) => s.section);
  const off = after.filter((s) => !s.enabled).map((s) => s.section);
  return {
    content:
      `Updated the daily brief: ${changes.length ? changes.join('; ') : 'it already was that way'}. It now shows ${on.join(', ') || 'nothing'}` +
      `${off.length ? ` (off: ${off.join(', ')})` : ''}; up to ${next.task_limit} tasks; bills due within ${next.bills_window_days} days; ` +
      `suggested plan between ${next.day_start} and ${next.day_end} in blocks of ${next.focus_block_min}+ minutes.`,
    details: { sections: after, options: next },
  };
}

export default function setup(api: PluginAPI): void {
  api.onClose(() => closeDb(api.home));
  const sectionList = { type: 'array', items: { type: 'string', enum: [...SECTIONS] } };

  api.registerTool({
    name: 'daily_plan',
    description:
      "The owner's day in one view: the calendar's events and reminders, open tasks (overdue and due first), follow-ups owed " +
      'to people, bills due soon, and a suggested plan that fits tasks into the free time. Sections and their order follow ' +
      'the brief’s configuration (see configure_brief).',
    parameters: {
      type: 'object',
      properties: {
        date: { type: 'string', description: "The day: YYYY-MM-DD, 'today' (default), 'tomorrow' or a weekday name." },
        sections: {
          ...sectionList,
          minItems: 1,
          description: 'Show only these sections, in this order, this time (the saved brief is unchanged).',
        },
      },
      additionalProperties: false,
    },
    execute: (args) => dailyPlan(api, args),
  });

  api.registerTool({
    name: 'configure_brief',
    description:
      "Change the owner's daily brief (what daily_plan shows): turn sections on or off, reorder them, and set how many tasks " +
      'to list, how far ahead to look for bills, and the working hours the suggested plan uses. Only the fields given change.',
    parameters: {
      type: 'object',
      properties: {
        enable: { ...sectionList, description: `Sections to turn on: ${SECTIONS.join(', ')}.` },
        disable: { ...sectionList, description: 'Sections to turn off.' },
        order: { ...sectionList, description: 'Sections in the order to show them; unlisted ones follow in their current order.' },
        task_limit: { type: 'integer', minimum: 1, maximum: 20, description: 'How many tasks to list (default 5).' },
        bills_window_days: { type: 'integer', minimum: 0, maximum: 30, description: 'Show bills due within this many days (default 3).' },
        day_start: {
          type: 'string',
          pattern: '^([01]\\d|2[0-3]):[0-5]\\d$',
          description: 'Start of the working day for the suggested plan, HH:MM (default 08:00).',
        },
        day_end: { type: 'string', pattern: '^([01]\\d|2[0-3]):[0-5]\\d$', description: 'End of the working day, HH:MM (default 18:00).' },
        focus_block_min: {
          type: 'integer',
          minimum: 15,
          maximum: 240,
          description: 'Smallest free block worth planning, in minutes (default 30).',
        },
      },
      additionalProperties: false,
    },
    execute: (args) => configureBrief(openDb(api.home), args),
  });
}
