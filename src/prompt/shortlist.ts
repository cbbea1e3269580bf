/**
 * The per-turn shortlist: a BM25F ranking of tools against the request. Ranks only; never decides
 * what may run.
 */
import { stemmer } from 'stemmer';
import { FIND_TOOLS } from '../tools/builtins.js';
import type { JsonSchema, ToolSpec } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { expansions } from './lexicon.js';
import type { Shortlist } from './menu.js';

export const DEFAULT_TOOL_CAP = 12;

/*
 * R23's ranking: BM25F over each tool's name, description, guidance, parameters (names,
 * descriptions, enum values) and plugin name. Hand-written rather than minisearch (DESIGN's choice)
 * for speed at scale: a request of a dozen words touches thousands of a 5,000-tool pool, and
 * minisearch builds a result object with its match map for each and sorts them all — 4-15 ms a
 * request in bench/prompt (without and with prefix search) where this index takes 0.1-0.3 ms on the
 * same machine. Each term's weight in each tool is computed once, when the pool's index is built,
 * so a request costs an addition per matching tool and a top-k selection.
 */

// Words that carry no signal about which tool a request needs (English function words and the
// filler of requests: "can you please show me …").
const STOP = new Set(
  `a about after again all also am an and any are as at be been before being but by can could did do does doing done
  for from get got had has have having he her here hers him his how i if in into is it its just let me more most my
  no not now of off on once one only or other our ours out over own please same she should so some such than that the
  their them then there these they this those through to too up us very was we were what when where which while who
  whom why will with would you your yours ll re ve don didn doesn isn
  show tell give want need know like see anything something everything nothing ever really actually maybe still hi hey thanks`.split(/\s+/),
);

/**
 * Stemming is the `stemmer` package's Porter stemmer (so "reminders", "reminded" and "reminder" meet
 * at "remind"); words with digits and words of two letters are kept as they are.
 */
function stem(w: string): string {
  return w.length <= 2 || /\d/.test(w) ? w : stemmer(w);
}

/** Whether the ranking ignores `word` (lower case): the lexicon's own words must not be among these. */
export const isStopWord = (word: string): boolean => STOP.has(word);

// --- terms

/**
 * Text → terms: split on anything not a letter or digit, at camelCase humps and between letters and
 * digits ("401(k)" and "401k" both give "401"); lower-cased; stop words, single characters and
 * one- or two-digit numbers dropped; stemmed. Each piece's term is remembered: a pool's texts share
 * most of their words, and a cold process made each one again (issue 49: this was ~45 ms of a
 * 2,000-tool pool's first request, one character at a time in code not yet optimised; the pieces now
 * come from one regular-expression match, native code, and each repeated word is one look-up).
 */
function terms(text: string): string[] {
  const out: string[] = [];
  const found = text.match(PIECE);
  if (found === null) return out;
  for (let i = 0; i < found.length; i++) {
    const term = termOfPiece(found[i]);
    if (term !== '') out.push(term);
  }
  return out;
}

/**
 * A piece: a run of ASCII digits, or of ASCII letters cut where a lower-case letter is followed by
 * an upper-case one (a letter run with no such cut is some capitals then some small letters) —
 * what `text.split(/[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])/)`
 * gives, without its empty strings (test/prompt/terms.test.ts holds the two together; the split's
 * look-behinds were slow).
 */
const PIECE = /[A-Z]+[a-z]*|[a-z]+|[0-9]+/g;

/** The pieces of a text, in order. */
export function pieces(text: string): string[] {
  return text.match(PIECE) ?? [];
}

/** Each piece seen, and its term ('' for a piece the ranking drops). */
const termOf = new Map<string, string>();

/** A piece's term, remembered; '' for a piece the ranking drops. */
function termOfPiece(raw: string): string {
  let term = termOf.get(raw);
  if (term === undefined) {
    term = raw.length < 2 || (raw.length < 3 && raw.charCodeAt(0) <= 57) ? '' : raw.toLowerCase();
    if (term !== '') term = STOP.has(term) ? '' : stem(term);
    if (termOf.size > 50_000) termOf.clear(); // requests bring new words forever; the pool's are made again cheaply
    termOf.set(raw, term);
  }
  return term;
}

// --- the index

