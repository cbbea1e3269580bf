/**
 * Validated manifests by content hash, under KEEL_HOME/cache. Never keeps a manifest that failed
 * validation.
 */
import * as crypto from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../config/paths.js';
import type { SchemaVerdicts } from '../types/index.js';
import { sha1Hex } from '../util/hash.js';
import { plainSchemaValid } from './plain-schema.js';
import type { Manifest } from './schema.js';

/**
 * Validated manifests by content, under KEEL_HOME/cache. Every `keel` command mounts every plugin,
 * and parsing + validating YAML is most of a cold mount (bench/mount). Only manifests that passed
 * validation are kept; the key is the manifest text's hash plus a hash of the validating code
 * itself, so a changed manifest or a changed Keel never reuses a stale verdict.
 */
export class ManifestCache implements SchemaVerdicts {
  /** The file's content, read on first use (issue 49: a Keel with only app tools whose schemas are plain never reads it, nor hashes Keel's code for its name). */
  private data: { manifests: Record<string, Manifest>; schemas: Record<string, 1> } | undefined;
  private file: string | undefined;
  private dirty = false;

  private constructor(private readonly home: string) {}

  private get loaded(): { manifests: Record<string, Manifest>; schemas: Record<string, 1> } {
    if (!this.data) {
      this.file = join(this.home, 'cache', `manifests-${codeVersion()}.json`);
      let data: { manifests?: Record<string, Manifest>; schemas?: Record<string, 1> } = {};
      try {
        data = JSON.parse(readFileSync(this.file, 'utf8'));
      } catch {
        // No cache yet, or an unreadable one: start empty.
      }
      this.data = { manifests: data.manifests ?? {}, schemas: data.schemas ?? {} };
    }
    return this.data;
  }

  /**
   * A schema's verdict from the plain check (M6: no ajv meta-schema to compile), else from the cache,
   * else from `check` (remembered only when valid).
   */
  valid(schema: Record<string, unknown>, check: () => boolean): boolean {
    // The plain check first: cheaper than the key's hash (issue 49: 2,000 tools hashed ~15 ms cold),
    // and its verdict needs no keeping.
    if (plainSchemaValid(schema)) return true;
    const key = this.key(JSON.stringify(schema));
    const { schemas } = this.loaded;
    if (schemas[key]) return true;
    const ok = check();
    if (ok) {
      schemas[key] = 1;
      this.dirty = true;
    }
    return ok;
  }

  static open(home: string): ManifestCache {
    return new ManifestCache(home);
  }

  key(text: string): string {
    return sha1Hex(text);
  }

  get(key: string): Manifest | undefined {
    return this.loaded.manifests[key];
  }

  set(key: string, manifest: Manifest): void {
    this.loaded.manifests[key] = manifest;
    this.dirty = true;
  }

  /** Writes atomically (temp file + rename), so concurrent processes never read half a file. */
  save(): void {
    if (!this.dirty || !this.data || !this.file) return;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const tmp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(this.data));
      renameSync(tmp, this.file);
      this.dirty = false;
    } catch {
      // A cache that cannot be written only costs speed.
    }
  }
}

let version: string | undefined;
/**
 * A hash of the modules that decide validity: this folder's load, schema, cache and plain readers,
 * and tools/spec. They are read beside this module (src/ under tsx, dist/src/ as compiled); the
 * bundled CLI (dist/cli) hashes the compiled modules its bundle was made from, in dist/src/manifest.
 */
function codeVersion(): string {
  if (!version) {
    const here = dirname(fileURLToPath(import.meta.url));
    const dir = [here, join(PACKAGE_ROOT, 'dist', 'src', 'manifest')].find(
      (d) => existsSync(join(d, 'load.js')) || existsSync(join(d, 'load.ts')),
    );
    if (!dir) throw new Error(`the manifest code is missing beside ${here}: reinstall Keel (npm run build)`);
    const h = crypto.createHash('sha1');
    for (const f of ['load', 'schema', 'cache', 'plain-yaml', 'plain-schema', '../tools/spec']) {
      for (const ext of ['.js', '.ts']) {
        try {
          h.update(readFileSync(join(dir, `${f}${ext}`)));
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
