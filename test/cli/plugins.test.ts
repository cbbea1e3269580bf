import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { PluginReport } from '../../src/plugin-host/types.js';
import { keel as runCli, tempHome } from '../support/helpers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const _BIN = join(ROOT, 'bin', 'keel.js');
const GOOD = join(ROOT, 'test', 'fixtures', 'plugins');
const BAD = join(ROOT, 'test', 'fixtures', 'bad-plugins');
const home = tempHome('keel-cli-plugins-');
after(() => rmSync(home, { recursive: true, force: true }));

before(() => {
  // The CLI runs from dist/; `npm ci` builds it (prepare). Build only when it is missing.
  if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js'))) {
    execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  }
});

interface Cli {
  code: number;
  stdout: string;
  stderr: string;
}

/** The real CLI in a child process, with a private KEEL_HOME. */
function keel(args: string[], env: Record<string, string> = {}): Promise<Cli> {
  return runCli(args, { KEEL_HOME: home, ...env });
}

function parse<T>(r: Cli): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${r.code}):\n${r.stdout}\nstderr:\n${r.stderr}`);
  }
}

const byName = (plugins: PluginReport[]) => Object.fromEntries(plugins.map((p) => [p.name, p]));

describe('R8: keel plugins check --json', () => {
  test('R8: all loaded → exit 0; per plugin status, tools (effect, gate, pinned, answers_directly, guidance), degraded, drift, failures', async () => {
    const r = await keel(['plugins', 'check', GOOD, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const out = parse<{ healthy: boolean; plugins: PluginReport[] }>(r);
    assert.equal(out.healthy, true);
    assert.deepEqual(
      out.plugins.map((p) => p.name),
      ['calendar', 'finance', 'mail'],
    );
    for (const p of out.plugins) {
      assert.deepEqual(Object.keys(p).sort(), [
        'degraded',
        'dir',
        'drift',
        'failures',
        'name',
        'runtime_failures',
        'status',
        'tools',
        'version',
      ]);
      assert.equal(p.status, 'loaded');
      assert.deepEqual([p.degraded, p.drift, p.failures], [[], [], []]);
      assert.equal(p.dir, join(GOOD, p.name));
    }
    const mail = byName(out.plugins).mail;
    assert.equal(mail.version, '1.0.0');
    const row = (name: string) => {
      const t = mail.tools.find((x) => x.name === name);
      assert.ok(t, name);
      return { effect: t.effect, gate: t.gate, pinned: t.pinned, answers_directly: t.answers_directly, guidance: t.guidance };
    };
    assert.deepEqual(row('search_inbox'), { effect: 'read', gate: 'none', pinned: true, answers_directly: false, guidance: false });
    assert.deepEqual(row('inbox_digest'), { effect: 'read', gate: 'none', pinned: false, answers_directly: true, guidance: false });
    assert.deepEqual(row('trash_email'), {
      effect: 'destructive',
      gate: 'approval',
      pinned: false,
      answers_directly: false,
      guidance: false,
    });
    assert.deepEqual(row('restore_email'), { effect: 'write', gate: 'none', pinned: false, answers_directly: false, guidance: false });
    assert.deepEqual(row('send_email'), { effect: 'write', gate: 'approval', pinned: false, answers_directly: false, guidance: false });
    assert.equal(mail.tools.find((t) => t.name === 'trash_email')?.undo, 'restore_email');
    assert.equal(byName(out.plugins).calendar.tools.find((t) => t.name === 'create_reminder')?.gate, 'confirm_once');
  });

  test('R8: guidance is reported as present or not', async () => {
    const out = parse<{ plugins: PluginReport[] }>(await keel(['plugins', 'check', join(BAD, 'mixed', 'a_good'), '--json']));
    assert.deepEqual(
      out.plugins[0].tools.map((t) => [t.name, t.guidance]),
      [['good_lookup', true]],
    );
  });

  test('R8: a degraded plugin → exit 1, with its degraded row', async () => {
    const r = await keel(['plugins', 'check', join(BAD, 'undeclared'), '--json']);
    assert.equal(r.code, 1);
    const out = parse<{ healthy: boolean; plugins: PluginReport[] }>(r);
    assert.equal(out.healthy, false);
    const [p] = out.plugins;
    assert.equal(p.status, 'degraded');
    assert.deepEqual(
      p.tools.map((t) => t.name),
      ['list_files'],
    );
    assert.deepEqual(p.degraded, [
      {
        kind: 'undeclared_tool',
        tool: 'delete_files',
        message: 'tool delete_files is registered by plugin sneaky but not declared in its manifest (plugin.yaml tools:)',
      },
    ]);
  });

  test('R8: failed plugins → exit 1, each with its failure rows; the good ones still listed as loaded', async () => {
    const r = await keel(['plugins', 'check', join(BAD, 'mixed'), '--json']);
    assert.equal(r.code, 1);
    const p = byName(parse<{ plugins: PluginReport[] }>(r).plugins);
    assert.deepEqual(
      Object.entries(p).map(([n, x]) => `${n}:${x.status}`),
      [
        'a_good:loaded',
        'bad_export:failed',
        'bad_params:degraded',
        'bad_yaml_syntax:failed',
        'm_good_mjs:loaded',
        'no_entry:failed',
        'not_mapping:failed',
        'setup_throws:failed',
        'z_good_ts:loaded',
      ],
    );
    assert.deepEqual(
      p.bad_yaml_syntax.failures.map((f) => f.kind),
      ['manifest_error'],
    );
    assert.match(p.bad_yaml_syntax.failures[0].message, /bad_yaml_syntax\/plugin\.yaml:6:13: plugin bad_yaml_syntax: YAML does not parse/);
    assert.deepEqual(
      p.setup_throws.failures.map((f) => [f.kind, f.message]),
      [['setup_failed', 'plugin setup_throws: setup threw: database connection refused']],
    );
    assert.deepEqual(p.setup_throws.tools, []);
    assert.deepEqual(
      p.no_entry.failures.map((f) => f.kind),
      ['entry_missing'],
    );
    assert.equal(p.bad_params.degraded.length, 5);
  });

  test('R8: drift refuses nothing but fails the check (exit 1), counted and reported', async () => {
    const r = await keel(['plugins', 'check', join(BAD, 'drift', 'declared_only'), join(BAD, 'drift', 'provides_nothing'), '--json']);
    assert.equal(r.code, 1, r.stdout);
    const out = parse<{ plugins: PluginReport[]; counts: Record<string, number> }>(r);
    assert.deepEqual(out.counts, { plugins: 2, failed: 0, degraded: 0, drift: 2 });
    const p = byName(out.plugins);
    assert.deepEqual(
      p.declared_only.drift.map((d) => [d.kind, d.tool]),
      [['declared_not_registered', 'weather_alert']],
    );
    assert.deepEqual(
      p.provides_nothing.drift.map((d) => d.kind),
      ['provides_not_registered'],
    );
  });

  test('R7/R8: KEEL_PLUGINS picks the folders and KEEL_CONFIRM_ONCE_TOOLS shows in the gates', async () => {
    const r = await keel(['plugins', 'check', '--json'], { KEEL_PLUGINS: GOOD, KEEL_CONFIRM_ONCE_TOOLS: 'calendar_lookup' });
    assert.equal(r.code, 0, r.stderr);
    const cal = byName(parse<{ plugins: PluginReport[] }>(r).plugins).calendar;
    assert.equal(cal.tools.find((t) => t.name === 'calendar_lookup')?.gate, 'confirm_once');
    const plain = byName(parse<{ plugins: PluginReport[] }>(await keel(['plugins', 'check', GOOD, '--json'])).plugins).calendar;
    assert.equal(plain.tools.find((t) => t.name === 'calendar_lookup')?.gate, 'none');
  });
});

describe('R8: keel plugins check (text)', () => {
  test('R8: status per plugin, each tool with effect and gate, and a summary; exit 0', async () => {
    const r = await keel(['plugins', 'check', GOOD]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^mail 1\.0\.0 {2}LOADED {2}\(.*test\/fixtures\/plugins\/mail\)$/m);
    assert.match(r.stdout, /^ {2}trash_email +destructive +gate=approval +undo=restore_email$/m);
    assert.match(r.stdout, /^ {2}search_inbox +read +gate=none +pinned$/m);
    assert.match(r.stdout, /^ {2}inbox_digest +read +gate=none +answers_directly$/m);
    assert.match(r.stdout, /^ {2}create_reminder +write +gate=confirm_once$/m);
    // One summary line (issue 40: it was printed twice, in two wordings).
    assert.match(r.stdout, /^3 plugin\(s\): 3 loaded, 0 failed, 0 degraded, 0 drift row\(s\)$/m);
    assert.equal(r.stdout.match(/plugin\(s\):/g)?.length, 1);
    assert.equal(r.stderr, '');
  });

  test('R8: failed, degraded and drift rows are printed; exit 1', async () => {
    const r = await keel(['plugins', 'check', join(BAD, 'mixed'), join(BAD, 'drift')]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^setup_throws 1\.0\.0 {2}FAILED/m);
    assert.match(r.stdout, /^ {2}failed: plugin setup_throws: setup threw: database connection refused$/m);
    assert.match(r.stdout, /^ {2}failed: .*not_mapping\/plugin\.yaml:1:1: plugin not_mapping: the manifest must be a YAML mapping/m);
    assert.match(r.stdout, /^not_provided 0\.1\.0 {2}DEGRADED/m);
    assert.match(r.stdout, /^ {2}degraded: tool stray_tool is registered by plugin not_provided but not declared in its manifest/m);
    assert.match(r.stdout, /^ {2}drift: tool weather_alert is declared in plugin declared_only's manifest but never registered$/m);
    assert.match(r.stdout, /^12 plugin\(s\): 5 loaded, \d+ failed, \d+ degraded, \d+ drift row\(s\)$/m);
  });

  test('R8: a folder that does not exist → exit 2 with a clear message', async () => {
    const missing = join(home, 'no-such-plugins');
    const r = await keel(['plugins', 'check', missing]);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `keel: plugin folder not found: ${missing}\n`);
  });
});

describe('R8: keel plugins show NAME', () => {
  test('R8: --json prints that one plugin; exit 0 when loaded', async () => {
    const r = await keel(['plugins', 'show', 'mail', '--plugins', GOOD, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const p = parse<PluginReport>(r);
    assert.equal(p.name, 'mail');
    assert.equal(p.status, 'loaded');
    assert.deepEqual(
      p.tools.map((t) => `${t.name}:${t.effect}:${t.gate}`),
      [
        'search_inbox:read:none',
        'inbox_digest:read:none',
        'trash_email:destructive:approval',
        'restore_email:write:none',
        'send_email:write:approval',
      ],
    );
  });

  test('R8: text for a failed plugin, exit 1', async () => {
    const r = await keel(['plugins', 'show', 'setup_throws', '--plugins', join(BAD, 'mixed')]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^setup_throws 1\.0\.0 {2}FAILED/m);
    assert.match(r.stdout, /failed: plugin setup_throws: setup threw: database connection refused/);
    assert.doesNotMatch(r.stdout, /a_good/, 'only the named plugin is shown');
  });

  test('R8: a degraded plugin, exit 1', async () => {
    const r = await keel(['plugins', 'show', 'sneaky', '--plugins', join(BAD, 'undeclared'), '--json']);
    assert.equal(r.code, 1);
    assert.equal(parse<PluginReport>(r).status, 'degraded');
  });

  test('R8: an unknown plugin name → exit 2, naming it and listing what was found', async () => {
    const r = await keel(['plugins', 'show', 'nope', '--plugins', GOOD]);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, 'keel: no plugin named nope (found: calendar, finance, mail)\n');
  });
});

describe('R8: keel plugins check takes a plugin.yaml, and says when a folder holds no plugin', () => {
  test('a plugin.yaml path checks its plugin; an empty folder is refused with exit 2; a healthy set prints its counts', async () => {
    const one = await keel(['plugins', 'check', join(GOOD, 'calendar', 'plugin.yaml'), '--json']);
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual(
      parse<{ plugins: PluginReport[] }>(one).plugins.map((p) => p.name),
      ['calendar'],
    );
    const empty = tempHome('keel-empty-');
    const none = await keel(['plugins', 'check', empty]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no plugin in .*a plugin folder holds a plugin\.yaml/);
    const text = await keel(['plugins', 'check', GOOD]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /\d+ plugin\(s\): \d+ loaded, 0 failed, 0 degraded, 0 drift row\(s\)\n$/);
  });
});
