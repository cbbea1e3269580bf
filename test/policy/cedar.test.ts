/**
 * The operator's Cedar policy file (issue 37, PC1–PC7): each kind of decision through evaluate(),
 * check() with file:line:col, the generated schema, a file re-read while serving, and the message
 * for a missing engine.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { normalizeDeclaration, type ToolDeclarationInput } from '../../src/manifest/schema.js';
import { CedarPolicy, loadCedar, PolicyFile, type PolicyRequest, type Principal, starterPolicy } from '../../src/policy/cedar.js';
import { argsTypeOf, schemaFor, schemaJsonFor, typeText, unionArgs } from '../../src/policy/cedar-schema.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { JsonSchema, ToolSpec, UntrustedSource } from '../../src/types/index.js';
import { KeelError } from '../../src/util/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'keel-cedar-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const tool = (name: string, plugin: string, d: ToolDeclarationInput, properties: JsonSchema = {}, required: string[] = []): ToolSpec =>
  makeToolSpec(
    { name, description: name, parameters: { type: 'object', properties, required }, execute: () => 'ok' },
    plugin,
    normalizeDeclaration(d),
  );

const pay = tool('pay', 'finance', { effect: 'write', approval: 'pinned' }, { amount: { type: 'number' }, to: { type: 'string' } }, [
  'amount',
  'to',
]);
const lookup = tool('finance_lookup', 'finance', { effect: 'read', output: 'untrusted' }, { query: { type: 'string' } }, ['query']);
const wipe = tool('wipe', 'files', { effect: 'destructive', undo: 'restore' }, { path: { type: 'string' } }, ['path']);
const restore = tool('restore', 'files', { effect: 'write', confirm: 'never' }, { path: { type: 'string' } }, ['path']);
const post = tool('post_url', 'web', { effect: 'write' }, { url: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } }, [
  'url',
]);
const POOL = [pay, lookup, wipe, restore, post];

let n = 0;
function file(text: string): string {
  const f = join(dir, `p${n++}.cedar`);
  writeFileSync(f, text);
  return f;
}

const ALICE: Principal = { kind: 'token', name: 'alice', role: 'approver', groups: ['finance'] };
const INTERN: Principal = { kind: 'token', name: 'ivan', role: 'viewer', groups: ['interns'] };
const ME: Principal = { kind: 'user', name: 'me', groups: [] };
const READ: UntrustedSource[] = [{ tool: 'finance_lookup', call_id: 'c1', label: 'memo' }];

const req = (t: ToolSpec, args: Record<string, unknown>, more: Partial<PolicyRequest> = {}): PolicyRequest => ({
  tool: t,
  args,
  mode: 'agent',
  session: null,
  principal: ME,
  untrusted: [],
  at: new Date('2026-03-04T10:30:00Z'),
  timeZone: 'UTC',
  ...more,
});

const ALL = 'permit (principal, action == Keel::Action::"call", resource);\n';

test('PC1: a plain permit leaves the declared gate; a call no permit matches is denied by default, naming no policy', async () => {
  const p = await CedarPolicy.load(
    file('@id("reads") permit (principal, action == Keel::Action::"call", resource) when { resource.effect == "read" };\n'),
    POOL,
  );
  assert.deepEqual(p.evaluate(req(lookup, { query: 'x' })), { decision: 'permit', policies: ['reads'] });
  assert.deepEqual(p.evaluate(req(pay, { amount: 5, to: 'bob' })), { decision: 'forbid', policies: [] });
  assert.equal(p.hash.length, 12);
});

test('PC1: a forbid wins over a permit, and names its @id', async () => {
  const p = await CedarPolicy.load(
    file(`${ALL}@id("no-wipe")\nforbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"wipe");\n`),
    POOL,
  );
  assert.deepEqual(p.evaluate(req(wipe, { path: '/a' })), { decision: 'forbid', policies: ['no-wipe'] });
  assert.equal(p.evaluate(req(restore, { path: '/a' })).decision, 'permit');
});

test('PC1: an argument threshold with @ask and @approvers: a card over 500 for the finance group; under it, the declared gate', async () => {
  const text = `${ALL}
@id("big-payment")
@ask
@approvers("finance, treasury")
permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay")
when { context.args.amount > 500 };
`;
  const p = await CedarPolicy.load(file(text), POOL);
  const generated = p.policies[0].id;
  assert.match(generated, /^policy0 \(p\d+\.cedar:1\)$/);
  assert.deepEqual(p.evaluate(req(pay, { amount: 501, to: 'bob' })), {
    decision: 'ask',
    policies: [generated, 'big-payment'],
    asked_by: ['big-payment'],
    approvers: ['finance', 'treasury'],
  } satisfies Awaited<ReturnType<typeof p.evaluate>>);
  assert.deepEqual(p.evaluate(req(pay, { amount: 500, to: 'bob' })), { decision: 'permit', policies: [generated] });
  assert.ok(p.hasAsk && p.hasApprovers);
});

test('PC4: a fractional amount a policy reads is refused (never rounded); one no policy reads is not sent', async () => {
  const p = await CedarPolicy.load(
    file(
      `${ALL}@ask permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay") when { context.args.amount > 500 };\n`,
    ),
    POOL,
  );
  const v = p.evaluate(req(pay, { amount: 500.5, to: 'bob' }));
  assert.equal(v.decision, 'forbid');
  assert.match(v.errors?.[0] ?? '', /args\.amount is 500\.5: .*whole numbers/);
  const q = await CedarPolicy.load(file(ALL), POOL);
  assert.equal(q.evaluate(req(pay, { amount: 500.5, to: 'bob' })).decision, 'permit');
});

test('PC1: the principal: a role, a group, a kind', async () => {
  const text = `${ALL}
@id("interns-no-delete")
forbid (principal, action == Keel::Action::"call", resource)
when { resource.effect == "destructive" && principal.groups.contains("interns") };
@id("pay-needs-role")
forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay")
unless { principal.role == "admin" || principal.role == "approver" || principal.kind == "user" };
`;
  const p = await CedarPolicy.load(file(text), POOL);
  assert.deepEqual(p.evaluate(req(wipe, { path: '/' }, { principal: INTERN })), { decision: 'forbid', policies: ['interns-no-delete'] });
  assert.equal(p.evaluate(req(wipe, { path: '/' }, { principal: ALICE })).decision, 'permit');
  assert.deepEqual(p.evaluate(req(pay, { amount: 1, to: 'x' }, { principal: INTERN })).policies, ['pay-needs-role']);
  assert.equal(p.evaluate(req(pay, { amount: 1, to: 'x' }, { principal: ALICE })).decision, 'permit');
  assert.equal(p.evaluate(req(pay, { amount: 1, to: 'x' }, { principal: ME })).decision, 'permit');
});

test('PC1: the mode, the untrusted flag and what the run read from', async () => {
  const text = `${ALL}
@id("post-in-agent-only")
forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"post_url") unless { context.mode == "agent" };
@id("no-post-after-outside")
forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"post_url") when { context.untrusted };
@id("no-pay-after-memos")
forbid (principal, action == Keel::Action::"call", resource in Keel::Plugin::"finance")
when { resource.effect != "read" && context.read_from.contains("finance_lookup") };
`;
  const p = await CedarPolicy.load(file(text), POOL);
  assert.equal(p.evaluate(req(post, { url: 'https://x' })).decision, 'permit');
  assert.deepEqual(p.evaluate(req(post, { url: 'https://x' }, { mode: 'plan' })).policies, ['post-in-agent-only']);
  assert.deepEqual(p.evaluate(req(post, { url: 'https://x' }, { untrusted: READ })).policies, ['no-post-after-outside']);
  assert.deepEqual(p.evaluate(req(pay, { amount: 1, to: 'x' }, { untrusted: READ })).policies, ['no-pay-after-memos']);
  assert.equal(p.evaluate(req(lookup, { query: 'q' }, { untrusted: READ })).decision, 'permit');
});

test('PC5: office hours, with the time of the call injected and the zone chosen', async () => {
  const text = `${ALL}
@id("office-hours")
forbid (principal, action == Keel::Action::"call", resource)
when { resource.effect != "read" && (context.hour < 9 || context.hour >= 18 || ["Sat", "Sun"].contains(context.weekday)) };
`;
  const p = await CedarPolicy.load(file(text), POOL);
  const at = (iso: string, timeZone = 'UTC') => p.evaluate(req(restore, { path: '/a' }, { at: new Date(iso), timeZone })).decision;
  assert.equal(at('2026-03-04T10:30:00Z'), 'permit', 'Wednesday 10:30');
  assert.equal(at('2026-03-04T19:00:00Z'), 'forbid', 'Wednesday 19:00');
  assert.equal(at('2026-03-07T10:30:00Z'), 'forbid', 'Saturday');
  assert.equal(at('2026-03-04T10:30:00Z', 'America/Los_Angeles'), 'forbid', '02:30 in Los Angeles');
  assert.equal(p.evaluate(req(lookup, { query: 'q' }, { at: new Date('2026-03-07T03:00:00Z') })).decision, 'permit', 'reads any time');
});

test('PC1: a policy whose condition errs on a call is skipped, and the error is reported for the trace', async () => {
  const p = await CedarPolicy.load(
    file(
      `${ALL}@id("over") @ask permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay") when { context.args.amount * 4611686018427387904 > 1 };\n`,
    ),
    POOL,
  );
  const v = p.evaluate(req(pay, { amount: 3, to: 'x' }));
  assert.equal(v.decision, 'permit');
  assert.match(v.errors?.join('\n') ?? '', /^over: .*overflow/);
});

test('PC1: a forbid whose condition errs forbids (Cedar would skip it): an amount large enough to overflow does not slip past it', async () => {
  const p = await CedarPolicy.load(
    file(
      `${ALL}@id("cap") forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay") when { context.args.amount * 10000 > 5000000 };\n`,
    ),
    POOL,
  );
  assert.deepEqual(p.evaluate(req(pay, { amount: 1, to: 'x' })), { decision: 'permit', policies: [p.policies[0].id] });
  assert.deepEqual(p.evaluate(req(pay, { amount: 600, to: 'x' })).policies, ['cap']);
  const huge = p.evaluate(req(pay, { amount: 2 ** 53 - 1, to: 'x' }));
  assert.equal(huge.decision, 'forbid');
  assert.deepEqual(huge.policies, ['cap']);
  assert.match(huge.errors?.[0] ?? '', /^cap: .*overflow/);
});

test('PC3: check() catches a misspelt argument at its line and column, with the one it meant', async () => {
  const text = `${ALL}
@id("big-payment")
@ask
permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay")
when { context.args.ammount > 500 };
`;
  const f = file(text);
  const { policy, diagnostics } = await CedarPolicy.diagnose(f, POOL);
  assert.equal(policy, undefined);
  assert.equal(diagnostics.length, 1);
  assert.equal(diagnostics[0].severity, 'error');
  assert.equal(diagnostics[0].at, `${f}:6:8`);
  assert.equal(diagnostics[0].policy, 'big-payment');
  assert.match(diagnostics[0].message, /args\.ammount.*not found.*did you mean `amount`/);
  await assert.rejects(
    CedarPolicy.load(f, POOL),
    (e: unknown) => e instanceof KeelError && e.code === 'config' && e.message.startsWith(`${f}:6:8: `),
  );
});

test('PC2/PC3: an unknown tool or plugin, a type mismatch and an unguarded argument of a multi-tool policy are errors; a parse error has its place', async () => {
  const wype = 'forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"wype");';
  const finanse = 'forbid (principal, action == Keel::Action::"call", resource in Keel::Plugin::"finanse");';
  const f = file(`${ALL}${wype}
${finanse}
forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay") when { context.args.to > 5 };
forbid (principal, action == Keel::Action::"call", resource in Keel::Plugin::"finance") when { context.args.amount > 5 };
permit (principal, action == Keel::Action::"call", resource in Keel::Plugin::"finance") when { context.args has amount && context.args.amount > 5 };
`);
  const { diagnostics } = await CedarPolicy.diagnose(f, POOL);
  const errors = diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.at.slice(f.length + 1)} ${d.message}`);
  assert.equal(errors.length, 4, errors.join('\n'));
  assert.ok(errors[0].startsWith(`2:${wype.indexOf('"wype"') + 1} `));
  assert.ok(errors[1].startsWith(`3:${finanse.indexOf('"finanse"') + 1} `));
  assert.match(errors[0], /^2:\d+ no tool named "wype" is mounted \(did you mean "wipe"\?\)/);
  assert.match(errors[1], /^3:\d+ no plugin named "finanse" is mounted \(did you mean "finance"\?\)/);
  assert.match(errors[2], /^4:\d+ .*(Long|String)/);
  assert.match(errors[3], /^5:\d+ .*amount/);
  const bad = file(`${ALL}permit (principal, action == Keel::Action::"call", resource)\nwhen { context.mode == "agent" }\n`);
  const parsed = await CedarPolicy.diagnose(bad, POOL);
  assert.equal(parsed.diagnostics.length, 1);
  assert.match(parsed.diagnostics[0].at, /:3:\d+$/);
});

test('PC3: a policy that can never apply is a warning, and @ask on a forbid too; the file still loads', async () => {
  const f =
    file(`${ALL}@id("never") forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"wipe") when { context.args has size };
@id("odd") @ask forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"wipe") when { context.mode == "plan" };
`);
  const p = await CedarPolicy.load(f, POOL);
  const w = p.check();
  assert.deepEqual(
    w.map((d) => [d.severity, d.policy, d.at.slice(f.length + 1)]),
    [
      ['warning', 'never', '2:1'],
      ['warning', 'odd', '3:17'],
    ],
  );
  assert.match(w[0].message, /impossible/);
  assert.match(w[1].message, /@ask on a forbid has no effect/);
});

test("PC3: the generated schema types each tool's arguments (a number as Long, an array as a Set) and parses in the engine", async () => {
  const p = await CedarPolicy.load(file(ALL), POOL);
  const s = p.schemaText();
  assert.match(s, /pay \(finance, write\): \{ amount: Long, to: String \}/);
  assert.match(s, /post_url \(web, write\): \{ url: String, tags\?: Set<String> \}/);
  assert.match(s, /entity Tool in \[Plugin\] = \{ effect: String, gate: String, plugin: String, output: String, open_world: Bool \}/);
  assert.match(s, /args: \{ amount\?: Long, to\?: String, query\?: String, path\?: String, url\?: String, tags\?: Set<String> \}/);
  const cedar = await loadCedar();
  assert.equal(cedar.checkParseSchema(s).type, 'success');
  // A required property that may be null is optional to Cedar: a null is not sent, so a policy must test `has`.
  const memo = tool('memo', 'finance', { effect: 'read' }, { note: { type: ['string', 'null'] }, n: { type: 'integer' } }, ['note', 'n']);
  assert.equal(typeText(argsTypeOf(memo)), '{ note?: String, n: Long }');
  // The validator is given the JSON form (faster to read): it is the same schema as the text.
  for (const tools of [POOL, [pay], [post, lookup]]) {
    const args = unionArgs(tools);
    const fromText = cedar.schemaToJsonWithResolvedTypes(schemaFor(args));
    assert.equal(fromText.type, 'success');
    assert.deepEqual(normal((fromText as { json: unknown }).json), normal(schemaJsonFor(args)));
  }
});

/** A schema in JSON with `required: true` (the default) dropped, names short and keys sorted, to compare two writings of it. */
function normal(v: unknown): unknown {
  // The resolved form names types in full (Keel::Tool) and Boolean as Bool.
  if (typeof v === 'string') return v === 'Bool' ? 'Boolean' : v.replace(/^Keel::/, '');
  if (Array.isArray(v)) return v.map(normal);
  if (!v || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k, x]) => !(k === 'required' && x === true) && !(k === 'annotations' && x && Object.keys(x).length === 0))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, x]) => [k, normal(x)]),
  );
}

