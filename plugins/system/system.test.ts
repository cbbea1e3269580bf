import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import type { PluginReport } from '../../src/plugin-host/types.js';
import { cleanup, mount, tempHome } from '../_test/fake-api.js';
import setup, { reset } from './index.js';

const DIR = dirname(fileURLToPath(import.meta.url));

const tool = (name: string, effect: 'read' | 'write' | 'destructive', via: 'registerTool' | 'declareTool' = 'registerTool') => ({
  name,
  effect,
  gate: effect === 'read' ? ('none' as const) : ('approval' as const),
  declared_gate: effect === 'read' ? ('none' as const) : ('approval' as const),
  pinned: false,
  answers_directly: false,
  guidance: false,
  contract_modes: 'hide' as const,
  output: 'trusted' as const,
  open_world: false,
  via,
});

const REPORTS: PluginReport[] = [
  {
    name: 'mail',
    version: '1.0.0',
    dir: '/p/mail',
    status: 'loaded',
    tools: [tool('search_inbox', 'read'), tool('trash_email', 'destructive'), tool('classify_email', 'read', 'declareTool')],
    failures: [],
    degraded: [],
    drift: [],
    runtime_failures: 0,
  },
  {
    name: 'quotes',
    version: '0.2.0',
    dir: '/p/quotes',
    status: 'degraded',
    tools: [tool('quote', 'read')],
    failures: [],
    degraded: [
      { kind: 'undeclared_tool', tool: 'buy', message: 'tool buy is registered by plugin quotes but not declared in its manifest' },
    ],
    drift: [
      { kind: 'declared_not_registered', tool: 'sell', message: "tool sell is declared in plugin quotes's manifest but never registered" },
    ],
    runtime_failures: 2,
  },
  {
    name: 'broken',
    version: '',
    dir: '/p/broken',
    status: 'failed',
    tools: [],
    failures: [{ kind: 'setup_failed', message: 'plugin broken: setup threw: no token' }],
    degraded: [],
    drift: [],
    runtime_failures: 0,
  },
];

describe('system plugin', () => {
  const homes: string[] = [];
  after(() => {
    for (const h of homes) cleanup(h);
  });

  it('registers system_health, read', async () => {
    const host = await mount(DIR, setup);
    homes.push(host.home);
    assert.deepEqual([...host.tools.keys()], ['system_health']);
    assert.equal(host.manifest.tools.system_health.effect, 'read');
  });

  it('reports each plugin with its status, tools by effect and its problems; no store yet on a fresh home', async () => {
    const host = await mount(DIR, setup, { plugins: REPORTS });
    homes.push(host.home);
    const r = await host.call('system_health', {});
    assert.equal(r.is_error, false);
    assert.match(
      r.content,
      /^Keel needs attention: plugin quotes is degraded; plugin broken is failed; plugin quotes had 2 tool failure\(s\)\./,
    );
    assert.match(r.content, /Plugins: 3 mounted, 1 loaded, 1 degraded, 1 failed\./);
    assert.match(r.content, / {2}mail 1\.0\.0: LOADED · 2 tools · 2 read, 1 destructive · 1 in its own loop\n/);
    assert.match(
      r.content,
      / {2}quotes 0\.2\.0: DEGRADED · 1 tool · 1 read · 1 refused, 1 drift, 2 tool failures at run time\n {6}undeclared_tool: tool buy is registered/,
    );
    assert.match(r.content, / {2}broken \?: FAILED · 0 tools · 1 failure\n {6}setup_failed: plugin broken: setup threw: no token/);
    assert.match(r.content, /Store: no store yet \(.*keel\.db does not exist/);
    assert.match(r.content, /Plugin data: none yet\./);
    assert.doesNotMatch(r.content, /search_inbox: read/);
    const v = await host.call('system_health', { verbose: true });
    assert.match(v.content, / {6}search_inbox: read, gate none\n {6}trash_email: destructive, gate approval/);
    assert.match(v.content, /classify_email: read, gate none, own loop/);
  });

  it('checks the store and the plugins’ data read-only with quick_check, and reports an unreadable file', async () => {
    const home = tempHome();
    homes.push(home);
    const store = new Database(join(home, 'keel.db'));
    store.exec('CREATE TABLE runs (id TEXT PRIMARY KEY); CREATE TABLE approvals (id TEXT)');
    store.close();
    mkdirSync(join(home, 'data'));
    const data = new Database(join(home, 'data', 'calendar.db'));
    data.exec('CREATE TABLE events (id INTEGER)');
    data.close();
    writeFileSync(join(home, 'data', 'broken.db'), 'this is not a database, just text that is long enough to have a header '.repeat(20));
    const host = await mount(DIR, setup, { home, plugins: [REPORTS[0]] });
    const r = await host.call('system_health', {});
    assert.match(r.content, /^Keel needs attention: broken\.db failed its check\./);
    assert.match(r.content, /Store: .*keel\.db: quick_check ok, 2 tables, \d+ KB\./);
    assert.match(r.content, / {2}calendar\.db: quick_check ok, 1 tables/);
    assert.match(r.content, / {2}broken\.db: cannot be read: file is not a database/);
    const healthy = await mount(DIR, setup, { home: tempHome(), plugins: [REPORTS[0]] });
    homes.push(healthy.home);
    assert.match((await healthy.call('system_health', {})).content, /^Keel is healthy\./);
    assert.equal((await healthy.call('system_health', { verbose: 'yes' })).is_error, true);
    await reset(home); // no data of its own: a no-op that must not throw
  });
});
