/**
 * R32: an application's own tools, declared in code — the same declaration fields as a manifest
 * entry (M2), checked by the same schema and rules with the same messages (M4), mounted through the
 * one path with the built-ins and the plugins (R1, R5, R6), gated (M3) and governed by the operator's
 * policy (R7) like a plugin's tools, and run by the one engine (R12, R15, A1, C5).
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { recordApprovalAnswer } from '../../src/approvals/respond.js';
import { renderPlugins } from '../../src/cli/render.js';
import { Registries } from '../../src/keel/registries.js';
import { collect, streamApprovalContinuation, streamResume, streamRun } from '../../src/loop/legs.js';
import { parseManifestFull } from '../../src/manifest/load.js';
import { type ScriptEntry, ScriptModel } from '../../src/models/script.js';
import { mountPlugins, type Registry, registryOf, withAppTools } from '../../src/plugin-host/host.js';
import type { PluginReport, Row } from '../../src/plugin-host/types.js';
import { ModeDenied } from '../../src/policy/modes.js';
import { confirmOnceFromEnv, OperatorPolicy } from '../../src/policy/operator.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { askUser, findTools } from '../../src/tools/builtins.js';
import { defineTool } from '../../src/tools/define.js';
import type { AppTool, Mode, ToolContext, ToolDefinition } from '../../src/types/index.js';
import { FIXTURES, tempHome } from '../support/helpers.js';

const scratch = tempHome('keel-app-tools-');
after(() => rmSync(scratch, { recursive: true, force: true }));

const ctx = (mode: Mode = 'agent'): ToolContext => ({
  run_id: 'r',
  call_id: 'c',
  mode,
  request: 'test',
  signal: new AbortController().signal,
});

/** What the app's tools did, in order. */
const done: string[] = [];
const NOTES = new Map([
  ['n1', 'buy milk'],
  ['n2', 'call Ana'],
]);

/** One tool of each effect, and the declaration fields around them. */
function appTools(): AppTool[] {
  return [
    defineTool({
      name: 'list_notes',
      description: 'List the saved notes',
      parameters: z.object({}),
      effect: 'read',
      answers_directly: true,
      execute: () => [...NOTES].map(([id, text]) => `${id}: ${text}`).join('\n'),
    }),
    defineTool({
      name: 'save_note',
      description: 'Save a note',
      parameters: z.object({ text: z.string() }),
      effect: 'write',
      guidance: 'Save one note per call.',
      execute: (args) => {
        done.push(`save ${args.text}`);
        return `Saved "${args.text}".`;
      },
    }),
    defineTool({
      name: 'delete_note',
      description: 'Delete a note for good',
      parameters: z.object({ id: z.string() }),
      effect: 'destructive',
      undo: 'restore_note',
      describe: (args) => ({ title: `Delete note ${args.id}`, lines: [NOTES.get(args.id) ?? '(no such note)'] }),
      execute: (args) => {
        done.push(`delete ${args.id}`);
        return `Deleted ${args.id}.`;
      },
    }),
    defineTool({
      name: 'restore_note',
      description: 'Restore a deleted note',
      parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      effect: 'write',
      confirm: 'never',
      execute: (args) => {
        done.push(`restore ${args.id}`);
        return `Restored ${args.id}.`;
      },
    }),
    defineTool({
      name: 'share_note',
      description: 'Share a note with someone',
      parameters: z.object({ id: z.string(), with: z.string() }),
      effect: 'write',
      approval: 'pinned',
      pinned: true,
      contract_modes: 'declare',
      execute: (args) => `Shared ${args.id} with ${args.with}.`,
    }),
  ];
}

function registries(opts: { policy?: OperatorPolicy; mode?: Mode } = {}): Registries {
  return new Registries({
    home: scratch,
    env: {},
    memory: null,
    policy: () => opts.policy ?? new OperatorPolicy([]),
    currentMode: (c) => opts.mode ?? c.mode,
    makeSubagents: () => undefined,
  });
}

