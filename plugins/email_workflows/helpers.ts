// Small helpers the email tools share.
import type Database from 'better-sqlite3';
import type { Category } from './mailbox.js';

export type Db = () => Database.Database;
export type Args = Record<string, unknown>;
export const err = (content: string) => ({ content, is_error: true });
export const BULK: readonly Category[] = ['promotions', 'social', 'updates'];
export const quote = (s: string) => `“${s}”`;

export function intArg(v: unknown, name: string, lo: number, hi: number, dflt: number): number | { error: string } {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi)
    return { error: `${name} must be a whole number from ${lo} to ${hi}` };
  return v;
}

export function idList(v: unknown): string[] | { error: string } {
  if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'string'))
    return { error: 'ids must be a non-empty list of email ids such as ["m012", "m013"]' };
  return [...new Set(v as string[])];
}

export const DATE_PROPS = {
  since: { type: 'string', description: "Only emails on or after this day: YYYY-MM-DD, 'today' or 'yesterday'." },
  until: { type: 'string', description: "Only emails on or before this day: YYYY-MM-DD, 'today' or 'yesterday'." },
};
