import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Keel } from '../../src/keel/keel.js';
import { mountPlugins, type Registry, registryHealthy } from '../../src/plugin-host/host.js';
import {
  describeMcpCall,
  keelToolName,
  McpStartError,
  mcpResultOutput,
  resolveCommand,
  startMcpServer,
} from '../../src/plugin-host/mcp.js';
import type { PluginReport } from '../../src/plugin-host/types.js';
import { OperatorPolicy } from '../../src/policy/operator.js';
import type { ToolContext, ToolSpec } from '../../src/types/index.js';
import { json, keel, tempHome } from '../support/helpers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MCP = join(ROOT, 'test', 'fixtures', 'mcp');

const ctx = { run_id: 'r', call_id: 'c', mode: 'agent', request: 'test', signal: new AbortController().signal } as ToolContext;

function plugin(r: Registry, name: string): PluginReport {
  const p = r.plugins.find((x) => x.name === name);
  assert.ok(p, `no plugin ${name} in ${r.plugins.map((x) => x.name).join(', ')}`);
  return p;
}

function tool(r: Registry, name: string): ToolSpec {
  const t = r.byName.get(name);
  assert.ok(t, `no tool ${name} in the pool`);
  return t;
}

async function run(t: ToolSpec, args: Record<string, unknown>): Promise<{ content: string; is_error: boolean }> {
  const out = await t.execute(args, ctx);
  return typeof out === 'string' ? { content: out, is_error: false } : { content: out.content, is_error: out.is_error === true };
}

describe('MCP servers as plugins: server-memory and server-filesystem mount from their manifests', () => {
  let home: string;
  let r: Registry;
  before(async () => {
    home = tempHome('keel-mcp-mount-');
    mkdirSync(join(home, 'files'));
    writeFileSync(join(home, 'files', 'notes.txt'), 'first line\nsecond line\n');
    r = await mountPlugins([join(MCP, 'memory'), join(MCP, 'filesystem')], { home });
  });
  after(async () => {
    await r?.close();
    rmSync(home, { recursive: true, force: true });
  });

  test('R1: both load; each tool carries the effect and gate its manifest declares (not the annotations)', () => {
    assert.deepEqual(
      r.plugins.map((p) => [p.name, p.status, p.failures.length, p.degraded.length, p.drift.length]),
      [
        ['memory', 'loaded', 0, 0, 0],
        ['filesystem', 'loaded', 0, 0, 0],
      ],
    );
    assert.equal(registryHealthy(r), true);
    const rows = Object.fromEntries(plugin(r, 'memory').tools.map((t) => [t.name, `${t.effect}/${t.gate}`]));
    assert.deepEqual(rows, {
      create_entities: 'write/confirm_once',
      create_relations: 'write/confirm_once',
      add_observations: 'write/confirm_once',
      delete_entities: 'destructive/approval',
      delete_observations: 'destructive/approval',
      delete_relations: 'destructive/approval',
      read_graph: 'read/none',
      search_nodes: 'read/none',
      open_nodes: 'read/none',
    });
    // server-filesystem annotates create_directory as a non-destructive write: the manifest's
    // `confirm: never` decides its gate, and write_file (annotated destructive) is destructive because declared so.
    assert.equal(tool(r, 'create_directory').gate, 'none');
    assert.equal(tool(r, 'write_file').gate, 'approval');
    assert.equal(tool(r, 'read_text_file').plugin, 'filesystem');
    assert.equal(r.pool.length, 9 + 14);
  });

  test('the declaration the model sees is the server’s: description and input schema (without $schema)', () => {
    const t = tool(r, 'search_nodes');
    assert.match(t.description, /search/i, 'the server’s description');
    assert.equal('$schema' in t.parameters, false, 'the $schema keyword is dropped');
    assert.deepEqual(t.parameters.required, ['query']);
    assert.equal(t.checkArgs({}), "missing required argument 'query'");
  });

  test('execute calls tools/call and maps the content: text parts joined; a server-side error is is_error', async () => {
    const created = await run(tool(r, 'create_entities'), {
      entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }],
    });
    assert.equal(created.is_error, false, created.content);
    const found = await run(tool(r, 'search_nodes'), { query: 'program' });
    assert.match(found.content, /Ada/);
    const graph = readFileSync(join(home, 'memory.jsonl'), 'utf8');
    assert.match(graph, /"name":"Ada"/, 'MEMORY_FILE_PATH got KEEL_HOME substituted');

    const text = await run(tool(r, 'read_text_file'), { path: join(home, 'files', 'notes.txt') });
    assert.deepEqual(text, { content: 'first line\nsecond line\n', is_error: false });
    const outside = await run(tool(r, 'read_text_file'), { path: '/etc/hostname' });
    assert.equal(outside.is_error, true, 'the server refuses a path outside its directory');
    assert.match(outside.content, /outside allowed directories|Access denied/i);
  });

  test('A1: describe() names the MCP tool and shows each argument readably (approval cards)', () => {
    const card = tool(r, 'move_file').describe!({ source: '/a/old.txt', destination: '/a/new.txt' });
    assert.deepEqual(card, {
      title: 'move_file on MCP server secure-filesystem-server',
      lines: ['source: /a/old.txt', 'destination: /a/new.txt'],
    });
    const del = tool(r, 'delete_entities').describe!({ entityNames: ['Ada', 'Grace'] });
    assert.deepEqual(del.lines, ['entityNames: Ada, Grace']);
  });

  test('U1: an MCP server’s tools are output: untrusted unless the operator trusts that server (policy.trusted_mcp)', async () => {
    assert.equal(tool(r, 'read_text_file').declaration.output, 'untrusted');
    assert.equal(plugin(r, 'memory').tools.find((t) => t.name === 'read_graph')?.output, 'untrusted', 'plugins check shows it');
    const file = join(home, 'config.yaml');
    writeFileSync(file, 'policy:\n  trusted_mcp: [memory]\n');
    const trusted = await mountPlugins([join(MCP, 'memory'), join(MCP, 'filesystem')], { home, policy: OperatorPolicy.load(file, {}) });
    try {
      assert.equal(trusted.byName.get('read_graph')?.declaration.output, undefined, 'the operator trusts the memory server');
      assert.equal(trusted.byName.get('read_text_file')?.declaration.output, 'untrusted', 'but not the filesystem server');
    } finally {
      await trusted.close();
    }
    writeFileSync(file, 'policy:\n  trusted_mcp: memory\n');
    assert.throws(() => OperatorPolicy.load(file, {}), /config\.yaml:2:16: policy\.trusted_mcp: a list of plugin names/);
  });
});

