import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeDeclaration, type ToolDeclarationInput } from '../../src/manifest/schema.js';
import { buildMenu } from '../../src/prompt/menu.js';
import { ASK_ONCE_RULE, declare, guidanceBlock, systemPrompt } from '../../src/prompt/prompt.js';
import { bm25Shortlist } from '../../src/prompt/shortlist.js';
import { askUser } from '../../src/tools/builtins.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { ToolSpec } from '../../src/types/index.js';
import { calls } from '../support/helpers.js';
import { Harness } from '../support/keel.js';

const tool = (name: string, d: ToolDeclarationInput, description = `${name.replaceAll('_', ' ')} tool`): ToolSpec =>
  makeToolSpec(
    { name, description, parameters: { type: 'object', properties: { q: { type: 'string' } } }, execute: () => 'ok' },
    'p',
    normalizeDeclaration(d),
  );

test('R9: marks by effect — reads unmarked, writes marked, destructive and pinned writes as approval cards', () => {
  assert.equal(declare(tool('lookup', { effect: 'read' })).description, 'lookup tool');
  assert.match(declare(tool('create_reminder', { effect: 'write' })).description, /\[Writes on the user's behalf\.\]$/);
  assert.match(declare(tool('restore', { effect: 'write', confirm: 'never' })).description, /\[Writes on the user's behalf\.\]$/);
  assert.match(
    declare(tool('trash', { effect: 'destructive' })).description,
    /Deletes or overwrites\. Each call is approved by the owner on a card/,
  );
  assert.match(
    declare(tool('send', { effect: 'write', approval: 'pinned' })).description,
    /shown to the owner as an approval card.*do not ask in chat/,
  );
});

test('R10: the ask-once rule appears once, only with a confirm-once write on the menu, and names no plugin tool', () => {
  const reads = [askUser, tool('a', { effect: 'read' }), tool('b', { effect: 'write', confirm: 'never' })];
  assert.ok(!systemPrompt({ mode: 'agent', menu: reads, unavailable: [] }).includes(ASK_ONCE_RULE), 'absent without confirm-once');
  const withWrites = [...reads, tool('create_reminder', { effect: 'write' }), tool('create_event', { effect: 'write' })];
  const p = systemPrompt({ mode: 'agent', menu: withWrites, unavailable: [] });
  assert.equal(p.split(ASK_ONCE_RULE).length - 1, 1, 'exactly once');
  assert.ok(!/create_reminder|create_event/.test(p), 'the core prompt names no plugin tool');
  const plan = systemPrompt({ mode: 'plan', menu: withWrites, unavailable: ['create_reminder', 'create_event'] });
  assert.ok(!plan.includes(ASK_ONCE_RULE), 'not for writes that cannot run in plan mode');
  // A run that cannot pause (a delegate, C8) declares no ask_user: no sentence of the prompt names it.
  const delegate = systemPrompt({ mode: 'agent', menu: withWrites.slice(1), unavailable: [] });
  assert.ok(!delegate.includes(ASK_ONCE_RULE) && !delegate.includes('ask_user'), delegate);
});

test('R11: guidance in menu order, trimmed, no empties, no exact duplicates; off-menu tools contribute nothing', () => {
  const menu = [
    tool('daily_plan', { effect: 'read', guidance: '  For a whole-day question call daily_plan.  ' }),
    tool('x', { effect: 'read', guidance: '   ' }),
    tool('y', { effect: 'read', guidance: 'Search the inbox after a finance miss.' }),
    tool('z', { effect: 'read', guidance: 'For a whole-day question call daily_plan.' }),
  ];
  assert.deepEqual(guidanceBlock(menu), ['For a whole-day question call daily_plan.', 'Search the inbox after a finance miss.']);
  const p = systemPrompt({ mode: 'agent', menu: menu.slice(2), unavailable: [] });
  assert.match(p, /Search the inbox after a finance miss\./);
  assert.equal(guidanceBlock([menu[1]]).length, 0);
});

const pool: ToolSpec[] = [
  tool('ask_user', { effect: 'read' }),
  tool('memory_search', { effect: 'read' }),
  tool('research', { effect: 'read', pinned: true }, 'Search the document collection'),
  tool('upcoming_dues', { effect: 'read' }, 'Bills and payments due soon'),
  tool('create_reminder', { effect: 'write' }, 'Create a reminder for a date'),
  ...Array.from({ length: 40 }, (_, i) => tool(`widget_${i}`, { effect: 'read' }, `Manage widget number ${i} settings`)),
  tool('calendar_lookup', { effect: 'read', guidance: 'Use for meetings and appointments.' }, 'Events on a day'),
];

test('R23: above the cap, the menu is the always-kept tools plus the best-ranked others, in pool order, with the rest recorded as dropped', () => {
  const m = buildMenu(
    { pool, mode: 'agent', called: new Set(), admitted: new Set(), request: 'which bills are due, and remind me' },
    bm25Shortlist(6),
  );
  const names = m.tools.map((t) => t.name);
  assert.ok(names.length <= 6, `cap respected: ${names}`);
  for (const n of ['ask_user', 'memory_search', 'research']) assert.ok(names.includes(n), `${n} always kept`);
  assert.ok(names.includes('upcoming_dues'), 'ranked in by description');
  assert.ok(names.includes('create_reminder'), 'ranked in by name (plural request)');
  assert.deepEqual(
    names,
    pool.map((t) => t.name).filter((n) => names.includes(n)),
    'pool order',
  );
  assert.equal(m.dropped.length + m.tools.length, pool.length);
  assert.ok(m.dropped.includes('widget_3'));
  const g = buildMenu(
    { pool, mode: 'agent', called: new Set(), admitted: new Set(), request: 'my appointments tomorrow' },
    bm25Shortlist(6),
  );
  assert.ok(
    g.tools.some((t) => t.name === 'calendar_lookup'),
    'guidance is indexed',
  );
});

test('R23: a tool the transcript already calls is always kept; R24: a dropped tool is admissible', () => {
  const m = buildMenu(
    { pool, mode: 'agent', called: new Set(['widget_7']), admitted: new Set(['widget_9']), request: 'bills due' },
    bm25Shortlist(6),
  );
  const names = m.tools.map((t) => t.name);
  assert.ok(names.includes('widget_7') && names.includes('widget_9'), `kept: ${names}`);
  assert.ok(m.admissible('widget_20'), 'a dropped pool tool can still be called');
  assert.ok(!m.admissible('nonexistent'), 'a name in no pool is not');
});

test('R24 end to end: the first call of a dropped tool admits it for the rest of the run and runs it through its gate', async (t) => {
  const h = new Harness(
    [
      // Called by name though dropped (undeclared: the scripted model allows it; a grammar-constrained server would not).
      { tool_calls: [{ id: 'c', name: 'calendar_lookup', args: { day: '2026-09-30' }, undeclared: true }] },
      { tool_calls: [{ id: 'r', name: 'create_reminder', args: { title: 'x' }, undeclared: true }] },
      { text: 'ok' },
    ],
    { shortlist: bm25Shortlist(4) },
  );
  t.after(() => h.close());
  const r = await h.run('how much do I owe on bills');
  assert.ok(r.requests[0].dropped.includes('calendar_lookup'), 'dropped from request 1 and recorded');
  assert.equal(r.steps[0].outcome, 'ran');
  assert.ok(
    r.requests[1].tools.some((x) => x.name === 'calendar_lookup'),
    'admitted to the menu for the rest of the run',
  );
  assert.equal(r.steps[1].outcome, 'held_for_confirmation', 'an admitted write still goes through its gate');
  assert.equal(calls(h.home, 'reminders.jsonl').length, 0);
});

test('R23: at or under the cap, nothing is dropped', () => {
  const small = pool.slice(0, 5);
  const m = buildMenu({ pool: small, mode: 'agent', called: new Set(), admitted: new Set(), request: 'anything' }, bm25Shortlist(12));
  assert.equal(m.dropped.length, 0);
  assert.equal(m.tools.length, 5);
});

test('R23: a request word meets the index terms it begins and those that begin it ("promo" → promotions, "calculator" → calc)', () => {
  // Last in pool order, so the fill (pool order) cannot put them on the menu by itself.
  const many = [
    ...Array.from({ length: 12 }, (_, i) => tool(`filler_${i}`, { effect: 'read' }, `Filler number ${i} about gardening`)),
    tool('calc_evaluate', { effect: 'read' }, 'Evaluate an arithmetic expression'),
    tool('trash_promotions', { effect: 'read' }, 'Move promotional mail away'),
  ];
  const menuFor = (request: string) =>
    buildMenu({ pool: many, mode: 'agent', called: new Set(), admitted: new Set(), request }, bm25Shortlist(1)).tools.map((t) => t.name);
  assert.deepEqual(menuFor('use the calculator please'), ['calc_evaluate']);
  assert.deepEqual(menuFor('the promo ones'), ['trash_promotions']);
});