function report(r: Registry, name: string): PluginReport {
  const p = r.plugins.find((x) => x.name === name);
  assert.ok(p, `no report ${name} in ${r.plugins.map((x) => x.name).join(', ')}`);
  return p;
}
const app = (r: Registry): PluginReport => {
  const p = report(r, 'app');
  assert.equal(p.source, 'code');
  return p;
};

/** A tool definition with no declaration, and any fields on top (built loose: many are mistakes on purpose). */
function loose(name: string, fields: Record<string, unknown>): AppTool {
  return { name, description: name, parameters: { type: 'object' }, execute: () => name, ...fields } as unknown as AppTool;
}

describe('R32/R1/R5: app tools mount through the one path, beside the built-ins and the plugins', () => {
  let r: Registry;
  const tools = appTools();
  before(async () => {
    r = await registries().mount([FIXTURES], tools);
  });
  after(() => r.close());

  test('R32: one of each effect is in the pool after the built-ins and before the plugins, declared as given', () => {
    const names = r.pool.map((t) => `${t.plugin}:${t.name}`);
    const firstApp = names.indexOf('app:list_notes');
    assert.deepEqual(names.slice(firstApp, firstApp + 5), [
      'app:list_notes',
      'app:save_note',
      'app:delete_note',
      'app:restore_note',
      'app:share_note',
    ]);
    assert.ok(
      names.slice(0, firstApp).every((n) => n.startsWith('core:')),
      names.join(),
    );
    assert.ok(names.slice(firstApp + 5).every((n) => !n.startsWith('core:') && !n.startsWith('app:')));
    for (const t of ['calendar_lookup', 'upcoming_dues', 'trash_email', 'ask_user']) assert.ok(r.byName.has(t), t);
    const del = r.byName.get('delete_note');
    assert.deepEqual(del?.declaration, {
      effect: 'destructive',
      confirm: undefined,
      approval: undefined,
      guidance: undefined,
      pinned: false,
      answers_directly: false,
      undo: 'restore_note',
      contract_modes: 'hide',
    });
    assert.equal(r.byName.get('save_note')?.declaration.guidance, 'Save one note per call.');
    assert.equal(r.byName.get('list_notes')?.declaration.answers_directly, true);
  });

  test('R32/M3/R8: the report lists them first as one row, app, loaded, each with effect, gate and via code', () => {
    assert.equal(r.plugins[0].name, 'app');
    const p = app(r);
    assert.deepEqual([p.status, p.version, p.dir, p.degraded, p.failures, p.drift], ['loaded', '', '', [], [], []]);
    assert.deepEqual(
      p.tools.map((t) => [t.name, t.effect, t.gate, t.via]),
      [
        ['list_notes', 'read', 'none', 'code'],
        ['save_note', 'write', 'confirm_once', 'code'],
        ['delete_note', 'destructive', 'approval', 'code'],
        ['restore_note', 'write', 'none', 'code'],
        ['share_note', 'write', 'approval', 'code'],
      ],
    );
    const share = p.tools.find((t) => t.name === 'share_note');
    assert.deepEqual([share?.pinned, share?.contract_modes], [true, 'declare']);
    // The rows are made when first read (issue 49): a copy, its JSON and a clone carry the same rows.
    assert.equal(p.tools, p.tools, 'made once');
    assert.deepEqual(JSON.parse(JSON.stringify(p)).tools, JSON.parse(JSON.stringify(p.tools)));
    assert.deepEqual(structuredClone(p).tools, p.tools);
    assert.deepEqual({ ...p }.tools, p.tools);
    assert.deepEqual(
      r.plugins.slice(1).map((x) => [x.name, x.status]),
      [
        ['calendar', 'loaded'],
        ['finance', 'loaded'],
        ['mail', 'loaded'],
      ],
    );
  });

  test('R8: keel plugins check prints the row as declared in code, its tools with effect and gate', () => {
    const text = renderPlugins(r.plugins);
    assert.match(text, /^app {2}.*LOADED.* {2}\(declared in code\)$/m);
    assert.match(text, /^ {2}delete_note +destructive +gate=approval +undo=restore_note$/m);
    assert.match(text, /^ {2}save_note +write +gate=confirm_once +guidance$/m);
  });

  test('R32: the same tools array on the same folders is mounted once; another array gets its own registry, the plugins set up once', async () => {
    const regs = registries();
    const a = await regs.mount([FIXTURES], tools);
    assert.equal(await regs.mount([FIXTURES], tools), a);
    assert.equal((await regs.forRun([FIXTURES], tools)).registry, a, 'a run with the same array shares it (and its menus)');
    const perRun = appTools();
    const b = (await regs.forRun([FIXTURES], perRun)).registry;
    assert.notEqual(b, a);
    assert.equal((await regs.forRun([FIXTURES], perRun)).registry, b);
    const plain = await regs.mount([FIXTURES]);
    assert.equal(
      plain.plugins.some((p) => p.source === 'code'),
      false,
      'no app row without app tools',
    );
    assert.equal(a.hooks, plain.hooks, 'one plugin mount under every list');
    assert.equal(report(a, 'mail'), report(plain, 'mail'));
    await regs.close();
  });

  test('C5: an app tool’s handler carries the fresh mode check', async () => {
    const regs = registries({ mode: 'plan' });
    const reg = await regs.mount([FIXTURES], appTools());
    await assert.rejects(async () => reg.byName.get('save_note')?.execute({ text: 'x' }, ctx('agent')), ModeDenied);
    assert.equal(await reg.byName.get('list_notes')?.execute({}, ctx('agent')), 'n1: buy milk\nn2: call Ana');
    await regs.close();
  });

  test('R32: mountPlugins takes the app tools itself (the same registry shape as through Registries)', async () => {
    const direct = await mountPlugins([FIXTURES], { home: scratch, builtins: [askUser], appTools: appTools() });
    assert.deepEqual(
      direct.pool.slice(0, 3).map((t) => t.name),
      ['ask_user', 'list_notes', 'save_note'],
    );
    assert.equal(direct.plugins[0].name, 'app');
    await direct.close();
  });
});

