/**
 * YAML parsing, the parser loaded on first use. Never loaded by a run that reads no YAML.
 */
import { createRequire } from 'node:module';
import type { FileCache } from './file-cache.js';
import { sha1Hex } from './hash.js';

let parse: ((text: string) => unknown) | undefined;

/**
 * YAML text → a value, with the `yaml` package loaded on first use: loading it costs tens of
 * milliseconds, which a run that reads no YAML (no script, no skill, no config) should not pay.
 */
export function yamlParse(text: string): unknown {
  parse ??= (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse;
  return parse(text);
}

/** Whether JSON keeps `v` exactly: no NaN or ±Infinity (JSON writes null), no -0 (JSON writes 0). */
function jsonExact(v: unknown): boolean {
  if (typeof v === 'number') return Number.isFinite(v) && !Object.is(v, -0);
  if (v === null || typeof v !== 'object') return true;
  return Object.values(v).every(jsonExact);
}

/**
 * yamlParse, remembered across processes by the text's hash: a process that reads a YAML file it
 * has read before — a scripted model's replies, most often — reads JSON instead of loading the YAML
 * parser (~40 ms of a cold process). Only values JSON keeps exactly are remembered; a text that does
 * not parse throws, as yamlParse does, and is never kept.
 */
export function yamlParseCached(text: string, cache: FileCache | undefined): unknown {
  if (!cache) return yamlParse(text);
  const key = sha1Hex(text);
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const value = yamlParse(text);
  if (jsonExact(value)) cache.set(key, value);
  return value;
}
