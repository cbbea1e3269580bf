// planner's own data (tasks, follow-ups, the brief's configuration) and read-only access to the
// calendar's and finance_workflows' databases under KEEL_HOME/data.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { pluginData, seedOnce } from '../_lib/plugin-data.js';

export const TODAY = '2026-09-20';
export const SECTIONS = ['schedule', 'tasks', 'followups', 'bills', 'focus'] as const;
export type Section = (typeof SECTIONS)[number];

export const OPTION_DEFAULTS = { task_limit: '5', bills_window_days: '3', day_start: '08:00', day_end: '18:00', focus_block_min: '30' };
export type Options = { task_limit: number; bills_window_days: number; day_start: string; day_end: string; focus_block_min: number };

const TASKS = [
  {
    title: 'Draft the Q4 hiring plan',
    due: '2026-09-21',
    priority: 'high',
    project: 'Work',
    estimate: 90,
    notes: 'Dana wants it at Monday’s 1:1.',
  },
  {
    title: 'Read the Q4 themes doc and check the activation numbers on page 4',
    due: '2026-09-21',
    priority: 'high',
    project: 'Work',
    estimate: 45,
    notes: 'Omar thinks they look high.',
  },
  { title: 'Make the meal-prep grocery list', due: '2026-09-20', priority: 'normal', project: 'Home', estimate: 15, notes: null },
  {
    title: 'Prepare questions for the Fabrikam renewal call',
    due: '2026-09-22',
    priority: 'normal',
    project: 'Work',
    estimate: 30,
    notes: 'Two-year term vs. 6% increase.',
  },
  { title: 'Submit the September expense report', due: '2026-09-22', priority: 'normal', project: 'Work', estimate: 20, notes: null },
  {
    title: 'Order Alex’s birthday gift',
    due: '2026-09-24',
    priority: 'high',
    project: 'Family',
    estimate: 20,
    notes: 'Dinner at Marlowe’s on the 30th.',
  },
  {
    title: 'Get passport photos taken',
    due: '2026-09-25',
    priority: 'normal',
    project: 'Travel',
    estimate: 30,
    notes: 'Before the Lisbon trip.',
  },
  {
    title: 'Enroll the laptop in the new VPN',
    due: '2026-09-30',
    priority: 'normal',
    project: 'Work',
    estimate: 10,
    notes: 'Old VPN off on Sep 30.',
  },
  { title: 'Plan the Lisbon itinerary', due: '2026-10-01', priority: 'low', project: 'Travel', estimate: 60, notes: null },
  {
    title: 'Review the home insurance renewal',
    due: '2026-10-10',
    priority: 'normal',
    project: 'Home',
    estimate: 30,
    notes: 'Premium up to $1,236.',
  },
  { title: 'Fix the bike’s rear tire', due: null, priority: 'low', project: 'Home', estimate: 45, notes: null },
  { title: 'Send the book club the meeting notes', due: '2026-09-18', priority: 'low', project: 'Personal', estimate: 15, notes: null },
  { title: 'Renew library books', due: '2026-09-16', priority: 'normal', project: 'Personal', estimate: 5, notes: null, done: true },
];

const FOLLOWUPS = [
  { person: 'Priya Nair', topic: 'confirm Sunday brunch', channel: 'email', due: '2026-09-20' },
  { person: 'Mom', topic: 'call about Dad’s surgery', channel: 'phone', due: '2026-09-20' },
  { person: 'Sam Ortiz', topic: 'reply about bringing folding chairs', channel: 'email', due: '2026-09-21' },
  { person: 'Lena Chen', topic: 'guest room for October 16–18', channel: 'email', due: '2026-09-22' },
  { person: 'Luis Romero', topic: 'send renewal questions before the call', channel: 'email', due: '2026-09-22' },
  { person: 'Maya Brooks', topic: 'answer the lunch invitation for the 25th', channel: 'email', due: '2026-09-23' },
  { person: 'Grace Kim', topic: 'thoughts on offsite venues', channel: 'chat', due: '2026-09-11' },
];

