/**
 * `keel data reset`: each plugin that keeps data resets it. Never touches data of a plugin that
 * exports no reset.
 */
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { loadManifestFile } from '../manifest/load.js';
import { discoverPlugins, ENTRY_NAMES, importEntry } from './host.js';

export interface ResetRow {
  plugin: string;
  status: 'reset' | 'no data' | 'failed';
  message?: string;
}

/**
 * `keel data reset`: each plugin that keeps data exports `reset(home)`, which deletes and re-seeds
 * it. Plugins without one keep no data of their own.
 */
export async function resetPluginData(dirs: readonly string[], home: string): Promise<ResetRow[]> {
  const rows: ResetRow[] = [];
  for (const dir of discoverPlugins(dirs)) {
    const m = await loadManifestFile(join(dir, 'plugin.yaml'), basename(dir));
    const name = m.ok ? m.value.manifest.name : basename(dir);
    const entries = m.ok && m.value.manifest.entry ? [m.value.manifest.entry] : ENTRY_NAMES;
    const entry = entries.map((e) => join(dir, e)).find((f) => existsSync(f));
    if (!entry) {
      rows.push({ plugin: name, status: 'no data' });
      continue;
    }
    try {
      const mod = (await importEntry(entry)) as { reset?: unknown; default?: { reset?: unknown } };
      const reset = typeof mod.reset === 'function' ? mod.reset : mod.default?.reset;
      if (typeof reset !== 'function') {
        rows.push({ plugin: name, status: 'no data' });
        continue;
      }
      await reset(home);
      rows.push({ plugin: name, status: 'reset' });
    } catch (err) {
      rows.push({ plugin: name, status: 'failed', message: (err as Error).message });
    }
  }
  return rows;
}
