import assert from 'node:assert/strict';
import { dirname } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import type { ToolSpec } from '../../src/types/index.js';
import { cleanup, type FakeHost, mount } from '../_test/fake-api.js';
import { agentTools, buildToolbox, runAgent } from './agent.js';
import setup, { dbPath, reset } from './index.js';
import { openDb } from './mailbox.js';

const DIR = dirname(fileURLToPath(import.meta.url));
const ctx = { run_id: 'r', call_id: 'c', mode: 'agent' as const, request: 'test', signal: new AbortController().signal };

function count(home: string, sql: string): number {
  const db = new Database(dbPath(home), { readonly: true });
  const n = (db.prepare(sql).get() as { n: number }).n;
  db.close();
  return n;
}

describe('email_workflows plugin', () => {
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

  describe('manifest and registration', () => {
    it('registers the model-facing tools and declares the agent’s own tools, nothing refused', () => {
      assert.deepEqual([...host.tools.keys()].sort(), [
        'email_agent',
        'find_attachment',
        'inbox_digest',
        'list_by_category',
        'read_email',
        'restore_email',
        'search_inbox',
        'send_email',
        'trash_category',
        'trash_email',
      ]);
      assert.deepEqual([...host.declared.keys()].sort(), ['classify_email', 'find_emails', 'summarize_thread']);
      assert.deepEqual(host.refused, []);
      const t = host.manifest.tools;
      assert.equal(t.search_inbox.pinned, true);
      assert.equal(t.inbox_digest.answers_directly, true);
      assert.deepEqual([t.trash_email.effect, t.trash_email.undo], ['destructive', 'restore_email']);
      assert.deepEqual([t.restore_email.effect, t.restore_email.confirm, t.restore_email.answers_directly], ['write', 'never', true]);
      assert.deepEqual([t.trash_category.effect, t.trash_category.confirm, t.trash_category.answers_directly], ['write', 'never', true]);
      assert.deepEqual([t.send_email.effect, t.send_email.approval], ['write', 'pinned']);
      for (const name of ['email_agent', 'find_emails', 'classify_email', 'summarize_thread']) assert.equal(t[name].effect, 'read');
    });

    it('an undeclared internal tool passed to declareTool is refused (undefined) and left out of the agent’s toolbox', () => {
      const rogue = { name: 'purge_mailbox', description: 'delete everything', parameters: { type: 'object' }, execute: () => 'gone' };
      assert.equal(host.api.declareTool(rogue), undefined);
      const box = buildToolbox(host.api, [...agentTools(() => openDb(host.home)), rogue]);
      assert.deepEqual([...box.keys()].sort(), ['classify_email', 'find_emails', 'summarize_thread']);
      assert.ok(host.refused.includes('purge_mailbox'));
    });

    it('the agent refuses to run a tool whose declaration is not read, and stops when a tool is missing', async () => {
      const db = openDb(host.home);
      const box = buildToolbox(
        host.api,
        agentTools(() => db),
      );
      const find = box.get('find_emails')!;
      const writing: ToolSpec = { ...find, declaration: { ...find.declaration, effect: 'write' } };
      const r = await runAgent('find the wingtip statement', new Map([['find_emails', writing]]), db, ctx);
      assert.match(r.content, /I will not run find_emails: it is declared write, and the email agent only reads/);
      const missing = await runAgent('triage my mail', new Map(), db, ctx);
      assert.match(missing.content, /no tool find_emails \(it is not declared in the plugin's manifest\)/);
    });
  });

  describe('seeded mailbox', () => {
    it('holds 120 emails across five categories, with 60 promotions and finance attachments', async () => {
      await host.call('search_inbox', { query: 'anything' });
      assert.equal(count(host.home, 'SELECT count(*) AS n FROM emails'), 120);
      assert.equal(count(host.home, "SELECT count(*) AS n FROM emails WHERE category = 'promotions'"), 60);
      for (const c of ['social', 'updates', 'personal', 'finance']) {
        assert.ok(count(host.home, `SELECT count(*) AS n FROM emails WHERE category = '${c}'`) >= 12, c);
      }
      assert.ok(
        count(host.home, "SELECT count(*) AS n FROM attachments a JOIN emails e ON e.id = a.email_id WHERE e.category = 'finance'") >= 12,
      );
    });
  });

  describe('reading', () => {
    it('search_inbox finds by every word, falls back to some words, and filters', async () => {
      const r = await host.call('search_inbox', { query: 'wingtip statement' });
      assert.match(r.content, /^2 emails matching 'wingtip statement':\nm110 · Sat, Sep 19 07:02 · Wingtip Bank/);
      const loose = await host.call('search_inbox', { query: 'fabrikam renewal pricing' });
      assert.match(
        loose.content,
        /^No email matches every word of 'fabrikam renewal pricing'; \d+ emails match some of them:\nm0\d\d · .* Luis Romero/,
      );
      const cat = await host.call('search_inbox', { query: 'statement', category: 'finance', since: '2026-09-15' });
      assert.deepEqual(
        (cat.details as { ids: string[] }).ids,
        ['m110', 'm093', 'm117'],
        'statements by subject first, then the reminder that mentions it',
      );
      const from = await host.call('search_inbox', { query: 'q4', from: 'omar' });
      assert.deepEqual((from.details as { ids: string[] }).ids, ['m104']);
      const none = await host.call('search_inbox', { query: 'zeppelin' });
      assert.equal(none.content, "No emails matching 'zeppelin' in the inbox.");
    });

    it('search_inbox refuses bad arguments', async () => {
      assert.equal((await host.call('search_inbox', {})).is_error, true, 'query is required');
      const bad = await host.raw('search_inbox', { query: 'x', category: 'spam' });
      assert.match(bad.content, /category must be one of promotions, social, updates, personal, finance/);
      const date = await host.raw('search_inbox', { query: 'x', since: 'last week' });
      assert.match(date.content, /since 'last week' is not a date/);
      assert.equal((await host.raw('search_inbox', { query: 'x', limit: 0 })).is_error, true);
    });

    it('read_email shows the whole email, its attachments and its thread', async () => {
      const r = await host.call('read_email', { id: 'm104' });
      assert.match(r.content, /^m104 \(personal, unread\)\nFrom: Omar Haddad <omar\.haddad@northwindlabs\.example>/);
      assert.match(r.content, /Thread: 3 messages \(m099, m104, m114\); this is message 2\./);
      assert.match(r.content, /activation numbers on page 4/);
      const f = await host.call('read_email', { id: 'm110' });
      assert.match(f.content, /Attachments: Wingtip_Statement_2026-09\.pdf \(PDF, 212 KB\)/);
      const missing = await host.call('read_email', { id: 'm999' });
      assert.equal(missing.is_error, true);
      assert.match(missing.content, /No email with id 'm999'/);
    });

    it('find_attachment finds files by words and type', async () => {
      const r = await host.call('find_attachment', { query: 'pay stub' });
      assert.match(
        r.content,
        /^2 attachments matching 'pay stub':\nPaystub_2026-09-18\.pdf · PDF, 88 KB · in m107 from Northwind Labs Payroll/,
      );
      const x = await host.call('find_attachment', { type: 'spreadsheet' });
      assert.match(x.content, /^1 attachment of type spreadsheet:\nFabrikam_Usage_Summary_Aug2026\.xlsx/);
      const img = await host.call('find_attachment', { type: 'image', from: 'mom' });
      assert.match(img.content, /dad_after_surgery\.jpg/);
      assert.match(
        (await host.call('find_attachment', { query: 'zeppelin manual' })).content,
        /^No attachments matching 'zeppelin manual'\.$/,
      );
      assert.equal((await host.raw('find_attachment', { type: 'video' })).is_error, true);
    });

    it('list_by_category pages through a category with counts', async () => {
      const r = await host.call('list_by_category', { category: 'promotions', limit: 5 });
      assert.match(r.content, /^promotions: 60 emails in the inbox \(\d+ unread\); showing 1–5, newest first:/);
      assert.match(r.content, /… 55 more \(offset 5\)\.$/);
      const p2 = await host.call('list_by_category', { category: 'promotions', limit: 5, offset: 55 });
      assert.match(p2.content, /showing 56–60/);
      assert.doesNotMatch(p2.content, /more \(offset/);
      assert.equal((await host.call('list_by_category', {})).is_error, true);
      assert.equal((await host.raw('list_by_category', { category: 'work' })).is_error, true);
    });

    it('inbox_digest narrates the week: totals, what needs attention, people, money, per-category counts', async () => {
      const r = await host.call('inbox_digest', {});
      assert.equal(r.is_error, false);
      assert.match(r.content, /^In the last 7 days \(Mon, Sep 14 – Sun, Sep 20\) you received 37 emails, \d+ still unread\./);
      assert.match(r.content, /Needs your attention:\n• Wingtip Bank: \$3,150\.40 on the Rewards Visa is due September 30/);
      assert.match(r.content, /Mom says Dad’s knee surgery went well/);
      assert.match(r.content, /Sam asks whether you can bring folding chairs/);
      assert.match(r.content, /Promotions \(11\): .* There are 60 promotions in the inbox in all/);
      assert.match(r.content, /By category: promotions 11, social 6, updates 8, personal 8, finance 4\.$/);
      const today = await host.call('inbox_digest', { days: 1 });
      assert.match(today.content, /^Today you received \d+ emails/);
      assert.equal((await host.raw('inbox_digest', { days: 0 })).is_error, true);
      assert.equal((await host.raw('inbox_digest', { days: 'week' })).is_error, true);
    });
  });

  describe('trash and restore', () => {
    it('trash_email: validate names unknown and already-trashed ids; describe shows sender and subject per email', async () => {
      const t = host.tools.get('trash_email')!;
      assert.equal(await t.validate!({ ids: ['m001', 'm002'] }), undefined);
      assert.equal(
        await t.validate!({ ids: ['m001', 'm998', 'm999'] }),
        'Not moved: no email with id m998, m999. Check the ids with search_inbox.',
      );
      const card = t.describe!({ ids: ['m001', 'm002'] });
      assert.equal(card.title, 'Move 2 email(s) to Trash');
      assert.deepEqual(card.lines, [
        "Margie's Travel <deals@margiestravel.example>: Fall getaways from $199 (Fri, Aug 14 08:56)",
        'TAP Air Portugal <receipts@tap.example>: E-ticket receipt: booking QX7P4L (Fri, Aug 14 16:02)',
      ]);
      const r = await host.call('trash_email', { ids: ['m001', 'm002'] });
      assert.match(
        r.content,
        /^Moved 2 emails to Trash: “Fall getaways from \$199” from Margie's Travel; “E-ticket receipt: booking QX7P4L” from TAP Air Portugal\. To undo, restore batch te-1\.$/,
      );
      assert.equal(await t.validate!({ ids: ['m002', 'm003'] }), 'Not moved: already in Trash: m002. Check the ids with search_inbox.');
      assert.equal((await host.call('search_inbox', { query: 'QX7P4L receipt' })).content.includes('m002'), false);
      assert.match((await host.call('search_inbox', { query: 'QX7P4L receipt', include_trash: true })).content, /m002 .* in Trash/);
      const back = await host.call('restore_email', { ids: ['m002', 'm003'] });
      assert.match(
        back.content,
        /^Restored 1 email from Trash to the inbox: “E-ticket receipt: booking QX7P4L”\. Not restored: already in the inbox: m003\.$/,
      );
      assert.equal((await host.call('trash_email', { ids: [] })).is_error, true, 'at least one id');
    });

    it('trash_category moves 60 promotions in three batches (25, 25, 10), each reporting what is left and how to undo', async () => {
      const one = await host.call('trash_category', { category: 'promotions' });
      assert.match(
        one.content,
        /^Moved 25 promotions emails to Trash \(Fri, Aug 14 – .*\), as batch tc-1\. Among them: “.+” \(.+\), “.+” \(.+\), “.+” \(.+\), and 22 more\./,
      );
      assert.match(one.content, /\n35 promotions emails are still in the inbox; ask again to move the next 25\.\n/);
      assert.match(one.content, /Nothing was deleted: to undo, restore batch tc-1\.$/);
      const two = await host.call('trash_category', { category: 'promotions' });
      assert.match(two.content, /10 promotions emails are still in the inbox; ask again to move the next 10\./);
      const three = await host.call('trash_category', { category: 'promotions' });
      assert.match(three.content, /^Moved 10 promotions emails/);
      assert.match(three.content, /No promotions emails are left in the inbox\./);
      const four = await host.call('trash_category', { category: 'promotions' });
      assert.equal(four.is_error, false);
      assert.equal(four.content, 'No promotions emails in the inbox; nothing was moved.');
      assert.equal(count(host.home, "SELECT count(*) AS n FROM emails WHERE folder = 'trash'"), 60);
      const undo = await host.call('restore_email', { batch: 'tc-2' });
      assert.match(undo.content, /^Restored 25 emails from Trash to the inbox \(batch tc-2\)/);
      assert.equal(count(host.home, "SELECT count(*) AS n FROM emails WHERE folder = 'inbox' AND category = 'promotions'"), 25);
    });

    it('trash_category keeps to a date window and a batch size', async () => {
      const r = await host.call('trash_category', { category: 'promotions', since: '2026-09-14', batch_size: 5 });
      assert.match(r.content, /^Moved 5 promotions emails to Trash \(Mon, Sep 14 – /);
      assert.match(r.content, /6 promotions emails from Mon, Sep 14 to today are still in the inbox; ask again to move the next 5\./);
      const rest = await host.call('trash_category', { category: 'promotions', since: '2026-09-14', batch_size: 10 });
      assert.match(
        rest.content,
        /No promotions emails from Mon, Sep 14 to today are left in the inbox \(49 outside that window remain\)\./,
      );
    });

    it('trash_category refuses personal and finance mail and bad arguments', async () => {
      const r = await host.raw('trash_category', { category: 'personal' });
      assert.equal(r.is_error, true);
      assert.match(
        r.content,
        /only clears bulk mail \(promotions, social, updates\); 'personal' mail is moved one email at a time with trash_email/,
      );
      assert.equal((await host.call('trash_category', { category: 'finance' })).is_error, true);
      assert.equal((await host.raw('trash_category', { category: 'social', batch_size: 500 })).is_error, true);
      assert.equal((await host.raw('trash_category', { category: 'social', since: 'sometime' })).is_error, true);
      assert.equal(count(host.home, "SELECT count(*) AS n FROM emails WHERE folder = 'trash'"), 0);
    });

    it('restore_email explains what it cannot restore', async () => {
      assert.match((await host.raw('restore_email', {})).content, /give the ids of the emails to restore, or a batch name/);
      assert.match((await host.raw('restore_email', { batch: 'tc-9' })).content, /No batch 'tc-9'/);
      assert.match((await host.raw('restore_email', { ids: ['m001'] })).content, /Nothing restored: already in the inbox: m001/);
      assert.match((await host.raw('restore_email', { ids: ['m999'] })).content, /Nothing restored: no email with id m999/);
      assert.match((await host.raw('restore_email', { ids: ['m001'], batch: 'tc-1' })).content, /either ids or batch/);
      await host.call('trash_category', { category: 'social' });
      await host.call('restore_email', { batch: 'tc-1' });
      assert.match((await host.raw('restore_email', { batch: 'tc-1' })).content, /already back in the inbox/);
    });
  });

  describe('send_email', () => {
    it('validates addresses (suggesting a known contact) and the reply target', async () => {
      const s = host.tools.get('send_email')!;
      assert.equal(
        await s.validate!({ to: ['Priya'], subject: 'Brunch', body: 'Yes!' }),
        'not an email address: Priya (did you mean Priya Nair <priya.nair@example.com>?)',
      );
      assert.equal(
        await s.validate!({ to: ['priya.nair@example.com'], subject: 'Brunch', body: 'Yes!', in_reply_to: 'm999' }),
        "in_reply_to: no email with id 'm999'",
      );
      assert.equal(await s.validate!({ to: ['priya.nair@example.com'], subject: ' ', body: 'Yes!' }), 'subject must not be empty');
      assert.equal(await s.validate!({ to: ['Priya Nair <priya.nair@example.com>'], subject: 'Brunch', body: 'Yes!' }), undefined);
      assert.equal(
        (await host.call('send_email', { to: 'priya.nair@example.com', subject: 'x', body: 'y' })).is_error,
        true,
        'to is a list',
      );
    });

    it('describe shows recipients, subject, the email answered and the body; execute records it in Sent', async () => {
      const s = host.tools.get('send_email')!;
      const args = {
        to: ['priya.nair@example.com'],
        subject: 'Re: Brunch Sunday?',
        body: 'Yes, 10:30 works.\nSee you there!',
        in_reply_to: 'm108',
      };
      assert.deepEqual(s.describe!(args), {
        title: 'Send email to priya.nair@example.com',
        lines: [
          'To: priya.nair@example.com',
          'Subject: Re: Brunch Sunday?',
          'In reply to: Priya Nair, “Brunch Sunday?”',
          '',
          'Yes, 10:30 works.',
          'See you there!',
        ],
      });
      const r = await host.call('send_email', args);
      assert.equal(r.content, 'Sent “Re: Brunch Sunday?” to priya.nair@example.com; it is in Sent as s1.');
      assert.equal(count(host.home, "SELECT count(*) AS n FROM sent WHERE in_reply_to = 'm108' AND sent_on = '2026-09-20'"), 1);
      const bad = await host.raw('send_email', { to: ['nobody'], subject: 'x', body: 'y' });
      assert.equal(bad.is_error, true);
      assert.equal(count(host.home, 'SELECT count(*) AS n FROM sent'), 1);
    });
  });

  describe('email_agent', () => {
    it('triages the week: who needs a reply, what needs action, with its steps', async () => {
      const r = await host.call('email_agent', { instruction: 'Which emails need a reply?' });
      assert.match(r.content, /^Needs a reply \(5\):\n• m099 Dana Whitfield/);
      assert.match(
        r.content,
        /m101 Sam Ortiz, “Housewarming — could you bring chairs\?”: Sam Ortiz asks: “We’re short on seating: any chance you could bring your folding chairs\?”/,
      );
      assert.match(r.content, /Needs action \(\d\):\n• m117 Wingtip Bank/);
      assert.match(r.content, /Steps taken:\n1\. find_emails .*\n2\. classify_email/);
      assert.deepEqual(
        (r.details as { steps: { tool: string }[] }).steps.map((s) => s.tool),
        ['find_emails', 'classify_email'],
      );
    });

    it('summarizes a thread it finds by words, with what is asked of the owner', async () => {
      const r = await host.call('email_agent', { instruction: 'what did Dana say about the Q4 workshop?' });
      assert.match(r.content, /^“Q4 planning workshop pre-read”: 3 messages from Dana Whitfield, Omar Haddad/);
      assert.match(r.content, /Asked of you: Dana: “Jamie, can you also bring the hiring plan draft to our 1:1\?”/);
      assert.match(r.content, /1\. find_emails \{"query":"dana q4 workshop","limit":5\}\n2\. summarize_thread \{"id":"m099"\}/);
    });

    it('classifies named emails in one step, and reports what it could not find', async () => {
      const r = await host.call('email_agent', { instruction: 'classify m100 and m101' });
      assert.match(r.content, /^m100: notification \(low\) — a ProLink notification\nm101: needs_reply \(normal\)/);
      const none = await host.call('email_agent', { instruction: 'summarize the zeppelin thread' });
      assert.match(none.content, /^No emails about 'zeppelin'\./);
      const bad = await host.call('email_agent', { instruction: 'classify m999' });
      assert.match(bad.content, /I stopped: classify_email failed \(no email with id m999\)/);
    });

    it('stops at max_steps and says so; refuses an empty instruction', async () => {
      const r = await host.call('email_agent', { instruction: 'triage my inbox', max_steps: 1 });
      assert.match(r.content, /^I stopped after 1 step without finishing/);
      assert.equal((await host.call('email_agent', { instruction: '' })).is_error, true);
      assert.equal((await host.raw('email_agent', { instruction: 42 })).is_error, true);
    });
  });
});
