/**
 * `keel policy init|schema|check|explain` (issue 37) through the real CLI (dist/): a starter file
 * that checks, a misspelt argument caught at its line and column, the config's policy_file, and
 * explain printing the decision with the ids of the policies that made it; bad flags exit 2. Issue 47:
 * a misspelt annotation and an allow-list without ask_user caught by check, explain answering what
 * the gate does after untrusted reads; issue 46: open_world in the schema, explain of its exceptions.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { FIXTURES, json, keel, ROOT, tempHome } from '../support/helpers.js';
import { PAYMENTS } from '../support/policy.js';

const home = tempHome('keel-cli-policy-');
const env = { KEEL_HOME: home };
const P = ['--plugins', FIXTURES];
const WEB = join(ROOT, 'test', 'fixtures', 'open-world');
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const POLICY = `permit (principal, action == Keel::Action::"call", resource);

@id("interns-keep-mail")
forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"trash_email")
when { principal.groups.contains("interns") };

@id("outside-mail-asks")
@ask
@approvers("ops")
permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"send_email")
when { context.args.to like "*@outside.example" };

@id("no-mail-after-outside")
forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"send_email")
when { context.untrusted };
`;

test('PC1: keel policy init writes a starter file that keel policy check passes; init again refuses to overwrite', async () => {
  const file = join(home, 'starter.cedar');
  const init = await keel(['policy', 'init', file, ...P], env);
  assert.equal(init.code, 0, init.stderr);
  assert.match(init.stdout, /Wrote .*starter\.cedar/);
  const check = await keel(['policy', 'check', file, ...P], env);
  assert.equal(check.code, 0, check.stderr);
  assert.match(check.stdout, /starter\.cedar: 1 policy, 0 error\(s\), 0 warning\(s\)\n$/);
  const again = await keel(['policy', 'init', file, ...P], env);
  assert.equal(again.code, 2);
  assert.match(again.stderr, /exists: pass --force/);
  const schema = await keel(['policy', 'schema', ...P], env);
  assert.equal(schema.code, 0, schema.stderr);
  assert.match(schema.stdout, /send_email \(mail, write\): \{ to: String, subject: String, body\?: String \}/);
});

test("PC3: keel policy check reads the config's policy_file (relative to the config) and exits 1 on a misspelt argument, naming file:line:col", async () => {
  const dir = tempHome('keel-cli-policy-cfg-');
  writeFileSync(join(dir, 'config.yaml'), 'policy_file: ops.cedar\n');
  const file = join(dir, 'ops.cedar');
  writeFileSync(file, POLICY.replace('context.args.to like', 'context.args.too like'));
  const r = await keel(['policy', 'check', ...P], { KEEL_HOME: home, KEEL_CONFIG: join(dir, 'config.yaml') });
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stdout,
    new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:11:8: error: .*args\\.too.*not found.*did you mean \`to\`\\?`),
  );
  assert.match(r.stdout, /not loaded, 1 error\(s\), 0 warning\(s\)/);
  writeFileSync(file, POLICY);
  const ok = await keel(['policy', 'check', '--json', ...P], { KEEL_HOME: home, KEEL_CONFIG: join(dir, 'config.yaml') });
  assert.equal(ok.code, 0, ok.stderr);
  const out = json<{ ok: boolean; policies: { id: string }[] }>(ok);
  assert.equal(out.ok, true);
  assert.deepEqual(
    out.policies.map((p) => p.id),
    ['policy0 (ops.cedar:1)', 'interns-keep-mail', 'outside-mail-asks', 'no-mail-after-outside'],
  );
});

test('PC1: keel policy explain prints the decision and the ids of the policies that made it, as a principal, with the untrusted flag', async () => {
  const file = join(home, 'explain.cedar');
  writeFileSync(file, POLICY);
  const run = (...args: string[]) => keel(['policy', 'explain', ...args, '--file', file, ...P], env);
  const ask = await run('send_email', '--args', '{"to":"eve@outside.example","subject":"hi"}');
  assert.equal(ask.code, 0, ask.stderr);
  assert.match(ask.stdout, /^send_email as .* \(user\), mode agent: ask: an approval card pinned to these arguments\n/);
  assert.match(ask.stdout, /\n {2}by policy0 \(explain\.cedar:1\)\n {2}by outside-mail-asks \(.*explain\.cedar:10:1\)\n/);
  assert.match(ask.stdout, /\n {2}approvers: ops\n/);
  const plain = await run('send_email', '--args', '{"to":"bob@home.example","subject":"hi"}');
  assert.match(
    plain.stdout,
    /permit: an approval card pinned to these arguments \(its gate: approval\)\n {2}by policy0 \(explain\.cedar:1\)\n$/,
  );
  const intern = await run('trash_email', '--args', '{"ids":["m1"]}', '--as', 'ivan:interns');
  assert.equal(intern.code, 0, intern.stderr);
  assert.match(
    intern.stdout,
    /^trash_email as ivan \(token, groups interns\), mode agent: forbidden: the call is denied before it runs\n {2}by interns-keep-mail \(.*explain\.cedar:4:1\)\n$/,
  );
  // --as a token of keel tokens: its role (and groups, once tokens have them).
  const made = await keel(['tokens', 'create', '--name', 'root-admin', '--role', 'admin'], env);
  assert.equal(made.code, 0, made.stderr);
  const admin = await run('trash_email', '--args', '{"ids":["m1"]}', '--as', 'root-admin');
  assert.equal(admin.code, 0, admin.stderr);
  assert.match(admin.stdout, /^trash_email as root-admin \(token, admin\), mode agent: permit: an approval card pinned to these arguments/);
  const outside = await run('send_email', '--args', '{"to":"bob@home.example","subject":"hi"}', '--untrusted', '--json');
  const out = json<Record<string, unknown>>(outside);
  assert.deepEqual(
    { tool: out.tool, decision: out.decision, policies: out.policies, gate: out.gate, mode: out.mode },
    {
      tool: 'send_email',
      decision: 'forbid',
      policies: ['no-mail-after-outside'],
      gate: { kind: 'deny', mode: 'agent', by: 'policy', policies: ['no-mail-after-outside'] },
      mode: 'agent',
    },
  );
  assert.equal(out.says, 'forbidden: the call is denied before it runs');
  assert.equal(typeof out.policy, 'string');
});

test('issue 47: keel policy check exits 1 on a misspelt annotation at file:line:col naming @ask, and on @after_untrusted("deny")', async () => {
  const file = join(home, 'aks.cedar');
  writeFileSync(file, POLICY.replace('@ask\n', '@aks\n'));
  const r = await keel(['policy', 'check', file, ...P], env);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, new RegExp(`^${esc(file)}:8:1: error: unknown annotation @aks \\(did you mean @ask\\?\\)`, 'm'));
  assert.match(r.stdout, /not loaded, 1 error\(s\)/);
  writeFileSync(file, POLICY.replace('@ask\n', '@after_untrusted("deny")\n'));
  const deny = await keel(['policy', 'check', file, ...P], env);
  assert.equal(deny.code, 1, deny.stderr);
  assert.match(deny.stdout, new RegExp(`^${esc(file)}:8:1: error: @after_untrusted takes one value, "allow" \\(got "deny"\\)`, 'm'));
});

test('issue 47: an allow-list without ask_user passes keel policy check (exit 0) with a warning that says what breaks', async () => {
  const file = join(home, 'allow-list.cedar');
  writeFileSync(file, 'permit (principal, action == Keel::Action::"call", resource in Keel::Plugin::"mail");\n');
  const r = await keel(['policy', 'check', file, ...P], env);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    new RegExp(`^${esc(file)}:1:1: warning: confirm-once writes can never be confirmed: ask_user is not permitted`, 'm'),
  );
  assert.match(r.stdout, /1 policy, 0 error\(s\), 2 warning\(s\)\n$/);
});

test('issue 47 / U3: keel policy explain --read-from says what the gate does: a card or an exact-call confirmation, never "declared gate"', async () => {
  const file = join(home, 'all.cedar');
  writeFileSync(file, 'permit (principal, action == Keel::Action::"call", resource);\n');
  const run = (...args: string[]) => keel(['policy', 'explain', ...args, '--file', file, '--plugins', PAYMENTS], env);
  const post = await run('post_url', '--args', '{"url":"https://x.example","text":"hi"}', '--read-from', 'read_inbox');
  assert.equal(post.code, 0, post.stderr);
  assert.match(
    post.stdout,
    /^post_url as .*, mode agent, the run has read from read_inbox: permit: an approval card pinned to these arguments: after untrusted reads/,
  );
  const pay = await run('pay', '--args', '{"to":"bob","amount":5}', '--read-from', 'read_inbox');
  assert.equal(pay.code, 0, pay.stderr);
  assert.match(pay.stdout, /: permit: held until the user confirms this exact call/);
  assert.match(pay.stdout, /\n {2}after a yes to pay earlier in the run: permit: an approval card pinned to these arguments/);
  assert.doesNotMatch(`${post.stdout}${pay.stdout}`, /declared gate/);
});

test("issue 46: keel policy schema shows the open_world attribute; explain of an open-world tool after untrusted reads names the values not the user's own", async () => {
  const schema = await keel(['policy', 'schema', '--plugins', WEB], env);
  assert.equal(schema.code, 0, schema.stderr);
  assert.match(
    schema.stdout,
    /entity Tool in \[Plugin\] = \{ effect: String, gate: String, plugin: String, output: String, open_world: Bool \}/,
  );
  const file = join(home, 'docs.cedar');
  writeFileSync(
    file,
    `permit (principal, action == Keel::Action::"call", resource);
@id("docs-host")
@after_untrusted("allow")
permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"fetch_url")
when { resource.open_world && context.args.url like "https://docs.example.com/*" };
`,
  );
  const run = (...args: string[]) => keel(['policy', 'explain', 'fetch_url', ...args, '--file', file, '--plugins', WEB], env);
  const docs = await run('--args', '{"url":"https://docs.example.com/guide"}', '--read-from', 'read_email');
  assert.equal(docs.code, 0, docs.stderr);
  assert.match(docs.stdout, /: permit: runs without a card after untrusted reads, by policy docs-host\n/);
  const out = await run('--args', '{"url":"https://collect.mallory.example/c?d=481923"}', '--untrusted');
  assert.equal(out.code, 0, out.stderr);
  assert.match(
    out.stdout,
    /, the run has read untrusted content: permit: an approval card pinned to these arguments, unless every value is the user's own/,
  );
  assert.match(out.stdout, /url "https:\/\/collect\.mallory\.example\/c\?d=481923"/);
  const before = await run('--args', '{"url":"https://collect.mallory.example/c?d=481923"}');
  assert.match(
    before.stdout,
    /: permit: runs without asking \(its gate: none\)\n {2}by policy0 \(docs\.cedar:1\)\n {2}after untrusted reads: permit: an approval card/,
  );
});

test('A9/PC8 (issue 47): keel policy explain says a confirm-once write a plain @approvers permit routes gets a routed card, never a confirmation', async () => {
  const file = join(home, 'routed.cedar');
  writeFileSync(
    file,
    'permit (principal, action == Keel::Action::"call", resource);\n\n@id("finance-pays")\n@approvers("finance")\npermit (principal, action == Keel::Action::"call", resource in Keel::Plugin::"payments");\n',
  );
  const run = (...args: string[]) => keel(['policy', 'explain', ...args, '--file', file, '--plugins', PAYMENTS], env);
  const pay = await run('pay', '--args', '{"to":"acme","amount":120}', '--as', 'bob:ops');
  assert.equal(pay.code, 0, pay.stderr);
  assert.match(
    pay.stdout,
    /^pay as bob \(token, groups ops\), mode agent: permit: an approval card pinned to these arguments \(routed to finance by @approvers\)\n/,
  );
  assert.match(pay.stdout, /\n {2}approvers: finance\n$/);
  // A read asks no one, routed or not: its declared gate.
  const lookup = await run('lookup', '--args', '{"name":"acme"}', '--as', 'bob:ops');
  assert.equal(lookup.code, 0, lookup.stderr);
  assert.match(lookup.stdout, /mode agent: permit: runs without asking \(its gate: none\)\n/);
});

test('keel policy explain: bad JSON, a bad mode, arguments the tool refuses, an unknown token or tool, and no policy file are exit 2, one line each', async () => {
  const file = join(home, 'bad.cedar');
  writeFileSync(file, POLICY);
  const cases: [string[], RegExp][] = [
    [['send_email', '--args', '{to:'], /--args is not JSON/],
    [['send_email', '--args', '[1]'], /--args must be a JSON object/],
    [['send_email', '--args', '{"to":"a","subject":"b"}', '--mode', 'plann'], /--mode must be one of agent, plan, goal, got "plann"/],
    [['send_email', '--args', '{"to":1}'], /the arguments of send_email: /],
    [['send_email', '--args', '{"to":"a","subject":"b"}', '--as', 'nobody'], /--as nobody: no active token of that name/],
    [['nope', '--args', '{}'], /no tool named nope is mounted/],
  ];
  for (const [args, message] of cases) {
    const r = await keel(['policy', 'explain', ...args, '--file', file, ...P], env);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, message);
  }
  const none = await keel(['policy', 'check', ...P], env);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /no policy file: name one, or set policy_file:/);
});
