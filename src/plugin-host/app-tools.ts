/**
 * An application's own tools, declared in code and handed to Keel itself (the core's own-tools path,
 * like the built-ins; plugins still need their manifest). Each is a tool definition with its
 * declaration flat on the same object, in the fields and values of a plugin.yaml `tools:` entry (M2).
 * Here each is split into the two and checked by the manifest's own schema and rules, with the
 * manifest's messages (M4, `checkDeclarations`); where a manifest error says `plugin.yaml:LINE:COL`,
 * these say `tools[I] (NAME).FIELD`. What passes is mounted by `withAppTools` (host.ts), through the
 * same registration, gate and operator policy as a plugin's tools (R1, R6, R7, R32).
 */
import { checkDeclarations, PLAIN_FIELDS } from '../manifest/load.js';
import type { Declaration } from '../manifest/schema.js';
import { definitionProblem } from '../tools/spec.js';
import type { ToolDefinition } from '../types/index.js';
import type { PluginReport, Row } from './types.js';

/**
 * The name of the report row of the tools declared in code (`source: 'code'`), and the `plugin` of
 * their specs: what `keel plugins check` lists them under.
 */
export const APP_PLUGIN = 'app';

/** What `undo` names when it is not another valid tool of the set (the end of M4's message). */
const SCOPE = 'among the valid tools declared in code';

/** The fields of the definition (what `api.registerTool` takes); every other field is the declaration's. */
const DEFINITION_FIELDS: ReadonlySet<string> = new Set(['name', 'description', 'parameters', 'execute', 'describe', 'validate']);
/** The declaration's fields, as the manifest schema has them. */
const DECLARATION_FIELDS: readonly string[] = Object.keys(PLAIN_FIELDS.tool);

/** An app tool that passed every check of its own: registration (names taken elsewhere) is next. */
export interface AppCandidate {
  /** Its place in the list (`appToolAt` names it). */
  index: number;
  def: ToolDefinition;
  declaration: Declaration;
}

/** The report row of the tools declared in code, before any is checked. */
export function appReport(): PluginReport {
  return {
    name: APP_PLUGIN,
    version: '',
    dir: '',
    source: 'code',
    status: 'loaded',
    tools: [],
    failures: [],
    degraded: [],
    drift: [],
    runtime_failures: 0,
  };
}

/** Where a tool of the list is, for a message: `tools[I] (NAME).FIELD`. */
export const appToolAt = (i: number, name?: string, field?: string): string =>
  `tools[${i}]${name ? ` (${name})` : ''}${field ? `.${field}` : ''}`;

/** A function read off the tool keeps the tool as `this` (a tool may be a class instance). */
const bound = (f: unknown, self: object): unknown => (typeof f === 'function' ? f.bind(self) : f);

interface Split {
  index: number;
  name: string;
  def: ToolDefinition;
  /** Own fields besides the definition's, and the declaration's fields wherever they are; undefined is absent. */
  declaration: Record<string, unknown>;
}

function split(t: object, index: number, name: string): Split {
  const o = t as Record<string, unknown>;
  const def = { name, description: o.description, parameters: o.parameters, execute: bound(o.execute, t) } as ToolDefinition;
  if (o.describe !== undefined) def.describe = bound(o.describe, t) as ToolDefinition['describe'];
  if (o.validate !== undefined) def.validate = bound(o.validate, t) as ToolDefinition['validate'];
  // No prototype: a field named __proto__ is a field (refused as unknown), not the object's prototype.
  const declaration: Record<string, unknown> = Object.create(null);
  // No for-of (issue 49): a cold process's for-of makes an iterator result per step, ~19 per tool here.
  for (let i = 0; i < DECLARATION_FIELDS.length; i++) {
    const k = DECLARATION_FIELDS[i];
    if (k in t && o[k] !== undefined) declaration[k] = o[k];
  }
  for (const k in t) if (Object.hasOwn(t, k) && !DEFINITION_FIELDS.has(k) && o[k] !== undefined) declaration[k] = o[k];
  return { index, name, def, declaration };
}

/**
 * Checks the tools an application declared in code: each one's definition and declaration (M4, by
 * the manifest's schema and rules) and that no two share a name. Returns the tools that pass, and a
 * row for each one refused (`failed` when `tools` is not a list at all). Never throws: a tool whose
 * fields cannot even be read is refused with the reason.
 */