/** The message plugin.yaml gets for the same declaration (M4), without its place. */
function manifestMessage(tools: string, tool: string): string {
  const text = `name: p\nversion: 1.0.0\nprovides: [tool]\ntools:\n${tools}`;
  const res = parseManifestFull(text, 'plugin.yaml', 'p');
  assert.equal(res.ok, false, text);
  const issue = !res.ok ? res.issues.find((i) => i.tool === tool) : undefined;
  assert.ok(issue, `no issue for ${tool}`);
  return issue.message;
}

describe('R32/M4: each mistake is refused with the manifest’s message, naming the tool, the field and where', () => {
  const refused = (tools: AppTool[]): { r: Registry; rows: Row[] } => {
    const r = withAppTools(registryOf([askUser]), tools);
    return { r, rows: app(r).degraded };
  };
  const restore = loose('restore_x', { effect: 'write', confirm: 'never' });

  const cases: { title: string; tool: AppTool; yaml: string; field?: string }[] = [
    {
      title: 'an unknown field (the nearest one suggested)',
      tool: loose('bad_x', { effect: 'read', guidence: 'hi' }),
      yaml: '    effect: read\n    guidence: hi',
      field: 'guidence',
    },
    { title: 'an unknown effect', tool: loose('bad_x', { effect: 'delete' }), yaml: '    effect: delete', field: 'effect' },
    { title: 'no effect', tool: loose('bad_x', {}), yaml: '    pinned: true', field: 'effect' },
    {
      title: 'confirm on a read',
      tool: loose('bad_x', { effect: 'read', confirm: 'once' }),
      yaml: '    effect: read\n    confirm: once',
      field: 'confirm',
    },
    {
      title: 'approval on a destructive tool',
      tool: loose('bad_x', { effect: 'destructive', approval: 'pinned' }),
      yaml: '    effect: destructive\n    approval: pinned',
      field: 'approval',
    },
    {
      title: 'approval with confirm',
      tool: loose('bad_x', { effect: 'write', approval: 'pinned', confirm: 'never' }),
      yaml: '    effect: write\n    approval: pinned\n    confirm: never',
      field: 'approval',
    },
    {
      title: 'undo on a write',
      tool: loose('bad_x', { effect: 'write', confirm: 'never', undo: 'restore_x' }),
      yaml: '    effect: write\n    confirm: never\n    undo: restore_x\n  restore_x:\n    effect: write\n    confirm: never',
      field: 'undo',
    },
    {
      title: 'undo naming a confirm-once write',
      tool: loose('bad_x', { effect: 'destructive', undo: 'remind_x' }),
      yaml: '    effect: destructive\n    undo: remind_x\n  remind_x:\n    effect: write',
      field: 'undo',
    },
    {
      title: 'answers_directly on a gated write',
      tool: loose('bad_x', { effect: 'write', answers_directly: true }),
      yaml: '    effect: write\n    answers_directly: true',
      field: 'answers_directly',
    },
    {
      title: 'contract_modes on a read',
      tool: loose('bad_x', { effect: 'read', contract_modes: 'declare' }),
      yaml: '    effect: read\n    contract_modes: declare',
      field: 'contract_modes',
    },
    {
      title: 'a wrong type',
      tool: loose('bad_x', { effect: 'read', pinned: 'yes' }),
      yaml: '    effect: read\n    pinned: "yes"',
      field: 'pinned',
    },
  ];
  for (const c of cases) {
    test(`M4: ${c.title}`, () => {
      const extra = c.title.startsWith('undo naming')
        ? [loose('remind_x', { effect: 'write' })]
        : c.title === 'undo on a write'
          ? [restore]
          : [];
      const { r, rows } = refused([loose('fine_x', { effect: 'read' }), c.tool, ...extra]);
      assert.equal(r.byName.has('bad_x'), false, 'never reaches the pool');
      assert.ok(r.byName.has('fine_x'), 'the others still mount');
      assert.equal(app(r).status, 'degraded');
      const mine = rows.filter((x) => x.tool === 'bad_x');
      assert.equal(mine.length, 1, JSON.stringify(rows));
      assert.equal(mine[0].kind, 'declaration_error');
      assert.equal(mine[0].field, c.field);
      assert.equal(mine[0].message, `tools[1] (bad_x).${c.field}: ${manifestMessage(`  bad_x:\n${c.yaml}\n`, 'bad_x')}`);
    });
  }

  test('M4: undo naming a tool that is not among the app tools (a plugin’s is not enough)', () => {
    const { r, rows } = refused([loose('wipe_x', { effect: 'destructive', undo: 'restore_email' })]);
    assert.equal(r.byName.has('wipe_x'), false);
    assert.deepEqual(
      rows.map((x) => [x.kind, x.tool, x.field, x.message]),
      [
        [
          'declaration_error',
          'wipe_x',
          'undo',
          "tools[0] (wipe_x).undo: undo tool 'restore_email' is not declared among the valid tools declared in code",
        ],
      ],
    );
  });

  test('M4: an undo tool refused for its own mistake takes the destructive tool with it, each with its own row', () => {
    const { r, rows } = refused([
      loose('wipe_x', { effect: 'destructive', undo: 'restore_x' }),
      loose('restore_x', { effect: 'write', confirm: 'never', colour: 1 }),
    ]);
    assert.equal(r.byName.has('wipe_x') || r.byName.has('restore_x'), false);
    assert.deepEqual(
      rows.map((x) => x.message),
      [
        "tools[0] (wipe_x).undo: undo tool 'restore_x' is not declared among the valid tools declared in code",
        "tools[1] (restore_x).colour: unknown field 'colour'",
      ],
    );
  });

  test('M4: a bad name, and a name that is not a string', () => {
    const { r, rows } = refused([
      loose('Delete-Note', { effect: 'read' }),
      loose('', { effect: 'read' }),
      { effect: 'read' } as unknown as AppTool,
      loose('__proto__', { effect: 'read' }),
    ]);
    assert.deepEqual(
      rows.map((x) => [x.kind, x.message]),
      [
        ['declaration_error', `tools[0] (Delete-Note): ${manifestMessage('  Delete-Note:\n    effect: read\n', 'Delete-Note')}`],
        ['invalid_tool', "tools[1]: 'name' must be a non-empty string"],
        ['invalid_tool', "tools[2]: 'name' must be a non-empty string"],
        ['declaration_error', "tools[3] (__proto__): '__proto__' cannot be used as a name"],
      ],
    );
    assert.deepEqual(
      r.pool.map((t) => t.name),
      ['ask_user'],
    );
  });

  test('R6: a name given twice among the app tools refuses both', () => {
    const { r, rows } = refused([
      loose('note_x', { effect: 'read' }),
      loose('other_x', { effect: 'read' }),
      loose('note_x', { effect: 'destructive' }),
    ]);
    assert.equal(r.byName.has('note_x'), false);
    assert.ok(r.byName.has('other_x'));
    assert.deepEqual(
      rows.map((x) => [x.kind, x.tool, x.message]),
      [
        ['duplicate_tool', 'note_x', 'tools[0] (note_x): the name note_x is also given to tools[2]; both are refused'],
        ['duplicate_tool', 'note_x', 'tools[2] (note_x): the name note_x is also given to tools[0]; both are refused'],
      ],
    );
  });

  test('R6: a name given three times refuses all three, each naming the others in order', () => {
    const { r, rows } = refused([
      loose('note_x', { effect: 'read' }),
      loose('note_x', { effect: 'read' }),
      loose('other_x', { effect: 'read' }),
      loose('note_x', { effect: 'write' }),
    ]);
    assert.equal(r.byName.has('note_x'), false);
    assert.deepEqual(
      rows.map((x) => x.message),
      [
        'tools[0] (note_x): the name note_x is also given to tools[1] and tools[3]; all are refused',
        'tools[1] (note_x): the name note_x is also given to tools[0] and tools[3]; all are refused',
        'tools[3] (note_x): the name note_x is also given to tools[0] and tools[1]; all are refused',
      ],
    );
  });

  test('R1: a definition that cannot be a tool is refused (no execute; parameters that are not a JSON Schema)', () => {
    const { r, rows } = refused([
      loose('no_run', { effect: 'read', execute: undefined }),
      loose('bad_schema', { effect: 'read', parameters: { type: 'object', properties: { a: { type: 'strin' } } } }),
    ]);
    assert.equal(r.byName.has('no_run') || r.byName.has('bad_schema'), false);
    assert.equal(rows[0].message, "tools[0] (no_run): 'execute' must be a function");
    assert.match(rows[1].message, /^tools\[1\] \(bad_schema\): tool bad_schema: 'parameters' is not a valid JSON Schema/);
  });

  test('R32: a list that is not a list is a failed row, and nothing of it mounts', () => {
    const r = withAppTools(registryOf([askUser]), { name: 'x' } as unknown as AppTool[]);
    assert.deepEqual(
      [app(r).status, app(r).failures, app(r).degraded.map((x) => x.message)],
      ['failed', [], ['the tools declared in code must be a list of tool objects, got object']],
    );
    assert.deepEqual(
      r.pool.map((t) => t.name),
      ['ask_user'],
    );
  });
});

