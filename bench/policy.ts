/**
 * bench/policy: what a Cedar policy file adds to a call (issue 37, PC6). A pool of 20 tools; calls
 * cycle over them with realistic arguments; `CedarPolicy.evaluate` is timed with a file of 3
 * policies and with one of 20 (thresholds on arguments, principal groups and roles, the mode, the
 * untrusted flag, office hours), and with 20 policies that all reach every tool (each read by every
 * call: the worst case of the per-tool sets). Beside them, for the design record: the engine asked
 * the plain way — the whole 20-policy set preparsed once, every context key and both entities sent
 * on every call — so the gain of per-tool sets and of sending only what is read is measured, not
 * assumed. Target: at most 100 µs per call with 20 policies. Rounds are interleaved (the machine is
 * shared); medians over rounds.
 *
 *   node --import tsx bench/policy.ts [--rounds 15] [--calls 4000] [--no-write]
 *
 * Writes bench/results/policy.json.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { normalizeDeclaration } from '../src/manifest/schema.js';
import { CedarPolicy, loadCedar, type PolicyRequest } from '../src/policy/cedar.js';
import { makeToolSpec } from '../src/tools/spec.js';
import type { ToolSpec } from '../src/types/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
};
const ROUNDS = Number(arg('rounds', '15'));
const CALLS = Number(arg('calls', '4000'));

const EFFECTS = ['read', 'read', 'write', 'destructive'] as const;
const pool: ToolSpec[] = Array.from({ length: 20 }, (_, i) => {
  const effect = EFFECTS[i % 4];
  return makeToolSpec(
    {
      name: `tool_${i}`,
      description: `tool ${i}`,
      parameters: {
        type: 'object',
        properties: {
          amount: { type: 'integer' },
          to: { type: 'string' },
          body: { type: 'string' },
          tags: { type: 'array', items: { type: 'string' } },
        },
        required: ['amount', 'to'],
      },
      execute: () => 'ok',
    },
    `plugin_${i % 5}`,
    normalizeDeclaration(effect === 'destructive' ? { effect, undo: 'tool_2' } : { effect }),
  );
});

const ALL = '@id("every-call") permit (principal, action == Keel::Action::"call", resource);';
const kinds = [
  (i: number) =>
    `@id("ask-${i}") @ask @approvers("finance") permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"tool_${i}") when { context.args.amount > ${100 * i} };`,
  (i: number) =>
    `@id("interns-${i}") forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"tool_${i}") when { principal.groups.contains("interns") };`,
  (i: number) =>
    `@id("outside-${i}") forbid (principal, action == Keel::Action::"call", resource in Keel::Plugin::"plugin_${i % 5}") when { context.untrusted && resource.effect != "read" };`,
  (i: number) =>
    `@id("mode-${i}") forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"tool_${i}") unless { context.mode == "agent" };`,
  (i: number) =>
    `@id("hours-${i}") forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"tool_${i}") when { context.hour < 7 || ["Sun"].contains(context.weekday) };`,
];
const policies = (n: number) => [ALL, ...Array.from({ length: n - 1 }, (_, i) => kinds[i % kinds.length](i + 1))].join('\n');
/** 20 policies over every tool: no scope narrows them, each reads the args, the principal, the context. */
const unscoped = () =>
  [
    ALL,
    ...Array.from(
      { length: 19 },
      (_, i) =>
        `@id("any-${i}") forbid (principal, action == Keel::Action::"call", resource) when { context.args has amount && context.args.amount == ${1_000_000 + i} && principal.role != "admin" && context.hour >= 0 };`,
    ),
  ].join('\n');

const dir = mkdtempSync(join(tmpdir(), 'keel-bench-policy-'));
const load = async (name: string, text: string) => {
  const f = join(dir, `${name}.cedar`);
  writeFileSync(f, text);
  return CedarPolicy.load(f, pool);
};

const requests: PolicyRequest[] = Array.from({ length: 200 }, (_, i) => ({
  tool: pool[i % pool.length],
  args: { amount: (i * 37) % 2500, to: `someone${i}@example.com`, body: 'x'.repeat(2000), tags: ['a', 'b'] },
  mode: 'agent',
  session: 's1',
  principal: { kind: 'token', name: i % 3 ? 'alice' : 'ivan', role: 'approver', groups: i % 3 ? ['finance'] : ['interns'] },
  untrusted: i % 4 ? [] : [{ tool: 'tool_0', call_id: 'c', label: 'mail' }],
  at: new Date(Date.UTC(2026, 2, 2 + (i % 7), i % 24)),
}));

