/**
 * A model spec (`script:FILE`, `ollama:…`, `openai:…`, …) to a client, providers loaded lazily.
 * Never loads a provider a run does not use.
 */
import { realpath } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import type { Env } from '../types/env.js';
import { KeelError } from '../util/errors.js';
import { fileCache } from '../util/file-cache.js';
import { readScriptAsync, ScriptModel } from './script.js';
import type { ModelClient } from './types.js';

export const MODEL_SPEC_HELP =
  'model specs: script:FILE, openai:MODEL, ollama:MODEL, anthropic:MODEL, google:MODEL, openai-compatible:MODEL@URL';

/**
 * A model spec string → a client. Providers load lazily (keel --help stays fast). `cacheDir`: where
 * a scripted model's parsed scripts are remembered between processes (Keel gives its home's cache).
 */
/** The provider prefixes createModel builds a model for (script: and the real providers). */
const BUILT_HERE = ['script', 'openai', 'ollama', 'anthropic', 'google', 'openai-compatible'];

/**
 * Whether a stored spec names a model Keel builds itself; one that does not (`echo:v1`) is an
 * application's own ModelClient, which only that application can hand a continuation again.
 */
export function builtInSpec(spec: string): boolean {
  const s = spec.trim();
  const colon = s.indexOf(':');
  return BUILT_HERE.includes(colon < 0 ? s : s.slice(0, colon));
}

export async function createModel(spec: string | undefined, env: Env = process.env, cacheDir?: string): Promise<ModelClient> {
  const s = (spec ?? env.KEEL_MODEL ?? '').trim();
  if (!s) throw new KeelError('config', `no model given: pass --model SPEC or set KEEL_MODEL (${MODEL_SPEC_HELP})`);
  const colon = s.indexOf(':');
  const kind = colon < 0 ? s : s.slice(0, colon);
  const rest = colon < 0 ? '' : s.slice(colon + 1);
  if (!rest) throw new KeelError('config', `model spec "${s}" names no model (${MODEL_SPEC_HELP})`);
  if (kind === 'script') return ScriptModel.open(rest, cacheDir === undefined ? undefined : fileCache(cacheDir));
  if (['openai', 'ollama', 'anthropic', 'google', 'openai-compatible'].includes(kind)) {
    const { createProviderModel } = await import('./provider.js');
    return createProviderModel(kind, rest, s, env);
  }
  throw new KeelError('config', `unknown model provider "${kind}" in "${s}" (${MODEL_SPEC_HELP})`);
}

/**
 * Whether a model spec a request chose is one of `prefixes` (`keel serve --allow-model`). A provider
 * prefix (`openai:`) matches as text. A `script:DIR/` prefix confines: the file, resolved with every
 * symbolic link and `..` followed, must lie inside DIR (whole path segments: `script:/srv/a` does not
 * allow `/srv/ab/x.yaml`); a bare `script:` allows any file. Either way it must be a script that
 * loads — a regular file of at most SCRIPT_MAX_BYTES (read off the event loop without blocking on
 * a FIFO) holding a valid script — read here, before any run is made of it. The answer is only yes
 * or no: a refusal never tells a path that is missing from one that exists, nor what a file holds
 * (issue 40: a readable file that is no script once answered with the parser's words).
 */
export async function allowedModel(spec: string, prefixes: readonly string[]): Promise<boolean> {
  const s = spec.trim();
  if (prefixes.some((p) => !p.startsWith('script:') && s.startsWith(p))) return true;
  const scriptDirs = prefixes.filter((p) => p.startsWith('script:')).map((p) => p.slice('script:'.length));
  if (!scriptDirs.length || !s.startsWith('script:') || s.length === 'script:'.length) return false;
  let file: string;
  try {
    file = await realpath(resolve(s.slice('script:'.length)));
  } catch {
    return false;
  }
  let inside = false;
  for (const dir of scriptDirs) {
    if (!dir) inside = true;
    else {
      const real = await realpath(resolve(dir)).catch(() => undefined);
      if (real && (file === real || file.startsWith(real.endsWith(sep) ? real : real + sep))) inside = true;
    }
    if (inside) break;
  }
  if (!inside) return false;
  return readScriptAsync(file, file).then(
    () => true,
    () => false,
  );
}