describe('R6/R5: app tools and the names others hold', () => {
  test('R5: a core name is refused, whether or not this mount offers that built-in', async () => {
    const regs = registries();
    const r = await regs.mount(
      [FIXTURES],
      [loose('ask_user', { effect: 'read' }), loose('memory_search', { effect: 'read' }), loose('mine_x', { effect: 'read' })],
    );
    assert.deepEqual(
      app(r).degraded.map((x) => [x.kind, x.tool, x.message]),
      [
        [
          'duplicate_tool',
          'ask_user',
          'tools[0] (ask_user): tool ask_user declared in code is refused: the core already registers that name',
        ],
        [
          'duplicate_tool',
          'memory_search',
          'tools[1] (memory_search): tool memory_search declared in code is refused: the core already registers that name',
        ],
      ],
    );
    assert.equal(r.byName.get('ask_user')?.plugin, 'core');
    assert.equal(r.byName.has('memory_search'), false, 'no store: no memory tools, and no app copy either');
    assert.ok(r.byName.has('mine_x'));
    await regs.close();
  });

  test('R6: an app tool and a plugin tool of one name are both refused and both reported', async () => {
    const regs = registries();
    const plain = await regs.mount([FIXTURES]);
    const r = await regs.mount([FIXTURES], [loose('list_x', { effect: 'read' }), loose('create_reminder', { effect: 'read' })]);
    assert.equal(r.byName.has('create_reminder'), false);
    assert.equal(
      r.pool.some((t) => t.name === 'create_reminder'),
      false,
    );
    assert.deepEqual(
      app(r).degraded.map((x) => [x.kind, x.tool, x.message]),
      [
        [
          'duplicate_tool',
          'create_reminder',
          'tools[1] (create_reminder): tool create_reminder declared in code is refused: plugin calendar registers the same name, so both are refused',
        ],
      ],
    );
    const cal = report(r, 'calendar');
    assert.equal(cal.status, 'degraded');
    assert.deepEqual(
      cal.tools.map((t) => t.name),
      ['calendar_lookup'],
    );
    assert.deepEqual(cal.degraded, [
      {
        kind: 'duplicate_tool',
        tool: 'create_reminder',
        message:
          'tool create_reminder of plugin calendar is withdrawn: a tool declared in code (tools[1] (create_reminder)) registers the same name, so both are refused',
      },
    ]);
    // The plugin folders' own mount is untouched: another list, or none, still has the plugin's tool.
    assert.equal(report(plain, 'calendar').status, 'loaded');
    assert.ok(plain.byName.has('create_reminder'));
    // A failure of the withdrawn plugin's other tool is charged in both views.
    const lookup = r.byName.get('calendar_lookup');
    assert.ok(lookup);
    r.chargeFailure(lookup);
    assert.deepEqual([cal.runtime_failures, report(plain, 'calendar').runtime_failures], [1, 1]);
    const mine = r.byName.get('list_x');
    assert.ok(mine);
    r.chargeFailure(mine);
    assert.equal(app(r).runtime_failures, 1);
    await regs.close();
  });
});

