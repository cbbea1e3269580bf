/**
 * Reading and checking a Cedar policy file (issue 37, PC2/PC3): split into its policies, each with
 * its id, annotations, scope, place in the file and what its conditions read; every tool and plugin
 * it names looked up in the pool; each validated against the schema of the tools its scope reaches.
 */
import { basename } from 'node:path';
import type * as CedarWasm from '@cedar-policy/cedar-wasm/nodejs';
import type { ToolSpec } from '../types/index.js';
import { schemaJsonFor, unionArgs } from './cedar-schema.js';
import type { PolicyDiagnostic, PolicyEntry } from './policy-types.js';

type Cedar = typeof CedarWasm;

export type { PolicyDiagnostic, PolicyEntry } from './policy-types.js';

export interface Entry extends PolicyEntry {
  text: string;
  /** Character offset of `text` in the file. */
  offset: number;
  /** What its conditions read (see `needsOf`). */
  needs: Needs;
}

export interface Needs {
  principal: boolean;
  tool: boolean;
  /** Context keys read, or all of them. */
  context: Set<string> | 'all';
  /** Argument names read (`context.args.X`), or all of them. */
  args: Set<string> | 'all';
}

/** The annotations a policy may carry (PC1, PC11, O4): any other is an error, with the nearest of these. */
export const ANNOTATIONS = ['id', 'ask', 'approvers', 'after_untrusted'] as const;

/** Where an annotation is written in a policy (its `@`), for file:line:col; the policy's start when not found. */
function annotationAt(where: (i: number) => string, part: string, offset: number, name: string): string {
  const m = new RegExp(`@\\s*${name}\\b`).exec(part);
  return where(offset + (m?.index ?? 0));
}

