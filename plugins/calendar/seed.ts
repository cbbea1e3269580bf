// The calendar's seeded data: Jamie Chen's calendar around the data's fixed 'today' (2026-09-20, a
// Sunday). Everything here is fixed so that every home seeds the same rows.
import type Database from 'better-sqlite3';
import { addDays } from '../_lib/util.js';

export const TODAY = '2026-09-20';
const FIRST_DAY = '2026-09-07';
const LAST_DAY = '2026-10-18';

type Cal = 'work' | 'personal' | 'family';
interface Ev {
  title: string;
  day: string;
  start?: string;
  end?: string;
  endDay?: string;
  location?: string;
  calendar: Cal;
  attendees?: string;
  notes?: string;
}

function weekday(day: string): number {
  return new Date(`${day}T00:00:00Z`).getUTCDay();
}

const ONE_OFF: Ev[] = [
  {
    title: 'Dinner at Osteria Lupa',
    day: '2026-09-18',
    start: '19:00',
    end: '21:30',
    location: 'Osteria Lupa, 14 Harbor St',
    calendar: 'personal',
    attendees: 'Sam Ortiz, Jordan Lee',
  },
  {
    title: 'Farmers market with Alex',
    day: '2026-09-19',
    start: '09:30',
    end: '11:00',
    location: 'Riverside Market',
    calendar: 'family',
    attendees: 'Alex Chen',
  },
  {
    title: 'Brunch with Priya',
    day: '2026-09-20',
    start: '10:30',
    end: '12:00',
    location: 'Juniper Café',
    calendar: 'personal',
    attendees: 'Priya Nair',
  },
  { title: 'Call Mom', day: '2026-09-20', start: '16:00', end: '16:45', calendar: 'family' },
  { title: 'Meal prep for the week', day: '2026-09-20', start: '18:00', end: '19:00', location: 'Home', calendar: 'personal' },
  {
    title: '1:1 with Dana',
    day: '2026-09-21',
    start: '11:00',
    end: '11:30',
    location: 'Dana’s office',
    calendar: 'work',
    attendees: 'Dana Whitfield',
    notes: 'Bring the Q4 hiring plan draft.',
  },
  {
    title: 'Q4 planning workshop',
    day: '2026-09-21',
    start: '14:00',
    end: '15:30',
    location: 'Room 4B',
    calendar: 'work',
    attendees: 'Product team',
    notes: 'Pre-read: Q4 themes doc (shared Friday).',
  },
  { title: 'Pick up dry cleaning', day: '2026-09-21', start: '17:30', end: '17:45', location: 'Bluebird Cleaners', calendar: 'personal' },
  {
    title: 'Fabrikam renewal call',
    day: '2026-09-22',
    start: '13:00',
    end: '13:45',
    location: 'Zoom',
    calendar: 'work',
    attendees: 'Luis Romero (Fabrikam), Dana Whitfield',
  },
  {
    title: 'Dentist — cleaning',
    day: '2026-09-22',
    start: '16:00',
    end: '17:00',
    location: 'Brightsmile Dental, 210 Elm Ave',
    calendar: 'personal',
    notes: 'Dr. Okafor. Arrive 10 minutes early.',
  },
  {
    title: 'Design review: onboarding flow',
    day: '2026-09-23',
    start: '10:00',
    end: '11:00',
    location: 'Room 2A',
    calendar: 'work',
    attendees: 'Design, Engineering',
  },
  {
    title: 'Book club — "The Overstory"',
    day: '2026-09-23',
    start: '19:00',
    end: '21:00',
    location: 'Maple Street Library',
    calendar: 'personal',
  },
  {
    title: 'Hiring panel: senior PM',
    day: '2026-09-24',
    start: '13:30',
    end: '14:30',
    location: 'Room 3C',
    calendar: 'work',
    attendees: 'Dana Whitfield, Omar Haddad',
  },
  {
    title: 'Lunch with Maya (recruiter)',
    day: '2026-09-25',
    start: '12:30',
    end: '13:30',
    location: 'Noodle Bar',
    calendar: 'personal',
    attendees: 'Maya Brooks',
  },
  {
    title: 'Soccer: Riverside Rovers vs. Elm Park',
    day: '2026-09-26',
    start: '09:00',
    end: '10:30',
    location: 'Elm Park field 2',
    calendar: 'family',
    attendees: 'Alex Chen',
  },
  {
    title: 'Housewarming at Sam’s',
    day: '2026-09-26',
    start: '18:00',
    end: '22:00',
    location: '88 Cedar Lane',
    calendar: 'personal',
    attendees: 'Sam Ortiz',
  },
  {
    title: 'Car service',
    day: '2026-09-28',
    start: '08:00',
    end: '09:00',
    location: 'Woodgrove Auto',
    calendar: 'personal',
    notes: '30,000-mile service; ask about the rear brake noise.',
  },
  {
    title: 'Quarterly business review',
    day: '2026-09-29',
    start: '15:00',
    end: '16:30',
    location: 'Main conference room',
    calendar: 'work',
    attendees: 'Leadership team',
  },
  {
    title: 'Alex’s birthday dinner',
    day: '2026-09-30',
    start: '19:30',
    end: '22:00',
    location: 'Marlowe’s',
    calendar: 'family',
    attendees: 'Alex Chen',
    notes: 'Reservation under Chen, party of 4.',
  },
  { title: 'Haircut', day: '2026-10-01', start: '18:00', end: '18:45', location: 'Studio Nine', calendar: 'personal' },
  {
    title: 'Offsite planning',
    day: '2026-10-02',
    start: '10:00',
    end: '12:00',
    location: 'Room 4B',
    calendar: 'work',
    attendees: 'Dana Whitfield, Omar Haddad, Grace Kim',
  },
  {
    title: 'Annual physical — Dr. Reyes',
    day: '2026-10-05',
    start: '08:30',
    end: '09:30',
    location: 'Lakeside Medical',
    calendar: 'personal',
    notes: 'Fasting from midnight.',
  },
  { title: 'Sprint demo', day: '2026-10-06', start: '15:00', end: '16:00', location: 'Zoom', calendar: 'work' },
  {
    title: 'Flight to Lisbon (TP 202)',
    day: '2026-10-08',
    start: '07:15',
    end: '19:40',
    location: 'Gate B12',
    calendar: 'personal',
    notes: 'Confirmation QX7P4L.',
  },
  {
    title: 'Lisbon trip',
    day: '2026-10-08',
    endDay: '2026-10-11',
    location: 'Lisbon',
    calendar: 'family',
    attendees: 'Alex Chen',
    notes: 'Hotel Almada, confirmation 55812.',
  },
  { title: 'Flight home (TP 201)', day: '2026-10-11', start: '11:05', end: '14:20', calendar: 'personal' },
  { title: 'Lena visits', day: '2026-10-16', endDay: '2026-10-18', calendar: 'family', attendees: 'Lena Chen' },
  { title: 'Company all-hands', day: '2026-09-17', start: '16:00', end: '17:00', location: 'Auditorium', calendar: 'work' },
  { title: 'Parent call: Dad’s knee surgery update', day: '2026-09-16', start: '20:00', end: '20:30', calendar: 'family' },
  { title: 'Yoga class', day: '2026-09-10', start: '18:30', end: '19:30', location: 'Lotus Studio', calendar: 'personal' },
];