describe('R7/operator policy: KEEL_CONFIRM_ONCE_TOOLS and policy: rules govern app tools as plugin tools', () => {
  test('R7: KEEL_CONFIRM_ONCE_TOOLS adds an app write to the confirm-once set; none clears it', async () => {
    const added = await registries({
      policy: new OperatorPolicy([], confirmOnceFromEnv({ KEEL_CONFIRM_ONCE_TOOLS: 'restore_note' })),
    }).mount([FIXTURES], appTools());
    const row = app(added).tools.find((t) => t.name === 'restore_note');
    assert.deepEqual([row?.gate, row?.declared_gate, row?.gate_source], ['confirm_once', 'none', 'KEEL_CONFIRM_ONCE_TOOLS']);
    assert.equal(added.byName.get('restore_note')?.gate, 'confirm_once');
    const cleared = await registries({ policy: new OperatorPolicy([], confirmOnceFromEnv({ KEEL_CONFIRM_ONCE_TOOLS: 'none' })) }).mount(
      [FIXTURES],
      appTools(),
    );
    assert.deepEqual(
      app(cleared)
        .tools.filter((t) => t.effect !== 'read')
        .map((t) => [t.name, t.gate]),
      [
        ['save_note', 'none'],
        ['delete_note', 'approval'],
        ['restore_note', 'none'],
        ['share_note', 'approval'],
      ],
      'cards stay',
    );
  });

  test('operator policy: a policy: rule changes an app tool’s gate, denies one, and names it in the report; a rule that would loosen a card stops the mount', async () => {
    const file = join(scratch, 'config.yaml');
    writeFileSync(
      file,
      'policy:\n  tools:\n    save_*:\n      gate: none\n    list_notes:\n      gate: confirm_once\n    share_note:\n      deny: true\n',
    );
    const r = await registries({ policy: OperatorPolicy.load(file, {}) }).mount([FIXTURES], appTools());
    const rows = new Map(app(r).tools.map((t) => [t.name, t]));
    assert.deepEqual([rows.get('save_note')?.gate, rows.get('save_note')?.gate_source], ['none', `policy rule save_* (${file}:3:5)`]);
    assert.equal(rows.get('list_notes')?.gate, 'confirm_once');
    assert.equal(rows.get('share_note')?.denied, true);
    assert.deepEqual(r.policy?.unmatched, [], 'a rule naming only app tools matches');
    writeFileSync(file, 'policy:\n  tools:\n    delete_note:\n      gate: none\n');
    await assert.rejects(
      registries({ policy: OperatorPolicy.load(file, {}) }).mount([FIXTURES], appTools()),
      /delete_note is destructive: a rule may tighten it, never loosen it/,
    );
  });
});

