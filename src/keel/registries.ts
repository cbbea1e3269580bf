/**
 * The only way plugins are mounted: runs, `keel plugins check|show`, `keel data reset`, the demo
 * (and the server to come) all come here, so a plugin is judged the same way everywhere — with the
 * core's own tools taking their names first, every handler wrapped with the fresh mode check (C5),
 * the operator's confirm-once override (R7), the manifest cache, and the skills folder (R25). The
 * application's own tools, declared in code (R32), are mounted here too, onto the plugin folders'
 * mount, by the same checks, gate and policy.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type ResetRow, resetPluginData } from '../plugin-host/data.js';
import { mountPlugins, type Registry, withAppTools } from '../plugin-host/host.js';
import { guardHandler } from '../policy/modes.js';
import type { OperatorPolicy } from '../policy/operator.js';
import type { Subagents } from '../subagents/delegates.js';
import { askUser, CORE_DECLARATIONS, findTools, memoryTools, reportGoal, submitGoal, submitPlan } from '../tools/builtins.js';
import { loadSkills, skillsDir, skillsSignature } from '../tools/skills.js';
import type { Env } from '../types/env.js';
import type { AppTool, MemoryStore, Mode, ToolContext, ToolSpec } from '../types/index.js';

export interface RegistriesOptions {
  home: string;
  env: Env;
  /** Memory for the memory_* built-ins; null: they are not offered (names stay reserved). */
  memory: MemoryStore | null;
  /** The operator's policy, read when the first registry is mounted (an invalid rule stops the start). */
  policy: () => OperatorPolicy;
  /** Extra built-in tools (tests, embedders). */
  extraTools?: readonly ToolSpec[];
  /** The session's mode now, for the handler guard (C5). */
  currentMode: (ctx: ToolContext) => Mode;
  /** Delegates for a plugin-folder set (C8), given the registry they draw their tools from. */
  makeSubagents: (registry: () => Registry) => Subagents | undefined;
}

interface Mounted {
  registry: Promise<Registry>;
  subagents: Subagents | undefined;
}

/** A registry plus the skills folder's tools, rebuilt only when a skill file changes. */
interface WithSkills {
  signature: string;
  notes: string[];
  registry: Registry;
}

/** Every core tool name: a plugin may not take one, whichever built-ins this Keel offers. */
const CORE_NAMES: ReadonlySet<string> = new Set(Object.keys(CORE_DECLARATIONS));

export class Registries {
  private readonly mounted = new Map<string, Mounted>();
  private readonly withSkills = new WeakMap<Registry, WithSkills>();
  /** A plugin-folder mount with a list of app tools on it, by mount and then by the list itself. */
  private readonly withApp = new WeakMap<Registry, WeakMap<readonly AppTool[], Registry>>();
  /** The skills folder (KEEL_SKILLS, else KEEL_HOME/skills): where it is is fixed per Keel; what it holds is read per run. */
  private skills: string | undefined;

  constructor(private readonly o: RegistriesOptions) {}

  /**
   * The registry for a set of plugin folders, mounted once and kept; with `appTools`, the
   * application's own tools declared in code mounted onto it (R32). The same list (the same array)
   * on the same folders gives the same registry, made once; a list made for one run is checked and
   * mounted for it without setting the plugins up again, and let go with the list. The report row
   * of the app tools is the first of `plugins`, named `app` with `source: 'code'`.
   */
  async mount(dirs: readonly string[], appTools?: readonly AppTool[]): Promise<Registry> {
    const base = await this.mountFolders(dirs);
    return appTools === undefined ? base : this.withAppTools(base, appTools);
  }

  private withAppTools(base: Registry, tools: readonly AppTool[]): Registry {
    let byList = this.withApp.get(base);
    if (!byList) this.withApp.set(base, (byList = new WeakMap()));
    let r = byList.get(tools);
    if (!r) {
      // Throws an operator rule that would loosen an app tool's card, as a mount does (not kept: thrown again next time).
      r = withAppTools(base, tools);
      byList.set(tools, r);
    }
    return r;
  }

