/** A9: who may answer a card — the one function that decides it, as a table. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Answerer, mayAnswer, notYours, onlyGroups } from '../../src/approvals/who.js';
import { groupProblem } from '../../src/util/groups.js';

const token = (groups: string[]): Answerer => ({ name: 'ana', role: 'approver', groups, kind: 'token' });
const mcp = (groups: string[]): Answerer => ({ name: 'ide', role: 'approver', groups, kind: 'mcp' });
const USER: Answerer = { name: 'ana', groups: [], kind: 'user' };
const APP: Answerer = { name: 'billing-app', groups: [], kind: 'app' };

test('A9: mayAnswer — a card without approvers is anyone’s (roles decide elsewhere); a routed card only its groups’ tokens, the machine’s user and an app', () => {
  const rows: [approvers: string[] | undefined, who: Answerer, may: boolean][] = [
    [undefined, token([]), true],
    // Routed to no group at all (a card whose calls' policies share none): no token, only the machine's user or an app.
    [[], token([]), false],
    [[], USER, true],
    [undefined, mcp([]), true],
    [['finance'], token([]), false],
    [['finance'], token(['ops']), false],
    [['finance'], token(['finance']), true],
    [['finance'], token(['ops', 'finance']), true],
    [['finance', 'ops'], token(['ops']), true],
    [['finance'], mcp([]), false],
    [['finance'], mcp(['finance']), true],
    [['finance'], USER, true],
    [['finance'], APP, true],
    // Group names are compared exactly: FINANCE is not a group name, and finance2 is another group.
    [['finance'], token(['FINANCE']), false],
    [['finance'], token(['finance2']), false],
  ];
  for (const [approvers, who, may] of rows) {
    assert.equal(
      mayAnswer({ approvers }, who),
      may,
      `${JSON.stringify(approvers)} answered by ${who.kind} in ${JSON.stringify(who.groups)}`,
    );
  }
});

test('A9: the words — "Only FINANCE may answer this card", and a refusal naming the groups', () => {
  assert.equal(onlyGroups({ approvers: ['finance'] }), 'Only FINANCE may answer this card');
  assert.equal(onlyGroups({ approvers: ['finance', 'ops', 'legal'] }), 'Only FINANCE, OPS or LEGAL may answer this card');
  const err = notYours('apr_1', { approvers: ['finance'] }, token(['ops']));
  assert.equal(err.code, 'forbidden');
  assert.match(err.message, /approval apr_1 is routed to the group finance: only a token in it may answer it, and ana is in ops/);
});

test('A9: group names are 1 to 40 of a-z, 0-9, _ and -', () => {
  for (const ok of ['finance', 'ops-eu', 'team_2', 'a', 'x'.repeat(40)]) assert.equal(groupProblem(ok), undefined, ok);
  for (const bad of ['', 'Finance', 'fin ance', 'x'.repeat(41), 'fin,ops', 'é'])
    assert.match(groupProblem(bad) ?? '', /is not a group name/, bad);
});