/**
 * The ranking's knobs. Field weights: a word of the tool's name says most, a parameter's or the
 * plugin's least. b (length normalisation) is low: a longer description is usually a more careful
 * one about the same tool, not a document about more topics. A request word that is no index term
 * also finds the index terms it begins ("promo" → "promot…") and those that begin it ("calculator"
 * → "calc"), at `prefixWeight`.
 */
export const TUNING = {
  fields: {
    name: { w: 3, b: 0.3 },
    description: { w: 1, b: 0.4 },
    guidance: { w: 0.6, b: 0.4 },
    params: { w: 0.5, b: 0.4 },
    plugin: { w: 0.5, b: 0 },
  },
  k1: 1.2,
  prefixWeight: 0.4,
  prefixMin: 4,
  /** The weight of a word the lexicon adds (lexicon.ts): a guess about the request, below its own words. */
  expandWeight: 0.6,
};
type Field = keyof typeof TUNING.fields;

/** The text of each of a tool's parameters (name, description, enum values), nested objects included. */
export function paramTexts(schema: JsonSchema | undefined, out: string[] = []): string[] {
  const props = schema?.properties;
  if (!props || typeof props !== 'object') return out;
  for (const [name, p] of Object.entries(props as Record<string, JsonSchema>)) {
    const items = p?.items as JsonSchema | undefined;
    const en = (p?.enum ?? items?.enum) as unknown[] | undefined;
    out.push(`${name} ${typeof p?.description === 'string' ? p.description : ''} ${Array.isArray(en) ? en.join(' ') : ''}`);
    if (p?.type === 'object') paramTexts(p, out);
    if (items?.type === 'object') paramTexts(items, out);
  }
  return out;
}

interface Index {
  byName: Map<string, number>;
  /**
   * Per term, its id: its tools are docs[start[id]..start[id + 1]) (ascending) with their weights
   * at the same places — one pair of typed arrays for every term, no object per term (issue 49:
   * ~4,000 typed-array views at 2,000 tools, a cold first request's garbage).
   */
  postings: Map<string, number>;
  start: Int32Array;
  docs: Int32Array;
  weights: Float32Array;
  /** The index's terms, sorted, for prefix lookups. */
  vocabulary: string[];
  prefixCache: Map<string, string[]>;
  scores: Float64Array;
  touched: Int32Array;
  /** stamp[i] === generation: pool[i] is a candidate of the current call. */
  stamp: Uint32Array;
  generation: number;
}

/** One index per pool array, built on first use (DESIGN: "index built once per pool change"). */
const indexes = new WeakMap<readonly ToolSpec[], Index>();

/** The fields in the order the index walks them (a tool's occurrences, field by field): buildIndex's slots. */
const FIELDS: readonly Field[] = ['name', 'description', 'guidance', 'params', 'plugin'];

