/**
 * The operator's policy file in Cedar (issue 37): parsed and checked once, evaluated for each call
 * with the official engine (`@cedar-policy/cedar-wasm`, an optional package loaded only when a
 * policy file is configured). The gate (src/policy/gate.ts) asks `evaluate` and stays the one place
 * a decision is made; this module only answers forbid, ask or permit, and which policies said so.
 *
 * Speed (PC6): the file is split into its policies once; each tool gets, on its first call, the set
 * of policies whose scope can reach it, preparsed in the engine (`preparsePolicySet`, shared by every
 * tool with the same set), and the context, arguments and entities a call sends across the WASM
 * boundary are only those these policies read. See docs/decisions/0011-cedar-operator-policy.md.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename } from 'node:path';
import type * as CedarWasm from '@cedar-policy/cedar-wasm/nodejs';
import type { Mode, ToolSpec, UntrustedSource } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { optionalImport } from '../util/optional.js';
import { argsTypeOf, type CedarType, NotWhole, schemaFor, schemaText, toCedar, unionArgs } from './cedar-schema.js';

type Cedar = typeof CedarWasm;

export interface Principal {
  /** Who started the run: a `keel serve` token's name, the local user for the CLI, an MCP client's token, the app. */
  kind: 'token' | 'user' | 'mcp' | 'app';
  name: string;
  /** A token's role (viewer | approver | admin); absent for the local user or the app. */
  role?: string;
  groups: readonly string[];
}

export interface PolicyRequest {
  tool: ToolSpec;
  /** Already validated against the tool's schema. */
  args: Record<string, unknown>;
  mode: Mode;
  session?: string | null;
  principal: Principal;
  /** What the run has read from outside (U2); [] = nothing. */
  untrusted: readonly UntrustedSource[];
  /** The time of the call. */
  at: Date;
  /** The IANA time zone `context.hour`, `minute` and `weekday` are read in; default the process's local time. */
  timeZone?: string;
}

export interface PolicyVerdict {
  /** forbid: a forbid matched, or no permit did (Cedar's default deny). ask: allowed, and a permit that allowed it is @ask. permit: the declared gate. */
  decision: 'forbid' | 'ask' | 'permit';
  /** The ids of the policies that made the decision (@id, else `policyN (file:line)`); [] for a default deny. */
  policies: string[];
  /** From @approvers("G") (one or more groups) on a determining permit; undefined when none. */
  approvers?: string[];
  /** Evaluation errors Cedar reported (policy id: message), for the trace. */
  errors?: string[];
}

export interface PolicyDiagnostic {
  severity: 'error' | 'warning';
  /** file:line:col */
  at: string;
  message: string;
  policy?: string;
}

/** One policy of the file, as the engine and the verdicts know it. */
export interface PolicyEntry {
  id: string;
  effect: 'permit' | 'forbid';
  /** file:line:col of its first character. */
  at: string;
  ask: boolean;
  approvers?: string[];
  /** The tools its resource scope can reach: null for any tool. */
  scope: { tools?: ReadonlySet<string>; plugin?: string } | null;
}

interface Entry extends PolicyEntry {
  text: string;
  /** Character offset of `text` in the file. */
  offset: number;
  /** What its conditions read (see `needsOf`). */
  needs: Needs;
}

interface Needs {
  principal: boolean;
  tool: boolean;
  /** Context keys read, or all of them. */
  context: Set<string> | 'all';
  /** Argument names read (`context.args.X`), or all of them. */
  args: Set<string> | 'all';
}

/** How one tool's calls are evaluated: its preparsed set and what to send. */
interface Plan {
  setId: string | null;
  byId: ReadonlyMap<string, Entry>;
  needs: Needs;
  args: Extract<CedarType, { kind: 'Record' }>;
  tool: CedarWasm.EntityJson;
}

let engine: Cedar | undefined;
/** The sets already preparsed in this process's engine, by content: a set is parsed once. */
const preparsed = new Set<string>();

/**
 * The engine, loaded on first use (~50-120 ms, once). Its Node build is CommonJS: required, not
 * imported. `load` is for tests (a package that is not there).
 */
export async function loadCedar(load?: () => Promise<Cedar>): Promise<Cedar> {
  if (engine && !load) return engine;
  const got = await optionalImport(
    '@cedar-policy/cedar-wasm',
    'the policy file (policy_file: in config.yaml)',
    load ?? (async () => createRequire(import.meta.url)('@cedar-policy/cedar-wasm/nodejs') as Cedar),
  );
  if (!load) engine = got;
  return got;
}

const ACTION = { type: 'Keel::Action', id: 'call' };
const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

