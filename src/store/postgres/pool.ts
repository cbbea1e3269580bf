/**
 * The PostgreSQL store's connections: one pool, made and migrated on first use (again after a
 * failure), the queries and transactions every part of the store runs through.
 * Never opens anything before the first query, nor after close; a failure to reach the database is
 * one clear line (explainPgError), a failed transaction is rolled back whole.
 */
import type pg from 'pg';
import {
  config,
  explainPgError,
  isConnectionError,
  loadPg,
  type PostgresTarget,
  type Queryable,
  type Row,
  type Sql,
} from './connection.js';
import { migrate } from './schema.js';

export class PgPool {
  readonly target: PostgresTarget;
  private readonly maxConnections: number;
  /** The connection pool, made on first use (see loadPg). */
  private poolMade: pg.Pool | undefined;
  private ready: Promise<void> | undefined;
  /** Set by the store's close: nothing connects after it. */
  closed = false;

  constructor(target: PostgresTarget, maxConnections: number) {
    this.target = target;
    this.maxConnections = maxConnections;
  }

  /** The pool, once ensureReady made it. */
  get pool(): pg.Pool {
    if (!this.poolMade) throw new Error('the PostgreSQL store is not connected yet');
    return this.poolMade;
  }

  /** Connects and migrates, once (again after a failure). */
  ensureReady(): Promise<void> {
    this.ready ??= (async () => {
      if (this.closed) throw new Error('the store is closed');
      if (!this.poolMade) {
        const { Pool } = await loadPg();
        const pool = new Pool({
          connectionString: this.target.connectionString,
          max: this.maxConnections,
          connectionTimeoutMillis: 10_000,
          application_name: 'keel',
          options: `-c search_path=${this.target.schema}`,
        });
        // An idle connection that breaks (the server restarted) is dropped; the next query opens another.
        pool.on('error', () => {});
        this.poolMade = pool;
      }
      const client = await this.pool.connect();
      try {
        await migrate(client, this.target.schema);
      } finally {
        client.release();
      }
    })().catch((err) => {
      this.ready = undefined;
      throw explainPgError(err, this.target.shown);
    });
    return this.ready;
  }

  async q<R extends pg.QueryResultRow = Row>(sql: Sql, params: unknown[] = []): Promise<pg.QueryResult<R>> {
    await this.ensureReady();
    try {
      return await this.pool.query<R>(config(sql, params));
    } catch (err) {
      throw isConnectionError(err) ? explainPgError(err, this.target.shown) : err;
    }
  }

  /** Runs `f` in one transaction on one connection: committed whole, or rolled back whole. */
  async transaction<T>(f: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    await this.ensureReady();
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw explainPgError(err, this.target.shown);
    }
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const out = await f(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (e) {
        broken = e as Error;
      }
      throw isConnectionError(err) ? explainPgError(err, this.target.shown) : err;
    } finally {
      client.release(broken);
    }
  }

  /** Queries on the pool, one statement each (a run write outside a transaction). */
  readonly pooled: Queryable = { query: (sql, params) => this.q(sql, params) };

  /** Closes the pool, if one was made. */
  async end(): Promise<void> {
    await this.poolMade?.end();
  }
}
