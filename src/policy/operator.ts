/**
 * Operator policy: the person who runs Keel decides how strictly it governs the tools plugins
 * declare. Two sources, applied in one place (where tools are mounted), so a run, `keel plugins
 * check` and every other surface see the same effective gate:
 *
 * - `KEEL_CONFIRM_ONCE_TOOLS` (R7): a comma list adds tools to the confirm-once set; `none` clears
 *   the set, so no write asks first. Destructive tools and pinned writes keep their cards.
 * - the `policy:` section of Keel's config file: per tool (a name or a glob), a `gate` (tighten any
 *   tool; loosen a confirm-once write to none; never loosen a card), `deny: true` (never runs), or
 *   `modes: [...]` (runs only in those modes; elsewhere denied but still declared). The most specific
 *   rule wins (an exact name over a glob; of globs, the one with the most literal characters).
 *   `after_untrusted: allow` (U4) lets a write run as before once the run has read untrusted
 *   content (a reminder only the user sees); the default, `ask`, narrows its consent to exact calls.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Node } from 'yaml';
import type { Env } from '../types/env.js';
import { type Gate, MODES, type Mode, type ToolSpec } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { sha1Hex } from '../util/hash.js';

const GATES: readonly Gate[] = ['none', 'confirm_once', 'approval'];
const RANK: Record<Gate, number> = { none: 0, confirm_once: 1, approval: 2 };
const PATTERN = /^[a-z0-9_*?]+$/;

export interface PolicyRule {
  pattern: string;
  /** `file:line:col` of the rule, for messages. */
  at: string;
  gate?: Gate;
  deny?: true;
  modes?: Mode[];
  /** U4: `allow` lets the write run as before after the run read untrusted content; `ask` is the default. */
  after_untrusted?: 'allow' | 'ask';
}

/** What a rule or the override did to one tool (shown by `keel plugins check`, kept with the tool). */
export interface ToolPolicy {
  /** The rule that applies, as `pattern (file:line:col)`. */
  rule?: string;
  deny?: true;
  modes?: Mode[];
  /** What changed the gate from the declared one: the rule, or KEEL_CONFIRM_ONCE_TOOLS. */
  gate_source?: string;
  declared_gate: Gate;
  /** U4: the rule lets this write run as before after the run read untrusted content. */
  after_untrusted?: 'allow';
}

export class OperatorPolicy {
  /** A short hash of the rules and the override, recorded in each run's trace. */
  readonly hash: string;

  constructor(
    readonly rules: readonly PolicyRule[],
    readonly confirmOnce: { add: ReadonlySet<string>; clear: boolean } = { add: new Set(), clear: false },
    /** U1: the MCP-server plugins the operator trusts: their tools' results are not words from outside. */
    readonly trustedMcp: ReadonlySet<string> = new Set(),
  ) {
    this.hash = sha1Hex(
      JSON.stringify({
        rules,
        add: [...confirmOnce.add].sort(),
        clear: confirmOnce.clear,
        ...(trustedMcp.size ? { trusted_mcp: [...trustedMcp].sort() } : {}),
      }),
    ).slice(0, 12);
  }

  /** From the environment and Keel's config file (null: none). An invalid rule is refused with file:line:col. */
  static load(configFile: string | null, env: Env): OperatorPolicy {
    const parsed = configFile ? parsePolicy(configFile, readFileSync(configFile, 'utf8')) : { rules: [], trustedMcp: [] };
    return new OperatorPolicy(parsed.rules, confirmOnceFromEnv(env), new Set(parsed.trustedMcp));
  }

  /** U1: whether a plugin that mounts an MCP server is trusted by the operator (`policy.trusted_mcp`); untrusted by default. */
  trustsMcp(plugin: string): boolean {
    return this.trustedMcp.has(plugin);
  }

  /** The most specific rule naming this tool: an exact name, else the glob with the most literal characters. */
  ruleFor(name: string): PolicyRule | undefined {
    let best: PolicyRule | undefined;
    let bestScore = -1;
    for (const r of this.rules) {
      if (!globMatches(r.pattern, name)) continue;
      const score = r.pattern === name ? Number.MAX_SAFE_INTEGER : r.pattern.replace(/[*?]/g, '').length;
      if (score > bestScore) {
        best = r;
        bestScore = score;
      }
    }
    return best;
  }