test('PC1: the starter file passes check on the pool it was made from, permits everything with the declared gate, and its examples check when uncommented', async () => {
  const text = starterPolicy(POOL);
  const p = await CedarPolicy.load(file(text), POOL);
  assert.deepEqual(p.check(), []);
  assert.deepEqual(p.evaluate(req(wipe, { path: '/' })), { decision: 'permit', policies: ['every-call'] });
  const uncommented = text.replace(/^\/\/ (@|permit|forbid|when|unless)/gm, '$1');
  const all = await CedarPolicy.load(file(uncommented), POOL);
  assert.equal(all.policies.length, 5);
  assert.deepEqual(all.check(), []);
});

test('PC7: PolicyFile re-reads a changed file, and keeps the last good policy when an edit is bad', async () => {
  const f = file(ALL);
  const said: string[] = [];
  const pf = await PolicyFile.open(f, POOL, (m) => said.push(m), { checkEveryMs: 0 });
  assert.equal(pf.current().evaluate(req(wipe, { path: '/' })).decision, 'permit');
  const touch = (text: string, s: number) => {
    writeFileSync(f, text);
    utimesSync(f, s, s);
  };
  touch(`${ALL}@id("no-wipe") forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"wipe");\n`, 1_000_000);
  assert.deepEqual(pf.current().evaluate(req(wipe, { path: '/' })).policies, ['no-wipe']);
  assert.match(said.at(-1) ?? '', /re-read/);
  touch(`${ALL}forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"wype");\n`, 2_000_000);
  assert.deepEqual(pf.current().evaluate(req(wipe, { path: '/' })).policies, ['no-wipe'], 'the last good policy');
  assert.match(pf.lastError ?? '', /:2:\d+: no tool named "wype"/);
  assert.match(said.at(-1) ?? '', /not re-read, the last good policy .* stays/);
  touch(ALL, 3_000_000);
  assert.equal(pf.current().evaluate(req(wipe, { path: '/' })).decision, 'permit');
  assert.equal(pf.lastError, undefined);
});