const t0 = performance.now();
const cedar = await loadCedar();
const engineLoadMs = performance.now() - t0;
const p3 = await load('three', policies(3));
const t1 = performance.now();
const p20 = await load('twenty', policies(20));
const loadMs20 = performance.now() - t1;
const pAny = await load('unscoped', unscoped());

// The plain way: the whole set preparsed once, every key and both entities sent each call.
const text20 = policies(20);
const parts = cedar.policySetTextToParts(text20);
if (parts.type !== 'success') throw new Error('the 20-policy file did not parse');
cedar.preparsePolicySet('bench-plain', { staticPolicies: Object.fromEntries(parts.policies.map((p, i) => [`p${i}`, p])) });
const plain = (r: PolicyRequest) =>
  cedar.statefulIsAuthorized({
    principal: { type: 'Keel::User', id: r.principal.name },
    action: { type: 'Keel::Action', id: 'call' },
    resource: { type: 'Keel::Tool', id: r.tool.name },
    context: {
      args: r.args as Record<string, string>,
      mode: r.mode,
      session: r.session ?? '',
      untrusted: r.untrusted.length > 0,
      read_from: r.untrusted.map((u) => u.tool),
      time: r.at.toISOString(),
      hour: r.at.getHours(),
      minute: r.at.getMinutes(),
      weekday: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'][r.at.getDay()],
    },
    preparsedPolicySetId: 'bench-plain',
    entities: [
      {
        uid: { type: 'Keel::Tool', id: r.tool.name },
        attrs: { effect: r.tool.declaration.effect, gate: r.tool.gate, plugin: r.tool.plugin, output: 'trusted' },
        parents: [{ type: 'Keel::Plugin', id: r.tool.plugin }],
      },
      {
        uid: { type: 'Keel::User', id: r.principal.name },
        attrs: { kind: r.principal.kind, role: r.principal.role ?? '', groups: [...r.principal.groups] },
        parents: [],
      },
    ],
  });

const cases: Record<string, (r: PolicyRequest) => unknown> = {
  policies_3: (r) => p3.evaluate(r),
  policies_20: (r) => p20.evaluate(r),
  policies_20_every_tool: (r) => pAny.evaluate(r),
  plain_engine_20: plain,
};
const decisions: Record<string, Record<string, number>> = {};
for (const [name, f] of Object.entries(cases)) {
  decisions[name] = {};
  for (const r of requests) {
    const v = f(r) as { decision?: string; type?: string; response?: { decision: string } };
    const d = v.decision ?? v.response?.decision ?? String(v.type);
    decisions[name][d] = (decisions[name][d] ?? 0) + 1;
  }
}
// The per-tool sets and what is left unsent must not change a single decision.
const disagree = requests.filter((r) => {
  const ours = p20.evaluate(r).decision;
  const theirs = (plain(r) as { type: string; response?: { decision: string } }).response?.decision;
  return (ours === 'forbid') !== (theirs === 'deny');
}).length;
if (disagree) throw new Error(`${disagree} of ${requests.length} decisions differ from the plain engine's`);
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, f] of Object.entries(cases)) {
    const start = performance.now();
    for (let i = 0; i < CALLS; i++) f(requests[i % requests.length]);
    samples[name].push(((performance.now() - start) * 1000) / CALLS);
  }
}
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.floor(s.length / 2)].toFixed(1));
};
const us = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
const out = {
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model.trim(),
  loadavg: loadavg().map((x) => Number(x.toFixed(2))),
  engine: '@cedar-policy/cedar-wasm 4.13.0',
  engine_load_ms: Number(engineLoadMs.toFixed(1)),
  /** Reading, splitting and validating the 20-policy file (one validation per distinct scope). */
  load_check_ms_20: Number(loadMs20.toFixed(1)),
  tools: pool.length,
  rounds: ROUNDS,
  calls_per_round: CALLS,
  us_per_evaluate_median: us,
  target_us_20_policies: 100,
  within_target: us.policies_20 <= 100,
  decisions,
  disagreements_with_plain: disagree,
  definition:
    'µs per call, median over rounds; policies_N: CedarPolicy.evaluate (per-tool preparsed sets, only what the policies read sent); policies_20_every_tool: 20 unscoped policies each reading args, principal and context; plain_engine_20: statefulIsAuthorized on the whole 20-policy set with every context key and both entities (no per-tool set, no pruning)',
};
console.log(JSON.stringify(out, null, 2));
if (!process.argv.includes('--no-write')) {
  writeFileSync(join(ROOT, 'bench', 'results', 'policy.json'), `${JSON.stringify(out, null, 2)}\n`);
  console.log('wrote bench/results/policy.json');
}
rmSync(dir, { recursive: true, force: true });
