// research: BM25 search over the markdown notes bundled in ./docs. The index (documents and
// postings) lives in KEEL_HOME/data/research.db, built on first use and rebuilt whenever the
// bundled notes change (their fingerprint is stored with the index).
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import type { PluginAPI } from '../../src/plugin-host/types.js';

export const DOCS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'docs');
const K1 = 1.2;
const B = 0.75;
const TITLE_WEIGHT = 3;

export function dbPath(home: string): string {
  return join(home, 'data', 'research.db');
}

// ---- text --------------------------------------------------------------------------------------

const STOP = new Set(
  'a about also an and any are as at be but by can could do does for from get how i if in into is it its me more most much my of on or should so some than that the their them then there these they this to too up very was we what when where which who why will with would you your'.split(
    ' ',
  ),
);

export function tokens(text: string): string[] {
  const words = text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .match(/[a-z0-9]+/g);
  return (words ?? [])
    .filter((w) => !STOP.has(w))
    .map((w) =>
      w.length > 4 && w.endsWith('ies') ? `${w.slice(0, -3)}y` : w.length > 3 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w,
    );
}

interface Passage {
  heading: string;
  text: string;
}

/** Sentences of a markdown document, each with the heading it sits under. */
function passages(title: string, body: string): Passage[] {
  const out: Passage[] = [];
  let heading = title;
  for (const block of body.split(/\n\s*\n/)) {
    const b = block.trim();
    if (b.startsWith('#')) {
      heading = b.replace(/^#+\s*/, '');
      continue;
    }
    const flat = b
      .replace(/^\s*(?:[-*]|\d+\.)\s+/gm, '')
      .replace(/\*\*/g, '')
      .replace(/\s+/g, ' ');
    for (const s of flat.match(/[^.!?]+[.!?]+(\s|$)|[^.!?]+$/g) ?? []) if (s.trim()) out.push({ heading, text: s.trim() });
  }
  return out;
}

// ---- index -------------------------------------------------------------------------------------

interface Doc {
  id: number;
  file: string;
  title: string;
  body: string;
  length: number;
}

function bundled(): { file: string; text: string }[] {
  return readdirSync(DOCS_DIR)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((file) => ({ file, text: readFileSync(join(DOCS_DIR, file), 'utf8') }));
}

function fingerprint(files: { file: string; text: string }[]): string {
  const h = createHash('sha256');
  for (const f of files) h.update(`${f.file}\0${f.text}\0`);
  return h.digest('hex');
}

function build(db: Database.Database, files: { file: string; text: string }[]): void {
  db.exec(`
    DROP TABLE IF EXISTS meta; DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS postings;
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE docs (id INTEGER PRIMARY KEY, file TEXT NOT NULL UNIQUE, title TEXT NOT NULL, body TEXT NOT NULL, length INTEGER NOT NULL);
    CREATE TABLE postings (term TEXT NOT NULL, doc_id INTEGER NOT NULL REFERENCES docs(id), tf INTEGER NOT NULL, PRIMARY KEY (term, doc_id)) WITHOUT ROWID;
  `);
  const addDoc = db.prepare('INSERT INTO docs (file, title, body, length) VALUES (?, ?, ?, ?)');
  const addPosting = db.prepare('INSERT INTO postings (term, doc_id, tf) VALUES (?, ?, ?)');
  for (const { file, text } of files) {
    const title = text.match(/^#\s+(.+)$/m)?.[1]?.trim() ?? file.replace(/\.md$/, '');
    const body = text.replace(/^#\s+.+$/m, '').trim();
    // The title counts TITLE_WEIGHT times: a note about X should outrank one that mentions X.
    const words = [...Array.from({ length: TITLE_WEIGHT }, () => tokens(title)).flat(), ...tokens(body)];
    const id = Number(addDoc.run(file, title, body, words.length).lastInsertRowid);
    const tf = new Map<string, number>();
    for (const w of words) tf.set(w, (tf.get(w) ?? 0) + 1);
    for (const [term, n] of tf) addPosting.run(term, id, n);
  }
  const meta = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
  meta.run('fingerprint', fingerprint(files));
  meta.run('documents', String(files.length));
}

const handles = new Map<string, Database.Database>();

function openDb(home: string): Database.Database {
  const file = dbPath(home);
  let db = handles.get(file);
  if (!db?.open) {
    mkdirSync(dirname(file), { recursive: true });
    db = new Database(file);
    handles.set(file, db);
  }
  const files = bundled();
  const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
  const stored = hasMeta
    ? (db.prepare("SELECT value FROM meta WHERE key = 'fingerprint'").get() as { value: string } | undefined)
    : undefined;
  if (stored?.value !== fingerprint(files)) db.transaction(() => build(db, files))();
  return db;
}

function closeDb(home: string): void {
  const file = dbPath(home);
  handles.get(file)?.close();
  handles.delete(file);
}

/** Deletes the index and builds it again from the bundled notes (`keel data reset`). */
export async function reset(home: string): Promise<void> {
  closeDb(home);
  const file = dbPath(home);
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, { force: true });
  openDb(home);
  closeDb(home);
}

// ---- search ------------------------------------------------------------------------------------

export interface Hit {
  doc: Doc;
  score: number;
  heading: string;
  snippet: string;
}

/** Okapi BM25 over the stored postings. */
export function bm25(db: Database.Database, query: string, limit: number): Hit[] {
  const q = [...new Set(tokens(query))];
  if (q.length === 0) return [];
  const { n, avgdl } = db.prepare('SELECT count(*) AS n, avg(length) AS avgdl FROM docs').get() as { n: number; avgdl: number };
  const docs = new Map((db.prepare('SELECT * FROM docs').all() as Doc[]).map((d) => [d.id, d]));
  const scores = new Map<number, number>();
  const postings = db.prepare('SELECT doc_id, tf FROM postings WHERE term = ?');
  for (const term of q) {
    const rows = postings.all(term) as { doc_id: number; tf: number }[];
    if (rows.length === 0) continue;
    const idf = Math.log(1 + (n - rows.length + 0.5) / (rows.length + 0.5));
    for (const { doc_id, tf } of rows) {
      const len = docs.get(doc_id)!.length;
      const s = (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * len) / avgdl));
      scores.set(doc_id, (scores.get(doc_id) ?? 0) + s);
    }
  }
  return [...scores.entries()]
    .sort((a, b) => b[1] - a[1] || a[0] - b[0])
    .slice(0, limit)
    .map(([id, score]) => ({ doc: docs.get(id)!, score, ...snippet(docs.get(id)!, q) }));
}

