import type { DeclaredTool } from '../loop/types.js';
import { executableInMode } from '../policy/gate.js';
import type { Mode, ToolSpec } from '../tools/types.js';
import { declare, declareUnavailable } from './prompt.js';

export interface MenuInput {
  pool: readonly ToolSpec[];
  mode: Mode;
  /** Tools the transcript already calls (R23, C3 beyond). */
  called: ReadonlySet<string>;
  /** Pool tools admitted on first call (R24). */
  admitted: ReadonlySet<string>;
  /** The user's request (what the shortlist ranks against). */
  request: string;
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

/** Ranks the executable candidates and keeps what fits; the default keeps them all. */
export type Shortlist = (
  candidates: readonly ToolSpec[],
  keep: ReadonlySet<string>,
  request: string,
  pool: readonly ToolSpec[],
) => Set<string>;

export const keepAll: Shortlist = (candidates) => new Set(candidates.map((t) => t.name));

/**
 * Pool → menu. In a contract mode a tool that may not run stays declared, labelled, only when it
 * is declared `contract_modes: declare` or the transcript already calls it (C3); any other is hidden.
 */
export function buildMenu(input: MenuInput, shortlist: Shortlist = keepAll): Menu {
  const { mode } = input;
  const exists = (t: ToolSpec) => !t.onlyInModes || t.onlyInModes.includes(mode);
  const candidates: ToolSpec[] = [];
  const restricted = new Set<string>();
  for (const t of input.pool) {
    if (!exists(t)) continue;
    if (executableInMode(t, mode)) candidates.push(t);
    else if (t.declaration.contract_modes === 'declare' || input.called.has(t.name)) restricted.add(t.name);
  }
  const keep = new Set<string>(input.admitted);
  for (const t of candidates) {
    if (t.name === 'ask_user' || t.name === 'memory_search' || t.declaration.pinned || input.called.has(t.name)) keep.add(t.name);
  }
  const chosen = shortlist(candidates, keep, input.request, input.pool);
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
    // Hidden (mode-restricted, undeclared) tools are unknown to the model (C3); dropped ones admit on call (R24).
    admissible: (name) => inPool.has(name) && !hidden.has(name),
  };
}
