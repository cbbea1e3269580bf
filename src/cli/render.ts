/**
 * How the CLI shows runs, calls and events as text. Never prints a model's, tool's or plugin's text
 * without escaping it for the terminal.
 */
import { renderCard, renderConfirmation } from '../approvals/card.js';
import { untrustedRead } from '../loop/result.js';
import type { PluginReport } from '../plugin-host/types.js';
import type { CallRecord, LoopEvent, RunResult, RunState, RunSummary } from '../types/index.js';
import { paint, type Style } from './colour.js';

const OUTCOME_ICON: Record<CallRecord['outcome'], [string, Style]> = {
  ran: ['✓', 'green'],
  held_for_confirmation: ['⏸ held', 'yellow'],
  awaiting_approval: ['⏳ awaiting approval', 'yellow'],
  denied_by_mode: ['⛔ denied', 'red'],
  denied_by_policy: ['⛔ denied by policy', 'red'],
  repeat: ['↺ repeat', 'dim'],
  unknown_tool: ['✗ unknown tool', 'red'],
  invalid_arguments: ['✗ invalid arguments', 'red'],
  // R27: the owner's decision, not a failure (the reason follows, in the call's result).
  rejected: ['⊘ rejected', 'yellow'],
  error: ['✗ error', 'red'],
};

const STATUS_STYLE: Record<string, Style> = {
  done: 'green',
  loaded: 'green',
  paused: 'yellow',
  running: 'yellow',
  degraded: 'yellow',
  pending: 'yellow',
  failed: 'red',
  rejected: 'red',
  expired: 'dim',
  approved: 'green',
};

/** A status word, coloured on a terminal (padded first, so columns line up either way). */
export function status(word: string, width = 0, upper = false): string {
  const shown = upper ? word.toUpperCase() : word;
  const style = STATUS_STYLE[word];
  const pad = ' '.repeat(Math.max(0, width - shown.length));
  return `${style ? paint(style, shown) : shown}${pad}`;
}

function oneLine(s: string, n = 160): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > n ? `${flat.slice(0, n)}…` : flat;
}

/** A tool's output shown whole, each line indented under its call. */
function indented(s: string): string {
  return s
    .trimEnd()
    .split('\n')
    .map((l) => `      ${l}`)
    .join('\n');
}

/** One call and its outcome; `full` shows the tool's whole output, else its first 160 characters on one line. */
export function renderCall(r: Pick<CallRecord, 'tool' | 'args' | 'outcome' | 'result'>, full = false): string {
  const args = r.args ? JSON.stringify(r.args) : '(unparseable arguments)';
  const [icon, style] = OUTCOME_ICON[r.outcome];
  const head = `  → ${r.tool}(${args === '{}' ? '' : args})  ${paint(style, icon)}`;
  if (r.tool === 'ask_user' && r.outcome === 'ran') return `${head}\n      user answered: ${oneLine(r.result)}`;
  if (!r.result) return head;
  return full && r.outcome === 'ran' ? `${head}\n${indented(r.result)}` : `${head}\n      ${oneLine(r.result)}`;
}

/**
 * A readable transcript, event by event (the CLI's non-JSON output). With `full`, each tool's output
 * is shown whole (the demo, where the answer refers to it); else cut to one line.
 */
export function eventPrinter(write: (s: string) => void, full = false): (e: LoopEvent) => void {
  return (e) => {
    switch (e.type) {
      case 'run_started':
        write(e.resumed ? `▶ resuming ${e.run_id}\n` : `▶ ${e.run_id}: ${e.request}\n`);
        break;
      case 'assistant':
        if (e.text.trim() && e.tool_calls.length) write(`  model: ${oneLine(e.text)}\n`);
        break;
      case 'tool_result':
        if (e.record.tool !== 'ask_user' || e.record.outcome !== 'ran' || e.record.result) write(`${renderCall(e.record, full)}\n`);
        break;
      default:
        break;
    }
  };
}

/**
 * The end of a run, split the way a script wants it: `out` is the answer, or what the run waits
 * for (the question, the held items, the card); `err` is how to go on and the run's status line.
 */