function buildIndex(pool: readonly ToolSpec[]): Index {
  const n = pool.length;
  const F = FIELDS.length;
  // Another tool's name in this tool's text (guidance that says "for bills call upcoming_dues") is about that tool, not this one.
  const names = new Set(pool.map((t) => t.name));
  const ownWords = (t: ToolSpec, text: string) =>
    !text.includes('_') ? text : text.replace(/[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+/g, (m) => (m !== t.name && names.has(m) ? ' ' : m));

  // Issue 49: the pool's words go straight into flat lists — per occurrence its term's id and its
  // slot (tool × field), per slot its length — with no list of terms per tool and field. Each
  // piece of text is one look-up (its term's id, or -1 for a word the ranking drops). At 2,000
  // tools the lists per tool, and the file that kept them between processes, were most of a cold
  // process's first request (~100 ms: the terms, their cache key, the garbage collector copying them).
  const termIds = new Map<string, number>();
  const idOf = new Map<string, number>();
  // Room for a tool's usual ~20-30 words each, grown by doubling past that.
  let occTerm = new Int32Array(Math.max(1024, n * 32));
  let occSlot = new Int32Array(occTerm.length);
  let total = 0;
  const length = new Int32Array(n * F);
  /** seen[id] === text: the term already counted in this text (a parameter's words count once). */
  let seen = new Int32Array(1024);
  let text = 0;
  /** Each text seen (by whether its terms count once): where its ids are in `kept`, after their count. */
  const made = [new Map<string, number>(), new Map<string, number>()];
  let kept = new Int32Array(1024);
  let keptEnd = 0;
  const add = (value: string, slot: number, unique: boolean, remember = true) => {
    if (value === '') return;
    const memo = made[unique ? 1 : 0];
    const at = remember ? memo.get(value) : undefined;
    if (at !== undefined) {
      // A text many tools share (a parameter's description, a plugin's name): its ids copied.
      const count = kept[at];
      if (total + count > occTerm.length) {
        occTerm = grown(occTerm, total + count);
        occSlot = grown(occSlot, total + count);
      }
      occTerm.set(kept.subarray(at + 1, at + 1 + count), total);
      occSlot.fill(slot, total, total + count);
      total += count;
      length[slot] += count;
      return;
    }
    const from = total;
    const found = value.match(PIECE);
    if (found !== null) {
      text++;
      for (let k = 0; k < found.length; k++) {
        const raw = found[k];
        let id = idOf.get(raw);
        if (id === undefined) {
          const term = termOfPiece(raw);
          if (term === '') id = -1;
          else {
            id = termIds.get(term);
            if (id === undefined) termIds.set(term, (id = termIds.size));
          }
          idOf.set(raw, id);
        }
        if (id < 0) continue;
        if (unique) {
          if (id >= seen.length) seen = grown(seen, id + 1);
          if (seen[id] === text) continue;
          seen[id] = text;
        }
        if (total === occTerm.length) {
          occTerm = grown(occTerm, total + 1);
          occSlot = grown(occSlot, total + 1);
        }
        occTerm[total] = id;
        occSlot[total++] = slot;
      }
    }
    length[slot] += total - from;
    if (!remember) return;
    if (keptEnd + 1 + total - from > kept.length) kept = grown(kept, keptEnd + 1 + total - from);
    memo.set(value, keptEnd);
    kept[keptEnd] = total - from;
    kept.set(occTerm.subarray(from, total), keptEnd + 1);
    keptEnd += 1 + total - from;
  };
  // The slots of FIELDS' order.
  for (let i = 0; i < n; i++) {
    const t = pool[i];
    const at = i * F;
    add(t.name, at, false, false);
    add(ownWords(t, t.description), at + 1, false);
    add(ownWords(t, t.declaration.guidance ?? ''), at + 2, false);
    // Each parameter's words once: its name usually comes back in its description ("year: Year.").
    for (const param of paramTexts(t.parameters)) add(ownWords(t, param), at + 3, true);
    add(t.plugin, at + 4, false);
  }

  // Average length over the tools that have the field: most tools have no guidance, and averaging
  // over all of them would make every real guidance look long. Then each slot's length norm (BM25F).
  const norm = new Float64Array(n * F);
  for (let f = 0; f < F; f++) {
    let sum = 0;
    let present = 0;
    for (let slot = f; slot < length.length; slot += F) {
      if (length[slot] > 0) present++;
      sum += length[slot];
    }
    const avg = sum / Math.max(1, present) || 1;
    const { w, b } = TUNING.fields[FIELDS[f]];
    for (let slot = f; slot < length.length; slot += F) norm[slot] = w / (1 - b + (b * length[slot]) / avg);
  }

  // Per term, the tools it occurs in (ascending, as the occurrences come tool by tool) and its pseudo
  // term frequency in each: the fields' weighted, length-normalised counts summed in the order they
  // occur — counted into one pair of typed arrays that every term's postings view.
  const nTerms = termIds.size;
  const lastDoc = new Int32Array(nTerms).fill(-1);
  const count = new Int32Array(nTerms + 1);
  for (let k = 0; k < total; k++) {
    const id = occTerm[k];
    const doc = (occSlot[k] / F) | 0;
    if (lastDoc[id] !== doc) {
      lastDoc[id] = doc;
      count[id + 1]++;
    }
  }
  for (let id = 0; id < nTerms; id++) count[id + 1] += count[id];
  const allDocs = new Int32Array(count[nTerms]);
  const tf = new Float64Array(count[nTerms]);
  const fill = count.slice(0, nTerms);
  lastDoc.fill(-1);
  for (let k = 0; k < total; k++) {
    const id = occTerm[k];
    const slot = occSlot[k];
    const doc = (slot / F) | 0;
    if (lastDoc[id] !== doc) {
      lastDoc[id] = doc;
      allDocs[fill[id]++] = doc;
    }
    tf[fill[id] - 1] += norm[slot];
  }
  const allWeights = new Float32Array(count[nTerms]);
  const { k1 } = TUNING;
  for (let id = 0; id < nTerms; id++) {
    const from = count[id];
    const to = count[id + 1];
    const df = to - from;
    const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
    for (let k = from; k < to; k++) allWeights[k] = (idf * tf[k] * (k1 + 1)) / (k1 + tf[k]);
  }
  return {
    byName: new Map(pool.map((t, i) => [t.name, i])),
    postings: termIds,
    start: count,
    docs: allDocs,
    weights: allWeights,
    vocabulary: [...termIds.keys()].sort(),
    prefixCache: new Map(),
    scores: new Float64Array(n),
    touched: new Int32Array(n),
    stamp: new Uint32Array(n),
    generation: 0,
  };
}

/** A copy of `a` with room for at least `need` entries (doubling), zeros after its own. */
function grown(a: Int32Array<ArrayBuffer>, need: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}

/** The lexicon's English words as terms: a fixed table's few hundred words, each made once. */
const expansionMemo = new Map<string, string[]>();
function expansionTerms(word: string): string[] {
  let t = expansionMemo.get(word);
  if (t === undefined) {
    if (expansionMemo.size > 5_000) expansionMemo.clear();
    expansionMemo.set(word, (t = terms(word)));
  }
  return t;
}

/** Index terms longer than `term` that begin with it. */
function extensions(ix: Index, term: string): string[] {
  let hit = ix.prefixCache.get(term);
  if (hit) return hit;
  const v = ix.vocabulary;
  let lo = 0;
  let hi = v.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (v[mid] < term) lo = mid + 1;
    else hi = mid;
  }
  hit = [];
  for (let i = lo; i < v.length && v[i].startsWith(term); i++) if (v[i] !== term) hit.push(v[i]);
  if (ix.prefixCache.size > 10_000) ix.prefixCache.clear();
  ix.prefixCache.set(term, hit);
  return hit;
}

