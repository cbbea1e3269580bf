/** Where Keel's own files are and where its home is: cheap to import (the CLI's --help needs them). */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Keel's package folder, whether this runs from src/ (tsx) or dist/src/. */
export const PACKAGE_ROOT = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
})();

/** The reference plugins shipped with Keel (used when no plugin folder is given). */
export const BUNDLED_PLUGINS = join(PACKAGE_ROOT, 'plugins');

export function keelHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.KEEL_HOME || join(homedir(), '.keel'));
}
