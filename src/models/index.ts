import { KeelError } from '../util/errors.js';
import { fileCache } from '../util/file-cache.js';
import { ScriptModel } from './script.js';
import type { ModelClient } from './types.js';

export const MODEL_SPEC_HELP =
  'model specs: script:FILE, openai:MODEL, ollama:MODEL, anthropic:MODEL, google:MODEL, openai-compatible:MODEL@URL';

/**
 * A model spec string → a client. Providers load lazily (keel --help stays fast). `cacheDir`: where
 * a scripted model's parsed scripts are remembered between processes (Keel gives its home's cache).
 */
export async function createModel(spec: string | undefined, env: NodeJS.ProcessEnv = process.env, cacheDir?: string): Promise<ModelClient> {
  const s = (spec ?? env.KEEL_MODEL ?? '').trim();
  if (!s) throw new KeelError('config', `no model given: pass --model SPEC or set KEEL_MODEL (${MODEL_SPEC_HELP})`);
  const colon = s.indexOf(':');
  const kind = colon < 0 ? s : s.slice(0, colon);
  const rest = colon < 0 ? '' : s.slice(colon + 1);
  if (!rest) throw new KeelError('config', `model spec "${s}" names no model (${MODEL_SPEC_HELP})`);
  if (kind === 'script') return new ScriptModel(rest, undefined, cacheDir === undefined ? undefined : fileCache(cacheDir));
  if (['openai', 'ollama', 'anthropic', 'google', 'openai-compatible'].includes(kind)) {
    const { createProviderModel } = await import('./provider.js');
    return createProviderModel(kind, rest, s, env);
  }
  throw new KeelError('config', `unknown model provider "${kind}" in "${s}" (${MODEL_SPEC_HELP})`);
}