export function checkAppTools(tools: unknown): AppToolsCheck {
  if (!Array.isArray(tools)) return checkList(tools);
  // One check per list: the Keel checks its tools when it is made (R32: a mistake fails loudly at
  // once) and its first mount takes them from here (issue 49: at 2,000 tools the second check was
  // ~60 ms of the first run). A list is taken as given, as the registries keep mounts by list.
  let checked = checkedLists.get(tools);
  if (!checked) checkedLists.set(tools, (checked = checkList(tools)));
  return checked;
}

export interface AppToolsCheck {
  readonly candidates: readonly AppCandidate[];
  readonly rows: readonly Row[];
  readonly failed: boolean;
}

const checkedLists = new WeakMap<readonly unknown[], AppToolsCheck>();

function checkList(tools: unknown): AppToolsCheck {
  if (!Array.isArray(tools)) {
    const got = tools === null ? 'null' : typeof tools;
    return {
      candidates: [],
      rows: [{ kind: 'invalid_tool', message: `the tools declared in code must be a list of tool objects, got ${got}` }],
      failed: true,
    };
  }
  const rows: { index: number; row: Row }[] = [];
  const refuse = (index: number, row: Row) => void rows.push({ index, row });
  const splits: Split[] = [];
  /** Each name's first tool, and every tool of a name given more than once. */
  const first = new Map<string, number>();
  const shared = new Map<string, number[]>();
  for (let i = 0; i < tools.length; i++) {
    const t: unknown = tools[i];
    try {
      if (!t || typeof t !== 'object' || Array.isArray(t)) {
        refuse(i, { kind: 'invalid_tool', message: `${appToolAt(i)}: the tool definition is not an object` });
        continue;
      }
      const name = (t as { name?: unknown }).name;
      if (typeof name !== 'string' || name === '') {
        refuse(i, { kind: 'invalid_tool', message: `${appToolAt(i)}: 'name' must be a non-empty string` });
        continue;
      }
      splits.push(split(t, i, name));
      const at = first.get(name);
      if (at === undefined) first.set(name, i);
      else {
        let all = shared.get(name);
        if (!all) shared.set(name, (all = [at]));
        all.push(i);
      }
    } catch (err) {
      refuse(i, { kind: 'invalid_tool', message: `${appToolAt(i)}: its fields cannot be read: ${(err as Error)?.message ?? String(err)}` });
    }
  }

  // One name, one tool: every tool given a name that another one also has is refused (R6).
  const named: Split[] = [];
  for (let k = 0; k < splits.length; k++) {
    const s = splits[k];
    const all = shared.get(s.name);
    if (all) {
      const others = all.filter((j) => j !== s.index).map((j) => appToolAt(j));
      refuse(s.index, {
        kind: 'duplicate_tool',
        tool: s.name,
        message: `${appToolAt(s.index, s.name)}: the name ${s.name} is also given to ${others.join(' and ')}; ${all.length > 2 ? 'all' : 'both'} are refused`,
      });
    } else if (s.name === '__proto__') {
      refuse(s.index, {
        kind: 'declaration_error',
        tool: s.name,
        message: `${appToolAt(s.index, s.name)}: '__proto__' cannot be used as a name`,
      });
    } else {
      named.push(s);
    }
  }

  // M4: the manifest's schema and cross-field rules, with its messages.
  const byName = new Map<string, Split>();
  const raw: Record<string, Record<string, unknown>> = {};
  for (let k = 0; k < named.length; k++) {
    byName.set(named[k].name, named[k]);
    raw[named[k].name] = named[k].declaration;
  }
  const { declarations, issues } = checkDeclarations(raw, SCOPE);
  for (const i of issues) {
    const s = byName.get(i.tool);
    const index = s?.index ?? -1;
    refuse(index, {
      kind: 'declaration_error',
      tool: i.tool,
      ...(i.field ? { field: i.field } : {}),
      message: `${appToolAt(index, i.tool, i.field)}: ${i.message}`,
    });
  }

  const candidates: AppCandidate[] = [];
  for (let k = 0; k < named.length; k++) {
    const s = named[k];
    const problem = definitionProblem(s.def);
    if (problem) {
      const why = problem.startsWith(`tool ${s.name}: `) ? problem.slice(`tool ${s.name}: `.length) : problem;
      refuse(s.index, { kind: 'invalid_tool', tool: s.name, message: `${appToolAt(s.index, s.name)}: ${why}` });
      continue;
    }
    const declaration = declarations.get(s.name);
    if (declaration) candidates.push({ index: s.index, def: s.def, declaration });
  }
  return { candidates, rows: rows.sort((a, b) => a.index - b.index).map((r) => r.row), failed: false };
}
