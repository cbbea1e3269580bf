/**
 * Mounting plugins: loading their entries, registering their tools under their declarations, and
 * reporting what failed or drifted. Never registers a tool its manifest does not declare.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT } from '../config/paths.js';
import { ManifestCache } from '../manifest/cache.js';
import { formatIssue, loadManifestFile } from '../manifest/load.js';
import type { Declaration } from '../manifest/schema.js';
import { OperatorPolicy } from '../policy/operator.js';
import { definitionProblem, makeToolSpec } from '../tools/spec.js';
import type { AppTool, ToolDefinition, ToolSpec } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { APP_PLUGIN, appReport, appToolAt, checkAppTools } from './app-tools.js';
import { mcpOpenWorld } from './mcp-hints.js';
import type { PluginAPI, PluginReport, PluginSetup, Row, ToolCallHook, ToolResultHook, ToolRow } from './types.js';

export const ENTRY_NAMES = ['index.ts', 'index.js', 'index.mjs'];

/** Every tool that can be offered, the plugins' reports, and their hooks. */
export interface Registry {
  plugins: PluginReport[];
  /** The pool, in registration order: built-ins first, then the app's tools declared in code, then plugins in discovery order. */
  pool: ToolSpec[];
  byName: Map<string, ToolSpec>;
  hooks: { onToolCall: ToolCallHook[]; onToolResult: ToolResultHook[] };
  /** The operator policy the pool was mounted under, and its rules that match no tool. */
  policy?: { hash: string; unmatched: string[] };
  /** Charges a tool failure to the plugin that owns the tool. */
  chargeFailure(tool: ToolSpec): void;
  close(): Promise<void>;
}

/** A registry of these tools and no plugin (tests, benchmarks, an embedder's own pool). */
export function registryOf(pool: ToolSpec[]): Registry {
  return {
    plugins: [],
    pool,
    byName: new Map(pool.map((t) => [t.name, t])),
    hooks: { onToolCall: [], onToolResult: [] },
    chargeFailure() {},
    async close() {},
  };
}

export interface MountOptions {
  /** Keel's home (plugins keep data there). */
  home: string;
  /** Built-in tools, registered before any plugin so a plugin cannot take their names. */
  builtins?: ToolSpec[];
  /** Names no plugin may register (the core's own, whether or not this mount offers them). */
  reserved?: ReadonlySet<string>;
  /** The operator's policy (override and config rules): applied here, to every tool, once. */
  policy?: OperatorPolicy;
  /** Wraps every tool's handler (the fresh mode check, C5). */
  guard?: (tool: ToolSpec) => ToolSpec;
  /**
   * The application's own tools, declared in code (R32): checked and mounted after the built-ins,
   * before the plugins in pool order, reported as the row `app` (see withAppTools).
   */
  appTools?: readonly AppTool[];
}

/** What a mount decided by, kept so the application's tools can be mounted onto it later (withAppTools). */
interface MountState {
  /** How many tools at the head of the pool are built-ins. */
  builtins: number;
  /** The plugin whose tool holds each pooled name. */
  owner: ReadonlyMap<string, PluginReport>;
  /** Names two plugins registered: refused to both. */
  contested: ReadonlyMap<string, string[]>;
  reserved: ReadonlySet<string>;
  policy: OperatorPolicy;
  guard: (tool: ToolSpec) => ToolSpec;
  cache?: ManifestCache;
}
const mountStates = new WeakMap<Registry, MountState>();

/**
 * A folder that holds plugin.yaml is one plugin; otherwise each sub-folder holding plugin.yaml is.
 * Sorted by name so the pool order is stable.
 */
export function discoverPlugins(dirs: readonly string[]): string[] {
  const found: string[] = [];
  for (const d of dirs) {
    // A plugin.yaml names its folder.
    const given = resolve(d);
    const dir = basename(given) === 'plugin.yaml' && existsSync(given) && statSync(given).isFile() ? dirname(given) : given;
    if (!existsSync(dir) || !statSync(dir).isDirectory()) {
      throw new KeelError('config', `plugin folder not found: ${dir}`);
    }
    if (existsSync(join(dir, 'plugin.yaml'))) {
      found.push(dir);
      continue;
    }
    for (const name of readdirSync(dir).sort()) {
      const sub = join(dir, name);
      if (existsSync(join(sub, 'plugin.yaml')) && statSync(sub).isDirectory()) found.push(sub);
    }
  }
  return [...new Set(found)];
}