/** Marks the candidates; false when they are not the pool's tools in pool order (then `allowedNames` decides). */
function markCandidates(ix: Index, pool: readonly ToolSpec[], candidates: readonly ToolSpec[]): boolean {
  const gen = ++ix.generation;
  let j = 0;
  for (let i = 0; i < pool.length && j < candidates.length; i++) {
    if (pool[i] === candidates[j]) {
      ix.stamp[i] = gen;
      j++;
    }
  }
  return j === candidates.length;
}

/** The pool's index, and which of its tools are candidates of this call. */
function prepare(pool: readonly ToolSpec[], candidates: readonly ToolSpec[]): { ix: Index; allowed: (i: number) => boolean } {
  let ix = indexes.get(pool);
  // A pool array changed in place (not how the registry works, but cheap to notice) gets a new index.
  if (!ix || ix.scores.length !== pool.length) indexes.set(pool, (ix = buildIndex(pool)));
  const index = ix;
  const inOrder = markCandidates(index, pool, candidates);
  const allowedNames = inOrder ? undefined : new Set(candidates.map((t) => t.name));
  const gen = index.generation;
  return { ix: index, allowed: (i) => (allowedNames ? allowedNames.has(pool[i].name) : index.stamp[i] === gen) };
}

/**
 * The one ranking (R23, R31): the `room` best-scoring allowed tools that `skip` does not exclude,
 * best first (ties in pool order). Only tools that share a term with the text are ranked at all.
 */
