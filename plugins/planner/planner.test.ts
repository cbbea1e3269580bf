import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cleanup, type FakeHost, mount, tempHome } from '../_test/fake-api.js';
import setupCalendar from '../calendar/index.js';
import setup, { dbPath, reset } from './index.js';

const DIR = dirname(fileURLToPath(import.meta.url));

describe('planner plugin', () => {
  let host: FakeHost;
  before(async () => {
    host = await mount(DIR, setup);
  });
  beforeEach(async () => {
    await reset(host.home);
  });
  after(async () => {
    await host.close();
    cleanup(host.home);
  });

  it('declares daily_plan (read, with the whole-day guidance) and configure_brief (write, confirm never)', () => {
    assert.deepEqual([...host.tools.keys()].sort(), ['configure_brief', 'daily_plan']);
    const t = host.manifest.tools;
    assert.equal(t.daily_plan.effect, 'read');
    assert.equal(
      t.daily_plan.guidance,
      "For a whole-day question ('how is my day', 'what's on today', 'plan my day') call daily_plan: it already merges calendar, tasks, followups and bills, so do not also call calendar_lookup or finance_lookup for the same question.",
    );
    assert.deepEqual([t.configure_brief.effect, t.configure_brief.confirm], ['write', 'never']);
  });

  it('merges calendar, tasks, follow-ups and bills for today, seeding the other plugins’ data when missing', async () => {
    const r = await host.call('daily_plan', {});
    assert.equal(r.is_error, false);
    assert.ok(existsSync(dbPath(host.home, 'calendar')) && existsSync(dbPath(host.home, 'finance_workflows')));
    assert.match(
      r.content,
      /^Your day: Sun, Sep 20 \(today\)\. 3 events from 10:30, 2 tasks due, 3 follow-ups, 3 bills \(\$120\.48\) within 3 days\./,
    );
    assert.match(r.content, /Schedule:\n {2}10:30–12:00 {2}Brunch with Priya · Juniper Café/);
    assert.match(r.content, /Tasks \(12 open\):\n {2}• \[normal\] Make the meal-prep grocery list \(Home\) — due today/);
    assert.match(r.content, /Follow-ups:\n {2}• Grace Kim: thoughts on offsite venues \(chat\) — 9 days overdue/);
    assert.match(r.content, /Bills:\n {2}• Lakeside Medical \(medical copay\) \$35\.00 — 5 days overdue, pay manually/);
    assert.match(r.content, /Suggested plan:\n {2}08:00–08:15/);
    const plan = r.content.split('Suggested plan:\n')[1].split('\n');
    assert.ok(plan.length <= 6, 'six blocks at most');
    assert.ok(!plan.some((l) => /10:30|11:00|11:30|16:15/.test(l.slice(2, 7))), 'nothing planned over an event');
  });

  it('plans another day; a section list shows only those sections this time', async () => {
    const r = await host.call('daily_plan', { date: 'tomorrow' });
    assert.match(r.content, /^Your day: Mon, Sep 21 \(tomorrow\)/);
    assert.match(r.content, /1:1 with Dana/);
    assert.match(r.content, /Sam Ortiz: reply about bringing folding chairs \(email\) — due today/);
    const only = await host.call('daily_plan', { date: '2026-09-22', sections: ['bills', 'schedule'] });
    const heads = only.content.split('\n').filter((l) => /^[A-Z][\w -]+:$/.test(l));
    assert.deepEqual(heads, ['Bills:', 'Schedule:']);
    assert.match(only.content, /Dentist — cleaning/);
  });

  it('refuses bad arguments', async () => {
    assert.match((await host.call('daily_plan', { date: 'someday' })).content, /date 'someday' is not a date/);
    assert.equal((await host.call('daily_plan', { date: '2026-02-31' })).is_error, true);
    assert.equal((await host.call('daily_plan', { sections: ['weather'] })).is_error, true);
    assert.match(
      (await host.raw('daily_plan', { sections: ['weather'] })).content,
      /sections must list some of schedule, tasks, followups, bills, focus/,
    );
    assert.match((await host.raw('daily_plan', { sections: [] })).content, /sections must list/);
  });

  it('reads the calendar live: a reminder created there shows in the plan', async () => {
    const cal = await mount(join(DIR, '..', 'calendar'), setupCalendar, { home: host.home });
    await cal.call('create_reminder', { title: 'Bring the hiring plan printout', due_date: '2026-09-21', due_time: '10:45' });
    const r = await host.call('daily_plan', { date: 'tomorrow', sections: ['schedule'] });
    assert.match(r.content, /reminder {5}Bring the hiring plan printout \(10:45\)/);
    await cal.close();
  });

  it('stays useful when the other plugins are not installed beside it', async () => {
    const lone = join(tempHome('keel-planner-alone-'), 'planner');
    mkdirSync(lone);
    copyFileSync(join(DIR, 'plugin.yaml'), join(lone, 'plugin.yaml'));
    const alone = await mount(lone, setup);
    const r = await alone.call('daily_plan', {});
    assert.equal(r.is_error, false);
    assert.match(r.content, /Tasks \(12 open\)/);
    assert.match(r.content, /Calendar unavailable: the calendar plugin is not installed beside planner/);
    assert.match(r.content, /Bills unavailable: the finance_workflows plugin is not installed beside planner/);
    await alone.close();
    cleanup(alone.home);
    cleanup(dirname(lone));
  });

  it('configure_brief turns sections off, reorders them and sets options, and daily_plan follows', async () => {
    const c = await host.call('configure_brief', { disable: ['focus'], order: ['tasks', 'bills'], task_limit: 3, bills_window_days: 7 });
    assert.equal(c.is_error, false);
    assert.match(
      c.content,
      /^Updated the daily brief: turned off focus; order tasks, bills, schedule, followups, focus; task_limit 5 → 3; bills_window_days 3 → 7\./,
    );
    const r = await host.call('daily_plan', {});
    const heads = r.content.split('\n').filter((l) => /^[A-Z][\w ()-]+:$/.test(l));
    assert.deepEqual(heads, ['Tasks (12 open):', 'Bills:', 'Schedule:', 'Follow-ups:']);
    assert.match(r.content, /…and 9 more open tasks\./);
    assert.match(
      r.content,
      /Tailspin Credit Union \(auto loan payment\) \$412\.60 — due Sun, Sep 27/,
      'a 7-day bills window reaches Sep 27',
    );
    const on = await host.call('configure_brief', { enable: ['focus'], day_start: '09:00', day_end: '17:00' });
    assert.match(on.content, /turned on focus; day_start 08:00 → 09:00; day_end 18:00 → 17:00/);
    assert.match((await host.call('daily_plan', {})).content, /Suggested plan:\n {2}09:00/);
  });

  it('configure_brief refuses contradictions, bad values and no-ops, changing nothing', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ enable: ['bills'], disable: ['bills'] }, /bills cannot be both enabled and disabled/],
      [{ day_start: '18:00', day_end: '09:00' }, /day_start 18:00 must be before day_end 09:00/],
      [{ day_start: '9am' }, /day_start must be HH:MM/],
      [{ task_limit: 0 }, /task_limit must be a whole number from 1 to 20/],
      [{ disable: ['weather'] }, /disable must list sections from/],
      [{}, /^Nothing to change\. The brief shows schedule, tasks, followups, bills, focus; options: task_limit 5/],
    ];
    for (const [args, re] of cases) {
      const r = await host.raw('configure_brief', args);
      assert.equal(r.is_error, true, JSON.stringify(args));
      assert.match(r.content, re);
    }
    assert.match((await host.call('daily_plan', {})).content, /Suggested plan:\n {2}08:00/, 'nothing changed');
  });

  it('reset restores the default brief', async () => {
    await host.call('configure_brief', { disable: ['tasks'] });
    await reset(host.home);
    assert.match((await host.call('daily_plan', {})).content, /Tasks \(12 open\):/);
  });
});