export async function importEntry(file: string): Promise<unknown> {
  // M1: a plugin outside Keel's own package that imports `keel` or `zod` and has no copy of its
  // own gets this Keel's (inside the package, both resolve as they are).
  if (!file.startsWith(PACKAGE_ROOT + sep)) (await import('./shared-packages.js')).sharePackagesWith(dirname(file));
  if (file.endsWith('.ts')) {
    // Lazy: only plugins written in TypeScript pay for the loader.
    const { tsImport } = await import('tsx/esm/api');
    return tsImport(pathToFileURL(file).href, import.meta.url);
  }
  return import(pathToFileURL(file).href);
}

function toolRow(spec: ToolSpec, via: ToolRow['via']): ToolRow {
  const d = spec.declaration;
  const p = spec.policy;
  // Assigned in the row's key order, each optional key only when set (issue 49: spreads of optional
  // parts were most of a row's cost in a cold process, 2,000 rows at once).
  const row: Partial<Record<keyof ToolRow, unknown>> = { declared_gate: p?.declared_gate ?? spec.gate };
  if (p?.gate_source) row.gate_source = p.gate_source;
  if (p?.rule) row.rule = p.rule;
  if (p?.deny) row.denied = true;
  if (p?.modes) row.modes = p.modes;
  row.name = spec.name;
  row.effect = d.effect;
  row.gate = spec.gate;
  row.pinned = d.pinned;
  row.answers_directly = d.answers_directly;
  row.guidance = Boolean(d.guidance?.trim());
  row.contract_modes = d.contract_modes;
  row.undo = d.undo;
  row.output = d.output ?? 'trusted';
  row.open_world = d.open_world === true;
  if (p?.after_untrusted) row.after_untrusted = p.after_untrusted;
  row.via = via;
  return row as ToolRow;
}

/**
 * The app report's tool rows (one per spec, in order), made when first read: a library's run never
 * reads them (issue 49: at 2,000 tools they were 2,000 objects of a cold first run, ~1-4 ms).
 * The guard changes a spec's handler only, which a row does not show. Assigning the list replaces it.
 */
function lazyRows(report: PluginReport, specs: readonly ToolSpec[]): void {
  let rows: ToolRow[] | undefined;
  Object.defineProperty(report, 'tools', {
    enumerable: true,
    configurable: true,
    get: () => (rows ??= specs.map((s) => toolRow(s, 'code'))),
    set: (v: ToolRow[]) => {
      rows = v;
    },
  });
}

/**
 * Mounts the built-ins, then the plugins of these folders, then — when given — the application's
 * own tools (withAppTools): one path for a run, `keel plugins check` and the tests.
 */
export async function mountPlugins(dirs: readonly string[], opts: MountOptions): Promise<Registry> {
  const base = await mountFolders(dirs, opts);
  if (opts.appTools === undefined) return base;
  try {
    return withAppTools(base, opts.appTools);
  } catch (err) {
    await base.close();
    throw err;
  }
}

