/**
 * bench/prompt's held-out check: a public tool-selection set the shortlist was never tuned on, read
 * from a local copy given with `--heldout DIR` (nothing of it is in the repo). The format is
 * MetaTool's (its `dataset/` folder: plugin_des.json maps each tool's name to its one-line
 * description, data/all_clean_data.csv has `Query,Tool` rows, 20,614 English requests over 199
 * tools); DIR may be the repository's root or the folder holding the two files.
 *
 * Every `stride`-th request is kept (deterministic), so the run stays short.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { normalizeDeclaration } from '../../src/manifest/schema.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { ToolSpec } from '../../src/types/index.js';

export interface HeldOut {
  source: string;
  pool: ToolSpec[];
  requests: { request: string; needs: string[] }[];
  /** Requests in the file before the stride. */
  total: number;
}

/** RFC 4180 rows: quoted fields may hold commas, newlines and doubled quotes. */
export function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

function find(dir: string, names: readonly string[]): string {
  for (const sub of ['', 'dataset', join('dataset', 'data'), 'data']) {
    for (const n of names) {
      const p = join(dir, sub, n);
      if (existsSync(p)) return p;
    }
  }
  throw new Error(`--heldout ${dir}: no ${names.join(' or ')} in it, dataset/ or dataset/data/ (a MetaTool checkout is expected)`);
}

export function loadHeldOut(dir: string, stride = 10): HeldOut {
  const des = JSON.parse(readFileSync(find(dir, ['plugin_des.json']), 'utf8')) as Record<string, string>;
  const decl = normalizeDeclaration({ effect: 'read' });
  // Tool names as a model API would take them: letters, digits and underscores.
  const nameOf = new Map(Object.keys(des).map((k) => [k, `mt_${k.replace(/[^A-Za-z0-9_]/g, '_')}`]));
  const pool = Object.entries(des).map(([k, description]) =>
    makeToolSpec(
      { name: nameOf.get(k) as string, description, parameters: { type: 'object', properties: {} }, execute: () => 'ok' },
      'heldout',
      decl,
    ),
  );
  const rows = csvRows(readFileSync(find(dir, ['all_clean_data.csv']), 'utf8'));
  const header = rows.shift() ?? [];
  const qi = header.indexOf('Query');
  const ti = header.indexOf('Tool');
  if (qi < 0 || ti < 0) throw new Error(`--heldout ${dir}: all_clean_data.csv has no Query,Tool header`);
  const all = rows.filter((r) => r[qi]?.trim() && nameOf.has(r[ti]));
  const requests = all.filter((_, i) => i % stride === 0).map((r) => ({ request: r[qi].trim(), needs: [nameOf.get(r[ti]) as string] }));
  return { source: 'MetaTool (plugin_des.json, all_clean_data.csv)', pool, requests, total: all.length };
}
