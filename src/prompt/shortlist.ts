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

/**
 * Each of a tool's parameters, nested objects included: its name, its description and its enum
 * values (joined by spaces) — the three parts of its text, which the index takes apart (a
 * parameter's name and description are usually the same strings in many tools: each is tokenised once).
 */
function eachParam(schema: JsonSchema | undefined, visit: (name: string, description: string, values: string) => void): void {
  const props = schema?.properties;
  if (!props || typeof props !== 'object') return;
  for (const name in props as Record<string, JsonSchema>) {
    if (!Object.hasOwn(props, name)) continue;
    const p = (props as Record<string, JsonSchema>)[name];
    const items = p?.items as JsonSchema | undefined;
    const en = (p?.enum ?? items?.enum) as unknown[] | undefined;
    visit(name, typeof p?.description === 'string' ? p.description : '', Array.isArray(en) ? en.join(' ') : '');
    if (p?.type === 'object') eachParam(p, visit);
    if (items?.type === 'object') eachParam(items, visit);
  }
}

/** The text of each of a tool's parameters (name, description, enum values), nested objects included. */
export function paramTexts(schema: JsonSchema | undefined): string[] {
  const out: string[] = [];
  eachParam(schema, (name, description, values) => out.push(`${name} ${description} ${values}`));
  return out;
}

/** A term's tools, ascending, and its weight in each: made the first time a request asks for the term. */
interface Postings {
  docs: Int32Array;
  weights: Float32Array;
}

interface Index {
  byName: Map<string, number>;
  /** Each term's id. */
  termIds: Map<string, number>;
  /**
   * Every occurrence of a term, as its slot (tool × field), chained per term: head[id] − 1 is the
   * term's last occurrence, next[k] − 1 the one before occurrence k (−1: none). Issue 49: a
   * request needs the postings of its dozen terms, not of the pool's thousands — each is made from
   * its chain when first asked for (`postingsOf`), which took two passes over every occurrence and
   * a weight per posting off a cold process's first request (~12 ms at 2,000 tools).
   */
  head: Int32Array;
  next: Int32Array;
  slotOf: Int32Array;
  /** Per slot, the field's weight over its length norm (BM25F). */
  norm: Float64Array;
  postings: (Postings | undefined)[];
  /** The index's terms, sorted, for prefix lookups: made when a request first needs one. */
  vocabulary: string[] | undefined;
  prefixCache: Map<string, string[]>;
  scores: Float64Array;
  touched: Int32Array;
  /** stamp[i] === generation: pool[i] is a candidate of the current call. */
  stamp: Uint32Array;
  generation: number;
  /** The candidates the stamps are of, and their names when they are not in pool order. */
  marked: { candidates: readonly ToolSpec[]; count: number; names: ReadonlySet<string> | undefined } | undefined;
}

/** One index per pool array, built on first use (DESIGN: "index built once per pool change"). */
const indexes = new WeakMap<readonly ToolSpec[], Index>();

/** The fields in the order the index walks them (a tool's occurrences, field by field): buildIndex's slots. */
const FIELDS: readonly Field[] = ['name', 'description', 'guidance', 'params', 'plugin'];

