/**
 * Issue 47, "operator policy catches the newcomer's mistakes" (PC3): a misspelt annotation is an error
 * at its file:line:col naming the one meant, `@after_untrusted` takes only "allow", and an allow-list
 * that never lets a core tool runs need (ask_user first) is a warning that says what breaks — decided
 * by Cedar's partial evaluation, so a permit that depends on who or when never warns.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { normalizeDeclaration } from '../../src/manifest/schema.js';
import { CedarPolicy } from '../../src/policy/cedar.js';
import { askUser, findTools, reportGoal, submitGoal, submitPlan } from '../../src/tools/builtins.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { ToolSpec } from '../../src/types/index.js';

const dir = mkdtempSync(join(tmpdir(), 'keel-cedar-newcomer-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const sendMoney: ToolSpec = makeToolSpec(
  {
    name: 'send_money',
    description: 'Send money',
    parameters: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    execute: () => 'sent',
  },
  'app',
  normalizeDeclaration({ effect: 'write' }),
);
const POOL = [askUser, submitPlan, submitGoal, reportGoal, findTools, sendMoney];

let n = 0;
function file(text: string): string {
  const f = join(dir, `p${n++}.cedar`);
  writeFileSync(f, text);
  return f;
}
const ALL = 'permit (principal, action == Keel::Action::"call", resource);\n';
const APP_ONLY = 'permit (principal, action == Keel::Action::"call", resource in Keel::Plugin::"app");\n';

test('issue 47: a misspelt annotation is an error at its file:line:col naming the one meant; @after_untrusted takes only "allow"', async () => {
  const f = file(`${ALL}\n@id("card")\n@aks\npermit (principal, action == Keel::Action::"call", resource == Keel::Tool::"send_money");\n`);
  const { policy, diagnostics } = await CedarPolicy.diagnose(f, POOL);
  assert.equal(policy, undefined, 'a file with an error does not load');
  assert.deepEqual(
    diagnostics.map((d) => [d.severity, d.at, d.policy]),
    [['error', `${f}:4:1`, 'card']],
  );
  assert.match(
    diagnostics[0].message,
    /^unknown annotation @aks \(did you mean @ask\?\); Keel knows @id, @ask, @approvers, @after_untrusted$/,
  );
  const deny = file(
    `${ALL}@id("x")\n@after_untrusted("deny")\npermit (principal, action == Keel::Action::"call", resource == Keel::Tool::"send_money");\n`,
  );
  const d2 = (await CedarPolicy.diagnose(deny, POOL)).diagnostics;
  assert.deepEqual(
    d2.map((d) => [d.severity, d.at]),
    [['error', `${deny}:3:1`]],
  );
  assert.match(d2[0].message, /@after_untrusted takes one value, "allow" \(got "deny"\)/);
});

test('issue 47: an allow-list that never permits ask_user warns that confirm-once writes can never be confirmed; the other core tools runs need, in one warning', async () => {
  const f = file(APP_ONLY);
  const { policy, diagnostics } = await CedarPolicy.diagnose(f, POOL);
  assert.ok(policy, 'warnings only: the file loads');
  assert.deepEqual(
    diagnostics.map((d) => [d.severity, d.at]),
    [
      ['warning', `${f}:1:1`],
      ['warning', `${f}:1:1`],
    ],
  );
  assert.match(
    diagnostics[0].message,
    /^confirm-once writes can never be confirmed: ask_user is not permitted \(no permit matches it, whoever starts the run\), and the model can never ask the user a question; permit it: permit \(principal, action == Keel::Action::"call", resource == Keel::Tool::"ask_user"\);$/,
  );
  assert.match(
    diagnostics[1].message,
    /^core tools runs need can never run, whoever starts the run: submit_plan \(plan mode can never submit its plan\), submit_goal \(.*\), report_goal \(.*\), find_tools \(a tool the shortlist leaves off the menu can never be found\); permit them: /,
  );
  // The permits each warning offers are enough: added, the file checks clean.
  const fixes = diagnostics.map((d) => d.message.split(/permit (?:it|them): /)[1]).join('\n');
  const fixed = await CedarPolicy.diagnose(file(`${APP_ONLY}${fixes}\n`), POOL);
  assert.deepEqual(fixed.diagnostics, []);
});

test('issue 47: a forbid that always stops ask_user is named at its place; a permit that depends on who or when never warns', async () => {
  const f = file(`${ALL}@id("no-questions")\nforbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"ask_user");\n`);
  const d = (await CedarPolicy.diagnose(f, POOL)).diagnostics;
  assert.deepEqual(
    d.map((x) => [x.at, x.message.split(';')[0]]),
    [
      [
        `${f}:3:1`,
        'confirm-once writes can never be confirmed: ask_user is forbidden by no-questions, and the model can never ask the user a question',
      ],
    ],
  );
  assert.match(d[0].message, /; narrow no-questions: a forbid wins over every permit$/, 'no permit can help: the forbid is named');
  for (const text of [
    ALL,
    `${APP_ONLY}permit (principal, action == Keel::Action::"call", resource) when { principal.groups.contains("staff") };\n`,
    `${APP_ONLY}permit (principal, action == Keel::Action::"call", resource) when { resource.plugin == "core" };\n`,
    `${ALL}forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"ask_user") when { context.untrusted };\n`,
    `${ALL}forbid (principal, action == Keel::Action::"call", resource) unless { resource.plugin == "core" || resource.plugin == "app" };\n`,
  ]) {
    const ds = (await CedarPolicy.diagnose(file(text), POOL)).diagnostics;
    assert.deepEqual(ds, [], text);
  }
  // A pool without ask_user (a delegate's, a test's) is not warned about it.
  const noCore = (await CedarPolicy.diagnose(file(APP_ONLY), [sendMoney])).diagnostics;
  assert.deepEqual(noCore, []);
});