export class CedarPolicy {
  /** A short sha1 of the text, for traces. */
  readonly hash: string;
  readonly policies: readonly PolicyEntry[];
  /** Whether any policy is @ask / names @approvers. */
  readonly hasAsk: boolean;
  readonly hasApprovers: boolean;
  private readonly plans = new WeakMap<ToolSpec, Plan>();

  private constructor(
    private readonly cedar: Cedar,
    readonly file: string,
    readonly text: string,
    private readonly pool: readonly ToolSpec[],
    private readonly entries: readonly Entry[],
    private readonly diagnostics: readonly PolicyDiagnostic[],
  ) {
    this.hash = createHash('sha1').update(text).digest('hex').slice(0, 12);
    this.policies = entries.map(({ id, effect, at, ask, approvers, scope }) => ({ id, effect, at, ask, approvers, scope }));
    this.hasAsk = entries.some((e) => e.ask);
    this.hasApprovers = entries.some((e) => e.approvers);
  }

  /** Reads, parses and checks a policy file; a parse or validation error is KeelError('config', 'file:line:col: …'). */
  static async load(file: string, pool: readonly ToolSpec[]): Promise<CedarPolicy> {
    const cedar = await loadCedar();
    return CedarPolicy.fromText(cedar, file, readText(file), pool);
  }

  /** Every problem of a file (errors and warnings), and the policy when there is no error: what `keel policy check` prints. */
  static async diagnose(file: string, pool: readonly ToolSpec[]): Promise<{ policy?: CedarPolicy; diagnostics: PolicyDiagnostic[] }> {
    const cedar = await loadCedar();
    return CedarPolicy.analyse(cedar, file, readText(file), pool);
  }

  /** Synchronous, once the engine is loaded (PolicyFile re-reads with it). */
  static fromText(cedar: Cedar, file: string, text: string, pool: readonly ToolSpec[]): CedarPolicy {
    const { policy, diagnostics } = CedarPolicy.analyse(cedar, file, text, pool);
    const errors = diagnostics.filter((d) => d.severity === 'error');
    if (!policy || errors.length) {
      const more = errors.length > 1 ? ` (and ${errors.length - 1} more: keel policy check ${file})` : '';
      throw new KeelError('config', `${errors[0].at}: ${errors[0].message}${more}`);
    }
    return policy;
  }

