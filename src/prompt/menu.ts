/**
 * The menu: which tools a turn declares to the model, ranked and capped, with find_tools when some
 * are left off. Never decides whether a call may run: that is the gate's.
 */
import { denialOf, executableInMode, SUBMIT_TOOL } from '../policy/gate.js';
import { FIND_TOOLS } from '../tools/builtins.js';
import type { DeclaredTool, Mode, ToolSpec } from '../types/index.js';
import { declare, declareUnavailable } from './prompt.js';
import { searchTools } from './shortlist.js';

export interface MenuInput {
  pool: readonly ToolSpec[];
  mode: Mode;
  /** Tools the transcript already calls (kept declared: a strict gateway rejects a call of an undeclared tool). */
  called: ReadonlySet<string>;
  /** Pool tools admitted on first call. */
  admitted: ReadonlySet<string>;
  /** The user's request (what the shortlist ranks against). */
  request: string;
  /**
   * What fills the room the ranking leaves, in order: the tools the conversation has used,
   * then the tools most used before. The other candidates follow in pool order.
   */
  prefer?: readonly string[];
}

export interface Menu {
  /** Tools declared this request, in pool order. */
  tools: ToolSpec[];
  declared: DeclaredTool[];
  /** Restricted tools kept declared (labelled) in a contract mode. */
  unavailable: string[];
  /** Pool tools left off this request. */
  dropped: string[];
  /** Whether a call by this name may be decided (declared now, or a pool tool it may admit). */
  admissible: (name: string) => boolean;
}

/**
 * Ranks the executable candidates and keeps what fits; the default keeps them all. A shortlist with
 * a `cap` leaves tools off the menu once the candidates outnumber it: then find_tools is offered.
 * Until they do, it keeps them all, whatever the request (runs over such a pool share their menus).
 */
export type Shortlist = ((
  candidates: readonly ToolSpec[],
  keep: ReadonlySet<string>,
  request: string,
  pool: readonly ToolSpec[],
  prefer?: readonly string[],
) => Set<string>) & { readonly cap?: number };

export const keepAll: Shortlist = (candidates) => new Set(candidates.map((t) => t.name));

/**
 * How a pool tool stands in a mode: it may run (a shortlist candidate); it may not, but is declared
 * (labelled) anyway, `contract_modes: declare`; or it may not, and is hidden unless the transcript calls it.
 */
type Kind = 'exec' | 'declare' | 'hidden';
/** A kind as ModeView.kindAt keeps it (issue 49: a number per tool, not a pair per tool, in a cold process). */
const KIND_CODE = { exec: 1, declare: 2, hidden: 3 } as const satisfies Record<Kind, number>;

/**
 * R23: the tools the core's own sentences send the model to are never dropped: ask_user (the base
 * prompt, R10, R15), find_tools when offered (R31), and the mode's submit tool (the mode's prompt and
 * every denial, C1/C4), the task tools when delegates are configured (C8) — the core's own, not a
 * plugin tool that took the name. memory_search and `pinned` tools are kept too.
 */
function alwaysKept(t: ToolSpec, mode: Mode): boolean {
  if (t.name === 'ask_user' || t.name === 'memory_search' || t.name === FIND_TOOLS || t.declaration.pinned) return true;
  return t.plugin === 'core' && (t.name === SUBMIT_TOOL[mode] || TASK_FAMILY.has(t.name));
}

/** C8: in the pool only when delegates are configured; task's results send the model to task_wait and task_list. */
const TASK_FAMILY = new Set(['task', 'task_wait', 'task_list', 'task_stop']);

/** What the menu of one pool in one mode owes nothing to the request, the calls or the admissions. */
interface ModeView {
  /** Executable tools, in pool order (the shortlist's candidates; never handed out for mutation). */
  candidates: readonly ToolSpec[];
  candidateNames: string[];
  /** Pool position of each candidate. */
  candidatePos: number[];
  /** name → position in `candidates`. */
  candidateAt: Map<string, number>;
  /** Positions in `candidates` of the always-kept tools (ask_user, memory_search, pinned). */
  alwaysKept: number[];
  /** name → pool position of each tool that exists in this mode; its kind is `kindAt[position]`. */
  byName: Map<string, number>;
  /** Per pool position, the tool's kind in this mode (KIND_CODE; 0: it does not exist in this mode). */
  kindAt: Uint8Array;
  /** Pool positions of the `contract_modes: declare` restricted tools, ascending. */
  declared: number[];
  /** R31: what find_tools searches (candidates and labelled tools, pool order), made on first search. */
  searchable?: ToolSpec[];
}

interface PoolView {
  length: number;
  /**
   * Per mode, with and without find_tools (key `mode` or `mode+find`); undefined when the pool
   * repeats a name (then every call takes the plain walk).
   */
  modes: Map<string, ModeView> | undefined;
}

const views = new WeakMap<readonly ToolSpec[], PoolView>();

/**
 * find_tools is offered when the executable tools other than itself outnumber the shortlist's
 * cap, or when the transcript already calls it (so a strict gateway still sees it declared).
 */