test('PC6: a missing engine is a config error naming the package and the command that adds it', async () => {
  const nowhere = createRequire(join(dir, 'x.js'));
  const err = await loadCedar(async () => nowhere('@cedar-policy/cedar-wasm/nodejs')).then(
    () => assert.fail('loaded'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof KeelError);
  assert.equal(err.code, 'config');
  assert.equal(
    err.message,
    'the policy file (policy_file: in config.yaml) needs the package @cedar-policy/cedar-wasm, which is not installed: npm install @cedar-policy/cedar-wasm@4.13.0',
  );
});

test("PC6: only what a tool's policies read crosses into the engine: an argument no policy names is never converted", async () => {
  // A policy on pay reads amount; post_url's tags would fail conversion only if sent.
  const p = await CedarPolicy.load(
    file(
      `${ALL}@ask permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay") when { context.args.amount > 500 };\n`,
    ),
    POOL,
  );
  assert.equal(p.evaluate(req(post, { url: 'u', tags: ['a'] })).decision, 'permit');
  assert.equal(p.evaluate(req(pay, { amount: 900, to: 'x' })).decision, 'ask');
});

test('PC6: what is left unsent changes no decision: evaluate agrees with the engine given the whole file, every context key and both entities', async () => {
  const text = `${ALL}
@id("a") @ask permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay") when { context.args.amount > 100 && context.args.to like "*@x" };
@id("b") forbid (principal, action == Keel::Action::"call", resource in Keel::Plugin::"finance") when { principal.groups.contains("interns") || context.untrusted };
@id("c") forbid (principal, action == Keel::Action::"call", resource) when { resource.effect == "destructive" && context.hour >= 18 };
@id("d") forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"post_url") when { context.args.url like "*evil*" };
@id("e") forbid (principal, action == Keel::Action::"call", resource) when { context.read_from.contains("finance_lookup") && context.mode != "agent" };
@id("f") permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"post_url") when { context has args && context.args has tags && context.args.tags.contains("ok") };
`;
  const f = file(text);
  const p = await CedarPolicy.load(f, POOL);
  const cedar = await loadCedar();
  const parts = cedar.policySetTextToParts(text);
  assert.equal(parts.type, 'success');
  const ids = p.policies.map((x) => x.id);
  const staticPolicies = Object.fromEntries((parts as { policies: string[] }).policies.map((t, i) => [ids[i], t]));
  const argsOf = [
    { amount: 50, to: 'a@x' },
    { amount: 500, to: 'a@x' },
    { amount: 500, to: 'a@y' },
    { query: 'q' },
    { path: '/' },
    { url: 'https://evil' },
    { url: 'https://evil', tags: ['ok'] },
    { url: 'https://fine', tags: ['ok'] },
  ];
  const tools = [pay, pay, pay, lookup, wipe, post, post, post];
  let compared = 0;
  for (const [i, args] of argsOf.entries())
    for (const principal of [ALICE, INTERN, ME])
      for (const untrusted of [[], READ])
        for (const mode of ['agent', 'plan'] as const)
          for (const hour of [10, 19]) {
            const at = new Date(Date.UTC(2026, 2, 4, hour));
            const r = req(tools[i], args, { principal, untrusted, mode, at });
            const ours = p.evaluate(r);
            const whole = cedar.isAuthorized({
              principal: { type: 'Keel::User', id: principal.name },
              action: { type: 'Keel::Action', id: 'call' },
              resource: { type: 'Keel::Tool', id: r.tool.name },
              context: {
                args: args as unknown as Record<string, string>,
                mode,
                session: '',
                untrusted: untrusted.length > 0,
                read_from: untrusted.map((u) => u.tool),
                time: at.toISOString(),
                hour,
                minute: 0,
                weekday: 'Wed',
              },
              policies: { staticPolicies },
              entities: [
                {
                  uid: { type: 'Keel::Tool', id: r.tool.name },
                  attrs: {
                    effect: r.tool.declaration.effect,
                    gate: r.tool.gate,
                    plugin: r.tool.plugin,
                    output: r.tool.declaration.output ?? 'trusted',
                  },
                  parents: [{ type: 'Keel::Plugin', id: r.tool.plugin }],
                },
                {
                  uid: { type: 'Keel::User', id: principal.name },
                  attrs: { kind: principal.kind, role: principal.role ?? '', groups: [...principal.groups] },
                  parents: [],
                },
              ],
            });
            assert.equal(whole.type, 'success');
            const { decision, diagnostics } = (whole as { response: { decision: string; diagnostics: { reason: string[] } } }).response;
            assert.equal(ours.decision === 'forbid', decision === 'deny', JSON.stringify({ args, principal, untrusted, mode, hour, ours }));
            assert.deepEqual([...ours.policies].sort(), [...diagnostics.reason].sort());
            assert.deepEqual(
              ours.policies,
              [...ours.policies].sort((a, b) => ids.indexOf(a) - ids.indexOf(b)),
              "in the file's order",
            );
            compared++;
          }
  assert.equal(compared, 192);
});

test("PC1: the README's five worked policies check and decide as the README says", async () => {
  const { readmeBlock } = await import('../support/readme.js');
  const p = await CedarPolicy.load(file(readmeBlock('cedar-policy')), POOL);
  assert.deepEqual(p.check(), []);
  // 1 and 2: over the threshold, a card only finance answers; under it, the declared gate.
  const big = p.evaluate(req(pay, { amount: 900, to: 'bob' }, { principal: ALICE }));
  assert.equal(big.decision, 'ask');
  assert.deepEqual(big.asked_by, ['big-payment']);
  assert.deepEqual(big.approvers, ['finance']);
  assert.equal(p.evaluate(req(pay, { amount: 90, to: 'bob' })).decision, 'permit');
  // 3: after outside content, no post.
  assert.equal(p.evaluate(req(post, { url: 'https://x' })).decision, 'permit');
  assert.deepEqual(p.evaluate(req(post, { url: 'https://x' }, { untrusted: READ })).policies, ['no-post-after-outside']);
  // 4: the lookup in goal mode is denied, in agent and plan mode it runs.
  assert.deepEqual(p.evaluate(req(lookup, { query: 'q' }, { mode: 'goal' })).policies, ['no-lookups-in-goal-mode']);
  assert.equal(p.evaluate(req(lookup, { query: 'q' }, { mode: 'plan' })).decision, 'permit');
  // 5: office hours (2026-03-04 is a Wednesday; 2026-03-07 a Saturday), in the request's time zone.
  const at = (iso: string) => p.evaluate(req(pay, { amount: 90, to: 'bob' }, { at: new Date(iso) }));
  assert.equal(at('2026-03-04T10:30:00Z').decision, 'permit');
  assert.deepEqual(at('2026-03-04T19:00:00Z').policies, ['office-hours']);
  assert.deepEqual(at('2026-03-04T08:59:00Z').policies, ['office-hours']);
  assert.deepEqual(at('2026-03-07T10:30:00Z').policies, ['office-hours']);
});

test('PC3: a file without a permit denies every call: a warning says so', async () => {
  const f = file('// nothing yet\n@id("no-wipe") forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"wipe");\n');
  const p = await CedarPolicy.load(f, POOL);
  assert.deepEqual(
    p.check().map((d) => [d.at.slice(f.length + 1), d.message.split(':')[0]]),
    [['1:1', 'no permit']],
  );
  assert.deepEqual(p.evaluate(req(lookup, { query: 'q' })), { decision: 'forbid', policies: [] });
});

test('PC7: PolicyFile.setPool checks the file against a new pool, keeping the last good policy when a tool it names is gone', async () => {
  const f = file(`${ALL}@id("no-wipe") forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"wipe");\n`);
  const said: string[] = [];
  const pf = await PolicyFile.open(f, POOL, (m) => said.push(m));
  pf.setPool(POOL.filter((t) => t !== wipe));
  assert.match(pf.lastError ?? '', /no tool named "wipe"/);
  assert.deepEqual(pf.current().evaluate(req(wipe, { path: '/' })).policies, ['no-wipe']);
  pf.setPool(POOL);
  assert.equal(pf.lastError, undefined);
  assert.equal(said.length, 2);
});
