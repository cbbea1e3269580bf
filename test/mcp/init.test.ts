import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { draftManifest, effectFromAnnotations, splitCommandLine } from '../../src/cli/plugins-init.js';
import { parseManifest } from '../../src/manifest/load.js';
import type { PluginReport } from '../../src/plugin-host/types.js';
import { keel as runCli, tempHome } from '../support/helpers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The real CLI (dist/), run from the project folder so bare server names resolve in its node_modules/.bin. */
function keel(args: string[], home: string): Promise<CliResult> {
  if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'plugins-init.js'))) {
    throw new Error('dist/ has no plugins init: run `npm run build` first');
  }
  return runCli(args, { KEEL_HOME: home });
}

// biome-ignore lint/suspicious/noTemplateCurlyInString: the manifest's own substitution syntax, passed through verbatim.
const GRAPH_PATH = '${KEEL_HOME}/graph.jsonl';

type Drafted = {
  name: string;
  mcp: { command: string; args?: string[]; env?: Record<string, string> };
  tools: Record<string, { effect: string; open_world?: boolean }>;
};

const effects = (m: Drafted) => Object.fromEntries(Object.entries(m.tools).map(([k, v]) => [k, v.effect]));
const worlds = (tools: Record<string, { open_world?: boolean }> | readonly { name: string; open_world?: boolean }[]) =>
  Array.isArray(tools)
    ? Object.fromEntries(tools.map((t) => [t.name, t.open_world]))
    : Object.fromEntries(Object.entries(tools).map(([k, v]) => [k, v.open_world]));

