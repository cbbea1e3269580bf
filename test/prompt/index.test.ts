/**
 * R23 (issue 49): the shortlist's index, built in flat lists for a cold process's speed, ranks
 * exactly as BM25F written out plainly — a list of terms per tool and field, a map per tool — does:
 * the same tools in the same order for every word of the pools below (humps, digits, stop words,
 * other tools' names, parameters sharing a description, a parameter's words counted once, nested
 * and enum parameters), each word also as a prefix.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stemmer } from 'stemmer';
import { normalizeDeclaration } from '../../src/manifest/schema.js';
import { isStopWord, paramTexts, searchTools, TUNING } from '../../src/prompt/shortlist.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { ToolSpec } from '../../src/types/index.js';
import { referencePieces } from '../support/terms-reference.js';

function refTerms(text: string): string[] {
  const out: string[] = [];
  for (const raw of referencePieces(text)) {
    if (raw.length < 2 || (raw.length < 3 && /^\d+$/.test(raw))) continue;
    const w = raw.toLowerCase();
    if (isStopWord(w)) continue;
    out.push(w.length <= 2 || /\d/.test(w) ? w : stemmer(w));
  }
  return out;
}

type Field = keyof typeof TUNING.fields;
const FIELDS = Object.keys(TUNING.fields) as Field[];

/** BM25F over the pool, plainly: per term, per tool, its weight (as the index keeps it, a float32). */
function refWeights(pool: readonly ToolSpec[]): Map<string, Map<number, number>> {
  const names = new Set(pool.map((t) => t.name));
  const own = (t: ToolSpec, text: string) =>
    text.replace(/[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+/g, (m) => (m !== t.name && names.has(m) ? ' ' : m));
  const docs = pool.map((t) => ({
    name: refTerms(t.name),
    description: refTerms(own(t, t.description)),
    guidance: refTerms(own(t, t.declaration.guidance ?? '')),
    params: paramTexts(t.parameters).flatMap((p) => [...new Set(refTerms(own(t, p)))]),
    plugin: refTerms(t.plugin),
  }));
  const norms = docs.map(() => ({}) as Record<Field, number>);
  for (const f of FIELDS) {
    const present = docs.filter((d) => d[f].length > 0);
    const avg = present.reduce((s, d) => s + d[f].length, 0) / Math.max(1, present.length) || 1;
    const { w, b } = TUNING.fields[f];
    docs.forEach((d, i) => {
      norms[i][f] = w / (1 - b + (b * d[f].length) / avg);
    });
  }
  const tf = new Map<string, Map<number, number>>();
  docs.forEach((d, i) => {
    for (const f of FIELDS) {
      for (const term of d[f]) {
        let m = tf.get(term);
        if (!m) tf.set(term, (m = new Map()));
        m.set(i, (m.get(i) ?? 0) + norms[i][f]);
      }
    }
  });
  const { k1 } = TUNING;
  const weights = new Map<string, Map<number, number>>();
  for (const [term, m] of tf) {
    const idf = Math.log(1 + (pool.length - m.size + 0.5) / (m.size + 0.5));
    weights.set(term, new Map([...m].map(([i, x]) => [i, Math.fround((idf * x * (k1 + 1)) / (k1 + x))])));
  }
  return weights;
}

/** A word's ranking, as the shortlist scores it without the lexicon: per term, itself, else the longer terms it begins, and the shorter terms that begin it. */
function refRank(pool: readonly ToolSpec[], weights: Map<string, Map<number, number>>, word: string): string[] {
  const vocabulary = [...weights.keys()].sort();
  const scores = new Map<number, number>();
  const add = (t: string, scale: number) => {
    for (const [i, w] of weights.get(t) ?? []) scores.set(i, (scores.get(i) ?? 0) + w * scale);
  };
  for (const term of new Set(refTerms(word))) {
    if (weights.has(term)) add(term, 1);
    else if (term.length >= TUNING.prefixMin)
      for (const ext of vocabulary) if (ext.startsWith(term) && ext !== term) add(ext, TUNING.prefixWeight);
    for (let n = term.length - 1; n >= TUNING.prefixMin; n--) add(term.slice(0, n), TUNING.prefixWeight);
  }
  return [...scores].sort((a, b) => b[1] - a[1] || a[0] - b[0]).map(([i]) => pool[i].name);
}

const TOPICS = ['calendar events', 'unpaid bills', 'inbox messages', 'weather forecast', 'notes folder', 'bank transfers'];

function tricky(): ToolSpec[] {
  return Array.from({ length: 240 }, (_, i) =>
    makeToolSpec(
      {
        name: i % 3 === 0 ? `getHTTPServer${i}_status_v2` : `lookup_${TOPICS[i % TOPICS.length].replace(' ', '_')}_${i}`,
        description: `Looks up ${TOPICS[i % TOPICS.length]} for the user: XMLHttpRequest 401(k) café variant ${i}; see lookup_${TOPICS[(i + 1) % TOPICS.length].replace(' ', '_')}_${i + 1} the and of`,
        parameters: {
          type: 'object',
          properties: {
            period: {
              type: 'string',
              description: i % 3 ? 'Which days to cover' : 'Which days to cover, which days',
              enum: ['today', 'weekOf2026', null, 3],
            },
            ...(i % 2 ? { limit: { type: 'integer', description: `Maximum results ${i % 5}` } } : {}),
            filter: {
              type: 'object',
              description: 'Inner filter',
              properties: { deepField: { type: 'string', description: 'Deep field words' } },
            },
            tags: {
              type: 'array',
              items: { type: 'object', properties: { tagName: { type: 'string', enum: ['x1', 'y22', 'urgentTag'] } } },
            },
          },
        },
        execute: () => 'ok',
      },
      `plugin_${i % 4}`,
      normalizeDeclaration({
        effect: 'read',
        ...(i % 5 === 0 ? { guidance: `For totals call getHTTPServer${i + 3}_status_v2 first; bills weekly.` } : {}),
      }),
    ),
  );
}

test('R23 (issue 49): the index ranks every word of a pool exactly as plainly written BM25F does', () => {
  for (const pool of [tricky(), tricky().slice(0, 13)]) {
    const weights = refWeights(pool);
    const words = new Set<string>();
    for (const t of pool) {
      const text = `${t.name} ${t.description} ${t.declaration.guidance ?? ''} ${paramTexts(t.parameters).join(' ')} ${t.plugin}`;
      for (const w of text.split(/[^A-Za-z0-9]+/)) if (w) words.add(w.toLowerCase());
    }
    // Each word, and its first four and five letters (the prefix matches both ways).
    const queries = [...words].flatMap((w) => [w, w.slice(0, 4), w.slice(0, 5)]);
    let ranked = 0;
    for (const q of new Set(queries)) {
      const expected = refRank(pool, weights, q);
      const got = searchTools(pool, pool, q, pool.length, new Set(), { expand: false }).map((t) => t.name);
      assert.deepEqual(got, expected, `query ${JSON.stringify(q)} over ${pool.length} tools`);
      if (expected.length > 0) ranked++;
    }
    assert.ok(ranked > 20, `${ranked} queries ranked something`);
  }
});

test("R23 (issue 49): the index's first term ranks like any other (postings are numbered from 0)", () => {
  // "alpha" is the first term of the first tool: the term numbered 0 in the pool's index.
  const p = tricky().map((t, i) => (i === 0 ? { ...t, name: 'alpha_lookup', description: 'Looks up alpha records.' } : t));
  // searchTools ranks only (the shortlist would fill its room with the pool's first tool anyway).
  assert.deepEqual(
    searchTools(p, p, 'alpha', 1).map((t) => t.name),
    ['alpha_lookup'],
  );
});
