// R23, C1, C4, R10, R15, R31: every tool the core's own words send the model to is declared on the
// request those words can reach. A grammar-constrained server (llama.cpp) lets a model call only
// declared tools, so a sentence naming an undeclared tool is an order the model cannot carry out
// (issue 26: Plan mode's shortlist dropped submit_plan while the prompt and every denial named it).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BUNDLED_PLUGINS } from '../../src/keel/keel.js';
import { SAY } from '../../src/loop/sentences.js';
import { normalizeDeclaration, type ToolDeclarationInput } from '../../src/manifest/schema.js';
import { SUBMIT_TOOL } from '../../src/policy/gate.js';
import { buildMenu } from '../../src/prompt/menu.js';
import { systemPrompt } from '../../src/prompt/prompt.js';
import { bm25Shortlist } from '../../src/prompt/shortlist.js';
import { askUser, CORE_DECLARATIONS, findTools, reportGoal, submitGoal, submitPlan } from '../../src/tools/builtins.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { Mode, ToolSpec } from '../../src/types/index.js';
import { Harness } from '../support/keel.js';

const CORE_NAMES = Object.keys(CORE_DECLARATIONS);
const MODES: Mode[] = ['agent', 'plan', 'goal'];

/** The core tool names a text names, as words. */
const namedIn = (text: string) => CORE_NAMES.filter((n) => new RegExp(`\\b${n}\\b`).test(text));

const tool = (name: string, d: ToolDeclarationInput, description: string): ToolSpec =>
  makeToolSpec(
    { name, description, parameters: { type: 'object', properties: { q: { type: 'string' } } }, execute: () => 'ok' },
    'p',
    normalizeDeclaration(d),
  );

// Thirty tools that match the requests below better than any core tool, and a confirm-once write:
// with a cap of 4, the shortlist has every reason to drop the core's tools.
const REQUESTS = ['Write a short README for my notes folder.', 'hello', 'plan the notes readme folder write', 'submit a goal'];
const plugins = [
  ...Array.from({ length: 30 }, (_, i) =>
    tool(`notes_${i}`, { effect: 'read' }, `Write a short README for the notes folder, plan and goal ${i}`),
  ),
  tool('write_readme', { effect: 'write' }, 'Write a README file in the notes folder'),
];
const pool = [askUser, submitPlan, submitGoal, reportGoal, findTools, ...plugins];

function menuFor(mode: Mode, request: string, p: readonly ToolSpec[] = pool) {
  const menu = buildMenu({ pool: p, mode, called: new Set(), admitted: new Set(), request }, bm25Shortlist(4));
  return {
    menu,
    names: new Set(menu.tools.map((t) => t.name)),
    prompt: systemPrompt({ mode, menu: menu.tools, unavailable: menu.unavailable }),
  };
}

/**
 * Each sentence of SAY that names a core tool, with the modes it can be sent in (in a run that can
 * pause: one that cannot gets SAY.confirmationUnavailable instead, and no ask_user) and the sentence as
 * sent there. A new sentence naming a core tool fails the first test until it is listed here.
 */
const SENT: Record<string, { modes: Mode[]; render: (mode: Mode) => string }> = {
  deniedByMode: { modes: ['plan', 'goal'], render: (m) => SAY.deniedByMode('write_readme', m, SUBMIT_TOOL[m]) },
  heldForConfirmation: { modes: ['agent'], render: () => SAY.heldForConfirmation('write_readme') },
  declinedEarlier: { modes: ['agent'], render: () => SAY.declinedEarlier('write_readme') },
};

test('R23: every sentence of SAY that names a core tool is listed with the modes it can be sent in', () => {
  // D1: the task tools' own results name their sibling task tools, which are declared with them
  // (a run has the whole task family or none of it): only sentences naming another core tool are listed.
  const TASK_FAMILY = new Set(['task', 'task_wait', 'task_list', 'task_stop']);
  const naming = Object.entries(SAY)
    .filter(([, v]) => namedIn(typeof v === 'function' ? v.toString() : String(v)).some((n) => !TASK_FAMILY.has(n)))
    .map(([k]) => k)
    .sort();
  assert.deepEqual(naming, Object.keys(SENT).sort(), 'list each new sentence that names a core tool in SENT');
  // deniedByMode names the mode's submit tool through its argument: the rendering shows it.
  assert.deepEqual(namedIn(SENT.deniedByMode.render('plan')), ['ask_user', 'submit_plan']);
  assert.deepEqual(namedIn(SENT.deniedByMode.render('goal')), ['ask_user', 'submit_goal']);
});

test('C1, C4, R15, R23: each core tool a sentence of SAY names is declared on every request that sentence can answer', () => {
  for (const [key, { modes, render }] of Object.entries(SENT)) {
    for (const mode of modes) {
      for (const request of REQUESTS) {
        const { names, menu } = menuFor(mode, request);
        for (const name of namedIn(render(mode))) {
          assert.ok(names.has(name), `SAY.${key} in ${mode} mode names ${name}, dropped for "${request}": ${menu.dropped.join(', ')}`);
        }
      }
    }
  }
});

test('C1, R10, R31, R23: every core tool the system prompt names is declared, in every mode, whatever the request', () => {
  for (const mode of MODES) {
    for (const request of REQUESTS) {
      for (const p of [pool, pool.filter((t) => t.name !== 'ask_user')]) {
        const { names, prompt, menu } = menuFor(mode, request, p);
        const named = namedIn(prompt);
        if (mode !== 'agent') assert.ok(named.includes(SUBMIT_TOOL[mode] as string), `the ${mode} prompt names its submit tool`);
        for (const name of named) {
          assert.ok(
            names.has(name),
            `the ${mode} prompt names ${name}, not declared for "${request}" (dropped: ${menu.dropped.join(', ')})`,
          );
        }
      }
    }
  }
});

test('C1, R23: a plugin tool that took a submit tool name is not pinned by the core', () => {
  const squatter = tool('submit_plan', { effect: 'read' }, 'unrelated');
  const { names } = menuFor('plan', 'Write a short README for my notes folder.', [askUser, ...plugins, squatter]);
  assert.ok(!names.has('submit_plan'), 'only the core submit tool is kept whatever the ranking');
});

test('C1, R23: Plan mode over the bundled plugins declares submit_plan on every request of the run (issue 26)', async () => {
  const h = new Harness([
    { tool_calls: [{ id: 'c1', name: 'list_files', args: {} }] },
    { tool_calls: [{ id: 'c2', name: 'submit_plan', args: { summary: 'README', steps: ['Write README.md in the notes folder'] } }] },
  ]);
  try {
    const r = await h.keel.run('Write a short README for my notes folder.', {
      model: h.model,
      mode: 'plan',
      pluginDirs: [BUNDLED_PLUGINS],
    });
    assert.equal(r.status, 'paused', r.answer ?? '');
    assert.equal(r.reason, 'awaiting_approval');
    assert.equal(r.requests.length, 2);
    assert.ok(r.requests[0].dropped.length > 0, 'the bundled plugins outnumber the cap: the shortlist drops some');
    for (const [i, req] of r.requests.entries()) {
      assert.ok(
        req.tools.some((t) => t.name === 'submit_plan' && t.available),
        `request ${i + 1} declares submit_plan (dropped: ${req.dropped.join(', ')})`,
      );
      assert.ok(!req.dropped.includes('submit_plan'));
    }
  } finally {
    await h.close();
  }
});
