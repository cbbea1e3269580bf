/**
 * `keel/testing`: a small helper for a plugin's own tests. It mounts the plugin folder exactly as
 * Keel does (manifest checked, registrations matched against it) on a fresh home, and calls its
 * tools' handlers directly — so a test checks what the tools do and what the manifest says of them.
 * (The gate, cards and modes are Keel's: a run shows them; see `keel run --plugins DIR`.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mountPlugins, type Registry } from './plugin-host/host.js';
import type { PluginReport } from './plugin-host/types.js';
import type { Declaration } from './types/index.js';
import { KeelError } from './util/errors.js';

export interface PluginUnderTest {
  /** The plugin's report: status (loaded, degraded, failed), tools, refused and drift rows. */
  report: PluginReport;
  /** The home the plugin keeps its data in (a fresh temp folder unless given). */
  home: string;
  /** A tool's declaration from the manifest: its effect, gate and the rest. */
  declaration(name: string): Declaration;
  /** Calls a tool's handler with these arguments (checked against its schema first). */
  call(name: string, args?: Record<string, unknown>): Promise<{ content: string; is_error: boolean }>;
  close(): Promise<void>;
}

export async function mountForTest(dir: string, opts: { home?: string } = {}): Promise<PluginUnderTest> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), 'keel-plugin-test-'));
  const registry: Registry = await mountPlugins([dir], { home });
  const report = registry.plugins[0];
  if (!report) throw new KeelError('not_found', `no plugin in ${dir} (a plugin folder holds a plugin.yaml)`);
  const tool = (name: string) => {
    const t = registry.byName.get(name);
    if (!t) throw new KeelError('not_found', `${report.name} has no tool ${name} (it has: ${[...registry.byName.keys()].join(', ')})`);
    return t;
  };
  return {
    report,
    home,
    declaration: (name) => tool(name).declaration,
    async call(name, args = {}) {
      const t = tool(name);
      const problem = t.checkArgs(args);
      if (problem) return { content: `invalid arguments: ${problem}`, is_error: true };
      const out = await t.execute(args, {
        run_id: 'test',
        call_id: 'test',
        mode: 'agent',
        request: 'test',
        signal: new AbortController().signal,
      });
      return typeof out === 'string' ? { content: out, is_error: false } : { content: out.content, is_error: Boolean(out.is_error) };
    },
    async close() {
      await registry.close();
      if (!opts.home) rmSync(home, { recursive: true, force: true });
    },
  };
}