/** The policies of a file and its problems (errors and warnings), in the file's order. */
export function entriesOf(
  cedar: Cedar,
  file: string,
  text: string,
  pool: readonly ToolSpec[],
): { entries: Entry[]; diagnostics: PolicyDiagnostic[] } {
  const where = locator(file, text);
  const parts = cedar.policySetTextToParts(text);
  if (parts.type === 'failure') return { entries: [], diagnostics: parts.errors.map((e) => errorAt(where, e, 0, text)) };
  if (parts.policy_templates.length)
    return {
      entries: [],
      diagnostics: [
        {
          severity: 'error',
          at: where(text.indexOf('?')),
          message: 'templates (?principal, ?resource) are not supported in a policy file',
        },
      ],
    };
  const diagnostics: PolicyDiagnostic[] = [];
  const entries: Entry[] = [];
  const ids = new Set<string>();
  const tools = new Set(pool.map((t) => t.name));
  const plugins = new Set(pool.map((t) => t.plugin));
  let cursor = 0;
  parts.policies.forEach((part, n) => {
    // The parts are the file's own text, in order: found where they are, for file:line:col.
    const found = text.indexOf(part, cursor);
    const offset = found >= 0 ? found : cursor;
    cursor = offset + part.length;
    const json = cedar.policyToJson(part);
    if (json.type === 'failure') {
      diagnostics.push(...json.errors.map((e) => errorAt(where, e, offset, part)));
      return;
    }
    const p = json.json;
    const ann = p.annotations ?? {};
    const head = where(offset + headOffset(part));
    const id = ann.id?.trim() || `policy${n} (${basename(file)}:${head.split(':').at(-2)})`;
    if (ann.id !== undefined && !ann.id?.trim())
      diagnostics.push({ severity: 'error', at: head, message: '@id("…") must name the policy' });
    if (ids.has(id)) diagnostics.push({ severity: 'error', at: head, message: `@id("${id}") names two policies`, policy: id });
    ids.add(id);
    // A misspelt safety annotation must never be silent: `@aks` would remove the very card it meant to add.
    for (const name of Object.keys(ann))
      if (!ANNOTATIONS.includes(name as (typeof ANNOTATIONS)[number]))
        diagnostics.push({
          severity: 'error',
          at: annotationAt(where, part, offset, name),
          message: `unknown annotation @${name}${nearest(name, new Set(ANNOTATIONS), '@')}; Keel knows ${ANNOTATIONS.map((a) => `@${a}`).join(', ')}`,
          policy: id,
        });
    if (ann.after_untrusted !== undefined && ann.after_untrusted !== 'allow')
      diagnostics.push({
        severity: 'error',
        at: annotationAt(where, part, offset, 'after_untrusted'),
        message: `@after_untrusted takes one value, "allow" (got ${JSON.stringify(ann.after_untrusted)})`,
        policy: id,
      });
    const approvers = ann.approvers?.split(/[\s,]+/).filter(Boolean);
    if (ann.approvers !== undefined && !approvers?.length)
      diagnostics.push({ severity: 'error', at: head, message: '@approvers("GROUP") must name one or more groups', policy: id });
    if (p.effect === 'forbid')
      for (const a of ['ask', 'approvers', 'after_untrusted'] as const)
        if (ann[a] !== undefined)
          diagnostics.push({ severity: 'warning', at: head, message: `@${a} on a forbid has no effect`, policy: id });
    // PC2: every tool and plugin a policy names must be mounted: a misspelt name is a policy that never applies.
    for (const e of entitiesIn(p)) {
      const known = e.type === 'Keel::Tool' ? tools.has(e.id) : e.type === 'Keel::Plugin' ? plugins.has(e.id) : true;
      if (!known) {
        const i = part.indexOf(JSON.stringify(e.id));
        diagnostics.push({
          severity: 'error',
          at: where(offset + Math.max(i, 0)),
          message: `no ${e.type === 'Keel::Tool' ? 'tool' : 'plugin'} named ${JSON.stringify(e.id)} is mounted${nearest(e.id, e.type === 'Keel::Tool' ? tools : plugins)}`,
          policy: id,
        });
      }
    }
    entries.push({
      id,
      effect: p.effect,
      at: head,
      ask: ann.ask !== undefined && p.effect === 'permit',
      ...(approvers?.length && p.effect === 'permit' ? { approvers } : {}),
      ...(ann.after_untrusted === 'allow' && p.effect === 'permit' ? { after_untrusted: true as const } : {}),
      scope: scopeOf(p.resource),
      text: part,
      offset,
      needs: needsOf(p),
    });
  });
  diagnostics.push(...validate(cedar, entries, pool, where));
  // Cedar denies what no permit allows: a file without one denies every call, which is rarely meant.
  if (!entries.some((e) => e.effect === 'permit'))
    diagnostics.push({
      severity: 'warning',
      at: where(0),
      message: 'no permit: every call is denied (a call no permit matches is denied; keel policy init writes one that permits every call)',
    });
  else diagnostics.push(...coreNeeds(cedar, entries, pool, where));
  diagnostics.sort((a, b) => order(a.at) - order(b.at));
  return { entries, diagnostics };
}

/** The tool as Cedar sees it (`Keel::Tool::"NAME"`, in `Keel::Plugin::"PLUGIN"`): what evaluate sends and check reasons about. */
export function toolEntity(tool: ToolSpec): CedarWasm.EntityJson {
  const d = tool.declaration;
  return {
    uid: { type: 'Keel::Tool', id: tool.name },
    attrs: {
      effect: d.effect,
      gate: tool.policy?.declared_gate ?? tool.gate,
      plugin: tool.plugin,
      output: d.output ?? 'trusted',
      open_world: d.open_world === true,
    },
    parents: [{ type: 'Keel::Plugin', id: tool.plugin }],
  };
}

/**
 * The core's tools every run may need, and what breaks when the policy never lets one run (issue 47:
 * an allow-list of an app's own tools denied ask_user, so no confirm-once write could be confirmed).
 */
const RUNS_NEED: readonly (readonly [tool: string, breaks: string])[] = [
  ['ask_user', 'confirm-once writes can never be confirmed'],
  ['submit_plan', 'plan mode can never submit its plan'],
  ['submit_goal', 'goal mode can never submit its goal'],
  ['report_goal', 'an approved goal can never report a criterion verified'],
  ['find_tools', 'a tool the shortlist leaves off the menu can never be found'],
];