function offersFinder(executable: number, shortlist: Shortlist, called: ReadonlySet<string>): boolean {
  return called.has(FIND_TOOLS) || (shortlist.cap !== undefined && executable > shortlist.cap);
}

/** The mode's view of the pool; `finder`: with find_tools (else it is as if the pool had none). */
function modeView(pool: readonly ToolSpec[], mode: Mode, finder = false): ModeView | undefined {
  let pv = views.get(pool);
  // A pool array changed in place (not how the registry works, but cheap to notice) is looked at afresh.
  if (!pv || pv.length !== pool.length) {
    const unique = new Set(pool.map((t) => t.name)).size === pool.length;
    views.set(pool, (pv = { length: pool.length, modes: unique ? new Map() : undefined }));
  }
  if (!pv.modes) return undefined;
  const key = finder ? `${mode}+find` : mode;
  let mv = pv.modes.get(key);
  if (mv) return mv;
  const candidates: ToolSpec[] = [];
  const candidatePos: number[] = [];
  const candidateNames: string[] = [];
  const candidateAt = new Map<string, number>();
  const keptAt: number[] = [];
  const byName = new Map<string, number>();
  const kindAt = new Uint8Array(pool.length);
  const declared: number[] = [];
  for (let i = 0; i < pool.length; i++) {
    const t = pool[i];
    if (t.onlyInModes && !t.onlyInModes.includes(mode)) continue;
    if (t.name === FIND_TOOLS && t.plugin === 'core' && !finder) continue;
    byName.set(t.name, i);
    if (executableInMode(t, mode)) {
      if (alwaysKept(t, mode)) keptAt.push(candidates.length);
      candidateAt.set(t.name, candidates.length);
      candidates.push(t);
      candidatePos.push(i);
      candidateNames.push(t.name);
      kindAt[i] = KIND_CODE.exec;
    } else if (t.declaration.contract_modes === 'declare' || denialOf(t, mode) === 'policy') {
      // Kept declared, labelled: `contract_modes: declare` (C3), or an operator rule (the model is told why).
      declared.push(i);
      kindAt[i] = KIND_CODE.declare;
    } else {
      kindAt[i] = KIND_CODE.hidden;
    }
  }
  mv = { candidates, candidateNames, candidatePos, candidateAt, alwaysKept: keptAt, byName, kindAt, declared };
  pv.modes.set(key, mv);
  return mv;
}

/**
 * Pool → menu. In a contract mode a tool that may not run stays declared, labelled, only when it
 * is declared `contract_modes: declare` or the transcript already calls it; any other is hidden.
 *
 * What does not depend on the request, the calls or the admissions (the candidates, the tools each
 * mode hides or labels, the names) is worked out once per pool array and mode, so a call costs the
 * shortlist plus work in the size of the menu, the calls and the admissions (and one copy of the
 * dropped names).
 */
export function buildMenu(input: MenuInput, shortlist: Shortlist = keepAll): Menu {
  // The view with find_tools or the one without, whichever the pool's size says find_tools is
  // likely offered in, then the other if that guess was wrong (issue 49: building both was a pass
  // over the pool a cold first request did not need).
  const guess = input.called.has(FIND_TOOLS) || (shortlist.cap !== undefined && input.pool.length > shortlist.cap + 1);
  let view = modeView(input.pool, input.mode, guess);
  if (!view) return buildMenuWalk(input, shortlist);
  const finderAt = guess ? view.candidateAt.get(FIND_TOOLS) : undefined;
  const executable = view.candidates.length - (finderAt !== undefined && view.candidates[finderAt].plugin === 'core' ? 1 : 0);
  const finder = offersFinder(executable, shortlist, input.called);
  if (finder !== guess) view = modeView(input.pool, input.mode, finder) ?? view;
  const { pool, mode, called } = input;
  const { candidates, candidateNames, candidatePos, candidateAt, byName, kindAt } = view;

  // Restricted tools the transcript calls join the labelled ones (C3).
  const calledRestricted = new Set<string>();
  const restrictedAt: number[] = [];
  // Called candidates join the always-kept ones; `keep` lists them in pool order after the admitted.
  const keptAt = [...view.alwaysKept];
  for (const name of called) {
    const at = byName.get(name);
    if (at === undefined) continue;
    if (kindAt[at] === KIND_CODE.hidden) {
      calledRestricted.add(name);
      restrictedAt.push(at);
    } else if (kindAt[at] === KIND_CODE.exec) keptAt.push(candidateAt.get(name) as number);
  }
  const keep = new Set<string>(input.admitted);
  if (keptAt.length > view.alwaysKept.length) keptAt.sort((a, b) => a - b);
  for (const k of keptAt) keep.add(candidateNames[k]);

  const chosen = shortlist(candidates, keep, input.request, pool, input.prefer);
  for (const k of keep) chosen.add(k);

  // The declared tools' pool positions: chosen candidates and labelled restricted ones, in pool order.
  const chosenAt: number[] = [];
  for (const name of chosen) {
    const k = candidateAt.get(name);
    if (k !== undefined) chosenAt.push(k);
  }
  chosenAt.sort((a, b) => a - b);
  const labelled = restrictedAt.length ? [...view.declared, ...restrictedAt].sort((a, b) => a - b) : view.declared;

  const tools: ToolSpec[] = [];
  const declared: DeclaredTool[] = [];
  const unavailable: string[] = [];
  const dropped: string[] = [];
  let from = 0; // next candidate not yet placed on the menu or among the dropped
  let r = 0;
  const label = (upTo: number) => {
    for (; r < labelled.length && labelled[r] < upTo; r++) {
      const t = pool[labelled[r]];
      tools.push(t);
      declared.push(declareUnavailable(t, mode));
      unavailable.push(t.name);
    }
  };
  for (const k of chosenAt) {
    const t = candidates[k];
    label(candidatePos[k]);
    for (let d = from; d < k; d++) dropped.push(candidateNames[d]);
    from = k + 1;
    tools.push(t);
    declared.push(declare(t));
  }
  label(pool.length);
  for (let d = from; d < candidateNames.length; d++) dropped.push(candidateNames[d]);

  return {
    tools,
    declared,
    unavailable,
    dropped,
    // Hidden (mode-restricted, undeclared) tools are unknown to the model (C3); dropped ones admit on call (R24).
    admissible: (name) => {
      const at = byName.get(name);
      return at !== undefined && (kindAt[at] !== KIND_CODE.hidden || calledRestricted.has(name));
    },
  };
}

