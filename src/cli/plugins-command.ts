/**
 * `keel plugins check|show` (R8), and `keel plugins init` from init-command.ts: each plugin's
 * status, tools, degraded and drift rows. Never opens the store (a plugin check reads no runs), and
 * never exits 0 when a plugin failed, is degraded or drifts.
 */
import type { Command } from 'commander';
import { KeelError } from '../util/errors.js';
import { type CommandContext, collectList, VERSION } from './context.js';
import { registerPluginsInit } from './init-command.js';

export function registerPlugins(program: Command, { io, getKeel, setCode }: CommandContext): void {
  const plugins = program.command('plugins').description('plugin manifests, registrations and drift');
  plugins
    .command('check')
    .description('mount plugins and report status, tools, degraded and drift rows (exit 1 when any is failed or degraded, or drifts)')
    .argument('[dirs...]', 'plugin folders, or plugin.yaml files (default KEEL_PLUGINS or the bundled plugins)')
    .option('--json', 'print JSON: plugins, healthy, counts; each problem with file, line and column')
    .action(async (dirs: string[], o: { json?: boolean }) => {
      const reg = await (await getKeel(false)).registry(dirs);
      const { registryHealthy } = await import('../plugin-host/host.js');
      const { renderPlugins } = await import('./render.js');
      const counts = {
        plugins: reg.plugins.length,
        failed: reg.plugins.filter((p) => p.status === 'failed').length,
        degraded: reg.plugins.filter((p) => p.status === 'degraded').length,
        drift: reg.plugins.reduce((n, p) => n + p.drift.length, 0),
      };
      if (counts.plugins === 0) {
        throw new KeelError(
          'bad_input',
          `no plugin in ${dirs.join(', ') || 'the plugin folders'}: a plugin folder holds a plugin.yaml, or folders that each do`,
        );
      }
      // One summary line: loaded, failed, degraded and drift together (the listing adds none of its own).
      const loaded = counts.plugins - counts.failed - counts.degraded;
      const summary = `${counts.plugins} plugin(s): ${loaded} loaded, ${counts.failed} failed, ${counts.degraded} degraded, ${counts.drift} drift row(s)\n`;
      io.out(
        o.json
          ? `${JSON.stringify({ plugins: reg.plugins, healthy: registryHealthy(reg), counts, policy: reg.policy })}\n`
          : `${renderPlugins(reg.plugins, false)}${(reg.policy?.unmatched ?? []).map((u) => `warning: ${u}\n`).join('')}${summary}`,
      );
      // Drift refuses nothing, but a manifest and its code that disagree are a mistake to fix: it fails the check.
      setCode(registryHealthy(reg) && counts.drift === 0 ? 0 : 1);
    });
  plugins
    .command('show')
    .description('one plugin: its status, its tools with effect and gate, its problems')
    .argument('<name>', 'plugin name')
    .option('-p, --plugins <dir>', 'plugin folder (repeatable)', collectList, [])
    .option('--json', 'print JSON')
    .action(async (name: string, o: { plugins: string[]; json?: boolean }) => {
      const { renderPlugins } = await import('./render.js');
      const reg = await (await getKeel(false)).registry(o.plugins);
      const p = reg.plugins.find((x) => x.name === name);
      if (!p) throw new KeelError('not_found', `no plugin named ${name} (found: ${reg.plugins.map((x) => x.name).join(', ') || 'none'})`);
      io.out(o.json ? `${JSON.stringify(p)}\n` : renderPlugins([p]));
      setCode(p.status === 'loaded' ? 0 : 1);
    });
  registerPluginsInit(plugins, io, VERSION);
}
