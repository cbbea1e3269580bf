/**
 * Menus (declared tools and the system prompt) remembered per pool and key, so runs over one
 * registry share them. Never serves a menu made for another mode or contract.
 */
import type { Registry } from '../plugin-host/host.js';
import { buildMenu, type Menu, type Shortlist } from '../prompt/menu.js';
import { renderContract, systemPrompt } from '../prompt/prompt.js';
import type { Contract, Mode, ToolSpec } from '../types/index.js';
import type { RunView } from './run.js';

export interface MenuEntry {
  menu: Menu;
  system: string;
  names: ReadonlySet<string>;
  /** Token count of system + declarations, computed once per menu (shared by reference). */
  tokens: { count?: Promise<number> };
  mode: Mode;
  contract: Contract | null;
}

/** Menus by pool (a registry's pool array) and key: runs over one registry share them. */
const MENU_MEMO = new WeakMap<readonly ToolSpec[], Map<string, Omit<MenuEntry, 'mode' | 'contract'>>>();

const contractPools = new WeakMap<readonly ToolSpec[], Map<string, readonly ToolSpec[]>>();
/** The pool without the tools that exist only under another contract (same array while nothing differs). */
function poolFor(pool: readonly ToolSpec[], contract: Contract | null): readonly ToolSpec[] {
  const kind = contract?.kind ?? '';
  let byKind = contractPools.get(pool);
  if (!byKind) contractPools.set(pool, (byKind = new Map()));
  let p = byKind.get(kind);
  if (!p) {
    const kept = pool.filter((t) => !t.onlyWithContract || t.onlyWithContract === kind);
    p = kept.length === pool.length ? pool : kept;
    byKind.set(kind, p);
  }
  return p;
}

/** Every pool tool of `set` is on the menu (`names`). Looked at each step: the menu's own set first. */
function covers(names: ReadonlySet<string>, set: ReadonlySet<string>, byName: ReadonlyMap<string, ToolSpec>): boolean {
  for (const n of set) if (!names.has(n) && byName.has(n)) return false;
  return true;
}

/** Where a run leg gets each request's menu and system prompt (decision 0004). */
export class MenuSource {
  private current: MenuEntry | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly shortlist: Shortlist | undefined,
    private readonly instructions: string | undefined,
  ) {}

  /**
   * The menu and system prompt for the next request. Kept while the mode and contract hold and every
   * tool the transcript calls (or admitted) is on it (R23/R24), so a step does no O(pool) work; and
   * shared across runs over the same pool, since it depends only on the key below.
   */
  get(s: RunView, called: ReadonlySet<string>, admitted: ReadonlySet<string>, prefer: () => readonly string[] = () => []): MenuEntry {
    const c = this.current;
    const byName = this.registry.byName;
    if (c && c.mode === s.mode && c.contract === s.contract && covers(c.names, called, byName) && covers(c.names, admitted, byName))
      return c;
    const inPool = (set: Iterable<string>, sorted = true) => {
      const names = [...set].filter((n) => byName.has(n));
      return (sorted ? names.sort() : names).join(',');
    };
    // The fill (R23) can only matter when the pool outgrows the shortlist's cap.
    const cap = this.shortlist?.cap;
    const fill = cap !== undefined && this.registry.pool.length > cap ? prefer() : [];
    const contract = s.contract ? renderContract(s.contract) : undefined;
    // The request ranks tools only when the pool outgrows the shortlist's cap (Shortlist): otherwise
    // every run over the pool shares one menu — its prompt, its token count, its form in the store.
    const ranked = this.shortlist !== undefined && (cap === undefined || this.registry.pool.length > cap);
    const key = [
      s.mode,
      contract ?? '',
      this.instructions ?? '',
      cap ?? '',
      inPool(called),
      inPool(admitted),
      ranked ? s.request : '',
      inPool(fill, false),
    ].join('\u0001');
    let memo = MENU_MEMO.get(this.registry.pool);
    if (!memo) MENU_MEMO.set(this.registry.pool, (memo = new Map()));
    let hit = memo.get(key);
    if (!hit) {
      hit = this.build(s, called, admitted, contract, fill);
      if (memo.size >= 64) memo.clear();
      memo.set(key, hit);
    }
    this.current = { ...hit, mode: s.mode, contract: s.contract };
    return this.current;
  }

  /** The pool the run's menus are built from (without the tools of another contract). */
  pool(s: RunView): readonly ToolSpec[] {
    return poolFor(this.registry.pool, s.contract);
  }

  private build(
    s: RunView,
    called: ReadonlySet<string>,
    admitted: ReadonlySet<string>,
    contract: string | undefined,
    prefer: readonly string[],
  ): Omit<MenuEntry, 'mode' | 'contract'> {
    const menu = buildMenu(
      {
        pool: this.pool(s),
        mode: s.mode,
        called,
        admitted,
        // C1: under an approved contract the shortlist ranks against its steps too: the tools they
        // need are declared (a grammar-constrained server lets the model call nothing else).
        request: contract ? `${s.request}\n${contract}` : s.request,
        prefer,
      },
      this.shortlist,
    );
    const system = systemPrompt({
      mode: s.mode,
      menu: menu.tools,
      unavailable: menu.unavailable,
      contract,
      instructions: this.instructions,
    });
    return { menu, system, names: new Set(menu.tools.map((t) => t.name)), tokens: {} };
  }
}
