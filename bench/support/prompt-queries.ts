/**
 * bench/queries.yaml: the requests bench/prompt measures, each with the tools a good answer needs.
 *
 * Besides the plain requests, three hard kinds (issue #18) carry `kind` and a `restatement` — the
 * short English query a model would pass to find_tools when the menu lacks what it needs:
 * - `paraphrase`: shares no content word with the text of any tool it needs (checked here, see
 *   paraphraseViolations);
 * - `story`: arithmetic or another computation told as a story;
 * - `non_english`: a request in another language (`lang`) for tools described in English.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { paramTexts } from '../../src/prompt/shortlist.js';
import type { ToolSpec } from '../../src/types/index.js';

export const KINDS = ['plain', 'paraphrase', 'story', 'non_english'] as const;
export type Kind = (typeof KINDS)[number];
export const HARD_KINDS: readonly Kind[] = ['paraphrase', 'story', 'non_english'];

export interface LabelledRequest {
  request: string;
  needs: string[];
  kind: Kind;
  /** What a model would search for (hard kinds only). */
  restatement?: string;
  /** The request's language (non_english only): ko, zh, id, … */
  lang?: string;
}

/** Reads and checks the file: every request non-empty, every needed tool in the pool, hard kinds with a restatement. */
export function loadQueries(file: string, poolNames: ReadonlySet<string>): LabelledRequest[] {
  const raw = parse(readFileSync(file, 'utf8')) as unknown;
  if (!Array.isArray(raw)) throw new Error(`${file}: expected a list of { request, needs }`);
  return raw.map((row, i) => {
    const r = row as Partial<LabelledRequest>;
    if (typeof r.request !== 'string' || !r.request.trim()) throw new Error(`${file}: entry ${i + 1} has no request`);
    if (!Array.isArray(r.needs) || r.needs.length === 0) throw new Error(`${file}: "${r.request}" needs no tool`);
    for (const n of r.needs) if (!poolNames.has(n)) throw new Error(`${file}: "${r.request}" needs ${n}, which is in no pool`);
    const kind = r.kind ?? 'plain';
    if (!KINDS.includes(kind)) throw new Error(`${file}: "${r.request}" has kind ${kind} (expected one of ${KINDS.join(', ')})`);
    const hard = HARD_KINDS.includes(kind);
    if (hard && (typeof r.restatement !== 'string' || !r.restatement.trim())) {
      throw new Error(`${file}: "${r.request}" is ${kind} but has no restatement`);
    }
    if (!hard && r.restatement !== undefined) throw new Error(`${file}: "${r.request}" has a restatement but is not a hard kind`);
    if (kind === 'non_english' && (typeof r.lang !== 'string' || !r.lang))
      throw new Error(`${file}: "${r.request}" is non_english with no lang`);
    return {
      request: r.request.trim(),
      needs: r.needs,
      kind,
      ...(hard ? { restatement: (r.restatement as string).trim() } : {}),
      ...(r.lang ? { lang: r.lang } : {}),
    };
  });
}

// --- the paraphrase check ------------------------------------------------------------------------

/** Words that say nothing about which tool is meant (articles, pronouns, auxiliaries, request filler). */
const STOP = new Set(
  `a an the and or but if of to in on at by for from with into onto over under about as than then so not no nor
  i me my mine we us our you your he him his she her it its they them their this that these those there here
  is am are was were be been being do does did done have has had can could will would shall should may might must
  what which who whom whose when where why how all any each every some one ones just also only very too please
  get got let make made up out off again more most much many such own same other another`.split(/\s+/),
);

/** Content words of a text: letters and digits, split at _, camelCase and anything else; lower-cased; stop words and single letters out. */
export function contentWords(text: string): string[] {
  return text
    .split(/[^\p{L}\p{N}]+|(?<=\p{Ll})(?=\p{Lu})/u)
    .map((w) => w.toLowerCase())
    .filter((w) => w.length >= 2 && !STOP.has(w) && !/^\d{1,2}$/.test(w));
}

/**
 * Whether two words are one word for this check, generously: equal; one the beginning of the other
 * (3 letters or more: remind/reminder, pay/payment, wash/washing); or the first five letters the
 * same (invoice/invoicing). Generous on purpose: a false match only makes a paraphrase be rewritten.
 */
export function sameWord(a: string, b: string): boolean {
  if (a === b) return true;
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  return (p === Math.min(a.length, b.length) && p >= 3) || p >= 5;
}

/** All the text the shortlist ranks a tool by: name, description, guidance, parameters, plugin. */
export function toolText(t: ToolSpec): string {
  return [t.name, t.description, t.declaration.guidance ?? '', ...paramTexts(t.parameters), t.plugin].join(' ');
}

export interface ParaphraseViolation {
  request: string;
  tool: string;
  /** Request word → the tool's word it matches. */
  shared: [string, string][];
}

/** Paraphrases that share a content word with a tool they need: each should be rewritten. */
export function paraphraseViolations(queries: readonly LabelledRequest[], byName: ReadonlyMap<string, ToolSpec>): ParaphraseViolation[] {
  const out: ParaphraseViolation[] = [];
  for (const q of queries) {
    if (q.kind !== 'paraphrase') continue;
    const words = [...new Set(contentWords(q.request))];
    for (const name of q.needs) {
      const tool = byName.get(name);
      if (!tool) continue;
      const toolWords = [...new Set(contentWords(toolText(tool)))];
      const shared: [string, string][] = [];
      for (const w of words) {
        const hit = toolWords.find((t) => sameWord(w, t));
        if (hit) shared.push([w, hit]);
      }
      if (shared.length) out.push({ request: q.request, tool: name, shared });
    }
  }
  return out;
}