function rank(
  ix: Index,
  pool: readonly ToolSpec[],
  allowed: (i: number) => boolean,
  text: string,
  room: number,
  skip: (name: string) => boolean,
  expand = true,
): number[] {
  if (room <= 0) return [];
  // Score: each distinct query term, and the longer index terms it begins, add their precomputed weights.
  const { scores, touched } = ix;
  let nTouched = 0;
  const { start, docs, weights } = ix;
  const add = (id: number | undefined, scale: number) => {
    if (id === undefined) return;
    for (let k = start[id]; k < start[id + 1]; k++) {
      const d = docs[k];
      if (scores[d] === 0) touched[nTouched++] = d;
      scores[d] += weights[k] * scale;
    }
  };
  const own = new Set(terms(text));
  for (const term of own) {
    const exact = ix.postings.get(term);
    if (exact !== undefined) add(exact, 1);
    else if (term.length >= TUNING.prefixMin) for (const ext of extensions(ix, term)) add(ix.postings.get(ext), TUNING.prefixWeight);
    // And the shorter index terms it begins with ("calculator" → a tool named "calc").
    for (let n = term.length - 1; n >= TUNING.prefixMin; n--) add(ix.postings.get(term.slice(0, n)), TUNING.prefixWeight);
  }
  // The lexicon's words for what the request says in words no tool uses (lexicon.ts): index terms only, at a lower weight.
  if (expand) {
    const added = new Set<string>();
    for (const word of expansions(text)) {
      for (const term of expansionTerms(word)) {
        if (own.has(term) || added.has(term)) continue;
        added.add(term);
        add(ix.postings.get(term), TUNING.expandWeight);
      }
    }
  }

  // Top `room` allowed, not skipped, by score then pool order.
  const top: number[] = [];
  const better = (a: number, b: number) => scores[a] > scores[b] || (scores[a] === scores[b] && a < b);
  for (let k = 0; k < nTouched; k++) {
    const d = touched[k];
    if (top.length === room && !better(d, top[room - 1])) continue;
    if (!allowed(d) || skip(pool[d].name)) continue;
    if (top.length === room) top.pop();
    let at = top.length;
    while (at > 0 && better(d, top[at - 1])) at--;
    top.splice(at, 0, d);
  }
  for (let k = 0; k < nTouched; k++) scores[touched[k]] = 0;
  return top;
}

export interface RankOptions {
  /** Add the lexicon's words to the request's (default true); false is the plain BM25F, for bench/prompt's comparison. */
  expand?: boolean;
}

/**
 * R23: BM25F over name, description, guidance, parameters and plugin. Keeps `keep`, then the
 * best-ranked other candidates up to `cap` in all (ties in pool order); the room the ranking leaves
 * (a request that shares no word with the tools it needs) is filled with `prefer` (the tools the
 * conversation has used, then the most used before), then with the other candidates in pool order.
 * Candidates at or below the cap are all kept.
 */
export function bm25Shortlist(cap: number = DEFAULT_TOOL_CAP, options: RankOptions = {}): Shortlist {
  const expand = options.expand ?? true;
  const shortlist: Shortlist = (candidates, keep, request, pool, prefer = []) => {
    if (candidates.length <= cap) return new Set(candidates.map((t) => t.name));
    const chosen = new Set<string>(keep);
    const { ix, allowed } = prepare(pool, candidates);
    let kept = 0;
    for (const k of keep) {
      // find_tools opens the rest of the pool: it does not take the place of a tool that serves the request.
      if (k === FIND_TOOLS) continue;
      const i = ix.byName.get(k);
      if (i !== undefined && allowed(i)) kept++;
    }
    let room = cap - kept;
    if (room <= 0) return chosen;
    for (const d of rank(ix, pool, allowed, request, room, (n) => chosen.has(n), expand)) {
      chosen.add(pool[d].name);
      room--;
    }
    // The fill: nothing on the menu is there for no reason, but an empty menu serves nobody.
    for (const name of prefer) {
      if (room <= 0) return chosen;
      const i = ix.byName.get(name);
      if (i === undefined || !allowed(i) || chosen.has(name)) continue;
      chosen.add(name);
      room--;
    }
    for (const t of candidates) {
      if (room <= 0) break;
      if (chosen.has(t.name)) continue;
      chosen.add(t.name);
      room--;
    }
    return chosen;
  };
  return Object.assign(shortlist, { cap });
}

/**
 * R31: the tools among `candidates` that best match `query`, best first, at most `limit`, skipping
 * `skip`: the shortlist's own ranking (same index, same weights), for find_tools and its bench.
 * A tool that shares no term with the query is never returned.
 */
export function searchTools(
  pool: readonly ToolSpec[],
  candidates: readonly ToolSpec[],
  query: string,
  limit: number,
  skip: ReadonlySet<string> = new Set(),
  options: RankOptions = {},
): ToolSpec[] {
  if (candidates.length === 0 || limit <= 0) return [];
  const { ix, allowed } = prepare(pool, candidates);
  return rank(ix, pool, allowed, query, limit, (n) => skip.has(n), options.expand ?? true).map((d) => pool[d]);
}

/** KEEL_TOOL_CAP: the menu's size once the pool outgrows it (default 12). */
export function toolCapFromEnv(env: NodeJS.ProcessEnv): number {
  const v = env.KEEL_TOOL_CAP;
  if (v === undefined || v === '') return DEFAULT_TOOL_CAP;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new KeelError('config', `KEEL_TOOL_CAP=${v} is not a positive integer`);
  return n;
}
