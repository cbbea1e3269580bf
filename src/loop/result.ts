/**
 * A run's state as the result its caller gets: status, answer, steps, card, what a halt means.
 * Never says a task is done that was halted.
 */
import type {
  ApprovalCard,
  ApprovalItem,
  ApprovalRecord,
  EndReason,
  ResultCard,
  RunResult,
  RunResultBase,
  UntrustedSource,
} from '../types/index.js';
import type { RunView } from './run.js';

const WHY: Partial<Record<EndReason, (l: { maxSteps: number; timeoutMs: number }) => string>> = {
  max_steps: (l) => `it reached the step limit (${l.maxSteps} model calls)`,
  timeout: (l) => `it ran past the time limit (${Math.round(l.timeoutMs / 1000)} s)`,
  stalled: () => 'the model kept repeating the same call',
  halted: () => 'the core halted it',
  model_error: () => 'the model failed',
  cancelled: () => 'it was cancelled',
  invalid_output: () => 'the answer did not match the required output schema, also when asked again',
  store_error: () => 'the store refused to save it',
  truncated: () => "the model's reply was cut off at its output token limit, so it is not an answer",
};

const HOW: Partial<Record<EndReason, string>> = {
  max_steps: 'Ask again with a narrower request, or raise the limit (KEEL_MAX_STEPS).',
  timeout: 'Ask again with a narrower request, or raise the limit (KEEL_TIMEOUT_MS).',
  stalled: 'Rephrase the request, or ask for the part that is still missing.',
  halted: 'Deal with the cause above, then ask again.',
  model_error: 'Check the model settings (--model, KEEL_MODEL) and ask again.',
  cancelled: 'Ask again if you still want it done.',
  invalid_output: 'Ask again, or loosen the output schema.',
  store_error: 'The run notes what the store refused; ask again, and report it if it happens again.',
  truncated: "Ask for a shorter answer, or raise the model server's output token limit (llama.cpp: --n-predict; the request's max_tokens).",
};

/**
 * R20: what a halted run tells the user: what was done, why it stopped, how to continue.
 * It never says the task is done.
 */
export function interruption(
  s: RunView,
  reason: EndReason,
  why: string | undefined,
  limits: { maxSteps: number; timeoutMs: number },
): string {
  const ran = new Map<string, number>();
  for (const r of s.steps) if (r.outcome === 'ran' && r.tool !== 'ask_user') ran.set(r.tool, (ran.get(r.tool) ?? 0) + 1);
  const done = ran.size ? [...ran].map(([t, n]) => (n > 1 ? `${t} ×${n}` : t)).join(', ') : 'no tool ran';
  const reasonText = WHY[reason]?.(limits) ?? reason;
  return [
    `I stopped before finishing: ${reasonText}${why ? ` (${why})` : ''}.`,
    `Done so far: ${done}.`,
    s.effects.length ? `Changes started: ${s.effects.map((e) => `${e.tool} (${e.effect})`).join(', ')}.` : 'Nothing was changed.',
    HOW[reason] ?? '',
  ]
    .filter(Boolean)
    .join(' ');
}

const toolSummaries = new WeakMap<object, { name: string; description: string; available: boolean }[]>();
/** A menu (the same array across steps and runs) is summarised once. */
function summarizeTools(tools: RunView['requests'][number]['tools']) {
  let out = toolSummaries.get(tools);
  if (!out) {
    out = tools.map((t) => ({ name: t.name, description: t.description, available: t.available }));
    toolSummaries.set(tools, out);
  }
  return out;
}

/** A4: what a run whose card expired unanswered tells the user. */
export function expiredAnswer(a: ApprovalRecord): string {
  return `Nothing was run: approval ${a.id} (${a.card.title}) expired at ${a.expires_at} before anyone answered it. Ask again to get a new card.`;
}

