import MiniSearch from 'minisearch';
import { KeelError } from '../errors.js';
import type { ToolSpec } from '../tools/types.js';
import type { Shortlist } from './menu.js';

export const DEFAULT_TOOL_CAP = 12;

// Words that carry no signal about which tool a request needs.
const STOP = new Set(
  'a an and are as at be by can do does for from have how i if in is it me my of on or please show tell that the this to was we what when where which who will with you your'.split(
    ' ',
  ),
);

/** Plain English words lose a plural or verb ending, so "reminders" finds create_reminder. */
function stem(w: string): string {
  if (w.length > 5 && w.endsWith('ing')) return w.slice(0, -3);
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 4 && w.endsWith('es') && /(ss|sh|ch|x)es$/.test(w)) return w.slice(0, -2);
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) return w.slice(0, -1);
  if (w.length > 4 && w.endsWith('ed')) return w.slice(0, -2);
  return w;
}

interface Indexed {
  search: MiniSearch<{ id: number; name: string; description: string; guidance: string }>;
}

/** One index per pool array, built on first use (DESIGN: "index built once per pool change"). */
const indexes = new WeakMap<readonly ToolSpec[], Indexed>();

function indexFor(pool: readonly ToolSpec[]): Indexed {
  let ix = indexes.get(pool);
  if (!ix) {
    const search = new MiniSearch<{ id: number; name: string; description: string; guidance: string }>({
      fields: ['name', 'description', 'guidance'],
      tokenize: (text) => text.split(/[^A-Za-z0-9]+/),
      processTerm: (t) => {
        const w = t.toLowerCase();
        return w.length < 2 || STOP.has(w) ? null : stem(w);
      },
      searchOptions: { boost: { name: 2, guidance: 0.5 }, combineWith: 'OR', prefix: (term) => term.length >= 5 },
    });
    search.addAll(pool.map((t, id) => ({ id, name: t.name, description: t.description, guidance: t.declaration.guidance ?? '' })));
    ix = { search };
    indexes.set(pool, ix);
  }
  return ix;
}

/**
 * R23: BM25 (minisearch) over name, description and guidance. Keeps `keep`, then the best-ranked
 * other candidates up to `cap` in all. Candidates below the cap are all kept.
 */
export function bm25Shortlist(cap: number = DEFAULT_TOOL_CAP): Shortlist {
  return (candidates, keep, request, pool) => {
    if (candidates.length <= cap) return new Set(candidates.map((t) => t.name));
    const chosen = new Set<string>(keep);
    const allowed = new Set(candidates.map((t) => t.name));
    const room = cap - [...keep].filter((k) => allowed.has(k)).length;
    if (room <= 0) return chosen;
    const ranked = indexFor(pool).search.search(request);
    let added = 0;
    for (const hit of ranked) {
      const name = pool[hit.id as number]?.name;
      if (!name || chosen.has(name) || !allowed.has(name)) continue;
      chosen.add(name);
      if (++added >= room) break;
    }
    return chosen;
  };
}

/** KEEL_TOOL_CAP: the menu's size once the pool outgrows it (default 12). */
export function toolCapFromEnv(env: NodeJS.ProcessEnv): number {
  const v = env.KEEL_TOOL_CAP;
  if (v === undefined || v === '') return DEFAULT_TOOL_CAP;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new KeelError('config', `KEEL_TOOL_CAP=${v} is not a positive integer`);
  return n;
}