export function renderEnd(r: RunResult): { out: string; err: string } {
  const out: string[] = [];
  const err: string[] = [];
  if (r.status === 'paused' && r.question !== undefined && r.confirm) {
    out.push(`? ${r.question}`, ...renderConfirmation(r.confirm));
    err.push(
      `Run ${r.run_id} asks you to confirm. Answer with:`,
      `  keel resume ${r.run_id} --yes    or    keel resume ${r.run_id} --no    (add --answer "…" to say more)`,
    );
  } else if (r.status === 'paused' && r.question !== undefined) {
    out.push(`? ${r.question}`);
    err.push(`Run ${r.run_id} is paused for your answer. Resume it with:`, `  keel resume ${r.run_id} --answer "…"`);
  } else if (r.status === 'paused' && r.reason === 'interrupted') {
    err.push(`Run ${r.run_id} was interrupted at a safe point; nothing is half done. Continue it with:`, `  keel resume ${r.run_id}`);
  } else if (r.status === 'paused' && r.reason === 'awaiting_task') {
    // D3: the run waits for its delegate; what the delegate waits for (a question, a card) is shown inline.
    err.push(
      `Run ${r.run_id} waits for its delegate ${r.task.delegate} (task ${r.task.id}, run ${r.task.run_id}); it goes on when that run ends.`,
    );
    if (r.task.waiting) {
      const inner = renderEnd(r.task.waiting);
      if (inner.out) out.push(inner.out.trimEnd());
      if (inner.err) err.push(inner.err.trimEnd());
    }
  } else if (r.status === 'paused' && r.approval) {
    out.push(renderCard(r.approval.card, r.approval.id));
    err.push(
      `Run ${r.run_id} is paused for approval. Answer with:`,
      `  keel approvals approve ${r.approval.id}    or    keel approvals reject ${r.approval.id}`,
    );
  } else {
    out.push(r.answer ?? '');
    err.push(`(${status(r.status)}: ${r.reason}; ${r.model_calls} model call${r.model_calls === 1 ? '' : 's'}; run ${r.run_id})`);
  }
  const lines = (xs: string[]) => (xs.length ? `${xs.join('\n')}\n` : '');
  return { out: lines(out), err: lines(err) };
}

/** A run in a listing, as the CLI and the API show it: its id is `run_id`, as in every JSON output. */
export type RunRow = Omit<RunSummary, 'id'> & { run_id: string };

export function runRow({ id, ...rest }: RunSummary): RunRow {
  return { run_id: id, ...rest };
}

export function renderRunList(rows: RunRow[]): string {
  if (!rows.length) return 'No runs yet.\n';
  const lines = rows.map(
    (r) =>
      `${r.run_id}  ${status(r.status, 7)} ${(r.reason ?? '').padEnd(20)} ${r.mode.padEnd(5)} ${r.created_at}  ${oneLine(r.request, 60)}`,
  );
  return `${lines.join('\n')}\n`;
}

export function renderRunShow(
  run: RunState,
  children: readonly { run_id: string; task_id: string; delegate: string; status: string }[] = [],
): string {
  const out = [
    `run ${run.id}`,
    `  request: ${run.request}`,
    // D6: a delegate's run names its parent; a run names the delegates it started.
    ...(run.parent
      ? [`  delegate ${run.parent.delegate} (task ${run.parent.task_id}, depth ${run.parent.depth}), started by run ${run.parent.run_id}`]
      : []),
    ...children.map((c) => `  task ${c.task_id}: delegate ${c.delegate}, run ${c.run_id} (${c.status})`),
    `  status: ${status(run.status)}${run.reason ? ` (${run.reason})` : ''}   mode: ${run.mode}   model: ${run.model}   model calls: ${run.model_calls}`,
    `  session: ${run.session_id}`,
    `  created: ${run.created_at}   updated: ${run.updated_at}`,
  ];
  let step = 0;
  const records = [...run.steps, ...(run.pause && run.pause.kind !== 'interrupted' ? run.pause.calls : [])];
  for (const req of run.requests) {
    step = req.step;
    const avail = req.tools.filter((t) => t.available).length;
    out.push(
      `step ${step}: ${req.tools.length} tools declared (${avail} available)${req.dropped.length ? `, ${req.dropped.length} left off: ${req.dropped.slice(0, 8).join(', ')}${req.dropped.length > 8 ? ', …' : ''}` : ''}${req.input_tokens ? `, ${req.input_tokens} input tokens` : ''}${req.found?.length ? `; found by find_tools: ${req.found.join(', ')}` : ''}`,
    );
    // The question the run waits on has no answer yet: not "user answered: " with nothing after it.
    for (const r of records.filter((x) => x.step === step))
      out.push(
        run.pause?.kind === 'ask_user' && r.call_id === run.pause.call_id
          ? `  → ${r.tool}(${JSON.stringify(r.args)})  ${paint('yellow', '⏸ waiting')}`
          : renderCall(r),
      );
  }
  if (run.effects.length) out.push(`effects: ${run.effects.map((e) => `${e.tool} (${e.effect})`).join(', ')}`);
  // U2: what the run has read from outside the user, each result with its label.
  const read = untrustedRead(run);
  if (read.length) out.push(`read from outside you (untrusted):\n${read.map((u) => `  - ${u.tool} ${u.call_id}: ${u.label}`).join('\n')}`);
  if (run.notes.length) out.push(`notes:\n${run.notes.map((n) => `  - ${n}`).join('\n')}`);
  if (run.pause?.kind === 'ask_user' && run.pause.confirm) {
    // R16: a confirmation waits for a yes or a no to the held calls, each in the tool's own words.
    out.push(
      `paused: waiting for a yes or a no to "${run.pause.question}"`,
      ...renderConfirmation(run.pause.confirm),
      `  answer with: keel resume ${run.id} --yes    or    keel resume ${run.id} --no`,
    );
  } else if (run.pause?.kind === 'ask_user') out.push(`paused: waiting for an answer to "${run.pause.question}"`);
  if (run.pause?.kind === 'approval') out.push(`paused: waiting for approval ${run.pause.approval_id}`);
  if (run.pause?.kind === 'task') out.push(`paused: waiting for task ${run.pause.task_id} (run ${run.pause.child_run})`);
  if (run.answer) out.push(`answer: ${run.answer}`);
  return `${out.join('\n')}\n`;
}