describe('MCP: refused, drift, entry module, failures', () => {
  let home: string;
  let r: Registry;
  before(async () => {
    home = tempHome('keel-mcp-bad-');
    r = await mountPlugins(
      ['crashing', 'bad_substitution', 'memory_partial', 'missing_command'].map((d) => join(MCP, d)),
      { home },
    );
  });
  after(async () => {
    await r?.close();
    rmSync(home, { recursive: true, force: true });
  });

  test('R2: an MCP tool the manifest does not declare is refused with the usual degraded row', () => {
    const p = plugin(r, 'memory_partial');
    assert.equal(p.status, 'degraded');
    assert.deepEqual(p.degraded, [
      {
        kind: 'undeclared_tool',
        tool: 'delete_entities',
        message: 'tool delete_entities is registered by plugin memory_partial but not declared in its manifest (plugin.yaml tools:)',
      },
    ]);
    assert.equal(r.byName.has('delete_entities'), false, 'never reaches the pool');
    assert.equal(r.byName.has('read_graph'), true, 'the declared tools of the same server still mount');
  });

  test('R3: a declared tool the server does not offer is drift', () => {
    assert.deepEqual(plugin(r, 'memory_partial').drift, [
      {
        kind: 'declared_not_registered',
        tool: 'summarize_graph',
        message:
          "tool summarize_graph is declared in plugin memory_partial's manifest but never registered (its MCP server does not offer it)",
      },
    ]);
  });

  test('an entry module beside mcp: runs too', async () => {
    const t = tool(r, 'graph_file');
    assert.equal(t.plugin, 'memory_partial');
    assert.equal(await t.execute({}, ctx), join(home, 'memory.jsonl'));
  });

  test('a command that does not exist: the plugin fails with a row naming the command; the others mount', () => {
    const p = plugin(r, 'missing_command');
    assert.equal(p.status, 'failed');
    assert.deepEqual(p.tools, []);
    assert.equal(p.failures.length, 1);
    assert.equal(p.failures[0].kind, 'setup_failed');
    assert.match(
      p.failures[0].message,
      /^plugin missing_command: MCP server `keel-test-no-such-mcp-server --stdio` did not start: command not found \(looked in node_modules\/\.bin of \S+missing_command, its parent folders, then PATH\)$/,
    );
    assert.equal(p.drift.length, 0, 'a failed plugin reports no drift');
    assert.equal(plugin(r, 'memory_partial').tools.length, 9);
  });

  test('a server that exits before answering: the row carries the tail of its stderr', () => {
    const p = plugin(r, 'crashing');
    assert.equal(p.status, 'failed');
    assert.match(
      p.failures[0].message,
      /^plugin crashing: MCP server `node -e .*` exited \(or closed its output\) before it listed its tools/,
    );
    assert.match(p.failures[0].message, /its stderr ended with: fatal: WEATHER_API_KEY is not set/);
  });

  test('an unknown substitution variable fails the plugin and says which are known', () => {
    const p = plugin(r, 'bad_substitution');
    assert.equal(p.status, 'failed');
    assert.match(
      p.failures[0].message,
      /mcp\.env\.MEMORY_FILE_PATH: unknown substitution \$\{KEEL_HOM\} \(known: \$\{PLUGIN_DIR\}, \$\{KEEL_HOME\}\)/,
    );
  });

  test('R8: the registry is unhealthy', () => {
    assert.equal(registryHealthy(r), false);
  });
});

