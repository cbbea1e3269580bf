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
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Node } from 'yaml';
import type { Env } from '../types/env.js';
import { type Gate, MODES, type Mode, type ToolSpec } from '../types/index.js';
import { KeelError } from '../util/errors.js';

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
}

export class OperatorPolicy {
  /** A short hash of the rules and the override, recorded in each run's trace. */
  readonly hash: string;

  constructor(
    readonly rules: readonly PolicyRule[],
    readonly confirmOnce: { add: ReadonlySet<string>; clear: boolean } = { add: new Set(), clear: false },
  ) {
    this.hash = createHash('sha1')
      .update(JSON.stringify({ rules, add: [...confirmOnce.add].sort(), clear: confirmOnce.clear }))
      .digest('hex')
      .slice(0, 12);
  }

  /** From the environment and Keel's config file (null: none). An invalid rule is refused with file:line:col. */
  static load(configFile: string | null, env: Env): OperatorPolicy {
    return new OperatorPolicy(configFile ? parseRules(configFile, readFileSync(configFile, 'utf8')) : [], confirmOnceFromEnv(env));
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

/** The `policy:` section of a config file, every rule checked, each problem with its position. */
export function parseRules(file: string, text: string): PolicyRule[] {
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
  if (!isMap(doc.contents)) return [];
  const policy = doc.contents.items.find((i) => isScalar(i.key) && i.key.value === 'policy');
  if (!policy) return [];
  const section = policy.value;
  if (!isMap(section)) return fail(section ?? policy.key, 'policy', 'must be a mapping with a tools: section');
  const rules: PolicyRule[] = [];
  for (const item of section.items) {
    const key = isScalar(item.key) ? String(item.key.value) : '';
    if (key !== 'tools') fail(item.key, `policy.${key}`, "unknown field (expected 'tools')");
    if (!isMap(item.value)) fail(item.value ?? item.key, 'policy.tools', 'must map tool names (or globs) to rules');
    for (const r of (item.value as { items: { key: unknown; value: unknown }[] }).items) {
      const pattern = isScalar(r.key) ? String(r.key.value) : '';
      const path = `policy.tools.${pattern}`;
      if (!PATTERN.test(pattern)) fail(r.key, path, 'a tool name or a glob of lowercase letters, digits, _, * and ?');
      if (!isMap(r.value))
        fail(r.value ?? r.key, path, 'a rule is a mapping: { gate: none|confirm_once|approval } or { deny: true } or { modes: [...] }');
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
        } else fail(f.key, `${path}.${field}`, 'unknown field (expected gate, deny or modes)');
      }
      if (!rule.gate && !rule.deny && !rule.modes) fail(r.key, path, 'an empty rule: give a gate, deny: true or modes');
      rules.push(rule);
    }
  }
  return rules;
}
