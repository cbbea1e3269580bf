/** Where Keel's own files are and where its home is: cheap to import (the CLI's --help needs them). */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Env } from '../types/env.js';

/** Keel's package folder, whether this runs from src/ (tsx) or dist/src/. */
export const PACKAGE_ROOT = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
})();

/**
 * The reference plugins shipped with Keel (used when no plugin folder is given): compiled into
 * dist/plugins by the build when Keel runs from dist/ (no TypeScript loader to start), their
 * sources in plugins/ when it runs from src/.
 */
export const BUNDLED_PLUGINS = (() => {
  const compiled = join(PACKAGE_ROOT, 'dist', 'plugins');
  const fromDist = fileURLToPath(import.meta.url).startsWith(join(PACKAGE_ROOT, 'dist') + sep);
  return fromDist && existsSync(join(compiled, 'calendar', 'index.js')) ? compiled : join(PACKAGE_ROOT, 'plugins');
})();

export function keelHome(env: Env = process.env): string {
  return resolve(env.KEEL_HOME || join(homedir(), '.keel'));
}