/** S1: the one JSON object `keel run --json` prints. */
export function toResult(s: RunView): RunResult {
  // One object, its fields set in the order they print; a field that may be absent is set only when
  // present (a spread of a conditional object, or of a base object per status, cost every run
  // a few microseconds).
  const out = {
    run_id: s.id,
    mode: s.mode,
    model_calls: s.model_calls,
    effects: [...s.effects],
    requests: s.requests.map((r) => {
      const q = { system: r.system, tools: summarizeTools(r.tools) } as RunResultBase['requests'][number];
      if (r.input_tokens !== undefined) q.input_tokens = r.input_tokens;
      q.dropped = r.dropped;
      if (r.found?.length) q.found = [...r.found];
      return q;
    }),
    steps: [...s.steps, ...pendingCalls(s)].map((r) => {
      const c: RunResultBase['steps'][number] = {
        call_id: r.call_id,
        tool: r.tool,
        args: r.args,
        outcome: r.outcome,
        result: r.result,
        is_error: r.is_error,
      };
      // A7: the owner changed the call on its card: the model's arguments, and who changed them.
      if (r.edited_from) {
        c.edited_from = r.edited_from;
        c.edited_by = r.edited_by;
      }
      if (r.untrusted !== undefined) c.untrusted = r.untrusted;
      if (r.allowed_after_untrusted !== undefined) c.allowed_after_untrusted = r.allowed_after_untrusted;
      // PC11: the operator policies that decided the call.
      if (r.policy !== undefined) c.policy = [...r.policy];
      return c;
    }),
    untrusted: untrustedRead(s),
    notes: [...s.notes],
    warnings: [...s.warnings],
    status: s.status,
    reason: s.reason,
    answer: s.answer,
  } as Record<string, unknown>;
  const p = s.status === 'paused' ? s.pause : undefined;
  if (p) {
    if (p.kind === 'approval') {
      out.reason = 'awaiting_approval';
      out.approval = { id: p.approval_id, card: resultCard(p.card, p.items) };
    } else if (p.kind === 'ask_user') {
      out.reason = 'awaiting_user_input';
      out.question = p.question;
      if (p.confirm) out.confirm = p.confirm;
    } else if (p.kind === 'task') {
      out.reason = 'awaiting_task';
      out.task = { id: p.task_id, run_id: p.child_run, delegate: p.delegate };
    } else out.reason = 'interrupted';
  } else if (s.status !== 'done' || !s.reason || s.answer === null) out.status = 'failed';
  return out as unknown as RunResult;
}

/** U2: what the run has read from outside the user, in order: what its parent had (a delegate), then its own untrusted results. */
export function untrustedRead(s: Pick<RunView, 'steps' | 'inherited_untrusted' | 'pause'>): UntrustedSource[] {
  const out: UntrustedSource[] = s.inherited_untrusted ? s.inherited_untrusted.map((u) => ({ ...u })) : [];
  const calls = s.pause && s.pause.kind !== 'interrupted' ? [...s.steps, ...s.pause.calls] : s.steps;
  for (const r of calls) if (r.untrusted !== undefined) out.push({ tool: r.tool, call_id: r.call_id, label: r.untrusted });
  return out;
}

/**
 * Issue 40: the card with each item's call as data — its id and structured arguments, as the
 * stored pause has them (the card's items are its calls, in order) — beside the rendered `call`.
 */
function resultCard(card: ApprovalCard, items: readonly ApprovalItem[]): ResultCard {
  return {
    ...card,
    items: card.items.map((shown, i) => {
      const item = items[i];
      if (!item) return shown as ResultCard['items'][number];
      return {
        ...shown,
        call_id: item.call_id,
        args: item.args,
        ...(item.original_args ? { original_args: item.original_args } : {}),
        ...(item.edited_by ? { edited_by: item.edited_by } : {}),
      };
    }),
  };
}

/** The paused step's calls that have a result already (the question, or the task waited for, is still open). */
function pendingCalls(s: RunView) {
  if (!s.pause || s.pause.kind === 'interrupted') return [];
  const open = new Set(s.pause.results.filter((r) => r.content === undefined).map((r) => r.call_id));
  const waiting = s.pause.kind === 'task' ? s.pause.call_id : undefined;
  return s.pause.calls.filter((c) => !(open.has(c.call_id) && (c.tool === 'ask_user' || c.call_id === waiting)));
}
