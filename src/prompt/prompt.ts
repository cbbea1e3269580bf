/**
 * The system prompt: each tool's declaration with its effect mark, the mode, the contract,
 * guidance. A tool's mark comes from its declaration, never from the plugin's own words.
 */
import { denialOf } from '../policy/gate.js';
import { FIND_TOOLS } from '../tools/builtins.js';
import type { Contract, DeclaredTool, Mode, ToolSpec } from '../types/index.js';

/** R9: the mark a tool's declaration carries, by its effect and gate. Read tools carry none. */
export function effectMark(t: ToolSpec): string {
  const d = t.declaration;
  if (d.effect === 'destructive') {
    return '[Deletes or overwrites. Each call is approved by the owner on a card before it runs; do not ask in chat, just call it.]';
  }
  if (t.gate === 'approval') {
    return "[Writes on the user's behalf. Each call is shown to the owner as an approval card before it runs; do not ask in chat, just call it.]";
  }
  if (d.effect === 'write' || t.gate === 'confirm_once') return "[Writes on the user's behalf.]";
  return '';
}

export function modeLabel(mode: Mode): string {
  return `[Unavailable in ${mode} mode: calling it returns an error and does nothing.]`;
}

const decls = new WeakMap<ToolSpec, DeclaredTool>();

/** The declaration of a tool that may run. Cached per tool: the hot path builds no strings. */
export function declare(t: ToolSpec): DeclaredTool {
  let d = decls.get(t);
  if (!d) {
    const mark = effectMark(t);
    d = { name: t.name, description: mark ? `${t.description} ${mark}` : t.description, parameters: t.parameters, available: true };
    decls.set(t, d);
  }
  return d;
}

/** An operator rule forbids the tool (in this mode, or at all). */
export function policyLabel(mode: Mode, modes: readonly Mode[] | undefined): string {
  return `[Unavailable${modes ? ` in ${mode} mode` : ''}: an operator rule forbids it; calling it returns an error and does nothing.]`;
}

/** C3: a restricted tool keeps its declaration and schema (same object), with the label first. */
export function declareUnavailable(t: ToolSpec, mode: Mode): DeclaredTool {
  const base = declare(t);
  const label = denialOf(t, mode) === 'policy' ? policyLabel(mode, t.policy?.modes) : modeLabel(mode);
  return { name: t.name, description: `${label} ${base.description}`, parameters: base.parameters, available: false };
}

const BASE_HEAD = `You are Keel, an assistant that works for the user through tools.
- Use tools to find facts; never invent a tool's result or claim an action you did not take.`;
/** Only while ask_user is on the menu: the prompt never names a tool the request does not declare. */
const BASE_ASK = `- Ask the user (with ask_user) only for what you cannot find out yourself, one clear question at a time.`;
const BASE_TAIL = `- When the results answer the request, reply to the user directly and concisely.`;

/** R10: present once, only when a confirm-once write is on the menu. Names no plugin tool. */
export const ASK_ONCE_RULE = `Before a run of writes on the user's behalf, ask the user once with ask_user, listing every item you will create or change. After the answer, call the tool once per item without asking again. A clarifying question is not a confirmation.`;

/** R31: present only when find_tools is on the menu. Names no plugin tool. */
export const FIND_TOOLS_RULE = `Your list shows only some of the tools you have: when a tool you need is not on it, call ${FIND_TOOLS} with a few words saying what it should do, then call what it finds.`;

export interface PromptParts {
  mode: Mode;
  menu: readonly ToolSpec[];
  /** Restricted tools kept declared in a contract mode (listed in the mode's prompt, C3). */
  unavailable: readonly string[];
  /** Text of an approved contract the run works under (plan steps or goal criteria). */
  contract?: string;
  /** A delegate's instructions (C8), first. */
  instructions?: string;
}

/** R11: each menu tool's guidance, trimmed, no empties, no exact duplicates, in menu order. */
export function guidanceBlock(menu: readonly ToolSpec[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const t of menu) {
    const g = t.declaration.guidance?.trim();
    if (!g || seen.has(g)) continue;
    seen.add(g);
    out.push(g);
  }
  return out;
}

/** The approved contract as the prompt states it (C1). */
export function renderContract(c: Contract): string {
  if (c.kind === 'plan') {
    return [
      `The user approved this plan${c.summary ? ` (${c.summary})` : ''}. Carry it out step by step, in order, through the normal tools:`,
      ...c.steps.map((s, i) => `${i + 1}. ${s}`),
    ].join('\n');
  }
  return [
    `The user approved this goal: ${c.outcome}`,
    'Work until every acceptance criterion is verified, and in your final answer report each one as verified (with the evidence) or not:',
    ...c.criteria.map((s, i) => `${i + 1}. ${s}`),
    ...(c.boundaries.length
      ? ['Boundaries — stop and tell the user instead of crossing any of these:', ...c.boundaries.map((b) => `- ${b}`)]
      : []),
  ].join('\n');
}

export function systemPrompt(p: PromptParts): string {
  // A run that cannot pause (a delegate, C8) has no ask_user: then no sentence names it.
  const canAsk = p.menu.some((t) => t.name === 'ask_user' && t.plugin === 'core');
  const base = [BASE_HEAD, ...(canAsk ? [BASE_ASK] : []), BASE_TAIL].join('\n');
  const parts = p.instructions ? [p.instructions.trim(), base] : [base];
  const unavailable = new Set(p.unavailable);
  if (canAsk && p.menu.some((t) => t.gate === 'confirm_once' && !unavailable.has(t.name))) parts.push(ASK_ONCE_RULE);
  if (p.menu.some((t) => t.name === FIND_TOOLS && t.plugin === 'core')) parts.push(FIND_TOOLS_RULE);
  if (p.mode !== 'agent') {
    const submit = p.mode === 'plan' ? 'submit_plan (ordered steps)' : 'submit_goal (outcome, acceptance criteria, boundaries)';
    parts.push(
      `You are in ${p.mode} mode. Investigate with read tools${canAsk ? ' and ask_user' : ''}, then submit your proposal with ${submit} for the user's approval. Nothing that writes can run until the user approves it.` +
        (p.unavailable.length ? ` Unavailable in ${p.mode} mode: ${p.unavailable.join(', ')}.` : ''),
    );
  }
  if (p.contract) parts.push(p.contract);
  const guidance = guidanceBlock(p.menu);
  if (guidance.length) parts.push(`Tool guidance:\n${guidance.map((g) => `- ${g}`).join('\n')}`);
  return parts.join('\n\n');
}
