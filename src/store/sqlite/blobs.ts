/**
 * The SQLite store's blobs: the system prompts and menus a run's requests and the journal's events name,
 * each kept once under the hash of its text (content-addressed). Never writes a blob twice nor changes
 * one: a hash names one text for ever (INSERT OR IGNORE), and a blob written by a write that rolls back
 * is forgotten, so the next write stores it again.
 */
import type Database from 'better-sqlite3';
import { contentHash } from '../trace.js';
import type { SqliteState } from './state.js';

export function blobStatements(db: Database.Database): Record<string, Database.Statement> {
  const p = (sql: string) => db.prepare(sql);
  return {
    blobBody: p('SELECT body FROM blobs WHERE hash = ?'),
    insertBlob: p('INSERT OR IGNORE INTO blobs (hash, body) VALUES (?, ?)'),
  };
}

export function blob(st: SqliteState, body: string, hash = contentHash(body)): string {
  if (!st.knownBlobs.has(hash)) {
    st.stmt.insertBlob.run(hash, body);
    st.knownBlobs.add(hash);
    st.uncommittedBlobs.push(hash);
  }
  return hash;
}

export function blobOf(st: SqliteState, b: { body: string; hash: string }): string {
  return blob(st, b.body, b.hash);
}

/** Stores a blob (in the write in progress) and returns its key. */
export const keepBlob =
  (st: SqliteState) =>
  (b: { body: string; hash: string }): string =>
    blobOf(st, b);

/** A blob's text, by its key, read once into `cache`. */
export function blobFrom(st: SqliteState, hash: string, cache: Map<string, string>): string {
  let body = cache.get(hash);
  if (body === undefined) {
    body = (st.stmt.blobBody.get(hash) as { body: string } | undefined)?.body;
    if (body === undefined) throw new Error(`the file names a blob it does not hold (${hash})`);
    cache.set(hash, body);
  }
  return body;
}

/** A blob the journal names (a menu's names): the few read lately are remembered. */
export const blobText =
  (st: SqliteState) =>
  (hash: string): string => {
    if (st.blobCache.size >= 64 && !st.blobCache.has(hash)) st.blobCache.clear();
    return blobFrom(st, hash, st.blobCache);
  };