async function mountFolders(dirs: readonly string[], opts: MountOptions): Promise<Registry> {
  const pool: ToolSpec[] = [];
  const byName = new Map<string, ToolSpec>();
  const owner = new Map<string, PluginReport>();
  /** Names two plugins registered: refused to both (and to any later one). */
  const contested = new Map<string, string[]>();
  /** Takes a registered tool back out of the pool; its plugin is degraded with a row saying why. */
  const withdraw = (report: PluginReport, name: string, message: string) => {
    const at = pool.findIndex((t) => t.name === name);
    if (at >= 0) pool.splice(at, 1);
    byName.delete(name);
    owner.delete(name);
    report.tools = report.tools.filter((t) => t.name !== name);
    report.degraded.push({ kind: 'duplicate_tool', tool: name, message });
    if (report.status === 'loaded') report.status = 'degraded';
  };
  const hooks: Registry['hooks'] = { onToolCall: [], onToolResult: [] };
  const closers: (() => void | Promise<void>)[] = [];
  const plugins: PluginReport[] = [];
  const manifestCache = opts.home ? ManifestCache.open(opts.home) : undefined;
  const policy = opts.policy ?? new OperatorPolicy([]);
  let policyError: Error | undefined;
  const reserved = opts.reserved ?? new Set<string>();
  const guard = opts.guard ?? ((t: ToolSpec) => t);
  for (const b of opts.builtins ?? []) {
    const g = guard(policy.apply(b));
    pool.push(g);
    byName.set(g.name, g);
  }

  for (const dir of discoverPlugins(dirs)) {
    const report: PluginReport = {
      name: basename(dir),
      version: '',
      dir,
      status: 'loaded',
      tools: [],
      failures: [],
      degraded: [],
      drift: [],
      runtime_failures: 0,
    };
    plugins.push(report);
    const loaded = await loadManifestFile(join(dir, 'plugin.yaml'), basename(dir), manifestCache);
    if (!loaded.ok) {
      // The name the manifest gives, when it got that far, so `plugins show NAME` finds it.
      report.name = loaded.issues[0]?.plugin ?? report.name;
      report.status = 'failed';
      const file = join(dir, 'plugin.yaml');
      report.failures = loaded.issues.map((i) => ({
        kind: 'manifest_error',
        tool: i.tool,
        message: formatIssue({ ...i, file }),
        file,
        line: i.line,
        column: i.col,
        ...(i.field ? { field: i.field } : {}),
      }));
      continue;
    }
    const { manifest, declarations } = loaded.value;
    report.name = manifest.name;
    report.version = manifest.version;
    const registeredNames = new Set<string>();
    // Names the plugin tried to register, refused or not: a refused tool is a degraded row, not drift.
    const attemptedNames = new Set<string>();
    let registerCalls = 0;

    const admit = (def: ToolDefinition, via: ToolRow['via']): ToolSpec | undefined => {
      const problem = definitionProblem(def);
      const name = typeof def?.name === 'string' ? def.name : undefined;
      if (name) attemptedNames.add(name);
      const refuse = (kind: Row['kind'], message: string) => {
        report.degraded.push({ kind, tool: name, message });
        return undefined;
      };
      if (problem) return refuse('invalid_tool', `plugin ${report.name}: ${problem}`);
      const declaration: Declaration | undefined = declarations.get(def.name);
      if (!declaration) {
        return refuse(
          'undeclared_tool',
          `tool ${def.name} is registered by plugin ${report.name} but not declared in its manifest (plugin.yaml tools:)`,
        );
      }
      if (
        via === 'registerTool' &&
        (byName.has(def.name) || registeredNames.has(def.name) || reserved.has(def.name) || contested.has(def.name))
      ) {
        // A core name is the core's whether or not this mount offers that built-in (no store: no memory tools).
        const core = reserved.has(def.name) || byName.get(def.name)?.plugin === 'core';
        const first = owner.get(def.name);
        if (!core && first && first !== report) {
          // Two plugins claim one name: neither gets it. Whichever folder sorts first must not win,
          // or a squatter's `effect: read` copy of a destructive tool would run with no card.
          withdraw(
            first,
            def.name,
            `tool ${def.name} of plugin ${first.name} is withdrawn: plugin ${report.name} registers the same name, so both are refused`,
          );
          contested.set(def.name, [first.name, report.name]);
          return refuse(
            'duplicate_tool',
            `tool ${def.name} from plugin ${report.name} is refused: plugin ${first.name} registers the same name, so both are refused`,
          );
        }
        if (!core && contested.has(def.name) && !registeredNames.has(def.name)) {
          return refuse(
            'duplicate_tool',
            `tool ${def.name} from plugin ${report.name} is refused: plugins ${contested.get(def.name)?.join(' and ')} already claim that name`,
          );
        }
        const other = core ? 'the core' : (first?.name ?? report.name);
        return refuse('duplicate_tool', `tool ${def.name} from plugin ${report.name} is refused: ${other} already registers that name`);
      }
      let spec: ToolSpec;
      // U1: an MCP server's results are others' words unless the operator trusts that server (policy.trusted_mcp).
      let declared =
        manifest.mcp && declaration.output !== 'untrusted' && !policy.trustsMcp(report.name)
          ? { ...declaration, output: 'untrusted' as const }
          : declaration;
      // O1: an MCP tool whose manifest leaves `open_world` out takes the server's openWorldHint (MCP's default: true).
      if (manifest.mcp && declared.open_world === undefined) declared = { ...declared, open_world: mcpOpenWorld(def) ?? true };
      try {
        spec = makeToolSpec(def, report.name, declared, manifestCache);
      } catch (err) {
        return refuse('invalid_tool', `plugin ${report.name}: ${(err as Error).message}`);
      }
      try {
        spec = policy.apply(spec);
      } catch (err) {
        // An operator rule that would loosen a card stops the whole start (after mounting, so the
        // plugin's own code cannot swallow it), with the rule's position.
        policyError ??= err as Error;
        return refuse('invalid_tool', `plugin ${report.name}: ${(err as Error).message}`);
      }
      registeredNames.add(def.name);
      report.tools.push(toolRow(spec, via));
      return guard(spec);
    };

    const api: PluginAPI = {
      name: manifest.name,
      dir,
      home: opts.home,
      registerTool(def) {
        registerCalls++;
        const spec = admit(def, 'registerTool');
        if (!spec) return;
        pool.push(spec);
        byName.set(spec.name, spec);
        owner.set(spec.name, report);
      },
      declareTool: (def) => admit(def, 'declareTool'),
      onToolCall: (fn) => void hooks.onToolCall.push(fn),
      onToolResult: (fn) => void hooks.onToolResult.push(fn),
      onClose: (fn) => void closers.push(fn),
      // Copies: a plugin reads every plugin's health, never edits it.
      plugins: () => structuredClone(plugins),
    };

    const entry = manifest.entry ? [manifest.entry] : ENTRY_NAMES;
    const entryFile = entry.map((e) => join(dir, e)).find((f) => existsSync(f));
    // An MCP plugin needs no entry module, unless its manifest names one.
    if (!entryFile && (!manifest.mcp || manifest.entry)) {
      report.status = 'failed';
      report.failures.push({
        kind: 'entry_missing',
        message: `plugin ${report.name}: no entry module in ${dir} (looked for ${entry.join(', ')})`,
      });
      continue;
    }
    let setup: PluginSetup = () => {};
    try {
      const mod = (entryFile ? await importEntry(entryFile) : { default: setup }) as { default?: unknown };
      // A .ts entry outside a `"type": "module"` package is compiled as CommonJS: its default
      // export then arrives wrapped as { default: { default: setup } }.
      const found = typeof mod.default === 'object' && mod.default !== null ? (mod.default as { default?: unknown }).default : mod.default;
      if (typeof found !== 'function') throw new Error('its default export is not a setup(api) function');
      setup = found as PluginSetup;
    } catch (err) {
      report.status = 'failed';
      report.failures.push({
        kind: 'entry_failed',
        message: `plugin ${report.name}: cannot load ${entryFile ? basename(entryFile) : 'its MCP server'}: ${(err as Error).message}`,
      });
      continue;
    }
    // Tools and hooks a failed setup registered before throwing are withdrawn: the plugin is out as a whole.
    const poolBefore = pool.length;
    const hooksBefore = { call: hooks.onToolCall.length, result: hooks.onToolResult.length };
    try {
      // The server's tools go through api.registerTool, so admit() decides each one (R1-R3).
      // The MCP SDK loads only for plugins that mount a server (it costs every command otherwise).
      if (manifest.mcp) await (await import('./mcp.js')).mountMcpServer(manifest.mcp, api);
      await setup(api);
    } catch (err) {
      for (const t of pool.splice(poolBefore)) {
        byName.delete(t.name);
        owner.delete(t.name);
      }
      hooks.onToolCall.splice(hooksBefore.call);
      hooks.onToolResult.splice(hooksBefore.result);
      report.tools = [];
      report.status = 'failed';
      const why = (err as Error)?.name === 'McpStartError' ? (err as Error).message : `setup threw: ${(err as Error).message}`;
      report.failures.push({ kind: 'setup_failed', message: `plugin ${report.name}: ${why}` });
      continue;
    }

    const provides = manifest.provides ?? [];
    for (const name of declarations.keys()) {
      if (!attemptedNames.has(name)) {
        report.drift.push({
          kind: 'declared_not_registered',
          tool: name,
          message: `tool ${name} is declared in plugin ${report.name}'s manifest but never registered${manifest.mcp ? ' (its MCP server does not offer it)' : ''}`,
        });
      }
    }
    if (provides.includes('tool') && registeredNames.size === 0) {
      report.drift.push({
        kind: 'provides_not_registered',
        message: `plugin ${report.name} provides 'tool' but registered none`,
      });
    }
    if (!provides.includes('tool') && registerCalls > 0) {
      report.drift.push({
        kind: 'registered_not_provided',
        message: `plugin ${report.name} registers tools but its manifest's 'provides' does not list 'tool'`,
      });
    }
    if (report.degraded.length > 0) report.status = 'degraded';
  }

  manifestCache?.save();
  if (policyError) {
    for (const c of closers.reverse()) await c();
    throw policyError;
  }
  const registry: Registry = {
    plugins,
    pool,
    byName,
    hooks,
    policy: policyReport(policy, byName),
    chargeFailure(tool) {
      const r = owner.get(tool.name);
      if (r) r.runtime_failures++;
    },
    async close() {
      for (const c of closers.reverse()) await c();
    },
  };
  mountStates.set(registry, {
    builtins: opts.builtins?.length ?? 0,
    owner,
    contested,
    reserved,
    policy,
    guard,
    cache: manifestCache,
  });
  return registry;
}

