/**
 * A plugin that imports `keel` (`keel/testing`, …) or `zod` and has no copy of its own gets the
 * mounting Keel's (rules, M1): a plugin folder made by `keel plugins init`, or written by hand,
 * checks and runs with nothing installed in it. A plugin that installs its own keeps it.
 *
 * Two resolvers take part, both trying the normal resolution first:
 * - ES modules: the resolve hook in `./resolve-hook.ts`, registered with `node:module`'s
 *   register() (Node ≥ 20.6). It runs on the loader's hooks thread, so it is loaded from its
 *   own file in the package (dist/src/plugin-host/resolve-hook.js), never from the CLI's bundle.
 * - CommonJS: a TypeScript entry outside a `"type": "module"` package is compiled to CommonJS by
 *   tsx, and its imports become require() calls, which Node 20's module hooks do not see; the
 *   same fallback wraps `Module._resolveFilename` (as tsx itself does).
 *
 * Loaded by `importEntry` (host.ts) only for a plugin outside Keel's own package folder, and
 * installed only once a plugin's own source files name `keel` or `zod`: starting the hooks thread
 * is tens of milliseconds that a run mounting no such plugin does not pay.
 */
import { readdirSync, readFileSync } from 'node:fs';
import Module from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT } from '../config/paths.js';
import { type HookData, SHARED } from './resolve-hook.js';

let installed = false;

/** A module specifier naming `keel`, `zod` or a subpath of either, in an import, export, import() or require(). */
const NAMES_SHARED = /(?:\bfrom|\bimport|\brequire)\s*\(?\s*['"](?:keel|zod)(?:\/[^'"\n]*)?['"]/;
const SOURCE = /\.(?:[cm]?[jt]s|[jt]sx)$/;
/** A folder with more source files than this is taken to need the fallback without reading them all. */
const MAX_FILES = 500;

/** Whether the plugin's own source files (under DIR, outside node_modules) import `keel` or `zod`. */
export function namesSharedPackages(dir: string): boolean {
  let seen = 0;
  const walk = (d: string): boolean => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const path = join(d, e.name);
      if (e.isDirectory()) {
        if (walk(path)) return true;
      } else if (SOURCE.test(e.name)) {
        if (++seen > MAX_FILES || NAMES_SHARED.test(readFileSync(path, 'utf8'))) return true;
      }
    }
    return false;
  };
  try {
    return walk(dir);
  } catch {
    return true; // unreadable: let the fallback decide at import time
  }
}

/** Installs the fallback for the plugin whose entry module is in DIR, if its sources need it. Once per process. */
export function sharePackagesWith(dir: string): void {
  if (installed || !namesSharedPackages(dir)) return;
  installed = true;
  const packageJson = join(PACKAGE_ROOT, 'package.json');
  const name = (JSON.parse(readFileSync(packageJson, 'utf8')) as { name: string }).name;
  const data: HookData = { name, packageJson: pathToFileURL(packageJson).href };

  const mod = Module as unknown as {
    register?: (url: string, options: { data: HookData }) => void;
    _resolveFilename: (request: string, parent: unknown, isMain: boolean, options?: unknown) => string;
    _nodeModulePaths: (dir: string) => string[];
  };
  // From src/ (tests, under tsx) the hook's source; from dist/ or the CLI's bundle, the compiled file.
  const hook = import.meta.url.endsWith('.ts')
    ? new URL('./resolve-hook.ts', import.meta.url).href
    : pathToFileURL(join(PACKAGE_ROOT, 'dist', 'src', 'plugin-host', 'resolve-hook.js')).href;
  mod.register?.(hook, { data });

  const resolveFilename = mod._resolveFilename;
  const keelParent = { id: packageJson, filename: packageJson, paths: mod._nodeModulePaths(PACKAGE_ROOT) };
  mod._resolveFilename = function (this: unknown, request, parent, isMain, options) {
    try {
      return resolveFilename.call(this, request, parent, isMain, options);
    } catch (err) {
      const m = SHARED.exec(request);
      if (!m || (err as { code?: string }).code !== 'MODULE_NOT_FOUND') throw err;
      try {
        return resolveFilename.call(this, m[1] === 'keel' ? name + (m[2] ?? '') : request, keelParent, isMain, options);
      } catch {
        throw err;
      }
    }
  };
}