describe('keel plugins init --from-mcp (the real CLI)', () => {
  let home: string;
  before(() => {
    home = tempHome('keel-mcp-init-');
    mkdirSync(join(home, 'files'));
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  test('server-memory: effects follow the annotations, hints are comments, and the written plugin mounts cleanly', async () => {
    const out = join(home, 'memory-plugin');
    const r = await keel(
      ['plugins', 'init', '--from-mcp', 'mcp-server-memory', '--out', out, '--env', `MEMORY_FILE_PATH=${GRAPH_PATH}`],
      home,
    );
    assert.equal(r.code, 0, r.stderr);
    const file = join(out, 'plugin.yaml');
    assert.equal(
      r.stdout,
      `Wrote ${file}: 9 tools of memory-server (3 read, 3 write, 3 destructive).\nReview each effect, then: keel plugins check ${out}\n`,
    );
    const text = readFileSync(file, 'utf8');
    assert.match(text, /^# Drafted by `keel plugins init --from-mcp "mcp-server-memory"` from the tool annotations of memory-server/);
    assert.match(text, /REVIEW EACH EFFECT BEFORE MOUNTING/);
    assert.match(text, /\n {4}effect: destructive # readOnlyHint: false, destructiveHint: true; idempotentHint: true\n/);
    // O1: each tool's open_world, written from the server's openWorldHint, the hint beside it.
    assert.match(text, /\n {2}delete_entities:\n {4}effect: destructive # [^\n]*\n {4}open_world: false # openWorldHint: false\n/);
    assert.match(text, /\n {2}# Delete multiple entities and their associated relations from the knowledge graph\n {2}delete_entities:\n/);
    const m = parse(text) as Drafted;
    assert.equal(m.name, 'memory');
    assert.deepEqual(m.mcp, { command: 'mcp-server-memory', env: { MEMORY_FILE_PATH: GRAPH_PATH } });
    assert.deepEqual(effects(m), {
      create_entities: 'write',
      create_relations: 'write',
      add_observations: 'write',
      delete_entities: 'destructive',
      delete_observations: 'destructive',
      delete_relations: 'destructive',
      read_graph: 'read',
      search_nodes: 'read',
      open_nodes: 'read',
    });

    const check = await keel(['plugins', 'check', out, '--json'], home);
    assert.equal(check.code, 0, check.stderr + check.stdout);
    const { plugins, healthy } = JSON.parse(check.stdout) as { plugins: PluginReport[]; healthy: boolean };
    assert.equal(healthy, true);
    assert.deepEqual(
      plugins.map((p) => [p.name, p.status, p.degraded.length, p.drift.length]),
      [['memory', 'loaded', 0, 0]],
    );
    assert.deepEqual(Object.fromEntries(plugins[0].tools.map((t) => [t.name, t.effect])), effects(m));
    // server-memory says openWorldHint: false for every tool (the graph is a local file).
    assert.deepEqual(worlds(m.tools), Object.fromEntries(Object.keys(m.tools).map((k) => [k, false])));
    assert.deepEqual(worlds(plugins[0].tools), worlds(m.tools), 'plugins check shows what the draft declares');
  });

  test('an existing plugin.yaml is kept unless --force', async () => {
    const out = join(home, 'kept');
    mkdirSync(out);
    writeFileSync(join(out, 'plugin.yaml'), 'name: mine\n');
    const r = await keel(['plugins', 'init', '--from-mcp', 'mcp-server-memory', '--out', out], home);
    assert.equal(r.code, 2);
    assert.equal(r.stderr, `keel: ${join(out, 'plugin.yaml')} already exists: pass --force to overwrite it\n`);
    assert.equal(readFileSync(join(out, 'plugin.yaml'), 'utf8'), 'name: mine\n');
    const forced = await keel(['plugins', 'init', '--from-mcp', 'mcp-server-memory', '--out', out, '--force', '--name', 'graph'], home);
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal((parse(readFileSync(join(out, 'plugin.yaml'), 'utf8')) as Drafted).name, 'graph');
  });

  test('without --out the draft goes to stdout: server-filesystem confined to a temp dir', async () => {
    const files = join(home, 'files');
    const r = await keel(['plugins', 'init', '--from-mcp', `mcp-server-filesystem '${files}'`, '--name', 'files'], home);
    assert.equal(r.code, 0, r.stderr);
    const parsed = parseManifest(r.stdout, 'stdout', 'x');
    assert.ok(parsed.ok, `the printed draft is a valid manifest: ${JSON.stringify(parsed)}`);
    const m = parse(r.stdout) as Drafted;
    assert.deepEqual(m.mcp, { command: 'mcp-server-filesystem', args: [files] });
    const e = effects(m);
    assert.equal(e.read_text_file, 'read');
    assert.equal(e.list_directory, 'read');
    assert.equal(e.create_directory, 'write');
    assert.equal(e.write_file, 'destructive');
    assert.equal(e.edit_file, 'destructive');
    assert.equal(e.move_file, 'destructive');
    assert.equal(Object.keys(e).length, 14);
  });

  test('a server name that does not exist: exit 2 with the reason, nothing written', async () => {
    const out = join(home, 'nothing');
    const r = await keel(['plugins', 'init', '--from-mcp', 'keel-test-no-such-mcp-server --x', '--out', out], home);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^keel: MCP server `keel-test-no-such-mcp-server --x` did not start: command not found/);
    assert.equal(existsSync(join(out, 'plugin.yaml')), false);
  });

  test('a server whose names are not Keel names: the draft maps them, says so, and mounts (odd_names fixture)', async () => {
    const out = join(home, 'weather');
    const server = join(ROOT, 'test', 'fixtures', 'mcp', 'odd_names', 'server.mjs');
    const r = await keel(['plugins', 'init', '--from-mcp', `node ${server}`, '--out', out], home);
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(join(out, 'plugin.yaml'), 'utf8');
    const m = parse(text) as Drafted;
    assert.equal(m.name, 'weather-station', 'from the server name "Weather Station MCP"');
    assert.deepEqual(effects(m), { get_weather: 'read', reset_station: 'destructive', log_reading: 'write' });
    assert.match(text, /# the server calls it get-Weather\n {2}get_weather:/);
    assert.match(text, /reset_station:\n {4}effect: destructive # readOnlyHint unset, destructiveHint unset \(MCP default: true\)/);
    const check = await keel(['plugins', 'check', out, '--json'], home);
    assert.equal(check.code, 0, check.stdout);
  });

  test('O1: open_world per tool from openWorldHint — true, false, and unset (MCP default: true) — each with its hint as a comment; plugins check shows the same (world_hints fixture)', async () => {
    const out = join(home, 'world');
    const server = join(ROOT, 'test', 'fixtures', 'mcp', 'world_hints', 'server.mjs');
    const r = await keel(['plugins', 'init', '--from-mcp', `node ${server}`, '--out', out], home);
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(join(out, 'plugin.yaml'), 'utf8');
    assert.match(text, /open_world \(from openWorldHint\) says whether the arguments reach a party other than the user/);
    assert.match(text, /\n {2}lookup:\n {4}effect: read # [^\n]*\n {4}open_world: true # openWorldHint: true\n/);
    assert.match(text, /\n {2}tally:\n {4}effect: read # [^\n]*\n {4}open_world: false # openWorldHint: false\n/);
    assert.match(text, /\n {2}echo:\n {4}effect: read # [^\n]*\n {4}open_world: true # openWorldHint unset \(MCP default: true\)\n/);
    const want = { lookup: true, tally: false, echo: true };
    assert.deepEqual(worlds((parse(text) as Drafted).tools), want);
    const check = await keel(['plugins', 'check', out, '--json'], home);
    assert.equal(check.code, 0, check.stderr + check.stdout);
    assert.deepEqual(worlds((JSON.parse(check.stdout) as { plugins: PluginReport[] }).plugins[0].tools), want);
  });
});

describe('plugins init: drafting rules', () => {
  test('effects: readOnlyHint → read; destructiveHint false → write; destructiveHint true or unset (MCP default) → destructive', () => {
    assert.equal(effectFromAnnotations({ readOnlyHint: true }), 'read');
    assert.equal(effectFromAnnotations({ readOnlyHint: true, destructiveHint: true }), 'read');
    assert.equal(effectFromAnnotations({ readOnlyHint: false, destructiveHint: false }), 'write');
    assert.equal(effectFromAnnotations({ destructiveHint: true }), 'destructive');
    assert.equal(effectFromAnnotations({ idempotentHint: true }), 'destructive');
    assert.equal(effectFromAnnotations(undefined), 'destructive');
  });

  test('command lines: quotes group words, backslash escapes, an open quote is refused', () => {
    assert.deepEqual(splitCommandLine(`npx -y "@scope/server x" --dir '/a b' c\\ d ""`), [
      'npx',
      '-y',
      '@scope/server x',
      '--dir',
      '/a b',
      'c d',
      '',
    ]);
    assert.throws(() => splitCommandLine('node "server.mjs'), /unbalanced " in/);
  });

  test('two server names that map to one Keel name: the second is left out, with a comment saying why', () => {
    const draft = draftManifest({
      name: 'dup',
      commandLine: 'x',
      mcp: { command: 'x' },
      server: { name: 'x', version: '' },
      tools: [
        { name: 'get-item', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
        { name: 'get_item', inputSchema: { type: 'object' } },
      ],
    });
    assert.deepEqual(draft.tools, [{ name: 'get_item', mcp_name: 'get-item', effect: 'read' }]);
    assert.match(draft.yaml, /# get_item is not declared: its Keel name get_item is taken by another of this server's tools\./);
  });
});