/** The plain walk over the pool, for a pool that repeats a name (the registry refuses one). */
function buildMenuWalk(input: MenuInput, shortlist: Shortlist): Menu {
  const { mode } = input;
  const isFinder = (t: ToolSpec) => t.name === FIND_TOOLS && t.plugin === 'core';
  const executable = input.pool.filter(
    (t) => !isFinder(t) && (!t.onlyInModes || t.onlyInModes.includes(mode)) && executableInMode(t, mode),
  );
  const finder = offersFinder(executable.length, shortlist, input.called);
  const exists = (t: ToolSpec) => (!t.onlyInModes || t.onlyInModes.includes(mode)) && (finder || !isFinder(t));
  const candidates: ToolSpec[] = [];
  const restricted = new Set<string>();
  for (const t of input.pool) {
    if (!exists(t)) continue;
    if (executableInMode(t, mode)) candidates.push(t);
    else if (t.declaration.contract_modes === 'declare' || denialOf(t, mode) === 'policy' || input.called.has(t.name))
      restricted.add(t.name);
  }
  const keep = new Set<string>(input.admitted);
  for (const t of candidates) {
    if (alwaysKept(t, mode) || input.called.has(t.name)) keep.add(t.name);
  }
  const chosen = shortlist(candidates, keep, input.request, input.pool, input.prefer);
  for (const k of keep) chosen.add(k);

  const tools: ToolSpec[] = [];
  const declared: DeclaredTool[] = [];
  const unavailable: string[] = [];
  const dropped: string[] = [];
  const hidden = new Set<string>();
  for (const t of input.pool) {
    if (!exists(t)) continue;
    if (restricted.has(t.name)) {
      tools.push(t);
      declared.push(declareUnavailable(t, mode));
      unavailable.push(t.name);
    } else if (chosen.has(t.name) && executableInMode(t, mode)) {
      tools.push(t);
      declared.push(declare(t));
    } else if (executableInMode(t, mode)) {
      dropped.push(t.name);
    } else {
      hidden.add(t.name);
    }
  }
  const inPool = new Map(input.pool.filter(exists).map((t) => [t.name, t]));
  return {
    tools,
    declared,
    unavailable,
    dropped,
    admissible: (name) => inPool.has(name) && !hidden.has(name),
  };
}

/** One tool find_tools returns: it may run in the mode, or is declared unavailable. */
export interface FoundTool {
  tool: ToolSpec;
  available: boolean;
}

/**
 * The tools the mode lets the model see (those that may run, and those a contract mode keeps
 * declared, C3) that best match `query`, ranked as the shortlist ranks, at most `limit`, skipping
 * `skip` and find_tools itself. A tool the mode hides is never returned.
 */
export function findInPool(pool: readonly ToolSpec[], mode: Mode, query: string, limit: number, skip: ReadonlySet<string>): FoundTool[] {
  const view = modeView(pool, mode);
  let searchable: ToolSpec[];
  let available: (t: ToolSpec) => boolean;
  if (view) {
    if (!view.searchable) {
      const labelled = new Set(view.declared);
      view.searchable = pool.filter((t, i) => view.candidateAt.has(t.name) || labelled.has(i));
    }
    searchable = view.searchable;
    available = (t) => view.candidateAt.has(t.name);
  } else {
    const exists = (t: ToolSpec) => !t.onlyInModes || t.onlyInModes.includes(mode);
    searchable = pool.filter(
      (t) => exists(t) && (executableInMode(t, mode) || t.declaration.contract_modes === 'declare' || denialOf(t, mode) === 'policy'),
    );
    available = (t) => executableInMode(t, mode);
  }
  const skipped = new Set(skip).add(FIND_TOOLS);
  return searchTools(pool, searchable, query, limit, skipped).map((tool) => ({ tool, available: available(tool) }));
}