/** The plugins and their tools; `summary: false` leaves the count line to the caller (`plugins check` prints its own, once). */
export function renderPlugins(plugins: PluginReport[], summary = true): string {
  const out: string[] = [];
  for (const p of plugins) {
    out.push(
      `${p.name}${p.version ? ` ${p.version}` : ''}  ${status(p.status, 0, true)}  (${p.source === 'code' ? 'declared in code' : p.dir})`,
    );
    for (const t of p.tools) {
      const flags = [
        t.pinned && 'pinned',
        t.answers_directly && 'answers_directly',
        t.guidance && 'guidance',
        t.undo && `undo=${t.undo}`,
        t.contract_modes === 'declare' && 'contract_modes=declare',
        t.output === 'untrusted' && 'output=untrusted',
        t.open_world && 'open_world',
        t.after_untrusted && `after_untrusted=${t.after_untrusted}`,
        t.via === 'declareTool' && 'own loop',
        t.denied && paint('red', 'DENIED'),
        t.modes && `modes=${t.modes.join(',')}`,
        t.gate_source && `(gate by ${t.gate_source}; declared ${t.declared_gate})`,
        !t.gate_source && t.rule && `(rule ${t.rule})`,
      ].filter(Boolean);
      out.push(`  ${t.name.padEnd(24)} ${t.effect.padEnd(12)} gate=${t.gate.padEnd(13)} ${flags.join(' ')}`.trimEnd());
    }
    for (const r of p.failures) out.push(`  ${paint('red', 'failed')}: ${r.message}`);
    for (const r of p.degraded) out.push(`  ${paint('yellow', 'degraded')}: ${r.message}`);
    for (const r of p.drift) out.push(`  ${paint('yellow', 'drift')}: ${r.message}`);
  }
  const bad = plugins.filter((p) => p.status !== 'loaded').length;
  if (summary) out.push('', `${plugins.length} plugin(s): ${plugins.length - bad} loaded, ${bad} failed or degraded`);
  else out.push('');
  return `${out.join('\n')}\n`;
}

/** The answer to a card whose run only its application can carry on: its model of its own, its tools declared in code (R18). */
export function appRunAnswered(
  approval: { id: string; status: string; run_id: string },
  needs: { model?: string; tools?: string[] },
): string {
  const what = [
    ...(needs.model !== undefined ? [`a model of its own (${needs.model})`] : []),
    ...(needs.tools?.length ? [`tools declared in code that this process does not have (${needs.tools.join(', ')})`] : []),
  ].join(' and ');
  const resume = needs.model !== undefined ? `keel.resume('${approval.run_id}', { model })` : `keel.resume('${approval.run_id}')`;
  return `Approval ${approval.id}: ${approval.status}. Run ${approval.run_id} belongs to an application with ${what}: the answer is recorded, nothing ran here, and the run continues when that application resumes it (${resume}${needs.tools?.length ? ', with its tools' : ''}).`;
}