/** Every key of the context unknown: partial evaluation then answers for every call, mode, time and read. */
const ANY_CONTEXT = Object.fromEntries(
  ['args', 'mode', 'session', 'untrusted', 'read_from', 'time', 'hour', 'minute', 'weekday'].map((k) => [
    k,
    { __extn: { fn: 'unknown', arg: k } },
  ]),
) as CedarWasm.Context;

/**
 * A core tool runs need (RUNS_NEED) that the file denies whoever starts the run and whatever the call
 * — no permit can match it, or a forbid always does — is a warning that says what breaks. Cedar's own
 * partial evaluation decides it, with the principal and every context key unknown: only a decision
 * that holds for all of them warns (a permit that depends on who or when is given the benefit).
 */
function coreNeeds(cedar: Cedar, entries: readonly Entry[], pool: readonly ToolSpec[], where: (o: number) => string): PolicyDiagnostic[] {
  const found: { tool: string; breaks: string; forbids: Entry[] }[] = [];
  for (const [name, breaks] of RUNS_NEED) {
    const tool = pool.find((t) => t.name === name && t.plugin === 'core');
    if (!tool) continue;
    const mine = entries.filter((e) => reaches(e, tool));
    let forbids: Entry[] = [];
    if (mine.some((e) => e.effect === 'permit')) {
      const entity = toolEntity(tool);
      const ans = cedar.isAuthorizedPartial({
        principal: null,
        action: { type: 'Keel::Action', id: 'call' },
        resource: entity.uid,
        context: ANY_CONTEXT,
        policies: { staticPolicies: Object.fromEntries(mine.map((e) => [e.id, e.text])) },
        entities: [entity],
      });
      if (ans.type !== 'residuals' || ans.response.decision !== 'deny') continue;
      const always = new Set(ans.response.mustBeDetermining);
      forbids = mine.filter((e) => e.effect === 'forbid' && always.has(e.id));
    }
    found.push({ tool: name, breaks, forbids });
  }
  const forbidden = (f: (typeof found)[number]) => (f.forbids.length ? `, forbidden by ${f.forbids.map((e) => e.id).join(', ')}` : '');
  const at = (fs: typeof found) => fs.flatMap((f) => f.forbids)[0]?.at ?? where(0);
  // What would fix it: a permit where none matches; a forbid that always matches wins over any permit.
  const fix = (fs: typeof found) => {
    const open = fs.filter((f) => !f.forbids.length).map((f) => f.tool);
    const shut = [...new Set(fs.flatMap((f) => f.forbids.map((e) => e.id)))];
    return [
      ...(open.length ? [permitFor(open)] : []),
      ...(shut.length ? [`narrow ${shut.join(', ')}: a forbid wins over every permit`] : []),
    ].join('; ');
  };
  const out: PolicyDiagnostic[] = [];
  const ask = found.find((f) => f.tool === 'ask_user');
  if (ask)
    out.push({
      severity: 'warning',
      at: at([ask]),
      message: `${ask.breaks}: ask_user is ${ask.forbids.length ? `forbidden by ${ask.forbids.map((e) => e.id).join(', ')}` : 'not permitted (no permit matches it, whoever starts the run)'}, and the model can never ask the user a question; ${fix([ask])}`,
    });
  const rest = found.filter((f) => f !== ask);
  if (rest.length)
    out.push({
      severity: 'warning',
      at: at(rest),
      message: `core tools runs need can never run, whoever starts the run: ${rest.map((f) => `${f.tool}${forbidden(f)} (${f.breaks})`).join(', ')}; ${fix(rest)}`,
    });
  return out;
}

/** The permit that lets these core tools run (their declared gates still apply). */
function permitFor(tools: readonly string[]): string {
  const set = tools.map((t) => `Keel::Tool::"${t}"`);
  return tools.length === 1
    ? `permit it: permit (principal, action == Keel::Action::"call", resource == ${set[0]});`
    : `permit them: permit (principal, action == Keel::Action::"call", resource) when { resource in [${set.join(', ')}] };`;
}

