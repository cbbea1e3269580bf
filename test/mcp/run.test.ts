import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { Keel } from '../../src/keel/keel.js';
import type { ScriptEntry } from '../../src/models/script.js';
import { tempHome } from '../support/helpers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MEMORY = join(ROOT, 'test', 'fixtures', 'mcp', 'memory');
const FILESYSTEM = join(ROOT, 'test', 'fixtures', 'mcp', 'filesystem');

/** A temp KEEL_HOME with a seeded knowledge graph and files folder, and a scripted model in it. */
function setup(entries: ScriptEntry[], env: NodeJS.ProcessEnv = process.env): { home: string; model: string; keel: Keel } {
  const home = tempHome('keel-mcp-run-');
  const graph = [
    { type: 'entity', name: 'Ada', entityType: 'person', observations: ['wrote the first program'] },
    { type: 'entity', name: 'Grace', entityType: 'person', observations: ['found the first bug'] },
  ];
  writeFileSync(join(home, 'memory.jsonl'), graph.map((g) => JSON.stringify(g)).join('\n'));
  mkdirSync(join(home, 'files'));
  writeFileSync(join(home, 'files', 'draft.txt'), 'keep me\n');
  writeFileSync(join(home, 'script.yaml'), stringify(entries));
  return { home, model: `script:${join(home, 'script.yaml')}`, keel: new Keel({ home, env }) };
}

const entities = (home: string) =>
  readFileSync(join(home, 'memory.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { name: string }).name);

test('a read MCP tool runs end to end: the model calls search_nodes, the server answers, the model answers', async (t) => {
  const { home, model, keel } = setup(
    [
      { tool_calls: [{ id: 'c1', name: 'search_nodes', args: { query: 'bug' } }] },
      { text: 'Grace found the first bug.' },
      // The whole pool on the menu (no shortlist), so the declarations can be compared.
    ],
    { ...process.env, KEEL_TOOL_CAP: '100' },
  );
  t.after(async () => {
    await keel.close();
    rmSync(home, { recursive: true, force: true });
  });
  const r = await keel.run('who found the first bug?', { model, pluginDirs: [MEMORY] });
  assert.equal(r.status, 'done', JSON.stringify(r));
  assert.equal(r.answer, 'Grace found the first bug.');
  assert.equal(r.steps.length, 1);
  assert.equal(r.steps[0].call_id, 'c1');
  assert.equal(r.steps[0].outcome, 'ran');
  assert.equal(r.steps[0].is_error, false);
  assert.match(r.steps[0].result, /Grace/);
  assert.doesNotMatch(r.steps[0].result, /Ada/, 'the server did the search');
  assert.deepEqual(r.effects, [], 'a read has no effect');
  const declared = r.requests[0].tools.find((x) => x.name === 'search_nodes');
  assert.ok(declared, 'search_nodes is on the menu');
  assert.doesNotMatch(declared.description, /on the user's behalf|approved per call/i, 'a read carries no mark');
  const del = r.requests[0].tools.find((x) => x.name === 'delete_entities');
  assert.ok(del, 'delete_entities is on the menu');
  assert.notEqual(del.description, declared.description, 'the destructive tool is marked (R9)');
});

test('A1/A2: a destructive MCP tool waits for an approval card; approve → the MCP call runs once and the change is visible', async (t) => {
  const { home, model, keel } = setup([
    { tool_calls: [{ id: 'd1', name: 'delete_entities', args: { entityNames: ['Ada'] } }] },
    { text: 'Ada is gone from the graph.' },
  ]);
  t.after(async () => {
    await keel.close();
    rmSync(home, { recursive: true, force: true });
  });
  const r = await keel.run('forget Ada entirely', { model, pluginDirs: [MEMORY] });
  assert.equal(r.status, 'paused', JSON.stringify(r));
  assert.equal(r.reason, 'awaiting_approval');
  assert.equal(r.steps[0].outcome, 'awaiting_approval');
  assert.ok(r.approval, 'the run carries its approval');
  const item = r.approval.card.items[0];
  assert.equal(item.title, 'delete_entities on MCP server memory-server');
  assert.deepEqual(item.lines, ['entityNames: Ada']);
  assert.equal(item.undo, 'cannot be undone');
  assert.equal(item.call, 'delete_entities({"entityNames":["Ada"]})');
  assert.deepEqual(entities(home), ['Ada', 'Grace'], 'nothing changed before the approval');

  // Count the calls that reach the MCP tool's handler (the same object the engine runs).
  const registry = await keel.registry([MEMORY]);
  const spec = registry.byName.get('delete_entities')!;
  const inner = spec.execute;
  let calls = 0;
  spec.execute = (args, ctx) => {
    calls++;
    return inner(args, ctx);
  };

  const { approval, result } = await keel.respondToApproval(r.approval.id, 'approve', 'tester');
  assert.equal(approval.status, 'approved');
  assert.equal(result.status, 'done', JSON.stringify(result));
  assert.equal(result.answer, 'Ada is gone from the graph.');
  assert.equal(calls, 1, 'the MCP call ran once');
  const ran = result.steps.filter((s) => s.call_id === 'd1' && s.outcome === 'ran');
  assert.equal(ran.length, 1);
  assert.match(ran[0].result, /deleted/i);
  assert.deepEqual(entities(home), ['Grace'], 'the change is visible in the server’s store');
  assert.deepEqual(
    result.effects.map((e) => [e.tool, e.effect]),
    [['delete_entities', 'destructive']],
  );
});

test('A2: reject → the MCP move never runs; the file stays where it was', async (t) => {
  const { home, model, keel } = setup([
    { tool_calls: [{ id: 'm1', name: 'move_file', args: { source: 'PLACEHOLDER', destination: 'PLACEHOLDER' } }] },
    { text: 'Nothing was moved.' },
  ]);
  // The filesystem server wants absolute paths inside its directory: rewrite the script now the home is known.
  const files = join(home, 'files');
  writeFileSync(
    join(home, 'script.yaml'),
    stringify([
      { tool_calls: [{ id: 'm1', name: 'move_file', args: { source: join(files, 'draft.txt'), destination: join(files, 'final.txt') } }] },
      { text: 'Nothing was moved.' },
    ]),
  );
  t.after(async () => {
    await keel.close();
    rmSync(home, { recursive: true, force: true });
  });
  const r = await keel.run('rename the draft to final', { model, pluginDirs: [FILESYSTEM] });
  assert.equal(r.reason, 'awaiting_approval', JSON.stringify(r));
  assert.deepEqual(r.approval!.card.items[0].lines, [`source: ${join(files, 'draft.txt')}`, `destination: ${join(files, 'final.txt')}`]);
  const { result } = await keel.respondToApproval(r.approval!.id, 'reject', 'tester', 'keep the draft name');
  assert.equal(result.status, 'done', JSON.stringify(result));
  assert.equal(result.answer, 'Nothing was moved.');
  assert.equal(existsSync(join(files, 'draft.txt')), true, 'the source is still there');
  assert.equal(existsSync(join(files, 'final.txt')), false, 'no destination');
  assert.deepEqual(result.effects, []);
});