function policyReport(policy: OperatorPolicy, byName: ReadonlyMap<string, ToolSpec>): NonNullable<Registry['policy']> {
  return {
    hash: policy.hash,
    unmatched: policy.unmatched(byName.keys()).map((r) => `policy rule ${r.pattern} (${r.at}) matches no mounted tool`),
  };
}

/**
 * R32: the application's own tools, declared in code, mounted onto a registry of built-ins and
 * plugins. Each is checked as a manifest entry is (M4, app-tools.ts) and registered as a plugin's
 * tool is: a core name is refused (R5); a name a plugin registers refuses both, the plugin's tool
 * withdrawn and the plugin degraded, as two plugins taking one name are (R6); the spec gets its
 * declared gate (M3), the operator's policy (R7, the `policy:` rules; an invalid one is thrown, as a
 * mount throws it) and the handler guard (C5) the mount used. Refused tools never reach the pool;
 * each is a row of the report named `app` (`source: 'code'`), listed first, loaded or degraded (failed
 * when `tools` is not a list). The tools go after the built-ins, before the plugins, in pool order.
 *
 * `base` is not changed: the result is a new registry sharing its plugins' hooks, closers and
 * reports (a plugin report that loses a tool here is copied), so one mount of the plugin folders
 * serves every list of app tools — a list made for one run costs no plugin setup. Closing the
 * result closes `base`.
 */