function recurring(): Ev[] {
  const out: Ev[] = [];
  for (let day = FIRST_DAY; day <= LAST_DAY; day = addDays(day, 1)) {
    const wd = weekday(day);
    const away = day >= '2026-10-08' && day <= '2026-10-11';
    if (wd >= 1 && wd <= 5 && !away) {
      out.push({ title: 'Team standup', day, start: '09:30', end: '09:45', location: 'Zoom', calendar: 'work', attendees: 'Product team' });
    }
    if ((wd === 2 || wd === 4) && !away) {
      out.push({ title: 'Gym — strength session', day, start: '07:00', end: '08:00', location: 'Northside Fitness', calendar: 'personal' });
    }
    if (wd === 5 && !away) out.push({ title: 'Weekly review', day, start: '16:00', end: '16:30', calendar: 'work' });
    if (wd === 3 && !away) {
      out.push({
        title: 'Roadmap sync',
        day,
        start: '15:00',
        end: '15:45',
        location: 'Room 4B',
        calendar: 'work',
        attendees: 'Omar Haddad, Grace Kim',
      });
    }
  }
  return out;
}

const REMINDERS = [
  { title: 'Submit September expense report', due_at: '2026-09-22T17:00', notes: 'Receipts are in the Finance folder.' },
  { title: 'Renew passport photos', due_at: '2026-09-25', notes: 'Needed before the Lisbon trip.' },
  { title: 'Order Alex’s birthday gift', due_at: '2026-09-24', notes: null },
  { title: 'Water the plants', due_at: '2026-09-19', notes: null },
];

export function seed(db: Database.Database): void {
  db.exec(`
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE events (
      id INTEGER PRIMARY KEY,
      title TEXT NOT NULL,
      start_day TEXT NOT NULL,
      end_day TEXT NOT NULL,
      start_time TEXT,
      end_time TEXT,
      all_day INTEGER NOT NULL DEFAULT 0,
      location TEXT,
      calendar TEXT NOT NULL,
      attendees TEXT,
      notes TEXT
    );
    CREATE INDEX events_by_day ON events (start_day, end_day);
    CREATE TABLE reminders (
      id INTEGER PRIMARY KEY,
      title TEXT NOT NULL,
      due_at TEXT NOT NULL,
      notes TEXT,
      status TEXT NOT NULL DEFAULT 'open',
      created_on TEXT NOT NULL
    );
  `);
  const meta = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
  meta.run('today', TODAY);
  meta.run('owner', 'Jamie Chen');
  meta.run('timezone', 'America/New_York');
  const ev = db.prepare(`INSERT INTO events (title, start_day, end_day, start_time, end_time, all_day, location, calendar, attendees, notes)
    VALUES (@title, @day, @endDay, @start, @end, @allDay, @location, @calendar, @attendees, @notes)`);
  const all = [...ONE_OFF, ...recurring()].sort((a, b) => (a.day + (a.start ?? '')).localeCompare(b.day + (b.start ?? '')));
  for (const e of all) {
    ev.run({
      title: e.title,
      day: e.day,
      endDay: e.endDay ?? e.day,
      start: e.start ?? null,
      end: e.end ?? null,
      allDay: e.start ? 0 : 1,
      location: e.location ?? null,
      calendar: e.calendar,
      attendees: e.attendees ?? null,
      notes: e.notes ?? null,
    });
  }
  const rem = db.prepare('INSERT INTO reminders (title, due_at, notes, status, created_on) VALUES (?, ?, ?, ?, ?)');
  for (const r of REMINDERS) rem.run(r.title, r.due_at, r.notes, r.due_at < TODAY ? 'done' : 'open', '2026-09-15');
}
