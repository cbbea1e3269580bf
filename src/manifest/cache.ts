import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Manifest } from './schema.js';

/**
 * Validated manifests by content, under KEEL_HOME/cache. Every `keel` command mounts every plugin,
 * and parsing + validating YAML is most of a cold mount (bench/mount). Only manifests that passed
 * validation are kept; the key is the manifest text's hash plus a hash of the validating code
 * itself, so a changed manifest or a changed Keel never reuses a stale verdict.
 */
export class ManifestCache {
  private readonly entries: Record<string, Manifest>;
  private dirty = false;

  private constructor(
    private readonly file: string,
    entries: Record<string, Manifest>,
  ) {
    this.entries = entries;
  }

  static open(home: string): ManifestCache {
    const file = join(home, 'cache', `manifests-${codeVersion()}.json`);
    let entries: Record<string, Manifest> = {};
    try {
      entries = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      // No cache yet, or an unreadable one: start empty.
    }
    return new ManifestCache(file, entries);
  }

  key(text: string): string {
    return createHash('sha1').update(text).digest('hex');
  }

  get(key: string): Manifest | undefined {
    return this.entries[key];
  }

  set(key: string, manifest: Manifest): void {
    this.entries[key] = manifest;
    this.dirty = true;
  }

  /** Writes atomically (temp file + rename), so concurrent processes never read half a file. */
  save(): void {
    if (!this.dirty) return;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const tmp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(this.entries));
      renameSync(tmp, this.file);
      this.dirty = false;
    } catch {
      // A cache that cannot be written only costs speed.
    }
  }
}

let version: string | undefined;
/** A hash of the modules that decide whether a manifest is valid (this folder's load and schema). */
function codeVersion(): string {
  if (!version) {
    const here = dirname(fileURLToPath(import.meta.url));
    const h = createHash('sha1');
    for (const f of ['load', 'schema']) {
      for (const ext of ['.js', '.ts']) {
        try {
          h.update(readFileSync(join(here, `${f}${ext}`)));
          break;
        } catch {
          // try the other extension (dist/ has .js, src/ under tsx has .ts)
        }
      }
    }
    version = h.digest('hex').slice(0, 12);
  }
  return version;
}
