/**
 * Operator policy through the real CLI (R7 and the config's `policy:`): the operator decides how
 * strictly Keel governs the tools plugins declare — tighten, loosen a confirm-once write, deny, limit
 * to modes — never loosening a card, applied where tools are mounted, visible and recorded.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { calls, FIXTURES, json, keel, ROOT, script, tempHome } from '../support/helpers.js';

const NOTES = join(ROOT, 'test', 'fixtures', 'one-path', 'notes');

interface Out {
  status: string;
  reason: string;
  notes: string[];
  warnings: string[];
  approval?: { id: string };
  requests: { tools: { name: string; available: boolean; description: string }[] }[];
  steps: { call_id: string; tool: string; outcome: string; result: string }[];
}
const step = (r: Out, id: string) => r.steps.find((s) => s.call_id === id);

function withPolicy(yaml: string): { home: string; env: Record<string, string>; file: string } {
  const home = tempHome();
  const file = join(home, 'policy-config.yaml');
  writeFileSync(file, yaml);
  return { home, env: { KEEL_HOME: home, KEEL_CONFIG: file }, file };
}

test('R7: KEEL_CONFIRM_ONCE_TOOLS=none — a confirm-once write runs on its first call; a destructive call still waits for its card; a comma list still adds', async () => {
  const home = tempHome();
  const model = script(home, [
    { tool_calls: [{ id: 'w1', name: 'create_reminder', args: { title: 'Pay water' } }] },
    { tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] },
  ] as never);
  const r = json<Out>(
    await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'remind, then trash'], {
      KEEL_HOME: home,
      KEEL_CONFIRM_ONCE_TOOLS: 'none',
    }),
  );
  assert.equal(step(r, 'w1')?.outcome, 'ran');
  assert.equal(calls(home, 'reminders.jsonl').length, 1);
  assert.equal(r.reason, 'awaiting_approval', 'the destructive call keeps its card');

  const h2 = tempHome();
  const m2 = script(h2, [{ tool_calls: [{ id: 'l1', name: 'calendar_lookup', args: { day: 'today' } }] }, { text: 'ok' }] as never);
  const r2 = json<Out>(
    await keel(['run', '--json', '--model', m2, '--plugins', FIXTURES, 'look'], {
      KEEL_HOME: h2,
      KEEL_CONFIRM_ONCE_TOOLS: 'calendar_lookup',
    }),
  );
  assert.equal(step(r2, 'l1')?.outcome, 'held_for_confirmation');
});

const POLICY = `# operator rules
policy:
  tools:
    search_inbox: { gate: approval }
    "save_*": { deny: true }
    read_notes: { modes: [agent] }
    nothing_matches_this: { gate: approval }
`;

test('policy: a tightened read makes a card; deny refuses before hook and handler; modes: [agent] denies in plan mode but stays declared; the trace records the policy', async () => {
  const { home, env } = withPolicy(POLICY);
  const model = script(home, [{ tool_calls: [{ id: 's1', name: 'search_inbox', args: {} }] }, { text: 'found' }] as never);
  const r = json<Out>(await keel(['run', '--json', '--model', model, '--plugins', FIXTURES, 'search'], env));
  assert.equal(r.reason, 'awaiting_approval', 'tightened to approval: a card per call');
  assert.match(
    r.notes.join('\n'),
    /^policy [0-9a-f]{12}: .*search_inbox: gate approval \(declared none\), by policy rule search_inbox \(.*policy-config\.yaml:4:5\)/m,
  );
  assert.match(r.warnings.join('\n'), /policy rule nothing_matches_this \(.*:7:5\) matches no mounted tool/);

  const m2 = script(home, [{ tool_calls: [{ id: 'n1', name: 'save_note', args: { text: 'x' } }] }, { text: 'no' }] as never, 's2.yaml');
  const denied = json<Out>(await keel(['run', '--json', '--model', m2, '--plugins', NOTES, 'save'], env));
  assert.equal(step(denied, 'n1')?.outcome, 'denied_by_policy');
  assert.match(step(denied, 'n1')?.result ?? '', /save_note was not run: an operator rule forbids it/);
  assert.deepEqual(calls(home, 'notes.log'), [], 'neither the hook nor the handler ran');

  const m3 = script(home, [{ tool_calls: [{ id: 'r1', name: 'read_notes', args: {} }] }, { text: 'planning' }] as never, 's3.yaml');
  const plan = json<Out>(await keel(['run', '--json', '--mode', 'plan', '--model', m3, '--plugins', NOTES, 'plan'], env));
  assert.equal(step(plan, 'r1')?.outcome, 'denied_by_policy');
  assert.match(step(plan, 'r1')?.result ?? '', /in plan mode \(it runs only in agent mode\)/);
  const declared = plan.requests[0].tools.find((t) => t.name === 'read_notes');
  assert.equal(declared?.available, false, 'still declared, labelled unavailable');
  assert.match(declared?.description ?? '', /^\[Unavailable in plan mode: an operator rule forbids it/);
  assert.deepEqual(calls(home, 'notes.log'), []);
  const agent = json<Out>(
    await keel(
      [
        'run',
        '--json',
        '--model',
        script(home, [{ tool_calls: [{ id: 'r2', name: 'read_notes', args: {} }] }, { text: 'read' }] as never, 's4.yaml'),
        '--plugins',
        NOTES,
        'read',
      ],
      env,
    ),
  );
  assert.equal(step(agent, 'r2')?.outcome, 'ran', 'in agent mode it runs');
});

test('policy: loosening a destructive tool, an unknown gate, a bad glob — refused at start with file:line:col', async () => {
  for (const [yaml, message] of [
    [
      'policy:\n  tools:\n    trash_email: { gate: none }\n',
      /policy-config\.yaml:3:5: policy\.tools\.trash_email: trash_email is destructive: a rule may tighten it, never loosen it below its approval card/,
    ],
    [
      'policy:\n  tools:\n    send_email: { gate: confirm_once }\n',
      /:3:5: policy\.tools\.send_email: send_email is a write with approval: pinned/,
    ],
    ['policy:\n  tools:\n    search_inbox: { gate: sometimes }\n', /:3:27: policy\.tools\.search_inbox\.gate: unknown gate 'sometimes'/],
    ['policy:\n  tools:\n    "Bad-Glob!": { deny: true }\n', /:3:5: policy\.tools\.Bad-Glob!: a tool name or a glob/],
  ] as const) {
    const { env } = withPolicy(yaml);
    const r = await keel(['plugins', 'check', FIXTURES], env);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, message);
  }
});

test('keel plugins check --json shows, for every tool, its declared effect, effective gate, declared gate and the rule', async () => {
  const { env } = withPolicy(POLICY);
  const r = await keel(['plugins', 'check', FIXTURES, NOTES, '--json'], env);
  const out = JSON.parse(r.stdout) as {
    plugins: {
      tools: {
        name: string;
        effect: string;
        gate: string;
        declared_gate: string;
        gate_source?: string;
        rule?: string;
        denied?: boolean;
        modes?: string[];
      }[];
    }[];
    policy: { unmatched: string[] };
  };
  const tools = out.plugins.flatMap((p) => p.tools);
  for (const t of tools) assert.equal(typeof t.declared_gate, 'string', t.name);
  const by = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.equal(by.search_inbox.effect, 'read');
  assert.equal(by.search_inbox.gate, 'approval');
  assert.equal(by.search_inbox.declared_gate, 'none');
  assert.match(by.search_inbox.gate_source ?? '', /^policy rule search_inbox \(.*policy-config\.yaml:4:5\)$/);
  assert.equal(by.save_note.denied, true);
  assert.match(by.save_note.rule ?? '', /^save_\* \(/);
  assert.deepEqual(by.read_notes.modes, ['agent']);
  assert.equal(by.trash_email.gate, 'approval');
  assert.equal(out.policy.unmatched.length, 1);
  const text = await keel(['plugins', 'check', FIXTURES, NOTES], env);
  assert.match(text.stdout, /search_inbox\s+read\s+gate=approval\s+.*\(gate by policy rule search_inbox/);
  assert.match(text.stdout, /warning: policy rule nothing_matches_this .* matches no mounted tool/);
});
