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
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as CedarWasm from '@cedar-policy/cedar-wasm/nodejs';
import type { ToolSpec } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { sha1Hex } from '../util/hash.js';
import { optionalImport } from '../util/optional.js';
import { type Entry, entriesOf, type Needs, type PolicyDiagnostic, type PolicyEntry, reaches, toolEntity, union } from './cedar-check.js';
import { argsTypeOf, type CedarType, NotWhole, schemaText, toCedar } from './cedar-schema.js';
import type { PolicyRequest, PolicyVerdict } from './gate.js';

export type { PolicyDiagnostic, PolicyEntry } from './cedar-check.js';
export { starterPolicy } from './cedar-schema.js';

type Cedar = typeof CedarWasm;

// One vocabulary for the gate and the engine: the request and the verdict are the gate's (PC8).
export type { Principal } from '../types/index.js';
export type { PolicyRequest, PolicyVerdict } from './gate.js';

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
  private readonly order: ReadonlyMap<string, number>;

  private constructor(
    private readonly cedar: Cedar,
    readonly file: string,
    readonly text: string,
    private readonly pool: readonly ToolSpec[],
    private readonly entries: readonly Entry[],
    private readonly diagnostics: readonly PolicyDiagnostic[],
  ) {
    this.hash = sha1Hex(text).slice(0, 12);
    this.policies = entries.map(({ id, effect, at, ask, approvers, after_untrusted, scope }) => ({
      id,
      effect,
      at,
      ask,
      approvers,
      ...(after_untrusted ? { after_untrusted } : {}),
      scope,
    }));
    this.hasAsk = entries.some((e) => e.ask);
    this.hasApprovers = entries.some((e) => e.approvers);
    this.order = new Map(entries.map((e, i) => [e.id, i]));
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
    const { entries, diagnostics } = entriesOf(cedar, file, text, pool);
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
    if (want('read_from')) context.read_from = [...new Set(req.untrusted.map((u) => u.tool).filter(Boolean))];
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
    // In the file's order, whatever order the engine gives them.
    const policies = this.inFileOrder(diagnostics.reason);
    if (decision === 'deny') return { decision: 'forbid', policies, ...extra };
    // PC1: a forbid whose condition errs (an overflow, say) forbids: Cedar skips it, which would let
    // an argument large enough to overflow slip past the very forbid that was meant to stop it.
    const erred = this.inFileOrder(diagnostics.errors.map((e) => e.policyId).filter((id) => plan.byId.get(id)?.effect === 'forbid'));
    if (erred.length) return { decision: 'forbid', policies: erred, ...extra };
    const by = policies.map((id) => plan.byId.get(id)).filter((e): e is Entry => e !== undefined);
    const approvers = [...new Set(by.flatMap((e) => e.approvers ?? []))];
    const asked = by.filter((e) => e.ask).map((e) => e.id);
    // O4: the determining permits annotated @after_untrusted("allow") let the call run without a card after untrusted reads.
    const allowed = by.filter((e) => e.after_untrusted).map((e) => e.id);
    return {
      decision: asked.length ? 'ask' : 'permit',
      policies,
      ...(asked.length ? { asked_by: asked } : {}),
      ...(allowed.length ? { after_untrusted: allowed } : {}),
      ...(approvers.length ? { approvers } : {}),
      ...extra,
    };
  }

  private inFileOrder(ids: readonly string[]): string[] {
    return ids.length < 2 ? [...ids] : [...ids].sort((a, b) => (this.order.get(a) ?? 0) - (this.order.get(b) ?? 0));
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
      setId = `keel:${sha1Hex(JSON.stringify(staticPolicies))}`;
      if (!preparsed.has(setId)) {
        const r = this.cedar.preparsePolicySet(setId, { staticPolicies });
        if (r.type === 'failure') throw new KeelError('config', `${this.file}: ${r.errors.map((e) => e.message).join('; ')}`);
        preparsed.add(setId);
      }
    }
    plan = { setId, byId: new Map(mine.map((e) => [e.id, e])), needs, args, tool: toolEntity(tool) };
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
    private pool: readonly ToolSpec[],
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

  /** The pool changed (plugins mounted again): the file is checked against the new one; an error keeps the last good policy. */
  setPool(pool: readonly ToolSpec[]): void {
    this.pool = pool;
    this.seen = '';
    this.checkedAt = 0;
    this.current();
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