  private static analyse(
    cedar: Cedar,
    file: string,
    text: string,
    pool: readonly ToolSpec[],
  ): { policy?: CedarPolicy; diagnostics: PolicyDiagnostic[] } {
    const where = locator(file, text);
    const parts = cedar.policySetTextToParts(text);
    if (parts.type === 'failure') return { diagnostics: parts.errors.map((e) => errorAt(where, e, 0, text)) };
    if (parts.policy_templates.length)
      return {
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
      const approvers = ann.approvers?.split(/[\s,]+/).filter(Boolean);
      if (ann.approvers !== undefined && !approvers?.length)
        diagnostics.push({ severity: 'error', at: head, message: '@approvers("GROUP") must name one or more groups', policy: id });
      if (p.effect === 'forbid')
        for (const a of ['ask', 'approvers'] as const)
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
        scope: scopeOf(p.resource),
        text: part,
        offset,
        needs: needsOf(p),
      });
    });
    diagnostics.push(...validate(cedar, entries, pool, where));
    diagnostics.sort((a, b) => order(a.at) - order(b.at));
    const policy = diagnostics.some((d) => d.severity === 'error')
      ? undefined
      : new CedarPolicy(cedar, file, text, pool, entries, diagnostics);
    return { policy, diagnostics };
  }

  /** The Cedar schema generated from the pool (Cedar's schema syntax). */
  schemaText(): string {
    return schemaText(this.pool);
  }

  /** The warnings found when the file was checked (a file with errors does not load). */
  check(): PolicyDiagnostic[] {
    return [...this.diagnostics];
  }

  /** Synchronous, on sets preparsed once; fails closed (forbid) when the engine cannot decide. */
  evaluate(req: PolicyRequest): PolicyVerdict {
    const plan = this.planFor(req.tool);
    if (!plan.setId) return { decision: 'forbid', policies: [] };
    const needs = plan.needs;
    const context: Record<string, unknown> = {};
    const want = (k: string) => needs.context === 'all' || needs.context.has(k);
    if (want('args')) {
      try {
        context.args = toCedar(plan.args, req.args, 'args') ?? {};
      } catch (err) {
        if (err instanceof NotWhole) return { decision: 'forbid', policies: [], errors: [err.message] };
        throw err;
      }
    }
    if (want('mode')) context.mode = req.mode;
    if (want('session')) context.session = req.session ?? '';
    if (want('untrusted')) context.untrusted = req.untrusted.length > 0;
    if (want('read_from')) context.read_from = [...new Set(req.untrusted.map((u) => u.tool))];
    if (want('time')) context.time = req.at.toISOString();
    if (want('hour') || want('minute') || want('weekday')) {
      const clock = clockOf(req.at, req.timeZone);
      if (!clock) return { decision: 'forbid', policies: [], errors: [`unknown time zone ${req.timeZone}`] };
      if (want('hour')) context.hour = clock.hour;
      if (want('minute')) context.minute = clock.minute;
      if (want('weekday')) context.weekday = clock.weekday;
    }
    const who = req.principal;
    const principal = { type: 'Keel::User', id: who.name };
    const entities: CedarWasm.EntityJson[] = [];
    if (needs.tool) entities.push(plan.tool);
    if (needs.principal)
      entities.push({ uid: principal, attrs: { kind: who.kind, role: who.role ?? '', groups: [...who.groups] }, parents: [] });
    const ans = this.cedar.statefulIsAuthorized({
      principal,
      action: ACTION,
      resource: plan.tool.uid,
      context: context as CedarWasm.Context,
      preparsedPolicySetId: plan.setId,
      entities,
    });
    if (ans.type === 'failure') return { decision: 'forbid', policies: [], errors: ans.errors.map((e) => e.message) };
    const { decision, diagnostics } = ans.response;
    const errors = diagnostics.errors.map((e) => `${e.policyId}: ${e.error.message}`);
    const extra = errors.length ? { errors } : {};
    if (decision === 'deny') return { decision: 'forbid', policies: diagnostics.reason, ...extra };
    const by = diagnostics.reason.map((id) => plan.byId.get(id)).filter((e): e is Entry => e !== undefined);
    const approvers = [...new Set(by.flatMap((e) => e.approvers ?? []))];
    const asked = by.filter((e) => e.ask).map((e) => e.id);
    return {
      decision: asked.length ? 'ask' : 'permit',
      policies: diagnostics.reason,
      ...(asked.length ? { asked_by: asked } : {}),
      ...(approvers.length ? { approvers } : {}),
      ...extra,
    };
  }

  /** The policies that can apply to a tool, preparsed as one set (made on the tool's first call). */
  private planFor(tool: ToolSpec): Plan {
    let plan = this.plans.get(tool);
    if (plan) return plan;
    const mine = this.entries.filter((e) => reaches(e, tool));
    const needs: Needs = { principal: false, tool: false, context: new Set(), args: new Set() };
    for (const e of mine) {
      needs.principal ||= e.needs.principal;
      needs.tool ||= e.needs.tool;
      needs.context = union(needs.context, e.needs.context);
      needs.args = union(needs.args, e.needs.args);
    }
    const all = argsTypeOf(tool);
    const args =
      needs.args === 'all'
        ? all
        : { kind: 'Record' as const, attrs: new Map([...all.attrs].filter(([n]) => (needs.args as Set<string>).has(n))) };
    let setId: string | null = null;
    if (mine.length) {
      const staticPolicies = Object.fromEntries(mine.map((e) => [e.id, e.text]));
      setId = `keel:${createHash('sha1').update(JSON.stringify(staticPolicies)).digest('hex')}`;
      if (!preparsed.has(setId)) {
        const r = this.cedar.preparsePolicySet(setId, { staticPolicies });
        if (r.type === 'failure') throw new KeelError('config', `${this.file}: ${r.errors.map((e) => e.message).join('; ')}`);
        preparsed.add(setId);
      }
    }
    const d = tool.declaration;
    plan = {
      setId,
      byId: new Map(mine.map((e) => [e.id, e])),
      needs,
      args,
      tool: {
        uid: { type: 'Keel::Tool', id: tool.name },
        attrs: { effect: d.effect, gate: tool.policy?.declared_gate ?? tool.gate, plugin: tool.plugin, output: d.output ?? 'trusted' },
        parents: [{ type: 'Keel::Plugin', id: tool.plugin }],
      },
    };
    this.plans.set(tool, plan);
    return plan;
  }
}

/**
 * A policy file kept current while serving (PC7): looked at (size and mtime) at most once a second
 * when asked for; changed, it is read again, and a bad edit keeps the last good policy and says so
 * (`onReload`, `lastError`).
 */
export class PolicyFile {
  lastError: string | undefined;
  private seen: string;
  private checkedAt = 0;

  private constructor(
    private readonly cedar: Cedar,
    readonly file: string,
    private readonly pool: readonly ToolSpec[],
    private policy: CedarPolicy,
    private readonly onReload?: (msg: string) => void,
    private readonly everyMs = 1000,
  ) {
    this.seen = stamp(file);
    this.checkedAt = Date.now();
  }

  static async open(
    file: string,
    pool: readonly ToolSpec[],
    onReload?: (msg: string) => void,
    opts: { checkEveryMs?: number } = {},
  ): Promise<PolicyFile> {
    const cedar = await loadCedar();
    const policy = CedarPolicy.fromText(cedar, file, readText(file), pool);
    return new PolicyFile(cedar, file, pool, policy, onReload, opts.checkEveryMs);
  }

