/**
 * Which store errors will not go away by trying again (issue 27): the database refused what it was
 * given — text it cannot hold, a value too large — rather than being out of reach or busy. A run
 * whose save fails so is ended `failed` with the reason (src/loop/run.ts), not left for takeovers
 * that would ask the model again and fail the same way.
 */

/** Why the store refused for good, in one line; undefined when trying again may work. */
export function permanentStoreError(err: unknown): string | undefined {
  const e = err as { code?: unknown; message?: unknown; name?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = String(e?.message ?? err).split('\n')[0];
  // PostgreSQL's SQLSTATE: class 22 is a data exception (an invalid Unicode escape, a NUL, a value
  // out of range), class 54 a program limit (a value too large).
  if (/^(22|54)[0-9A-Z]{3}$/.test(code)) return `PostgreSQL refused the data (${code}): ${message}`;
  if (code === 'SQLITE_TOOBIG' || code === 'SQLITE_MISMATCH') return `SQLite refused the data (${code}): ${message}`;
  // JSON.stringify on what JSON cannot hold (a bigint), or a string too long to build.
  if (err instanceof TypeError || err instanceof RangeError) return `the run could not be written as JSON: ${message}`;
  return undefined;
}
