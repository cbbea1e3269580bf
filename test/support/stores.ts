/**
 * The two stores as a process meets them, for campaigns that start processes (test/reliability):
 * SQLite, the default file under each process's KEEL_HOME, and PostgreSQL, a fresh schema on the
 * test cluster (test/support/pg.ts) named by KEEL_STORE. Each also reaches into its store the way
 * no Keel process would, for what a test cannot wait for (a run's last save made 11 minutes old).
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { freshSchema, testPgUrl, withSchema } from './pg.js';

export interface ProcessStore {
  name: 'sqlite' | 'postgres';
  /** The env that points a Keel process (with KEEL_HOME set) at a fresh store of this kind. */
  env(): Promise<Record<string, string>>;
  /** Sets a run's last save (`updated_at`) to `at`, in the store `env` points at. */
  setUpdatedAt(env: Record<string, string>, runId: string, at: string): Promise<void>;
}

export const SQLITE: ProcessStore = {
  name: 'sqlite',
  env: async () => ({}),
  async setUpdatedAt(env, runId, at) {
    const file = env.KEEL_STORE?.startsWith('sqlite:') ? env.KEEL_STORE.slice('sqlite:'.length) : join(env.KEEL_HOME, 'keel.db');
    const db = new Database(file, { timeout: 5000 });
    try {
      db.prepare('UPDATE runs SET updated_at = ? WHERE id = ?').run(at, runId);
    } finally {
      db.close();
    }
  },
};

export const POSTGRES: ProcessStore = {
  name: 'postgres',
  env: async () => ({ KEEL_STORE: withSchema(await testPgUrl(), freshSchema()) }),
  async setUpdatedAt(env, runId, at) {
    const url = new URL(env.KEEL_STORE);
    const schema = url.searchParams.get('schema') ?? 'public';
    const client = new pg.Client({ connectionString: await testPgUrl() });
    await client.connect();
    try {
      await client.query(`UPDATE ${schema}.runs SET updated_at = $1 WHERE id = $2`, [at, runId]);
    } finally {
      await client.end();
    }
  },
};

/** Both stores, SQLite first. */
export const PROCESS_STORES: ProcessStore[] = [SQLITE, POSTGRES];
