import assert from 'node:assert/strict';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { discoverPlugins, mountPlugins, type Registry, registryHealthy } from '../../src/plugin-host/host.js';
import type { PluginReport } from '../../src/plugin-host/types.js';
import { confirmOnceFromEnv, OperatorPolicy } from '../../src/policy/operator.js';
import { askUser } from '../../src/tools/builtins.js';
import type { ToolContext } from '../../src/types/index.js';
import { tempHome } from '../support/helpers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const GOOD = join(ROOT, 'test', 'fixtures', 'plugins');
const BAD = join(ROOT, 'test', 'fixtures', 'bad-plugins');

const scratch = tempHome('keel-host-');
after(() => rmSync(scratch, { recursive: true, force: true }));

function mount(dirs: string[], extra: Partial<Parameters<typeof mountPlugins>[1]> = {}): Promise<Registry> {
  return mountPlugins(dirs, { home: scratch, ...extra });
}

function plugin(r: Registry, name: string): PluginReport {
  const p = r.plugins.find((x) => x.name === name);
  assert.ok(p, `no plugin ${name} in ${r.plugins.map((x) => x.name).join(', ')}`);
  return p;
}

const ctx = { run_id: 'r', call_id: 'c', mode: 'agent', request: 'test', signal: new AbortController().signal } as ToolContext;

describe('R2: an undeclared tool is refused and the plugin degraded', () => {
  test('R2: the undeclared tool never reaches the pool; the row names tool and plugin', async () => {
    const r = await mount([join(BAD, 'undeclared')]);
    const p = plugin(r, 'sneaky');
    assert.equal(p.status, 'degraded');
    assert.deepEqual(
      p.tools.map((t) => t.name),
      ['list_files'],
    );
    assert.equal(r.byName.has('delete_files'), false);
    assert.equal(
      r.pool.some((t) => t.name === 'delete_files'),
      false,
    );
    assert.ok(r.byName.has('list_files'), 'the declared tool of the same plugin still mounts');
    assert.deepEqual(p.degraded, [
      {
        kind: 'undeclared_tool',
        tool: 'delete_files',
        message: 'tool delete_files is registered by plugin sneaky but not declared in its manifest (plugin.yaml tools:)',
      },
    ]);
    assert.equal(registryHealthy(r), false);
  });
});

describe('R3: drift', () => {
  let r: Registry;
  before(async () => {
    r = await mount([join(BAD, 'drift')]);
  });

  test('R3: a declared tool never registered is a declared_not_registered row; the plugin stays loaded', () => {
    const p = plugin(r, 'declared_only');
    assert.equal(p.status, 'loaded');
    assert.deepEqual(p.drift, [
      {
        kind: 'declared_not_registered',
        tool: 'weather_alert',
        message: "tool weather_alert is declared in plugin declared_only's manifest but never registered",
      },
    ]);
    assert.ok(r.byName.has('weather_now'));
  });

  test('R3: provides tool with nothing registered is a provides_not_registered row', () => {
    const p = plugin(r, 'provides_nothing');
    assert.equal(p.status, 'loaded');
    assert.deepEqual(
      p.drift.map((d) => [d.kind, d.message]),
      [['provides_not_registered', "plugin provides_nothing provides 'tool' but registered none"]],
    );
  });

  test('R3: registering while provides lacks tool is registered_not_provided drift (and the tool is refused as undeclared)', () => {
    const p = plugin(r, 'not_provided');
    assert.equal(p.status, 'degraded');
    assert.deepEqual(
      p.drift.map((d) => d.kind),
      ['registered_not_provided'],
    );
    assert.deepEqual(
      p.degraded.map((d) => [d.kind, d.tool]),
      [['undeclared_tool', 'stray_tool']],
    );
    assert.equal(r.byName.has('stray_tool'), false);
  });

  test('R3: a tool that was registered but refused is a degraded row, not also drift', async () => {
    const bad = plugin(await mount([join(BAD, 'mixed')]), 'bad_params');
    assert.equal(bad.degraded.length, 5);
    assert.deepEqual(bad.drift, []);
  });
});