function seed(db: Database.Database): void {
  db.exec(`
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT NOT NULL, due_date TEXT, priority TEXT NOT NULL, project TEXT NOT NULL,
      estimate_min INTEGER, notes TEXT, status TEXT NOT NULL DEFAULT 'open');
    CREATE TABLE followups (id INTEGER PRIMARY KEY, person TEXT NOT NULL, topic TEXT NOT NULL, channel TEXT NOT NULL, due_date TEXT NOT NULL,
      status TEXT NOT NULL DEFAULT 'open');
    CREATE TABLE brief_sections (section TEXT PRIMARY KEY, enabled INTEGER NOT NULL, position INTEGER NOT NULL);
    CREATE TABLE brief_options (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  `);
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run('today', TODAY);
  const t = db.prepare('INSERT INTO tasks (title, due_date, priority, project, estimate_min, notes, status) VALUES (?, ?, ?, ?, ?, ?, ?)');
  for (const x of TASKS) t.run(x.title, x.due, x.priority, x.project, x.estimate, x.notes, x.done ? 'done' : 'open');
  const f = db.prepare('INSERT INTO followups (person, topic, channel, due_date) VALUES (?, ?, ?, ?)');
  for (const x of FOLLOWUPS) f.run(x.person, x.topic, x.channel, x.due);
  const s = db.prepare('INSERT INTO brief_sections (section, enabled, position) VALUES (?, 1, ?)');
  SECTIONS.forEach((name, i) => {
    s.run(name, i + 1);
  });
  const o = db.prepare('INSERT INTO brief_options (key, value) VALUES (?, ?)');
  for (const [k, v] of Object.entries(OPTION_DEFAULTS)) o.run(k, v);
}

export function dbPath(home: string, plugin = 'planner'): string {
  return join(home, 'data', `${plugin}.db`);
}

const data = pluginData('planner', seedOnce(seed));

export const openDb: (home: string) => Database.Database = data.open;
export const closeDb: (home: string) => void = data.close;

export const deleteDb: (home: string) => void = data.remove;

export function options(db: Database.Database): Options {
  const rows = db.prepare('SELECT key, value FROM brief_options').all() as { key: string; value: string }[];
  const o: Record<string, string> = { ...OPTION_DEFAULTS, ...Object.fromEntries(rows.map((r) => [r.key, r.value])) };
  return {
    task_limit: Number(o.task_limit),
    bills_window_days: Number(o.bills_window_days),
    day_start: o.day_start,
    day_end: o.day_end,
    focus_block_min: Number(o.focus_block_min),
  };
}

export function sections(db: Database.Database): { section: Section; enabled: number; position: number }[] {
  return db.prepare('SELECT * FROM brief_sections ORDER BY position').all() as { section: Section; enabled: number; position: number }[];
}

/**
 * Opens another plugin's database read-only. When it does not exist yet (that plugin has not been
 * used in this home), seeds it through that plugin's own exported reset, if the plugin sits beside
 * this one; otherwise returns why it is unavailable.
 */
export async function openSibling(home: string, pluginDir: string, plugin: string): Promise<Database.Database | { unavailable: string }> {
  const file = dbPath(home, plugin);
  if (!existsSync(file)) {
    // Compiled (dist/plugins, index.js) or from source (plugins/, index.ts): the sibling is built as this one is.
    const entry = ['index.js', 'index.ts'].map((f) => join(dirname(pluginDir), plugin, f)).find((f) => existsSync(f)) ?? '';
    if (!entry) return { unavailable: `the ${plugin} plugin is not installed beside planner and ${file} does not exist` };
    try {
      const mod = (await import(pathToFileURL(entry).href)) as { reset?: (home: string) => Promise<void> };
      if (typeof mod.reset !== 'function') return { unavailable: `the ${plugin} plugin has no data yet` };
      await mod.reset(home);
    } catch (e) {
      return { unavailable: `could not create the ${plugin} data: ${(e as Error).message}` };
    }
  }
  try {
    return new Database(file, { readonly: true, fileMustExist: true });
  } catch (e) {
    return { unavailable: `could not open ${file}: ${(e as Error).message}` };
  }
}
