/**
 * Issue 28 from the terminal: `keel approvals approve ID --args JSON` approves the edited call (A7),
 * a refused edit exits 2 and runs nothing; several ids (or `--run`) answer each card once (A8).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { calls, FIXTURES, keel, script, tempHome } from '../support/helpers.js';

const trashed = (home: string) => calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email'));

async function card(home: string, id: string): Promise<string> {
  const model = script(
    home,
    [{ tool_calls: [{ id: `t-${id}`, name: 'trash_email', args: { ids: [id] } }] }, { text: 'Done.' }],
    `${id}.yaml`,
  );
  const r = await keel(['run', '--model', model, '--plugins', FIXTURES, `trash email ${id}`], { KEEL_HOME: home });
  assert.equal(r.code, 3, r.stderr);
  return /keel approvals approve (\S+)/.exec(r.stderr)?.[1] ?? '';
}

test('A7: keel approvals approve ID --args JSON runs the edited call once; a refused edit exits 2 and nothing runs', async () => {
  const home = tempHome();
  const id = await card(home, 'm1');
  const bad = await keel(['approvals', 'approve', id, '--args', '{"ids":["m8"]}'], { KEEL_HOME: home });
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /arguments: trash_email refuses them: no email with id m8/);
  const notJson = await keel(['approvals', 'approve', id, '--args', '{ids'], { KEEL_HOME: home });
  assert.equal(notJson.code, 2);
  assert.match(notJson.stderr, /--args: not valid JSON/);
  assert.equal(trashed(home).length, 0);
  const ok = await keel(['approvals', 'approve', id, '--args', '{"ids":["m2"]}', '--as', 'ana', '--json'], { KEEL_HOME: home });
  assert.equal(ok.code, 0, ok.stderr);
  const run = JSON.parse(ok.stdout);
  assert.deepEqual(run.steps[0].edited_from, { ids: ['m1'] });
  assert.equal(run.steps[0].edited_by, 'ana');
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m2"]}']);
});

test('A8: keel approvals approve ID ID ID answers each once, reporting a card already answered; --run takes a run’s pending card', async () => {
  const home = tempHome();
  const a = await card(home, 'm1');
  const b = await card(home, 'm2');
  const c = await card(home, 'm3');
  assert.equal((await keel(['approvals', 'reject', b], { KEEL_HOME: home })).code, 0);
  const r = await keel(['approvals', 'approve', a, b, c], { KEEL_HOME: home });
  assert.equal(r.code, 1, 'one card could not be approved');
  assert.match(r.stdout, new RegExp(`${a}: approved`));
  assert.match(r.stdout, new RegExp(`${b}: not approved: approval ${b} was already rejected`));
  assert.match(r.stdout, new RegExp(`${c}: approved`));
  assert.deepEqual(trashed(home).sort(), ['trash_email {"ids":["m1"]}', 'trash_email {"ids":["m3"]}']);
  const d = await card(home, 'm2');
  const list = JSON.parse((await keel(['approvals', 'list', '--status', 'pending', '--json'], { KEEL_HOME: home })).stdout);
  const run = list.find((x: { id: string }) => x.id === d).run_id;
  const byRun = await keel(['approvals', 'reject', '--run', run], { KEEL_HOME: home });
  assert.equal(byRun.code, 0, byRun.stderr);
  assert.equal(trashed(home).length, 2, 'a rejection runs nothing');
  const none = await keel(['approvals', 'approve'], { KEEL_HOME: home });
  assert.equal(none.code, 2);
});

test('A7: keel chat — "e" at a card asks for the arguments; a refused edit says why and asks again; the edited call runs once', async () => {
  const home = tempHome();
  const model = script(home, [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Done.' }], 'chat.yaml');
  const r = await keel(
    ['chat', '--model', model, '--plugins', FIXTURES],
    { KEEL_HOME: home },
    'trash email m1\ne\n{"ids": oops}\n{"ids":["m9"]}\ne\n{"ids":["m3"]}\n/quit\n',
  );
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /not valid JSON/);
  assert.match(r.stdout, /✗ edit refused: arguments: trash_email refuses them: no email with id m9/);
  assert.deepEqual(trashed(home), ['trash_email {"ids":["m3"]}']);
});

test('A7/R21 (issue 40): --args nested 3,000 levels deep exits 2 saying why, the card stays pending; keel approvals list shows an edited call in its own words', async () => {
  const home = tempHome();
  const id = await card(home, 'm1');
  const deep = `{"ids":["m2"],"note":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`;
  const bad = await keel(['approvals', 'approve', id, '--args', deep], { KEEL_HOME: home });
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /arguments: nested deeper than 64 levels/);
  assert.doesNotMatch(bad.stderr, /Maximum call stack/);
  const pending = JSON.parse((await keel(['approvals', 'list', '--status', 'pending', '--json'], { KEEL_HOME: home })).stdout);
  assert.deepEqual(
    pending.map((a: { id: string }) => a.id),
    [id],
    'the card still waits',
  );
  assert.equal(trashed(home).length, 0);
  const ok = await keel(['approvals', 'approve', id, '--args', '{"ids":["m2","m3"]}', '--as', 'ana'], { KEEL_HOME: home });
  assert.equal(ok.code, 0, ok.stderr);
  const list = await keel(['approvals', 'list'], { KEEL_HOME: home });
  assert.match(list.stdout, /Approval needed: Move 2 email\(s\) to Trash/);
  assert.match(list.stdout, /exact call: trash_email\(\{"ids":\["m2","m3"\]\}\)/);
  assert.match(list.stdout, /edited by ana; was: Move 1 email\(s\) to Trash/);
  assert.match(list.stdout, /was: trash_email\(\{"ids":\["m1"\]\}\)/);
});