describe('MCP: start timeout, command resolution, result mapping', () => {
  test('a server that never answers fails within the timeout, and is stopped', async () => {
    const home = tempHome('keel-mcp-hang-');
    const started = Date.now();
    await assert.rejects(
      startMcpServer(
        { command: 'node', args: ['-e', 'console.error("listening…"); setInterval(() => {}, 1000)'] },
        { dir: home, home, timeoutMs: 400 },
      ),
      (err: Error) => {
        assert.ok(err instanceof McpStartError, `an McpStartError, got ${err}`);
        assert.match(err.message, /did not start and list its tools within 0\.4 s; its stderr ended with: listening…/);
        return true;
      },
    );
    assert.ok(Date.now() - started < 5000, 'it gave up on time');
    rmSync(home, { recursive: true, force: true });
  });

  test('command resolution: node is this Node; a relative path is the plugin folder’s; a bare name is looked up in node_modules/.bin', () => {
    assert.equal(resolveCommand('node', '/p').file, process.execPath);
    assert.equal(resolveCommand('./server.mjs', '/p/plug').file, '/p/plug/server.mjs');
    assert.equal(resolveCommand('bin/server', '/p/plug').file, '/p/plug/bin/server');
    assert.equal(resolveCommand('/usr/bin/env', '/p').file, '/usr/bin/env');
    assert.equal(resolveCommand('mcp-server-memory', join(MCP, 'memory')).file, join(ROOT, 'node_modules', '.bin', 'mcp-server-memory'));
    const elsewhere = tempHome('keel-mcp-bin-');
    assert.equal(resolveCommand('mcp-server-memory', elsewhere, ROOT).file, join(ROOT, 'node_modules', '.bin', 'mcp-server-memory'));
    mkdirSync(join(elsewhere, 'node_modules', '.bin'), { recursive: true });
    writeFileSync(join(elsewhere, 'node_modules', '.bin', 'mcp-server-memory'), '');
    assert.equal(resolveCommand('mcp-server-memory', elsewhere, ROOT).file, join(elsewhere, 'node_modules', '.bin', 'mcp-server-memory'));
    assert.equal(resolveCommand('keel-nothing-by-this-name', elsewhere, ROOT).file, 'keel-nothing-by-this-name');
    rmSync(elsewhere, { recursive: true, force: true });
  });

  test('result mapping: text joined, other parts named, structured content as details, isError kept', () => {
    assert.deepEqual(
      mcpResultOutput('t', {
        content: [
          { type: 'text', text: 'a' },
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
          { type: 'resource_link', uri: 'file:///x', name: 'x' },
          { type: 'text', text: 'b' },
        ],
      }),
      { content: 'a\n[image image/png, 3 bytes]\n[resource file:///x (x)]\nb', is_error: false },
    );
    assert.deepEqual(mcpResultOutput('t', { content: [], structuredContent: { n: 1 } }), {
      content: '{"n":1}',
      is_error: false,
      details: { n: 1 },
    });
    assert.deepEqual(mcpResultOutput('t', { content: [], isError: true }), {
      content: 'MCP tool t reported an error without a message',
      is_error: true,
    });
    assert.deepEqual(mcpResultOutput('t', { content: [{ type: 'text', text: 'no such file' }], isError: true }), {
      content: 'no such file',
      is_error: true,
    });
  });

  test('names and cards: a server name Keel cannot declare is normalised; long values are cut', () => {
    assert.equal(keelToolName('get-Weather.now'), 'get_weather_now');
    const card = describeMcpCall('write_file', 'fs', { path: '/a', content: `${'x'.repeat(300)}\nmore` });
    assert.deepEqual(card.lines, ['path: /a', `content: ${'x'.repeat(200)} … (2 lines, 305 chars)`]);
    assert.deepEqual(describeMcpCall('read_graph', 'memory', {}).lines, ['(no arguments)']);
  });
});