/** The two-sentence window that covers the most query terms (earliest on ties). */
function snippet(doc: Doc, q: string[]): { heading: string; snippet: string } {
  const ps = passages(doc.title, doc.body);
  let best = { i: 0, hits: -1 };
  for (let i = 0; i < ps.length; i++) {
    const words = new Set(tokens(`${ps[i].text} ${ps[i + 1]?.heading === ps[i].heading ? ps[i + 1].text : ''}`));
    const hits = q.filter((t) => words.has(t)).length;
    if (hits > best.hits) best = { i, hits };
  }
  const p = ps[best.i];
  if (!p) return { heading: doc.title, snippet: '' };
  let text = ps[best.i + 1]?.heading === p.heading ? `${p.text} ${ps[best.i + 1].text}` : p.text;
  if (text.length > 300) text = `${text.slice(0, 297).replace(/\s+\S*$/, '')}…`;
  return { heading: p.heading, snippet: text };
}

export default function setup(api: PluginAPI): void {
  api.onClose(() => closeDb(api.home));
  api.registerTool({
    name: 'research',
    description:
      "Search the owner's reference library of short notes (personal finance, travel, health and fitness, productivity, home, " +
      'technology) by relevance. Returns the best documents with their title, the section and a passage that matches.',
    parameters: {
      type: 'object',
      properties: {
        query: {
          type: 'string',
          minLength: 1,
          description: "What to look up, in plain words, e.g. 'how big should an emergency fund be'.",
        },
        limit: { type: 'integer', minimum: 1, maximum: 10, description: 'How many documents to return (default 3).' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    execute: (args) => {
      if (typeof args.query !== 'string' || !args.query.trim()) return { content: 'query must be some words to look up', is_error: true };
      const limit = args.limit ?? 3;
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 10)
        return { content: 'limit must be a whole number from 1 to 10', is_error: true };
      const db = openDb(api.home);
      const hits = bm25(db, args.query, limit);
      if (hits.length === 0) {
        const titles = (db.prepare('SELECT title FROM docs ORDER BY title').all() as { title: string }[]).map((r) => r.title);
        return { content: `No document matches '${args.query.trim()}'. The library holds: ${titles.join('; ')}.`, details: { hits: [] } };
      }
      const lines = [`${hits.length} document${hits.length === 1 ? '' : 's'} for '${args.query.trim()}':`];
      hits.forEach((h, i) => {
        const section = h.heading === h.doc.title ? '' : ` › ${h.heading}`;
        lines.push(`${i + 1}. ${h.doc.title}${section} (${h.doc.file}, score ${h.score.toFixed(2)})`, `   “${h.snippet}”`);
      });
      return {
        content: lines.join('\n'),
        details: { hits: hits.map((h) => ({ file: h.doc.file, title: h.doc.title, score: h.score, heading: h.heading })) },
      };
    },
  });
}
