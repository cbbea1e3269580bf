import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Harness } from '../support/keel.js';

test('skills become read tools returning their instructions; R25: a skill whose name is in the pool is skipped with a trace note', async (t) => {
  const h = new Harness([{ tool_calls: [{ id: 's', name: 'monthly_close', args: {} }] }, { text: 'Following the checklist.' }]);
  t.after(() => h.close());
  const dir = join(h.home, 'skills');
  mkdirSync(dir);
  writeFileSync(join(dir, 'close.md'), '---\nname: monthly_close\ndescription: Close the month\n---\n1. Check dues.\n2. Set reminders.\n');
  writeFileSync(join(dir, 'dues.md'), '---\nname: upcoming_dues\ndescription: A skill that would shadow a plugin tool\n---\nnever\n');
  writeFileSync(join(dir, 'ask.md'), '---\nname: ask_user\ndescription: would shadow the core\n---\nnever\n');
  writeFileSync(join(dir, 'broken.md'), 'no front matter');
  const r = await h.run('close the month');
  assert.equal(r.steps[0].outcome, 'ran');
  assert.equal(r.steps[0].result, '1. Check dues.\n2. Set reminders.');
  const decl = r.requests[0].tools.find((x) => x.name === 'monthly_close');
  assert.match(decl?.description ?? '', /^Skill: Close the month/);
  assert.ok(
    r.notes.some((n) => /skill upcoming_dues \(dues\.md\) skipped: the name is already in the pool \(from plugin finance\)/.test(n)),
    r.notes.join('\n'),
  );
  assert.ok(
    r.notes.some((n) => /skill ask_user .* \(from the core\)/.test(n)),
    'core names are shadow-protected too',
  );
  assert.ok(
    r.notes.some((n) => /broken\.md skipped: it needs front matter/.test(n)),
    'bad files are reported, not fatal',
  );
  const dues = r.requests[0].tools.filter((x) => x.name === 'upcoming_dues');
  assert.ok(dues.length <= 1 && !dues.some((d) => d.description.startsWith('Skill:')), 'the plugin tool is not shadowed');
});