describe('MCP: a server whose tool names are not Keel names (test/fixtures/mcp/odd_names/server.mjs)', () => {
  let home: string;
  let r: Registry;
  before(async () => {
    home = tempHome('keel-mcp-odd-');
    r = await mountPlugins([join(MCP, 'odd_names')], { home });
  });
  after(async () => {
    await r?.close();
    rmSync(home, { recursive: true, force: true });
  });

  test('get-Weather is declared and mounted as get_weather; both pages of tools/list are read; PLUGIN_DIR substituted', () => {
    const p = plugin(r, 'odd_names');
    assert.equal(p.status, 'loaded', JSON.stringify(p));
    assert.deepEqual(
      p.tools.map((t) => [t.name, t.effect, t.gate]),
      [
        ['get_weather', 'read', 'none'],
        ['reset_station', 'destructive', 'approval'],
        ['log_reading', 'write', 'none'],
      ],
    );
    assert.deepEqual(tool(r, 'get_weather').parameters, { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] });
  });

  test('calls use the server’s own name; text parts are joined; isError is kept', async () => {
    assert.deepEqual(await run(tool(r, 'get_weather'), { city: 'Oslo' }), { content: 'Oslo: 18°C\nlight wind', is_error: false });
    assert.deepEqual(await run(tool(r, 'get_weather'), { city: 'Atlantis' }), { content: 'no station in Atlantis', is_error: true });
    assert.equal(tool(r, 'reset_station').describe!({}).title, 'reset_station on MCP server Weather Station MCP');
  });
});

describe('O1: an MCP tool is open_world as its manifest declares; a manifest that leaves it out takes the server’s openWorldHint (unset: true)', () => {
  // test/fixtures/mcp/world_hints/server.mjs: lookup openWorldHint true, tally false, echo unset.
  // world_hints declares no open_world; world_declared declares each against its hint.
  const HINTS = join(MCP, 'world_hints');
  const DECLARED = join(MCP, 'world_declared');
  const fromHint = { lookup: true, tally: false, echo: true };
  const declared = { lookup: false, tally: true, echo: false };
  let home: string;
  before(() => {
    home = tempHome('keel-mcp-world-');
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  const worlds = (rows: readonly { name: string; open_world?: boolean }[]) => Object.fromEntries(rows.map((t) => [t.name, t.open_world]));

  for (const [dir, want, why] of [
    [HINTS, fromHint, 'absent from the manifest, the hint decides (unset → MCP’s default, true)'],
    [DECLARED, declared, 'the manifest’s value wins over the hint, either way'],
  ] as const) {
    test(`mounting ${dir.split('/').pop()}: ${why}; the gate and plugins check see the same`, async () => {
      const r = await mountPlugins([dir], { home });
      try {
        assert.equal(registryHealthy(r), true, JSON.stringify(r.plugins));
        assert.deepEqual(
          Object.fromEntries(['lookup', 'tally', 'echo'].map((n) => [n, tool(r, n).declaration.open_world])),
          want,
          'the declaration the gate reads',
        );
        assert.deepEqual(worlds(plugin(r, dir.split('/').pop() ?? '').tools), want, 'the plugin report’s rows');
      } finally {
        await r.close();
      }
    });
  }

  test('keel plugins check --json and keel.tools() show open_world for each', async () => {
    for (const [dir, want] of [
      [HINTS, fromHint],
      [DECLARED, declared],
    ] as const) {
      const check = await keel(['plugins', 'check', dir, '--json'], { KEEL_HOME: home });
      assert.equal(check.code, 0, check.stderr + check.stdout);
      const { plugins } = json<{ plugins: PluginReport[] }>(check);
      assert.deepEqual(worlds(plugins[0].tools), want, `plugins check ${dir}`);
      const k = new Keel({ home });
      try {
        assert.deepEqual(worlds(await k.tools({ pluginDirs: [dir] })), want, `keel.tools() ${dir}`);
      } finally {
        await k.close();
      }
    }
    // The text report names it too: only where it is true.
    const text = await keel(['plugins', 'check', HINTS], { KEEL_HOME: home });
    assert.equal(text.code, 0, text.stderr);
    const line = (name: string) => text.stdout.split('\n').find((l) => new RegExp(`\\b${name}\\b`).test(l)) ?? '';
    assert.match(line('lookup'), /open_world/);
    assert.doesNotMatch(line('tally'), /open_world/);
  });
});
