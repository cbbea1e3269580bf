import * as crypto from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

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
 * yamlParse, remembered across processes in `cacheDir` by the text's hash (one small JSON file per
 * text): a process that reads a YAML file it has read before — a scripted model's replies, most
 * often — reads JSON instead of loading the YAML parser (~40 ms of a cold process). Only values JSON
 * keeps exactly are remembered; a text that does not parse throws, as yamlParse does, and is never kept.
 * A cache that cannot be read or written only costs speed.
 */
export function yamlParseCached(text: string, cacheDir: string | undefined): unknown {
  if (!cacheDir) return yamlParse(text);
  const file = join(cacheDir, `${crypto.createHash('sha1').update(text).digest('hex')}.json`);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    // not remembered yet (or unreadable): parse it
  }
  const value = yamlParse(text);
  if (jsonExact(value)) {
    try {
      mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(value));
      renameSync(tmp, file);
    } catch {
      // read-only or full: the next process parses it again
    }
  }
  return value;
}