describe('R12/R15/A1: runs through the engine with app tools', () => {
  let home: string;
  let store: SqliteStore;
  before(() => {
    home = tempHome('keel-app-runs-');
    store = new SqliteStore(join(home, 'keel.db'));
  });
  after(async () => {
    await store.close();
    rmSync(home, { recursive: true, force: true });
  });

  async function deps(entries: ScriptEntry[], policy?: OperatorPolicy, tools = appTools()) {
    const { registry } = await registries({ policy }).forRun([FIXTURES], tools);
    return { registry, model: new ScriptModel('app-tools.yaml', entries), store, countTokens: false };
  }

  test('R15/R16: an app write is held for confirmation, then runs once the user says yes', async () => {
    done.length = 0;
    const d = await deps([
      { tool_calls: [{ id: 'w1', name: 'save_note', args: { text: 'milk' } }] },
      { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Save the note "milk"?' } }] },
      { tool_calls: [{ id: 'w2', name: 'save_note', args: { text: 'milk' } }] },
      { text: 'Saved.' },
    ]);
    const first = await collect(streamRun(d, { message: 'save a note: milk' }));
    assert.equal(first.status, 'paused');
    assert.deepEqual(
      first.steps.map((s) => [s.call_id, s.outcome]),
      [['w1', 'held_for_confirmation']],
    );
    assert.deepEqual(first.confirm?.tools, ['save_note']);
    assert.deepEqual(done, [], 'nothing written before consent');
    const end = await collect(streamResume(d, first.run_id, { text: 'yes', confirm: true }));
    assert.equal(end.status, 'done', end.answer ?? '');
    assert.equal(end.steps.find((s) => s.call_id === 'w2')?.outcome, 'ran');
    assert.deepEqual(done, ['save milk']);
  });

  test('R7: with a policy rule loosening the app write, the same call runs without holding', async () => {
    done.length = 0;
    const policy = new OperatorPolicy([{ pattern: 'save_note', at: 'config.yaml:3:5', gate: 'none' }]);
    const d = await deps([{ tool_calls: [{ id: 'w1', name: 'save_note', args: { text: 'eggs' } }] }, { text: 'Saved.' }], policy);
    const r = await collect(streamRun(d, { message: 'save a note: eggs' }));
    assert.equal(r.status, 'done', r.answer ?? '');
    assert.equal(r.steps[0].outcome, 'ran');
    assert.deepEqual(done, ['save eggs']);
  });

  test('A1/A2/A6: an app destructive call makes a card from its describe, with the undo sentence; approved, it runs once', async () => {
    done.length = 0;
    const d = await deps([{ tool_calls: [{ id: 'd1', name: 'delete_note', args: { id: 'n1' } }] }, { text: 'Deleted the milk note.' }]);
    const first = await collect(streamRun(d, { message: 'delete the milk note' }));
    assert.equal(first.status, 'paused');
    assert.equal(first.reason, 'awaiting_approval');
    assert.ok(first.approval);
    const item = first.approval.card.items[0];
    assert.deepEqual([item.tool, item.title, item.lines], ['delete_note', 'Delete note n1', ['buy milk']]);
    assert.match(item.undo, /restore_note/);
    assert.deepEqual(done, [], 'never on the model’s word alone');
    const answered = await recordApprovalAnswer(store, first.approval.id, 'approve', 'ana', null, new Date());
    const end = await collect(streamApprovalContinuation(d, answered));
    assert.equal(end.status, 'done', end.answer ?? '');
    assert.deepEqual(done, ['delete n1']);
  });

  test('R12: an app read declared answers_directly ends the run on its output, with no further model call', async () => {
    const d = await deps([{ tool_calls: [{ id: 'l1', name: 'list_notes', args: {} }] }]);
    const r = await collect(streamRun(d, { message: 'what are my notes?' }));
    assert.equal(r.status, 'done', r.answer ?? '');
    assert.equal(r.reason, 'answered_by_tool');
    assert.equal(r.answer, 'n1: buy milk\nn2: call Ana');
    assert.equal(r.model_calls, 1);
  });

  test('C2/C3: in plan mode an app write declared for contract modes stays on the menu, labelled, and its call is denied; a hidden one leaves the menu', async () => {
    const d = await deps([
      { tool_calls: [{ id: 's1', name: 'share_note', args: { id: 'n1', with: 'ana' } }] },
      { text: 'Not in plan mode.' },
    ]);
    const r = await collect(streamRun(d, { message: 'share note n1 with ana', mode: 'plan' }));
    assert.equal(r.steps[0].outcome, 'denied_by_mode');
    const declared = new Map(r.requests[0].tools.map((t) => [t.name, t.available]));
    assert.equal(declared.get('share_note'), false);
    assert.equal(declared.has('save_note'), false, 'contract_modes: hide (the default)');
    assert.equal(declared.get('list_notes'), true);
  });

  test('R32: a run whose app tools were refused in part warns, naming the tool, the field and why', async () => {
    const d = await deps([{ text: 'Hello.' }], undefined, [...appTools(), loose('bad_x', { effect: 'read', confirm: 'never' })]);
    const r = await collect(streamRun(d, { message: 'hello' }));
    assert.deepEqual(r.warnings, [
      "the tools declared in code (app) are degraded: tools[5] (bad_x).confirm: 'confirm' applies only to write tools; this tool is read",
    ]);
  });

  test('R11: an app tool’s guidance is in the prompt while it is on the menu', async () => {
    const d = await deps([{ text: 'Hello.' }]);
    const r = await collect(streamRun(d, { message: 'save a note' }));
    const req = r.requests[0];
    assert.ok(req.tools.some((t) => t.name === 'save_note'));
    assert.match(req.system, /Save one note per call\./);
  });
});

// Types: defineTool keeps the declaration and infers the arguments (compiled by `tsc`, never run).
export function typedExamples(): AppTool[] {
  const del: AppTool = defineTool({
    name: 'delete_x',
    description: 'd',
    parameters: z.object({ id: z.string() }),
    effect: 'destructive',
    undo: 'restore_x',
    describe: (args) => ({ title: args.id.toUpperCase(), lines: [] }),
    execute: async (args) => args.id.toUpperCase(),
  });
  const plain: ToolDefinition = defineTool({ name: 'x', description: 'd', parameters: z.object({}), execute: () => 'x' });
  // @ts-expect-error without an effect it is a plugin's definition, not an app tool
  const notApp: AppTool = defineTool({ name: 'x', description: 'd', parameters: z.object({}), execute: () => 'x' });
  // @ts-expect-error a misspelled declaration field
  defineTool({ name: 'x', description: 'd', parameters: z.object({}), efect: 'read', execute: () => 'x' });
  // @ts-expect-error an effect the manifest does not have
  defineTool({ name: 'x', description: 'd', parameters: z.object({}), effect: 'delete', execute: () => 'x' });
  void [plain, notApp, findTools];
  return [del];
}