  /** The tool as the operator governs it: its effective gate, and whether it is denied or limited to modes. */
  apply(spec: ToolSpec): ToolSpec {
    const declared = spec.gate;
    let gate = declared;
    let source: string | undefined;
    if (this.confirmOnce.clear && gate === 'confirm_once') {
      gate = 'none';
      source = 'KEEL_CONFIRM_ONCE_TOOLS=none';
    }
    if (this.confirmOnce.add.has(spec.name) && gate === 'none') {
      gate = 'confirm_once';
      source = 'KEEL_CONFIRM_ONCE_TOOLS';
    }
    const rule = this.ruleFor(spec.name);
    if (rule?.gate) {
      if (RANK[rule.gate] < RANK[declared] && declared === 'approval') {
        const what = spec.declaration.effect === 'destructive' ? 'destructive' : 'a write with approval: pinned';
        throw new KeelError(
          'config',
          `${rule.at}: policy.tools.${rule.pattern}: ${spec.name} is ${what}: a rule may tighten it, never loosen it below its approval card (gate ${rule.gate})`,
        );
      }
      gate = rule.gate;
      source = `policy rule ${rule.pattern} (${rule.at})`;
    }
    if (!rule && !source) return spec;
    const policy: ToolPolicy = { declared_gate: declared };
    if (rule) policy.rule = `${rule.pattern} (${rule.at})`;
    if (rule?.deny) policy.deny = true;
    if (rule?.modes) policy.modes = rule.modes;
    if (source && gate !== declared) policy.gate_source = source;
    // U4/O4: only a write without a card, or an open-world call, can be let through; a card is shown whatever the run has read.
    if (
      rule?.after_untrusted === 'allow' &&
      gate !== 'approval' &&
      (spec.declaration.effect === 'write' || spec.declaration.open_world === true)
    )
      policy.after_untrusted = 'allow';
    return { ...spec, gate, policy };
  }

  /** Rules that name no tool in this pool: reported, never silently ignored. */
  unmatched(names: Iterable<string>): PolicyRule[] {
    const all = [...names];
    return this.rules.filter((r) => !all.some((n) => globMatches(r.pattern, n)));
  }

  /** One line for a run's trace: the policy it ran under. */
  note(pool: readonly ToolSpec[]): string | undefined {
    const applied = pool.filter((t) => t.policy).map((t) => `${t.name}: ${describe(t)}`);
    if (!applied.length && !this.rules.length) return undefined;
    return `policy ${this.hash}: ${applied.length ? applied.join('; ') : 'no rule matches a tool of this pool'}`;
  }
}

function describe(t: ToolSpec): string {
  const p = t.policy;
  if (!p) return `gate ${t.gate}`;
  const parts = [p.deny ? 'denied' : `gate ${t.gate}${t.gate !== p.declared_gate ? ` (declared ${p.declared_gate})` : ''}`];
  if (p.modes) parts.push(`modes ${p.modes.join(',')}`);
  if (p.after_untrusted) parts.push('runs unasked after untrusted content');
  parts.push(`by ${p.gate_source ?? p.rule}`);
  return parts.join(', ');
}

