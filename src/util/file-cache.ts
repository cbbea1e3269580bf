/**
 * Values remembered across processes by content hash under KEEL_HOME/cache. A lost entry costs only
 * speed; never a wrong value.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Values remembered across processes, one small JSON file per key in `dir` (under KEEL_HOME/cache):
 * work a cold process would redo on every command — a script's YAML parse —
 * is read back instead. Keys are content hashes, so an entry is never stale, only unused. A cache
 * that cannot be read or written only costs speed: get() misses, set() does nothing.
 */
export interface FileCache {
  get(key: string): unknown;
  set(key: string, value: unknown): void;
}

export function fileCache(dir: string): FileCache {
  const file = (key: string) => join(dir, `${key}.json`);
  return {
    get(key) {
      try {
        return JSON.parse(readFileSync(file(key), 'utf8'));
      } catch {
        return undefined;
      }
    },
    set(key, value) {
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        // Written whole, then renamed: a process reading at the same time never sees half a file.
        const tmp = `${file(key)}.${process.pid}.tmp`;
        writeFileSync(tmp, JSON.stringify(value));
        renameSync(tmp, file(key));
      } catch {
        // read-only or full: the next process does the work again
      }
    },
  };
}