function buildIndex(pool: readonly ToolSpec[]): Index {
  const n = pool.length;
  const F = FIELDS.length;
  const byName = new Map<string, number>();
  for (let i = 0; i < n; i++) byName.set(pool[i].name, i);
  // Another tool's name in this tool's text (guidance that says "for bills call upcoming_dues") is about that tool, not this one.
  const ownWords = (t: ToolSpec, text: string) =>
    !text.includes('_') ? text : text.replace(/[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+/g, (m) => (m !== t.name && byName.has(m) ? ' ' : m));

  // Issue 49: the pool's words go straight into flat lists — per occurrence its slot (tool × field)
  // and the term's occurrence before it, per slot its length — with no list of terms per tool and
  // field. Each piece of text is one look-up (its term's id, or -1 for a word the ranking drops).
  const termIds = new Map<string, number>();
  const idOf = new Map<string, number>();
  // Room for a tool's usual ~20-30 words each, grown by doubling past that.
  let slotOf = new Int32Array(Math.max(1024, n * 32));
  let next = new Int32Array(slotOf.length);
  let head = new Int32Array(1024);
  let total = 0;
  const length = new Int32Array(n * F);
  /** seen[id] === text: the term already counted in this parameter (its words count once). */
  let seen = new Int32Array(1024);
  let text = 0;
  /** The texts many tools share (parameters' parts, guidance, plugin names): where their ids are in `kept`, after their count. */
  const made = new Map<string, number>();
  let kept = new Int32Array(1024);
  let keptEnd = 0;
  /** Scratch room for the ids of a text that is not remembered. */
  let scratch = new Int32Array(256);
  /** An occurrence in `slot` of each id of ids[from..to), in order (a parameter's terms once each). */
  const occur = (ids: Int32Array, from: number, to: number, slot: number, unique: boolean) => {
    const start = total;
    for (let j = from; j < to; j++) {
      const id = ids[j];
      if (unique) {
        if (seen[id] === text) continue;
        seen[id] = text;
      }
      if (total === slotOf.length) {
        slotOf = grown(slotOf, total + 1);
        next = grown(next, total + 1);
      }
      slotOf[total] = slot;
      next[total] = head[id];
      head[id] = ++total;
    }
    length[slot] += total - start;
  };
  const add = (value: string, slot: number, unique: boolean, remember: boolean) => {
    if (value === '') return;
    const at = remember ? made.get(value) : undefined;
    // A text seen before is not taken apart again: its ids are copied.
    if (at !== undefined) return occur(kept, at + 1, at + 1 + kept[at], slot, unique);
    const found = value.match(PIECE);
    if (found === null) return;
    // The text's ids, in `kept` after their count when it is remembered, else in the scratch list.
    let ids: Int32Array;
    let from: number;
    if (remember) {
      if (keptEnd + 1 + found.length > kept.length) kept = grown(kept, keptEnd + 1 + found.length);
      ids = kept;
      from = keptEnd + 1;
    } else {
      if (found.length > scratch.length) scratch = grown(scratch, found.length);
      ids = scratch;
      from = 0;
    }
    let to = from;
    for (let k = 0; k < found.length; k++) {
      const raw = found[k];
      let id = idOf.get(raw);
      if (id === undefined) {
        const term = termOfPiece(raw);
        if (term === '') id = -1;
        else {
          id = termIds.get(term);
          if (id === undefined) {
            termIds.set(term, (id = termIds.size));
            if (id >= head.length) {
              head = grown(head, id + 1);
              seen = grown(seen, id + 1);
            }
          }
        }
        idOf.set(raw, id);
      }
      if (id >= 0) ids[to++] = id;
    }
    if (remember) {
      kept[keptEnd] = to - from;
      made.set(value, keptEnd);
      keptEnd = to;
    }
    occur(ids, from, to, slot, unique);
  };
  // The slots of FIELDS' order. A tool's name and description are its own; the other texts are
  // usually shared, and remembered.
  let at = 0;
  let t: ToolSpec;
  // Each parameter's words once: its name usually comes back in its description ("year: Year.").
  const param = (name: string, description: string, values: string) => {
    text++;
    add(ownWords(t, name), at + 3, true, true);
    add(ownWords(t, description), at + 3, true, true);
    add(ownWords(t, values), at + 3, true, false);
  };
  for (let i = 0; i < n; i++, at += F) {
    t = pool[i];
    add(t.name, at, false, false);
    add(ownWords(t, t.description), at + 1, false, false);
    add(ownWords(t, t.declaration.guidance ?? ''), at + 2, false, true);
    eachParam(t.parameters, param);
    add(t.plugin, at + 4, false, true);
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
  return {
    byName,
    termIds,
    head,
    next,
    slotOf,
    norm,
    // Sized up front: an array filled at scattered indexes would fall back to a dictionary.
    postings: new Array<Postings | undefined>(termIds.size).fill(undefined),
    vocabulary: undefined,
    prefixCache: new Map(),
    scores: new Float64Array(n),
    touched: new Int32Array(n),
    stamp: new Uint32Array(n),
    generation: 0,
    marked: undefined,
  };
}

/** Occurrences of one term, in order: postingsOf's scratch list. */
let chain = new Int32Array(256);

/**
 * A term's postings: the tools it occurs in (ascending) and its weight in each — its pseudo term
 * frequency (the fields' weighted, length-normalised counts summed in the order they occur) through
 * BM25's saturation, times its idf. Made once per index and term.
 */
function postingsOf(ix: Index, id: number): Postings {
  const made = ix.postings[id];
  if (made !== undefined) return made;
  const F = FIELDS.length;
  const { next, slotOf, norm } = ix;
  // The chain runs last to first: walked once into the scratch list, then read backwards.
  let m = 0;
  let df = 0;
  let lastDoc = -1;
  for (let k = ix.head[id] - 1; k >= 0; k = next[k] - 1) {
    if (m === chain.length) chain = grown(chain, m + 1);
    chain[m++] = k;
    const doc = (slotOf[k] / F) | 0;
    if (doc !== lastDoc) {
      lastDoc = doc;
      df++;
    }
  }
  const docs = new Int32Array(df);
  const tf = new Float64Array(df);
  let p = -1;
  lastDoc = -1;
  for (let j = m - 1; j >= 0; j--) {
    const slot = slotOf[chain[j]];
    const doc = (slot / F) | 0;
    if (doc !== lastDoc) {
      lastDoc = doc;
      docs[++p] = doc;
    }
    tf[p] += norm[slot];
  }
  const { k1 } = TUNING;
  const n = ix.scores.length;
  const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
  const weights = new Float32Array(df);
  for (let j = 0; j < df; j++) weights[j] = (idf * tf[j] * (k1 + 1)) / (k1 + tf[j]);
  const out = { docs, weights };
  ix.postings[id] = out;
  return out;
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
  if (ix.vocabulary === undefined) ix.vocabulary = [...ix.termIds.keys()].sort();
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
  // The same candidates as the call before (a run's menus, step after step): their stamps stand.
  if (index.marked?.candidates !== candidates || index.marked.count !== candidates.length) {
    const inOrder = markCandidates(index, pool, candidates);
    index.marked = { candidates, count: candidates.length, names: inOrder ? undefined : new Set(candidates.map((t) => t.name)) };
  }
  const allowedNames = index.marked.names;
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
  const add = (id: number | undefined, scale: number) => {
    if (id === undefined) return;
    const { docs, weights } = postingsOf(ix, id);
    for (let k = 0; k < docs.length; k++) {
      const d = docs[k];
      if (scores[d] === 0) touched[nTouched++] = d;
      scores[d] += weights[k] * scale;
    }
  };
  const own = new Set(terms(text));
  for (const term of own) {
    const exact = ix.termIds.get(term);
    if (exact !== undefined) add(exact, 1);
    else if (term.length >= TUNING.prefixMin) for (const ext of extensions(ix, term)) add(ix.termIds.get(ext), TUNING.prefixWeight);
    // And the shorter index terms it begins with ("calculator" → a tool named "calc").
    for (let n = term.length - 1; n >= TUNING.prefixMin; n--) add(ix.termIds.get(term.slice(0, n)), TUNING.prefixWeight);
  }
  // The lexicon's words for what the request says in words no tool uses (lexicon.ts): index terms only, at a lower weight.
  if (expand) {
    const added = new Set<string>();
    for (const word of expansions(text)) {
      for (const term of expansionTerms(word)) {
        if (own.has(term) || added.has(term)) continue;
        added.add(term);
        add(ix.termIds.get(term), TUNING.expandWeight);
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