function globMatches(pattern: string, name: string): boolean {
  if (!/[*?]/.test(pattern)) return pattern === name;
  const re = new RegExp(`^${pattern.replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  return re.test(name);
}

/** R7: KEEL_CONFIRM_ONCE_TOOLS — a comma list adds, `none` clears, unset changes nothing. */
export function confirmOnceFromEnv(env: Env): { add: Set<string>; clear: boolean } {
  const raw = (env.KEEL_CONFIRM_ONCE_TOOLS ?? '').trim();
  if (raw.toLowerCase() === 'none') return { add: new Set(), clear: true };
  return {
    add: new Set(
      raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
    clear: false,
  };
}

/** The `policy:` section's tool rules, every rule checked, each problem with its position. */
export function parseRules(file: string, text: string): PolicyRule[] {
  return parsePolicy(file, text).rules;
}

/**
 * The `policy:` section of a config file: `tools:` (rules per tool) and `trusted_mcp:` (U1: the
 * MCP-server plugins whose results the operator trusts), each problem with its position.
 */
export function parsePolicy(file: string, text: string): { rules: PolicyRule[]; trustedMcp: string[] } {
  // Loaded here, not at the top: mounting plugins imports this module, and most mounts have no policy file (M6).
  const { isMap, isScalar, isSeq, LineCounter, parseDocument } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, logLevel: 'error' });
  const at = (n: unknown) => {
    const range = (n as Node | null)?.range;
    const p = lc.linePos(range ? range[0] : 0);
    return `${file}:${p.line}:${p.col}`;
  };
  const fail = (n: unknown, path: string, message: string): never => {
    throw new KeelError('config', `${at(n)}: ${path}: ${message}`);
  };
  const trustedMcp: string[] = [];
  if (!isMap(doc.contents)) return { rules: [], trustedMcp };
  const policy = doc.contents.items.find((i) => isScalar(i.key) && i.key.value === 'policy');
  if (!policy) return { rules: [], trustedMcp };
  const section = policy.value;
  if (!isMap(section)) return fail(section ?? policy.key, 'policy', 'must be a mapping with a tools: section');
  const rules: PolicyRule[] = [];
  for (const item of section.items) {
    const key = isScalar(item.key) ? String(item.key.value) : '';
    if (key === 'trusted_mcp') {
      const names = isSeq(item.value) ? (item.value as { items: unknown[] }).items.map((m) => (isScalar(m) ? String(m.value) : '')) : [];
      if (!isSeq(item.value) || names.some((n) => !/^[a-z0-9][a-z0-9_-]*$/.test(n)))
        fail(
          item.value ?? item.key,
          'policy.trusted_mcp',
          'a list of plugin names (the plugins that mount an MCP server) whose results are trusted',
        );
      trustedMcp.push(...names);
      continue;
    }
    if (key !== 'tools') fail(item.key, `policy.${key}`, "unknown field (expected 'tools' or 'trusted_mcp')");
    if (!isMap(item.value)) fail(item.value ?? item.key, 'policy.tools', 'must map tool names (or globs) to rules');
    for (const r of (item.value as { items: { key: unknown; value: unknown }[] }).items) {
      const pattern = isScalar(r.key) ? String(r.key.value) : '';
      const path = `policy.tools.${pattern}`;
      if (!PATTERN.test(pattern)) fail(r.key, path, 'a tool name or a glob of lowercase letters, digits, _, * and ?');
      if (!isMap(r.value))
        fail(
          r.value ?? r.key,
          path,
          'a rule is a mapping: { gate: none|confirm_once|approval } or { deny: true } or { modes: [...] } or { after_untrusted: allow|ask }',
        );
      const rule: PolicyRule = { pattern, at: at(r.key) };
      for (const f of (r.value as { items: { key: unknown; value: unknown }[] }).items) {
        const field = isScalar(f.key) ? String(f.key.value) : '';
        const value = f.value;
        if (field === 'gate') {
          const g = isScalar(value) ? String(value.value) : '';
          if (!GATES.includes(g as Gate)) fail(value, `${path}.gate`, `unknown gate '${g}' (expected ${GATES.join(', ')})`);
          rule.gate = g as Gate;
        } else if (field === 'deny') {
          if (!isScalar(value) || value.value !== true) fail(value, `${path}.deny`, 'deny takes true (leave it out to allow)');
          rule.deny = true;
        } else if (field === 'modes') {
          if (!isSeq(value) || !value.items.length) fail(value, `${path}.modes`, 'a non-empty list of modes (agent, plan, goal)');
          const modes = (value as { items: unknown[] }).items.map((m) => (isScalar(m) ? String(m.value) : ''));
          const bad = modes.find((m) => !MODES.includes(m as Mode));
          if (bad !== undefined) fail(value, `${path}.modes`, `unknown mode '${bad}' (expected ${MODES.join(', ')})`);
          rule.modes = modes as Mode[];
        } else if (field === 'after_untrusted') {
          const v = isScalar(value) ? String(value.value) : '';
          if (v !== 'allow' && v !== 'ask') fail(value, `${path}.after_untrusted`, `unknown value '${v}' (expected allow or ask)`);
          rule.after_untrusted = v as 'allow' | 'ask';
        } else fail(f.key, `${path}.${field}`, 'unknown field (expected gate, deny, modes or after_untrusted)');
      }
      if (!rule.gate && !rule.deny && !rule.modes && !rule.after_untrusted)
        fail(r.key, path, 'an empty rule: give a gate, deny: true, modes or after_untrusted');
      rules.push(rule);
    }
  }
  return { rules, trustedMcp };
}
