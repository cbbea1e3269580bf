import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { cleanup, type FakeHost, mount } from '../_test/fake-api.js';
import setup, { dbPath, reset } from './index.js';

const DIR = dirname(fileURLToPath(import.meta.url));

describe('calendar plugin', () => {
  let host: FakeHost;
  before(async () => {
    host = await mount(DIR, setup);
  });
  after(async () => {
    await host.close();
    cleanup(host.home);
  });

  it('registers exactly the tools its manifest declares', () => {
    assert.deepEqual([...host.tools.keys()].sort(), Object.keys(host.manifest.tools).sort());
    assert.deepEqual(host.refused, []);
    assert.equal(host.manifest.tools.create_reminder.effect, 'write');
    assert.equal(host.manifest.tools.create_reminder.confirm, 'once');
  });

  it('creates its database on first use, not at setup', async () => {
    assert.equal(existsSync(dbPath(host.home)), false);
    await host.call('calendar_lookup', {});
    assert.equal(existsSync(dbPath(host.home)), true);
  });

  it("shows today's events (the data's today, 2026-09-20) by default", async () => {
    const r = await host.call('calendar_lookup', {});
    assert.equal(r.is_error, false);
    assert.match(r.content, /^3 events on Sun, Sep 20 \(today\):/);
    assert.match(r.content, /Brunch with Priya/);
    assert.match(r.content, /Call Mom/);
    assert.doesNotMatch(r.content, /standup/i);
  });

  it('understands tomorrow and weekday names', async () => {
    const r = await host.call('calendar_lookup', { date: 'tomorrow' });
    assert.match(r.content, /Mon, Sep 21 \(tomorrow\)/);
    assert.match(r.content, /1:1 with Dana/);
    assert.match(r.content, /Q4 planning workshop/);
    const t = await host.call('calendar_lookup', { date: 'tuesday' });
    assert.match(t.content, /Dentist/);
    assert.match(t.content, /Reminders due:[\s\S]*expense report/);
  });

  it('lists a range grouped by day, with all-day spans', async () => {
    const r = await host.call('calendar_lookup', { start_date: '2026-10-08', end_date: '2026-10-11' });
    assert.match(r.content, /Lisbon trip \(2026-10-08 to 2026-10-11\)/);
    assert.match(r.content, /Thu, Oct 8:/);
    assert.match(r.content, /Sun, Oct 11:/);
    assert.doesNotMatch(r.content, /standup/i, 'no standups while away');
  });

  it('filters by words and by calendar', async () => {
    const r = await host.call('calendar_lookup', { start_date: '2026-09-14', end_date: '2026-10-18', query: 'dentist' });
    assert.match(r.content, /^1 event matching 'dentist'/);
    const w = await host.call('calendar_lookup', { date: '2026-09-21', calendar: 'work', include_reminders: false });
    assert.doesNotMatch(w.content, /dry cleaning/);
    assert.match(w.content, /Team standup/);
  });

  it('refuses bad arguments with a clear error', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ date: '2026-02-30' }, /not a date/],
      [{ date: 'someday' }, /not a date/],
      [{ date: 'today', start_date: 'today' }, /either date/],
      [{ start_date: '2026-10-01', end_date: '2026-09-01' }, /before start_date/],
      [{ start_date: '2026-01-01', end_date: '2026-12-31' }, /at most 62 days/],
    ];
    for (const [args, re] of cases) {
      const r = await host.call('calendar_lookup', args);
      assert.equal(r.is_error, true, JSON.stringify(args));
      assert.match(r.content, re);
    }
    const schema = await host.call('calendar_lookup', { calendar: 'holidays' });
    assert.equal(schema.is_error, true);
    const raw = await host.raw('calendar_lookup', { calendar: 'holidays' });
    assert.match(raw.content, /calendar must be one of/);
  });

  it('creates a reminder that persists, once', async () => {
    const r = await host.call('create_reminder', {
      title: 'Pay the Wingtip card',
      due_date: '2026-09-28',
      due_time: '09:00',
      notes: '$3,150.40',
    });
    assert.equal(r.is_error, false);
    assert.match(r.content, /Created reminder #\d+: 'Pay the Wingtip card' due Mon, Sep 28 at 09:00/);
    const again = await host.call('create_reminder', { title: 'pay the wingtip card', due_date: '2026-09-28', due_time: '09:00' });
    assert.match(again.content, /already exists/);
    const db = new Database(dbPath(host.home), { readonly: true });
    const n = db.prepare("SELECT count(*) AS n FROM reminders WHERE title = 'Pay the Wingtip card'").get() as { n: number };
    db.close();
    assert.equal(n.n, 1);
    const look = await host.call('calendar_lookup', { date: '2026-09-28' });
    assert.match(look.content, /Reminders due:\n {2}2026-09-28 09:00 {2}Pay the Wingtip card — \$3,150.40/);
  });

  it('refuses reminders in the past, with bad times or without a title', async () => {
    const past = await host.call('create_reminder', { title: 'x', due_date: '2026-09-01' });
    assert.match(past.content, /in the past \(today is 2026-09-20\)/);
    assert.equal((await host.raw('create_reminder', { title: 'x', due_date: 'tomorrow', due_time: '25:00' })).is_error, true);
    assert.equal((await host.raw('create_reminder', { title: '  ', due_date: 'tomorrow' })).is_error, true);
    assert.equal((await host.call('create_reminder', { due_date: 'tomorrow' })).is_error, true);
  });

  it('reset deletes the data and seeds it again, identically', async () => {
    await reset(host.home);
    const r = await host.call('calendar_lookup', { date: '2026-09-28' });
    assert.doesNotMatch(r.content, /Wingtip/);
    const db = new Database(dbPath(host.home), { readonly: true });
    const counts = db.prepare('SELECT (SELECT count(*) FROM events) AS e, (SELECT count(*) FROM reminders) AS r').get();
    db.close();
    assert.deepEqual(counts, { e: 80, r: 4 });
  });
});