  private mountFolders(dirs: readonly string[]): Promise<Registry> {
    const key = dirs.join('\u0000');
    const hit = this.mounted.get(key);
    if (hit) return hit.registry;
    let registry: Registry | undefined;
    const subagents = this.o.makeSubagents(() => {
      if (!registry) throw new Error('the delegates ran before their registry was mounted');
      return registry;
    });
    const builtins = [
      askUser,
      ...(this.o.memory ? memoryTools(this.o.memory) : []),
      submitPlan,
      submitGoal,
      reportGoal,
      // R31: in every pool; the menu offers it only when the pool outgrows the shortlist's cap.
      findTools,
      ...(subagents?.tools() ?? []),
      ...(this.o.extraTools ?? []),
    ];
    const promise = mountPlugins(dirs, {
      home: this.o.home,
      builtins,
      reserved: CORE_NAMES,
      policy: this.o.policy(),
      guard: (t) => guardHandler(t, this.o.currentMode),
    }).then((r) => (registry = r));
    this.mounted.set(key, { registry: promise, subagents });
    // A mount that failed (a folder that does not exist) is not kept: the next call tries again.
    promise.catch(() => this.mounted.delete(key));
    return promise;
  }

  /**
   * Mounts a plugin-folder set again (its manifests changed: a plugin added, removed or edited);
   * the previous mount is closed once the new one stands. Runs already holding it keep it. With
   * `appTools`, the registry with them on the new mount, as `mount` gives it.
   */
  async remount(dirs: readonly string[], appTools?: readonly AppTool[]): Promise<Registry> {
    const key = dirs.join('\u0000');
    const old = this.mounted.get(key);
    this.mounted.delete(key);
    const fresh = await this.mountFolders(dirs);
    await (await old?.registry.catch(() => undefined))?.close();
    return appTools === undefined ? fresh : this.withAppTools(fresh, appTools);
  }

  /** The delegates of a mounted plugin-folder set, if any are configured. */
  subagents(): Subagents[] {
    return [...this.mounted.values()].flatMap((m) => (m.subagents ? [m.subagents] : []));
  }

  /**
   * A run's pool: the registry (with `appTools`, as `mount` gives it) plus the skills folder's tools
   * (R25: a skill never shadows a pool name). Rebuilt only when a skill file changes, so menus stay
   * shared across runs (across the runs given the same app-tools array).
   */
  async forRun(dirs: readonly string[], appTools?: readonly AppTool[]): Promise<{ registry: Registry; notes: string[] }> {
    const base = await this.mount(dirs, appTools);
    const dir = (this.skills ??= skillsDir(this.o.home, this.o.env));
    const signature = skillsSignature(dir);
    const cached = this.withSkills.get(base);
    if (cached?.signature === signature) return cached;
    const skills = loadSkills(dir, base.byName);
    // Skills are tools too: the operator's rules apply to them as to every mounted tool.
    const skillTools = skills.tools.map((t) => this.o.policy().apply(t));
    const pool = skillTools.length ? [...base.pool, ...skillTools] : base.pool;
    // Each run's trace records the policy it ran under (its hash and the rules that applied).
    const policyNote = this.o.policy().note(pool);
    const entry: WithSkills = {
      signature,
      notes: [...skills.notes, ...(policyNote ? [policyNote] : [])],
      registry: skillTools.length ? { ...base, pool, byName: new Map(pool.map((t) => [t.name, t])) } : base,
    };
    this.withSkills.set(base, entry);
    return entry;
  }

  /** `keel data reset`: each plugin of these folders that keeps data deletes and re-seeds it. */
  resetData(dirs: readonly string[]): Promise<ResetRow[]> {
    return resetPluginData(dirs, this.o.home);
  }

  async close(): Promise<void> {
    for (const m of this.mounted.values()) await (await m.registry.catch(() => undefined))?.close();
    this.mounted.clear();
  }
}

/** Plugin folders: the given ones, else KEEL_PLUGINS, else the defaults. */
export function resolvePluginDirs(given: readonly string[] | undefined, env: Env, defaults: readonly string[]): string[] {
  if (given?.length) return given.map((d) => resolve(d));
  const fromEnv = env.KEEL_PLUGINS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (fromEnv?.length) return fromEnv.map((d) => resolve(d));
  return defaults.filter((d) => existsSync(d)).map((d) => resolve(d));
}