  current(): CedarPolicy {
    const now = Date.now();
    if (now - this.checkedAt < this.everyMs) return this.policy;
    this.checkedAt = now;
    const s = stamp(this.file);
    if (s === this.seen) return this.policy;
    this.seen = s;
    try {
      const next = CedarPolicy.fromText(this.cedar, this.file, readText(this.file), this.pool);
      this.policy = next;
      this.lastError = undefined;
      this.onReload?.(`${this.file}: re-read (policy ${next.hash}, ${next.policies.length} policies)`);
    } catch (err) {
      this.lastError = (err as Error).message;
      this.onReload?.(`${this.file}: not re-read, the last good policy (${this.policy.hash}) stays: ${this.lastError}`);
    }
    return this.policy;
  }
}

/** What `keel policy init` writes: every call permitted with its declared gate, and the examples commented out. */
export function starterPolicy(pool: readonly ToolSpec[]): string {
  const destructive = pool.find((t) => t.declaration.effect === 'destructive')?.name ?? 'delete_file';
  const withNumber = pool.find((t) => [...argsTypeOf(t).attrs].some(([, a]) => a.type.kind === 'Long' && a.required));
  const num = withNumber && [...argsTypeOf(withNumber).attrs].find(([, a]) => a.type.kind === 'Long' && a.required)?.[0];
  const write = pool.find((t) => t.declaration.effect === 'write')?.name ?? 'send_email';
  const untrusted = pool.find((t) => t.declaration.output === 'untrusted');
  return `// Keel's operator policy, in Cedar (https://www.cedarpolicy.com). keel policy check validates it,
// keel policy schema prints what a policy can read, keel policy explain TOOL --args JSON tries it.
//
// A forbid wins; a call no permit matches is denied. A permit annotated @ask asks for an approval
// card pinned to the call's arguments; @approvers("GROUP") lets only that group's tokens answer it.
// A plain permit leaves the call to its declared gate, which a policy can never loosen.

@id("every-call")
permit (principal, action == Keel::Action::"call", resource);

// A card for a large amount; under it, the tool's declared gate.
// @id("big-amount")
// @ask
// @approvers("finance")
// permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"${withNumber?.name ?? 'pay'}")
// when { context.args.${num ?? 'amount'} > 500 };

// Only admins may run ${destructive}.
// @id("admins-only")
// forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"${destructive}")
// unless { principal.role == "admin" };

// Once the run has read outside content${untrusted ? ` (such as ${untrusted.name}'s results)` : ''}, no ${write}.
// @id("no-${write}-after-outside")
// forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"${write}")
// when { context.untrusted };

// Writes only in office hours (the process's local time), Monday to Friday.
// @id("office-hours")
// forbid (principal, action == Keel::Action::"call", resource)
// when { resource.effect != "read" && (context.hour < 9 || context.hour >= 18 || ["Sat", "Sun"].contains(context.weekday)) };
`;
}

export { schemaText as policySchemaText };

// --- helpers ---

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new KeelError('config', e.code === 'ENOENT' ? `${file}: no such policy file` : `${file}: ${e.message}`);
  }
}

function stamp(file: string): string {
  try {
    const s = statSync(file);
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
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

function reaches(e: Entry, tool: ToolSpec): boolean {
  if (!e.scope) return true;
  return e.scope.tools ? e.scope.tools.has(tool.name) : e.scope.plugin === tool.plugin;
}

function union(a: Set<string> | 'all', b: Set<string> | 'all'): Set<string> | 'all' {
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
    const schema = schemaFor(unionArgs(reached.length ? reached : pool));
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

function nearest(name: string, known: ReadonlySet<string>): string {
  let best: string | undefined;
  let bestD = 3;
  for (const k of known) {
    const d = distance(name, k);
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  return best ? ` (did you mean ${JSON.stringify(best)}?)` : '';
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

const clocks = new Map<string, Intl.DateTimeFormat>();

/** The hour, minute and weekday of a time, in a time zone or the process's own; undefined for an unknown zone. */
function clockOf(at: Date, timeZone?: string): { hour: number; minute: number; weekday: string } | undefined {
  if (!timeZone) return { hour: at.getHours(), minute: at.getMinutes(), weekday: WEEKDAYS[at.getDay()] };
  let f = clocks.get(timeZone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', hour: 'numeric', minute: 'numeric', weekday: 'short' });
    } catch {
      return undefined;
    }
    clocks.set(timeZone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(at).map((p) => [p.type, p.value]));
  return { hour: Number(parts.hour), minute: Number(parts.minute), weekday: parts.weekday };
}
