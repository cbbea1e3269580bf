// system: system_health reports every mounted plugin (status, tools by effect, refused, drifting and
// failing rows, run-time failures) from api.plugins(), and checks the store and the plugins' data
// files with SQLite's quick_check, opened read-only.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { PluginAPI, PluginReport } from '../../src/plugin-host/types.js';

/** Nothing to reset: system keeps no data of its own. `keel data reset` may still call it. */
export async function reset(_home: string): Promise<void> {}

function kb(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${Math.round(bytes / 1024)} KB`;
}

/** quick_check on a database opened read-only: 'ok', or what is wrong. */
export function checkDb(file: string): { ok: boolean; detail: string } {
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const rows = db.prepare('PRAGMA quick_check').all() as { quick_check: string }[];
    const problems = rows.map((r) => r.quick_check).filter((m) => m !== 'ok');
    const tables = (db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }).n;
    if (problems.length)
      return { ok: false, detail: `quick_check found ${problems.length} problem(s): ${problems.slice(0, 3).join('; ')}` };
    return { ok: true, detail: `quick_check ok, ${tables} tables, ${kb(statSync(file).size)}` };
  } catch (e) {
    return { ok: false, detail: `cannot be read: ${(e as Error).message}` };
  } finally {
    db?.close();
  }
}

function pluginLine(p: PluginReport, verbose: boolean): string[] {
  const by = (effect: string) => p.tools.filter((t) => t.effect === effect).length;
  const own = p.tools.filter((t) => t.via === 'declareTool').length;
  const counts = [`${p.tools.length - own} tool${p.tools.length - own === 1 ? '' : 's'}`];
  const effects = ['read', 'write', 'destructive'].filter((e) => by(e) > 0).map((e) => `${by(e)} ${e}`);
  if (effects.length) counts.push(effects.join(', '));
  if (own) counts.push(`${own} in its own loop`);
  const issues: string[] = [];
  if (p.failures.length) issues.push(`${p.failures.length} failure${p.failures.length === 1 ? '' : 's'}`);
  if (p.degraded.length) issues.push(`${p.degraded.length} refused`);
  if (p.drift.length) issues.push(`${p.drift.length} drift`);
  if (p.runtime_failures) issues.push(`${p.runtime_failures} tool failure${p.runtime_failures === 1 ? '' : 's'} at run time`);
  const lines = [
    `  ${p.name} ${p.version || '?'}: ${p.status.toUpperCase()} · ${counts.join(' · ')}${issues.length ? ` · ${issues.join(', ')}` : ''}`,
  ];
  // Problems are always spelled out; the tool list only when asked.
  for (const r of [...p.failures, ...p.degraded, ...p.drift]) lines.push(`      ${r.kind}: ${r.message}`);
  if (verbose) {
    for (const t of p.tools) {
      const flags = [
        t.pinned && 'pinned',
        t.answers_directly && 'answers directly',
        t.undo && `undo ${t.undo}`,
        t.via === 'declareTool' && 'own loop',
      ].filter(Boolean);
      lines.push(`      ${t.name}: ${t.effect}, gate ${t.gate}${flags.length ? `, ${flags.join(', ')}` : ''}`);
    }
  }
  return lines;
}

function health(api: PluginAPI, args: Record<string, unknown>) {
  const verbose = args.verbose === true;
  const plugins = api.plugins();
  const out: string[] = [];
  const problems: string[] = [];
  const count = (s: string) => plugins.filter((p) => p.status === s).length;
  out.push(`Plugins: ${plugins.length} mounted, ${count('loaded')} loaded, ${count('degraded')} degraded, ${count('failed')} failed.`);
  for (const p of plugins) out.push(...pluginLine(p, verbose));
  for (const p of plugins) if (p.status !== 'loaded') problems.push(`plugin ${p.name} is ${p.status}`);
  const failing = plugins.filter((p) => p.runtime_failures > 0);
  for (const p of failing) problems.push(`plugin ${p.name} had ${p.runtime_failures} tool failure(s)`);

  const store = join(api.home, 'keel.db');
  if (!existsSync(store)) out.push('', `Store: no store yet (${store} does not exist; it is created by the first run).`);
  else {
    const c = checkDb(store);
    out.push('', `Store: ${store}: ${c.detail}.`);
    if (!c.ok) problems.push('the store failed its check');
  }
  const dataDir = join(api.home, 'data');
  const files = existsSync(dataDir)
    ? readdirSync(dataDir)
        .filter((f) => f.endsWith('.db'))
        .sort()
    : [];
  if (files.length) {
    out.push('Plugin data:');
    for (const f of files) {
      const c = checkDb(join(dataDir, f));
      out.push(`  ${f}: ${c.detail}`);
      if (!c.ok) problems.push(`${f} failed its check`);
    }
  } else out.push('Plugin data: none yet.');
  const verdict = problems.length ? `Keel needs attention: ${problems.join('; ')}.` : 'Keel is healthy.';
  return {
    content: `${verdict}\n${out.join('\n')}`,
    details: {
      healthy: problems.length === 0,
      problems,
      plugins: plugins.map((p) => ({ name: p.name, status: p.status, tools: p.tools.length })),
    },
  };
}

export default function setup(api: PluginAPI): void {
  api.registerTool({
    name: 'system_health',
    description:
      "Keel's health: each mounted plugin's status (loaded, degraded, failed) with its tools counted by effect and any refused, " +
      "drifting or failing rows, and a read-only integrity check of the store and of each plugin's data file.",
    parameters: {
      type: 'object',
      properties: { verbose: { type: 'boolean', description: 'Also list every tool with its effect and gate.' } },
      additionalProperties: false,
    },
    execute: (args) => health(api, args),
  });
}
