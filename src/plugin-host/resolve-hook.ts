/**
 * The module resolve hook that gives a plugin the mounting Keel's own `keel` and `zod` (rules, M1):
 * registered with `node:module`'s register() by `./shared-packages.ts`, and run on Node's hooks
 * thread, so it imports nothing and is a real file of the installed package
 * (dist/src/plugin-host/resolve-hook.js; the CLI's bundle does not hold it).
 *
 * Normal resolution goes first: a plugin that installs its own `keel` or `zod` keeps it. Only when
 * that fails with ERR_MODULE_NOT_FOUND for `keel`, `keel/…`, `zod` or `zod/…` is the specifier
 * resolved again as if imported from Keel's own package.json: `keel` through the package's
 * exports (dist/src/…), `zod` from Keel's dependencies.
 */

/** What `register()` passes: Keel's package name and the URL of its package.json. */
export interface HookData {
  name: string;
  packageJson: string;
}

interface ResolveContext {
  parentURL?: string;
  conditions?: string[];
  importAttributes?: Record<string, string>;
}
type NextResolve = (specifier: string, context?: ResolveContext) => Promise<{ url: string; format?: string | null }>;

/** `keel`, `keel/testing`, `zod`, `zod/v4`… (the name and its subpath). */
export const SHARED = /^(keel|zod)(\/.*)?$/;

let keel: HookData | undefined;

export function initialize(data: HookData): void {
  keel = data;
}

export async function resolve(specifier: string, context: ResolveContext, nextResolve: NextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    const m = SHARED.exec(specifier);
    if (!keel || !m || (err as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    // `keel` names the package itself (a self-reference from its own package.json, through its exports).
    const spec = m[1] === 'keel' ? keel.name + (m[2] ?? '') : specifier;
    try {
      return await nextResolve(spec, { ...context, parentURL: keel.packageJson });
    } catch {
      throw err; // the plugin's own error: Keel has no such module either
    }
  }
}