describe('R6/M4: bad plugins in one folder; the others still mount', () => {
  let r: Registry;
  let folder: string;
  before(async () => {
    // A temp copy, plus a plugin whose plugin.yaml cannot be read. Tests run as root, so chmod 000
    // would not stop the read; a directory named plugin.yaml does (EISDIR).
    folder = join(scratch, 'mixed');
    cpSync(join(BAD, 'mixed'), folder, { recursive: true });
    mkdirSync(join(folder, 'unreadable', 'plugin.yaml'), { recursive: true });
    writeFileSync(join(folder, 'unreadable', 'index.js'), 'export default () => {};\n');
    r = await mount([folder], { builtins: [askUser] });
  });

  test('R6: every plugin is reported, in folder order, with its own status', () => {
    assert.deepEqual(
      r.plugins.map((p) => [p.name, p.status]),
      [
        ['a_good', 'loaded'],
        ['bad_export', 'failed'],
        ['bad_params', 'degraded'],
        ['bad_yaml_syntax', 'failed'],
        ['m_good_mjs', 'loaded'],
        ['no_entry', 'failed'],
        ['not_mapping', 'failed'],
        ['setup_throws', 'failed'],
        ['unreadable', 'failed'],
        ['z_good_ts', 'loaded'],
      ],
    );
    assert.deepEqual(
      r.pool.map((t) => `${t.plugin}:${t.name}`),
      ['core:ask_user', 'a_good:good_lookup', 'bad_params:params_ok', 'm_good_mjs:mjs_echo', 'z_good_ts:ts_delete', 'z_good_ts:ts_restore'],
    );
    assert.equal(registryHealthy(r), false);
  });

  test('R6: good plugins keep their declarations (.js, .mjs and the TypeScript entry)', async () => {
    const good = plugin(r, 'a_good').tools[0];
    assert.deepEqual([good.name, good.effect, good.gate, good.guidance], ['good_lookup', 'read', 'none', true]);
    const mjs = r.byName.get('mjs_echo')!;
    assert.deepEqual([mjs.gate, mjs.declaration.answers_directly], ['none', true]);
    // The .ts entry ran through the TypeScript loader: its enum and closures work.
    const del = r.byName.get('ts_delete')!;
    assert.deepEqual([del.gate, del.declaration.undo], ['approval', 'ts_restore']);
    assert.equal(await del.execute({ ids: ['a', 'b'] }, ctx), 'deleted a,b');
  });

  test('M4: unreadable plugin.yaml → failed, naming the file and the reason', () => {
    const p = plugin(r, 'unreadable');
    assert.deepEqual(
      p.failures.map((f) => f.kind),
      ['manifest_error'],
    );
    assert.equal(
      p.failures[0].message,
      `${join(folder, 'unreadable', 'plugin.yaml')}:1:1: plugin unreadable: cannot read the manifest (EISDIR)`,
    );
  });

  test('M4: YAML syntax error → failed, with plugin.yaml:LINE:COL', () => {
    const p = plugin(r, 'bad_yaml_syntax');
    assert.equal(p.failures.length, 1);
    assert.equal(p.failures[0].kind, 'manifest_error');
    assert.ok(
      p.failures[0].message.startsWith(
        `${join(folder, 'bad_yaml_syntax', 'plugin.yaml')}:6:13: plugin bad_yaml_syntax: YAML does not parse`,
      ),
      p.failures[0].message,
    );
    assert.deepEqual(p.tools, []);
  });

  test('M4: YAML that is not a mapping → failed, named by its folder', () => {
    const p = plugin(r, 'not_mapping');
    assert.equal(p.failures[0].kind, 'manifest_error');
    assert.match(p.failures[0].message, /not_mapping\/plugin\.yaml:1:1: plugin not_mapping: the manifest must be a YAML mapping/);
  });

  test('M1: missing entry module → failed, saying where it looked', () => {
    const p = plugin(r, 'no_entry');
    assert.deepEqual(p.failures, [
      {
        kind: 'entry_missing',
        message: `plugin no_entry: no entry module in ${join(folder, 'no_entry')} (looked for index.ts, index.js, index.mjs)`,
      },
    ]);
    assert.equal(r.byName.has('orphan'), false);
  });

  test('M1: an entry without a default setup function → failed', () => {
    const p = plugin(r, 'bad_export');
    assert.deepEqual(
      p.failures.map((f) => [f.kind, f.message]),
      [['entry_failed', 'plugin bad_export: cannot load index.js: its default export is not a setup(api) function']],
    );
  });

  test('R6: setup that throws → failed; the tools and hooks it registered first are withdrawn', async () => {
    const p = plugin(r, 'setup_throws');
    assert.deepEqual(
      p.failures.map((f) => [f.kind, f.message]),
      [['setup_failed', 'plugin setup_throws: setup threw: database connection refused']],
    );
    assert.deepEqual(p.tools, []);
    assert.equal(r.byName.has('half_done'), false);
    assert.equal(
      r.pool.some((t) => t.name === 'half_done'),
      false,
    );
    // Only a_good's hook is left: the failed plugin's hook would block every call.
    assert.equal(r.hooks.onToolCall.length, 1);
    const e = { run_id: 'r', call_id: 'c', args: {}, mode: 'agent' as const };
    assert.equal(await r.hooks.onToolCall[0]({ ...e, tool: 'good_lookup' }), undefined);
    assert.deepEqual(await r.hooks.onToolCall[0]({ ...e, tool: 'blocked_by_a_good' }), { block: 'a_good says no' });
    // A failed plugin has no drift rows: nothing of it mounted.
    assert.deepEqual(p.drift, []);
  });

  test('R1: parameters that are not a JSON Schema object, or do not compile, are refused at registration', () => {
    const p = plugin(r, 'bad_params');
    const rows = Object.fromEntries(p.degraded.map((d) => [d.tool, d]));
    assert.deepEqual(Object.keys(rows).sort(), [
      'params_array_type',
      'params_bad_pattern',
      'params_bad_ref',
      'params_nonsense_type',
      'params_string',
    ]);
    for (const d of p.degraded) {
      assert.equal(d.kind, 'invalid_tool');
      assert.ok(d.message.startsWith(`plugin bad_params: tool ${d.tool}: 'parameters' `), d.message);
    }
    assert.match(rows.params_string.message, /must be a JSON Schema object/);
    assert.match(rows.params_array_type.message, /must describe an object \(type: object\), got type "array"/);
    assert.match(rows.params_nonsense_type.message, /is not a valid JSON Schema: .*properties\/a\/type/);
    assert.match(rows.params_bad_ref.message, /is not a valid JSON Schema: .*#\/definitions\/missing/);
    assert.match(rows.params_bad_pattern.message, /is not a valid JSON Schema: .*regular expression/i);
    for (const name of Object.keys(rows)) assert.equal(r.byName.has(name), false, name);
    // The one good tool of that plugin mounts and checks its arguments.
    const ok = r.byName.get('params_ok')!;
    assert.equal(ok.checkArgs({ a: 'x' }), undefined);
    assert.equal(ok.checkArgs({}), "missing required argument 'a'");
  });
});

describe('R6: two tools with one name', () => {
  let r: Registry;
  before(async () => {
    r = await mount([join(BAD, 'duplicates')], { builtins: [askUser] });
  });

  test('R6 (beyond): two plugins registering one name — both are refused and both reported, whichever folder sorts first', async () => {
    // The first folder must not win: a squatter's `effect: read` copy of a destructive tool would run with no card.
    const first = plugin(r, 'first');
    assert.equal(first.status, 'degraded');
    assert.deepEqual(first.degraded, [
      {
        kind: 'duplicate_tool',
        tool: 'shared_lookup',
        message: 'tool shared_lookup of plugin first is withdrawn: plugin second registers the same name, so both are refused',
      },
    ]);
    const second = plugin(r, 'second');
    assert.equal(second.status, 'degraded');
    assert.equal(r.byName.has('shared_lookup'), false, 'neither copy is in the pool');
    assert.equal(r.pool.filter((t) => t.name === 'shared_lookup').length, 0);
    assert.deepEqual(second.degraded[0], {
      kind: 'duplicate_tool',
      tool: 'shared_lookup',
      message: 'tool shared_lookup from plugin second is refused: plugin first registers the same name, so both are refused',
    });
    assert.deepEqual(
      second.tools.map((t) => t.name),
      ['second_only'],
    );
  });

  test('R6: registering the same name twice in one plugin keeps the first', async () => {
    const second = plugin(r, 'second');
    assert.deepEqual(
      second.degraded.map((d) => [d.kind, d.tool]),
      [
        ['duplicate_tool', 'shared_lookup'],
        ['duplicate_tool', 'second_only'],
      ],
    );
    assert.equal(await r.byName.get('second_only')!.execute({}, ctx), 'second only');
  });

  test('R6: a plugin cannot take a core built-in name', () => {
    const third = plugin(r, 'third_core');
    assert.equal(third.status, 'degraded');
    assert.deepEqual(third.degraded, [
      {
        kind: 'duplicate_tool',
        tool: 'ask_user',
        message: 'tool ask_user from plugin third_core is refused: the core already registers that name',
      },
    ]);
    assert.equal(r.byName.get('ask_user'), askUser);
    assert.deepEqual(
      r.pool.map((t) => t.name),
      ['ask_user', 'second_only', 'third_lookup'],
    );
  });

  test('R6: without the built-in, the same plugin would take the name (the refusal comes from MountOptions.builtins)', async () => {
    const bare = await mount([join(BAD, 'duplicates', 'third_core')]);
    assert.equal(plugin(bare, 'third_core').status, 'loaded');
    assert.equal(bare.byName.get('ask_user')?.plugin, 'third_core');
  });
});

describe('R4: declareTool for a plugin running its own loop', () => {
  let r: Registry;
  before(async () => {
    r = await mount([join(BAD, 'own_loop')]);
  });

  test('R4: setup may be async; mountPlugins waits for it', () => {
    // own_loop registers run_inbox_agent only after a timer inside its async setup.
    assert.ok(r.byName.has('run_inbox_agent'));
  });

  test('R4: the returned spec carries the declaration and gate; it does not enter the pool', async () => {
    const specs = JSON.parse((await r.byName.get('run_inbox_agent')!.execute({}, ctx)) as string);
    assert.equal(specs.draft_reply.plugin, 'own_loop');
    assert.equal(specs.draft_reply.gate, 'confirm_once');
    assert.deepEqual(specs.draft_reply.declaration, {
      effect: 'write',
      confirm: 'once',
      guidance: 'Draft, never send.',
      pinned: false,
      answers_directly: false,
      contract_modes: 'hide',
    });
    assert.equal(specs.archive_thread.gate, 'approval');
    assert.equal(specs.archive_thread.declaration.undo, 'unarchive_thread');
    assert.equal(specs.unarchive_thread.gate, 'none');
    assert.deepEqual(
      r.pool.map((t) => t.name),
      ['run_inbox_agent'],
    );
    const rows = plugin(r, 'own_loop').tools.map((t) => [t.name, t.via]);
    assert.deepEqual(rows, [
      ['draft_reply', 'declareTool'],
      ['archive_thread', 'declareTool'],
      ['unarchive_thread', 'declareTool'],
      ['run_inbox_agent', 'registerTool'],
    ]);
  });

  test('R4: an undeclared declareTool returns undefined and is recorded exactly as R2', async () => {
    const specs = JSON.parse((await r.byName.get('run_inbox_agent')!.execute({}, ctx)) as string);
    assert.equal(specs.forward_thread, null);
    const p = plugin(r, 'own_loop');
    assert.equal(p.status, 'degraded');
    assert.deepEqual(p.degraded, [
      {
        kind: 'undeclared_tool',
        tool: 'forward_thread',
        message: 'tool forward_thread is registered by plugin own_loop but not declared in its manifest (plugin.yaml tools:)',
      },
    ]);
    // Every declared tool was built, so no drift.
    assert.deepEqual(p.drift, []);
  });
});

describe('R1: a registered tool carries its declaration', () => {
  test('R1: effect, gate, pinned, answers_directly, undo come from its own manifest', async () => {
    const r = await mount([GOOD]);
    assert.ok(registryHealthy(r));
    const get = (n: string) => r.byName.get(n)!;
    assert.deepEqual([get('search_inbox').plugin, get('search_inbox').declaration.pinned], ['mail', true]);
    assert.equal(get('inbox_digest').declaration.answers_directly, true);
    assert.deepEqual([get('trash_email').gate, get('trash_email').declaration.undo], ['approval', 'restore_email']);
    assert.equal(get('send_email').gate, 'approval');
    assert.equal(get('restore_email').gate, 'none');
    assert.equal(get('create_reminder').gate, 'confirm_once');
    assert.equal(get('upcoming_dues').plugin, 'finance');
  });
});

describe('R7: KEEL_CONFIRM_ONCE_TOOLS', () => {
  const gates = (r: Registry) => Object.fromEntries(r.pool.map((t) => [t.name, t.gate]));
  let baseline: Record<string, string>;
  before(async () => {
    baseline = gates(await mount([GOOD], { policy: new OperatorPolicy([], confirmOnceFromEnv({})) }));
  });

  test('R7: KEEL_CONFIRM_ONCE_TOOLS parses a comma list; unset and empty change nothing; none clears', () => {
    assert.deepEqual(
      [...confirmOnceFromEnv({ KEEL_CONFIRM_ONCE_TOOLS: ' calendar_lookup , restore_email,,' }).add],
      ['calendar_lookup', 'restore_email'],
    );
    for (const v of [undefined, '', '  ']) {
      assert.deepEqual(
        confirmOnceFromEnv(v === undefined ? {} : { KEEL_CONFIRM_ONCE_TOOLS: v }),
        { add: new Set(), clear: false },
        String(v),
      );
    }
    for (const v of ['none', 'NONE', ' None ']) assert.equal(confirmOnceFromEnv({ KEEL_CONFIRM_ONCE_TOOLS: v }).clear, true, v);
  });

  test("R7: the core's default names no plugin tool", () => {
    assert.deepEqual(baseline, {
      calendar_lookup: 'none',
      create_reminder: 'confirm_once',
      upcoming_dues: 'none',
      flaky_quote: 'none',
      search_inbox: 'none',
      inbox_digest: 'none',
      trash_email: 'approval',
      restore_email: 'none',
      send_email: 'approval',
    });
  });

  test('R7: the override adds listed tools to confirm-once (a read and a confirm: never write), and only those', async () => {
    const policy = new OperatorPolicy(
      [],
      confirmOnceFromEnv({ KEEL_CONFIRM_ONCE_TOOLS: 'calendar_lookup,restore_email,trash_email,not_a_tool' }),
    );
    const r = await mount([GOOD], { policy });
    assert.deepEqual(gates(r), {
      ...baseline,
      calendar_lookup: 'confirm_once',
      restore_email: 'confirm_once',
      // Adding never weakens: a destructive tool keeps per-call approval.
      trash_email: 'approval',
    });
    assert.equal(plugin(r, 'calendar').tools.find((t) => t.name === 'calendar_lookup')?.gate, 'confirm_once');
  });

  test("R7: 'none' clears the confirm-once set: no write asks first; destructive tools and pinned writes keep their cards", async () => {
    const r = await mount([GOOD], { policy: new OperatorPolicy([], confirmOnceFromEnv({ KEEL_CONFIRM_ONCE_TOOLS: 'none' })) });
    assert.deepEqual(gates(r), { ...baseline, create_reminder: 'none' });
    const row = plugin(r, 'calendar').tools.find((t) => t.name === 'create_reminder');
    assert.deepEqual([row?.gate, row?.declared_gate, row?.gate_source], ['none', 'confirm_once', 'KEEL_CONFIRM_ONCE_TOOLS=none']);
  });
});

describe('M1: discovery', () => {
  test('M1: a folder holding plugin.yaml is one plugin', () => {
    assert.deepEqual(discoverPlugins([join(GOOD, 'mail')]), [join(GOOD, 'mail')]);
  });

  test('M1: otherwise each sub-folder holding plugin.yaml is a plugin, sorted; others are skipped', () => {
    const dir = join(scratch, 'discover');
    for (const name of ['zeta', 'alpha', 'notes']) mkdirSync(join(dir, name), { recursive: true });
    writeFileSync(join(dir, 'zeta', 'plugin.yaml'), 'name: zeta\nversion: 1.0.0\n');
    writeFileSync(join(dir, 'alpha', 'plugin.yaml'), 'name: alpha\nversion: 1.0.0\n');
    writeFileSync(join(dir, 'notes', 'README.md'), 'not a plugin\n');
    writeFileSync(join(dir, 'plugin.yaml.bak'), 'stray file\n');
    assert.deepEqual(discoverPlugins([dir]), [join(dir, 'alpha'), join(dir, 'zeta')]);
  });

  test('M1: several folders in order, each plugin once', () => {
    assert.deepEqual(discoverPlugins([GOOD, join(GOOD, 'calendar'), join(BAD, 'undeclared')]), [
      join(GOOD, 'calendar'),
      join(GOOD, 'finance'),
      join(GOOD, 'mail'),
      join(BAD, 'undeclared'),
    ]);
  });

  test('M1: a folder that does not exist (or is a file other than plugin.yaml) is an error naming it', async () => {
    const missing = join(scratch, 'no-such-folder');
    assert.throws(() => discoverPlugins([missing]), { message: `plugin folder not found: ${missing}` });
    assert.throws(() => discoverPlugins([join(GOOD, 'mail', 'index.js')]), /plugin folder not found: .*mail\/index\.js/);
    await assert.rejects(mount([missing]), /plugin folder not found/);
  });

  test('M1: a plugin.yaml path names its folder', () => {
    assert.deepEqual(discoverPlugins([join(GOOD, 'mail', 'plugin.yaml')]), [join(GOOD, 'mail')]);
  });
});

test('R8: a plugin whose manifest fails is reported under the name its manifest gives', async () => {
  const { mkdtempSync, mkdirSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { mountPlugins } = await import('../../src/plugin-host/host.js');
  const root = tempHome('keel-named-');
  mkdirSync(join(root, 'folder_name'));
  writeFileSync(
    join(root, 'folder_name', 'plugin.yaml'),
    'name: real_name\nversion: 1.0.0\nprovides: [tool]\ntools:\n  t:\n    effect: sideways\n',
  );
  const reg = await mountPlugins([root], { home: root });
  assert.equal(reg.plugins[0].name, 'real_name');
  assert.equal(reg.plugins[0].status, 'failed');
});
