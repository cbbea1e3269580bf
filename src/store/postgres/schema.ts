/**
 * The PostgreSQL store's schema: the numbered migrations (pg-migrations.ts) applied under an
 * advisory lock, so processes starting together migrate once, and what is applied where.
 * Never migrates a database a newer Keel migrated further (refused, one line), and never leaves a
 * migration half applied: each is one transaction with its record in schema_migrations.
 */
import type pg from 'pg';
import { KeelError } from '../../util/errors.js';
import { MIGRATIONS, type Migration } from '../pg-migrations.js';
import { LOCK_MIGRATE } from './connection.js';

export interface MigrationState {
  version: number;
  name: string;
  applied_at: string | null;
}

/** Applies the migrations this database lacks, under an advisory lock; returns the versions applied now. */
export async function migrate(client: pg.ClientBase, schema: string, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [LOCK_MIGRATE, schema]);
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    const done = new Set(
      (await client.query<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations`)).rows.map((r) => r.version),
    );
    const newest = Math.max(0, ...done);
    const known = Math.max(0, ...migrations.map((m) => m.version));
    if (newest > known) {
      throw new KeelError(
        'config',
        `the PostgreSQL store's schema ${schema} is at migration ${newest}, newer than this Keel knows (${known}): upgrade Keel`,
      );
    }
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL search_path TO ${schema}`);
        await client.query(m.sql);
        await client.query(`INSERT INTO ${schema}.schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw new KeelError('config', `migration ${m.version} (${m.name}) failed: ${(err as Error).message}`);
      }
      applied.push(m.version);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_MIGRATE, schema]).catch(() => {});
  }
}

/** Every known migration, with when it was applied here (null: pending). Changes nothing. */
export async function migrationStatus(
  client: pg.ClientBase,
  schema: string,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<{ migrations: MigrationState[]; unknown: number[] }> {
  const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`${schema}.schema_migrations`]);
  const rows = exists.rows[0]?.t
    ? (
        await client.query<{ version: number; name: string; applied_at: Date }>(
          `SELECT version, name, applied_at FROM ${schema}.schema_migrations ORDER BY version`,
        )
      ).rows
    : [];
  const at = new Map(rows.map((r) => [r.version, r.applied_at.toISOString()]));
  return {
    migrations: migrations.map((m) => ({ version: m.version, name: m.name, applied_at: at.get(m.version) ?? null })),
    unknown: rows.map((r) => r.version).filter((v) => !migrations.some((m) => m.version === v)),
  };
}
