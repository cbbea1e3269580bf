// One SQLite file per reference plugin under KEEL_HOME/data, opened once per home and seeded on
// first use. Shared by the reference plugins (a folder without plugin.yaml is not a plugin).
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';

export interface PluginData {
  dbPath(home: string): string;
  /** The open handle for this home, opening (and preparing) it on first use. */
  open(home: string): Database.Database;
  close(home: string): void;
  /** Closes and deletes the file (and its WAL side files). */
  remove(home: string): void;
  /** Deletes the data and prepares it again (`keel data reset`). */
  reset(home: string): Promise<void>;
}

/** Seeds a new database once, in one transaction; a `meta` table marks it seeded. */
export function seedOnce(seed: (db: Database.Database) => void): (db: Database.Database) => void {
  return (db) => {
    const seeded = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
    if (!seeded) db.transaction(() => seed(db))();
  };
}

export function pluginData(plugin: string, prepare: (db: Database.Database) => void): PluginData {
  const handles = new Map<string, Database.Database>();
  const dbPath = (home: string) => join(home, 'data', `${plugin}.db`);
  const open = (home: string) => {
    const file = dbPath(home);
    const existing = handles.get(file);
    if (existing?.open) return existing;
    mkdirSync(dirname(file), { recursive: true });
    const db = new Database(file);
    handles.set(file, db);
    prepare(db);
    return db;
  };
  const close = (home: string) => {
    const file = dbPath(home);
    handles.get(file)?.close();
    handles.delete(file);
  };
  const remove = (home: string) => {
    close(home);
    const file = dbPath(home);
    for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, { force: true });
  };
  return {
    dbPath,
    open,
    close,
    remove,
    async reset(home) {
      remove(home);
      open(home);
      close(home);
    },
  };
}