/** file:line:col of a character offset (1-based line and column). */
function locator(file: string, text: string): (offset: number) => string {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return `${file}:${lo + 1}:${offset - starts[lo] + 1}`;
  };
}

/** The engine counts UTF-8 bytes: the character offset in `text` of a byte offset. */
function charOffset(text: string, bytes: number): number {
  return Buffer.from(text, 'utf8').subarray(0, bytes).toString('utf8').length;
}

function errorAt(where: (o: number) => string, e: CedarWasm.DetailedError, base: number, text: string, policy?: string): PolicyDiagnostic {
  const loc = e.sourceLocations?.[0];
  const label = loc?.label ? ` (${loc.label})` : '';
  const help = e.help ? `; ${e.help}` : '';
  return {
    severity: 'error',
    at: where(base + (loc ? charOffset(text, loc.start) : 0)),
    message: `${e.message}${label}${help}`,
    ...(policy ? { policy } : {}),
  };
}

/** Where a policy's effect keyword starts (after its annotations and comments), for its line. */
function headOffset(part: string): number {
  const m = /\b(permit|forbid)\s*\(/.exec(part);
  return m ? m.index : 0;
}

function uidOf(e: unknown): { type: string; id: string } | undefined {
  if (!e || typeof e !== 'object') return undefined;
  const o = (e as { __entity?: unknown }).__entity ?? e;
  const { type, id } = o as { type?: unknown; id?: unknown };
  return typeof type === 'string' && typeof id === 'string' ? { type, id } : undefined;
}

/** Every entity a policy names: in its scope and in its conditions. */
function entitiesIn(p: CedarWasm.PolicyJson): { type: string; id: string }[] {
  const out: { type: string; id: string }[] = [];
  const walk = (v: unknown): void => {
    if (!v || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      for (const x of v) walk(x);
      return;
    }
    const o = v as Record<string, unknown>;
    if (o.__entity) {
      const u = uidOf(o);
      if (u) out.push(u);
      return;
    }
    if ('entity' in o) {
      const u = uidOf(o.entity);
      if (u) out.push(u);
    }
    for (const [k, x] of Object.entries(o)) if (k !== 'entity') walk(x);
  };
  walk([p.principal, p.resource, p.conditions]);
  return out;
}

function scopeOf(r: CedarWasm.ResourceConstraint): Entry['scope'] {
  const target =
    r.op === '==' || r.op === 'in'
      ? uidOf((r as { entity?: unknown }).entity)
      : r.op === 'is'
        ? uidOf(r.in && 'entity' in r.in ? r.in.entity : undefined)
        : undefined;
  if (!target) return null;
  if (target.type === 'Keel::Tool') return { tools: new Set([target.id]) };
  if (target.type === 'Keel::Plugin' && r.op !== '==') return { plugin: target.id };
  // Anything else (`resource == Keel::Plugin::"x"`) reaches no tool: the validator calls it impossible.
  return { tools: new Set() };
}

export function reaches(e: Entry, tool: ToolSpec): boolean {
  if (!e.scope) return true;
  return e.scope.tools ? e.scope.tools.has(tool.name) : e.scope.plugin === tool.plugin;
}

export function union(a: Set<string> | 'all', b: Set<string> | 'all'): Set<string> | 'all' {
  return a === 'all' || b === 'all' ? 'all' : new Set([...a, ...b]);
}

const isVar = (e: unknown, name: string) => !!e && typeof e === 'object' && (e as { Var?: unknown }).Var === name;

/**
 * What a policy's conditions read, from its JSON: the context keys, the arguments (`context.args.X`,
 * `context.args has X`), whether it reads the principal or the tool. A use of `context` or
 * `context.args` as a whole sends all of it. The scope needs the tool's entity only for `in`.
 */
function needsOf(p: CedarWasm.PolicyJson): Needs {
  const n: Needs = {
    principal: p.principal.op === 'in' || (p.principal.op === 'is' && !!p.principal.in),
    tool: p.resource.op === 'in' || (p.resource.op === 'is' && !!p.resource.in),
    context: new Set(),
    args: new Set(),
  };
  const ctxKey = (k: string) => n.context !== 'all' && n.context.add(k);
  const argKey = (k: string) => n.args !== 'all' && n.args.add(k);
  const isArgs = (e: unknown) => {
    const dot = (e as { '.'?: { left: unknown; attr: string } } | null)?.['.'];
    return !!dot && isVar(dot.left, 'context') && dot.attr === 'args';
  };
  const walk = (e: unknown): void => {
    if (!e || typeof e !== 'object') return;
    if (Array.isArray(e)) {
      for (const x of e) walk(x);
      return;
    }
    const o = e as Record<string, unknown>;
    if (o.Var === 'principal') n.principal = true;
    if (o.Var === 'resource') n.tool = true;
    if (o.Var === 'context') n.context = 'all';
    const access = (o['.'] ?? o.has) as { left: unknown; attr: string | string[] } | undefined;
    if (access && typeof access === 'object' && 'left' in access) {
      const path = Array.isArray(access.attr) ? access.attr : [access.attr];
      if (isVar(access.left, 'context')) {
        ctxKey(path[0]);
        // `context.args` itself, not under an access of one argument (those return above): all of it.
        if (path[0] === 'args' && path.length > 1) argKey(path[1]);
        else if (path[0] === 'args' && o['.']) n.args = 'all';
        return;
      }
      if (isArgs(access.left)) {
        ctxKey('args');
        argKey(path[0]);
        return;
      }
    }
    for (const v of Object.values(o)) walk(v);
  };
  walk(p.conditions);
  return n;
}

/** PC3: each policy validated against the schema of the tools its scope reaches. */
function validate(cedar: Cedar, entries: readonly Entry[], pool: readonly ToolSpec[], where: (o: number) => string): PolicyDiagnostic[] {
  const out: PolicyDiagnostic[] = [];
  const groups = new Map<string, Entry[]>();
  for (const e of entries) {
    const key = !e.scope ? '*' : e.scope.tools ? `t:${[...e.scope.tools].sort().join(',')}` : `p:${e.scope.plugin}`;
    groups.set(key, [...(groups.get(key) ?? []), e]);
  }
  for (const group of groups.values()) {
    const reached = pool.filter((t) => reaches(group[0], t));
    // A scope that reaches no mounted tool was reported as unknown; still validated, against every tool.
    const schema = schemaJsonFor(unionArgs(reached.length ? reached : pool)) as CedarWasm.Schema;
    const byCedarId = new Map(group.map((e, i) => [`p${i}`, e]));
    const ans = cedar.validate({
      schema,
      policies: { staticPolicies: Object.fromEntries([...byCedarId].map(([k, e]) => [k, e.text])) },
      validationSettings: { mode: 'strict' },
    });
    if (ans.type === 'failure') {
      out.push(...ans.errors.map((e) => ({ severity: 'error' as const, at: where(0), message: `the generated schema: ${e.message}` })));
      continue;
    }
    const report = (severity: 'error' | 'warning', v: CedarWasm.ValidationError) => {
      const e = byCedarId.get(v.policyId);
      if (!e) return;
      const d = errorAt(where, { ...v.error, message: v.error.message.replace(/^for policy `[^`]*`, /, '') }, e.offset, e.text, e.id);
      out.push({ ...d, severity });
    };
    for (const v of ans.validationErrors) report('error', v);
    for (const v of ans.validationWarnings) report('warning', v);
  }
  return out;
}

const order = (at: string) => {
  const [line, col] = at.split(':').slice(-2).map(Number);
  return line * 100_000 + col;
};

/** ` (did you mean "x"?)`, or with `sigil` ` (did you mean @x?)` (an annotation is written with its @). */
function nearest(name: string, known: ReadonlySet<string>, sigil?: string): string {
  let best: string | undefined;
  let bestD = 3;
  for (const k of known) {
    const d = distance(name, k);
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  if (!best) return '';
  return ` (did you mean ${sigil ? `${sigil}${best}` : JSON.stringify(best)}?)`;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length];
}
