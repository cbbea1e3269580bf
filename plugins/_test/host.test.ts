// The reference plugins through the real plugin host (src/plugin-host), as `keel` mounts them: every
// plugin loads with no drift and no refusals, every plugin exports reset(home), and the host itself
// refuses a tool the email agent passes to declareTool without declaring it (R4).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { mountPlugins } from '../../src/plugin-host/host.js';
import { cleanup, tempHome } from './fake-api.js';

const PLUGINS = dirname(dirname(fileURLToPath(import.meta.url)));
const NAMES = readdirSync(PLUGINS)
  .filter((n) => existsSync(join(PLUGINS, n, 'plugin.yaml')))
  .sort();
const ctx = { run_id: 'r', call_id: 'c', mode: 'agent' as const, request: 'test', signal: new AbortController().signal };

describe('reference plugins in the real host', () => {
  const homes: string[] = [];
  after(() => {
    for (const h of homes) cleanup(h);
  });

  it('all eight mount LOADED, with no drift and nothing refused, each registering exactly what it declares', async () => {
    assert.deepEqual(NAMES, [
      'calendar',
      'code_exec',
      'email_workflows',
      'finance_workflows',
      'planner',
      'research',
      'system',
      'workspace',
    ]);
    const home = tempHome();
    homes.push(home);
    const reg = await mountPlugins([PLUGINS], { home });
    try {
      for (const p of reg.plugins) {
        assert.equal(p.status, 'loaded', `${p.name}: ${JSON.stringify([...p.failures, ...p.degraded])}`);
        assert.deepEqual(p.drift, [], p.name);
        const declared = Object.keys((parse(readFileSync(join(p.dir, 'plugin.yaml'), 'utf8')) as { tools: object }).tools);
        assert.deepEqual(p.tools.map((t) => t.name).sort(), declared.sort(), p.name);
      }
      // Keel's own manifest cache may appear; no plugin creates data before first use.
      assert.deepEqual(
        readdirSync(home).filter((f) => f !== 'cache'),
        [],
        'mounting creates no data: it is created on first use',
      );
      const health = await reg.byName.get('system_health')!.execute({}, ctx);
      assert.match(
        typeof health === 'string' ? health : health.content,
        /^Keel is healthy\.\nPlugins: 8 mounted, 8 loaded, 0 degraded, 0 failed\./,
      );
    } finally {
      await reg.close();
    }
  });

  it('every plugin exports reset(home), which (re)creates its data', async () => {
    const home = tempHome();
    homes.push(home);
    for (const name of NAMES) {
      const mod = (await import(pathToFileURL(join(PLUGINS, name, 'index.ts')).href)) as { reset?: (home: string) => Promise<void> };
      assert.equal(typeof mod.reset, 'function', name);
      await mod.reset!(home);
      await mod.reset!(home);
    }
    assert.deepEqual(readdirSync(join(home, 'data')).sort(), [
      'calendar.db',
      'email_workflows.db',
      'finance_workflows.db',
      'planner.db',
      'research.db',
    ]);
    assert.ok(existsSync(join(home, 'workspace', 'notes', 'todo.md')));
  });

  it('the host refuses an undeclared tool passed to declareTool: undefined, a degraded row, left out of the agent', async () => {
    const home = tempHome();
    homes.push(home);
    const dir = join(home, 'plugins', 'agent_probe');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'plugin.yaml'),
      'name: agent_probe\nversion: 1.0.0\nprovides: [tool]\ntools:\n  find_emails: {effect: read}\n  classify_email: {effect: read}\n  summarize_thread: {effect: read}\n',
    );
    const agent = pathToFileURL(join(PLUGINS, 'email_workflows', 'agent.ts')).href;
    writeFileSync(
      join(dir, 'index.ts'),
      `import { agentTools, buildToolbox } from ${JSON.stringify(agent)};
const rogue = { name: 'purge_mailbox', description: 'delete everything', parameters: { type: 'object' }, execute: () => 'gone' };
export default function setup(api) {
  const box = buildToolbox(api, [...agentTools(() => { throw new Error('no db in this probe'); }), rogue]);
  (globalThis as any).__agentProbe = { box: [...box.keys()], rogue: api.declareTool(rogue) };
}
`,
    );
    const reg = await mountPlugins([dir], { home });
    try {
      const probe = (globalThis as { __agentProbe?: { box: string[]; rogue: unknown } }).__agentProbe!;
      assert.equal(probe.rogue, undefined);
      assert.deepEqual(probe.box.sort(), ['classify_email', 'find_emails', 'summarize_thread']);
      const p = reg.plugins[0];
      assert.equal(p.status, 'degraded');
      assert.ok(p.degraded.every((r) => r.kind === 'undeclared_tool' && r.tool === 'purge_mailbox'));
      assert.match(p.degraded[0].message, /tool purge_mailbox is registered by plugin agent_probe but not declared in its manifest/);
      assert.equal(reg.byName.has('purge_mailbox'), false, 'never in the pool');
      assert.ok(p.tools.every((t) => t.via === 'declareTool'));
    } finally {
      await reg.close();
    }
  });
});