export function withAppTools(base: Registry, tools: readonly AppTool[]): Registry {
  const firstPlugin = base.pool.findIndex((t) => t.plugin !== 'core');
  // A registry made otherwise (registryOf): no plugins to clash with, no policy, no guard.
  const st: MountState = mountStates.get(base) ?? {
    builtins: firstPlugin < 0 ? base.pool.length : firstPlugin,
    owner: new Map(),
    contested: new Map(),
    reserved: new Set(),
    policy: new OperatorPolicy([]),
    guard: (t) => t,
  };
  const report = appReport();
  const { candidates, rows, failed } = checkAppTools(tools);
  report.degraded.push(...rows);
  const byName = new Map(base.byName);
  /** Plugin reports copied because one of their tools is withdrawn here. */
  const copies = new Map<PluginReport, PluginReport>();
  const specs: ToolSpec[] = [];
  let policyError: Error | undefined;
  // A refusal's message names the tool's place in the list (`appToolAt`), made only for a refused tool.
  const refuse = (kind: Row['kind'], name: string, message: string) => void report.degraded.push({ kind, tool: name, message });
  for (let k = 0; k < candidates.length; k++) {
    const { index, def, declaration } = candidates[k];
    const name = def.name;
    const taken = base.byName.get(name);
    const plugin = st.owner.get(name);
    if (st.reserved.has(name) || taken?.plugin === 'core') {
      refuse(
        'duplicate_tool',
        name,
        `${appToolAt(index, name)}: tool ${name} declared in code is refused: the core already registers that name`,
      );
      continue;
    }
    const claimants = st.contested.get(name);
    if (claimants) {
      refuse(
        'duplicate_tool',
        name,
        `${appToolAt(index, name)}: tool ${name} declared in code is refused: plugins ${claimants.join(' and ')} already claim that name`,
      );
      continue;
    }
    if (plugin) {
      // As two plugins claiming one name: neither gets it (a plugin's read must not stand in for the app's destructive tool, nor the reverse).
      let copy = copies.get(plugin);
      if (!copy) copies.set(plugin, (copy = structuredClone(plugin)));
      copy.tools = copy.tools.filter((t) => t.name !== name);
      copy.degraded.push({
        kind: 'duplicate_tool',
        tool: name,
        message: `tool ${name} of plugin ${plugin.name} is withdrawn: a tool declared in code (${appToolAt(index, name)}) registers the same name, so both are refused`,
      });
      if (copy.status === 'loaded') copy.status = 'degraded';
      byName.delete(name);
      refuse(
        'duplicate_tool',
        name,
        `${appToolAt(index, name)}: tool ${name} declared in code is refused: plugin ${plugin.name} registers the same name, so both are refused`,
      );
      continue;
    }
    if (taken) {
      refuse(
        'duplicate_tool',
        name,
        `${appToolAt(index, name)}: tool ${name} declared in code is refused: ${taken.plugin} already registers that name`,
      );
      continue;
    }
    let spec: ToolSpec;
    try {
      spec = makeToolSpec(def, APP_PLUGIN, declaration, st.cache);
    } catch (err) {
      refuse('invalid_tool', name, `${appToolAt(index, name)}: ${(err as Error).message}`);
      continue;
    }
    try {
      spec = st.policy.apply(spec);
    } catch (err) {
      policyError ??= err as Error;
      refuse('invalid_tool', name, `${appToolAt(index, name)}: ${(err as Error).message}`);
      continue;
    }
    const guarded = st.guard(spec);
    specs.push(guarded);
    byName.set(name, guarded);
  }
  st.cache?.save();
  if (policyError) throw policyError;
  if (failed) report.status = 'failed';
  else if (report.degraded.length > 0) report.status = 'degraded';
  // The base's tools less those withdrawn above.
  const rest = base.pool.filter((t) => byName.get(t.name) === t);
  const builtins = rest.slice(0, st.builtins);
  const pool = [...builtins, ...specs, ...rest.slice(st.builtins)];
  lazyRows(report, specs);
  /** The specs mounted here (a failure is charged to the app's report), made on the first failure. */
  let mine: Set<ToolSpec> | undefined;
  return {
    plugins: [report, ...base.plugins.map((p) => copies.get(p) ?? p)],
    pool,
    byName,
    hooks: base.hooks,
    policy: policyReport(st.policy, byName),
    chargeFailure(tool) {
      const held = byName.get(tool.name);
      if (held && (mine ??= new Set(specs)).has(held)) {
        report.runtime_failures++;
        return;
      }
      base.chargeFailure(tool);
      const owner = st.owner.get(tool.name);
      const copy = owner && copies.get(owner);
      if (copy) copy.runtime_failures++;
    },
    close: () => base.close(),
  };
}

/** Non-zero when any plugin failed or is degraded. */
export function registryHealthy(r: Pick<Registry, 'plugins'>): boolean {
  return r.plugins.every((p) => p.status === 'loaded');
}
