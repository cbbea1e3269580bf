// Confining paths to the workspace root. A path is accepted only when both its spelling (after
// resolving '..') and its reality (the realpath of its deepest existing ancestor, so symbolic links
// are followed) stay inside the realpath of the root.
import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

export function inside(base: string, p: string): boolean {
  const rel = relative(base, p);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

export interface Resolved {
  /** The real path to operate on (symbolic links already followed). */
  real: string;
  /** That path relative to the workspace root, for messages ('.' for the root). */
  rel: string;
  exists: boolean;
}

export class Refused extends Error {}

/**
 * Resolves `input` against the workspace `root`, refusing anything that leads outside it.
 * Throws Refused with a message fit for the model.
 */
export async function confine(root: string, input: unknown): Promise<Resolved> {
  if (typeof input !== 'string' || input.trim() === '') throw new Refused('path must be a non-empty string, relative to the workspace');
  if (input.includes('\0')) throw new Refused('path must not contain NUL characters');
  const rootReal = await realpath(root);
  const spelled = isAbsolute(input) ? resolve(input) : resolve(rootReal, input);
  // An absolute path may name the root by its unresolved spelling.
  const base = isAbsolute(input) && inside(resolve(root), spelled) ? resolve(root) : rootReal;
  if (!inside(base, spelled)) throw new Refused(`'${input}' is outside the workspace; paths must stay inside it`);
  const abs = base === rootReal ? spelled : join(rootReal, relative(base, spelled));

  // Walk up to the deepest part that exists, then follow every link in it.
  const missing: string[] = [];
  let cur = abs;
  for (;;) {
    try {
      await lstat(cur);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      missing.unshift(basename(cur));
      cur = dirname(cur);
    }
  }
  let curReal: string;
  try {
    curReal = await realpath(cur);
  } catch (e) {
    // lstat saw it but realpath cannot follow it: a dangling (or looping) symbolic link.
    const code = (e as NodeJS.ErrnoException).code;
    throw new Refused(`'${input}' goes through a symbolic link that leads nowhere (${code}); refused`);
  }
  if (!inside(rootReal, curReal)) throw new Refused(`'${input}' leads outside the workspace through a symbolic link; refused`);
  const real = join(curReal, ...missing);
  return { real, rel: relative(rootReal, real) || '.', exists: missing.length === 0 };
}
