/**
 * `keel demo`: the reference assistant working the scenarios in examples/ end to end, each checked
 * against what it must show. Never reports a scenario passed that it did not check.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import { renderCard, renderConfirmation } from '../approvals/card.js';
import { BUNDLED_PLUGINS, Keel, PACKAGE_ROOT, type PauseResponder } from '../keel/keel.js';
import { parseScript, type ScriptEntry } from '../models/script.js';
import type { ApprovalCard, CallRecord, RequestTrace, RunResult } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { canonicalJson } from '../util/json.js';
import { eventPrinter } from './render.js';

/** How the scenario's user answers each pause: a question, a confirmation (yes/no), a card. */
const Reply = z.union([
  z.strictObject({ answer: z.string() }),
  z.strictObject({ yes: z.string() }),
  z.strictObject({ no: z.string() }),
  z.strictObject({ approve: z.string(), with_writes: z.boolean().optional() }),
  z.strictObject({ reject: z.string() }),
]);

const ScenarioSchema = z.strictObject({
  title: z.string(),
  request: z.string(),
  mode: z.enum(['agent', 'plan', 'goal']).default('agent'),
  /** Extra plugin folders, relative to the scenario file. */
  plugins: z.array(z.string()).default([]),
  script: z.array(z.unknown()),
  replies: z.array(Reply).default([]),
  delegates: z
    .array(z.strictObject({ name: z.string(), instructions: z.string(), tools: z.array(z.string()), script: z.array(z.unknown()) }))
    .default([]),
  expect: z.strictObject({
    status: z.enum(['done', 'paused', 'failed']),
    reason: z.string(),
    model_calls: z.number().int().optional(),
    pauses: z.number().int().optional(),
    tools_ran: z.array(z.string()).optional(),
    degraded: z.array(z.string()).optional(),
    /** U2: the tools whose results the run read as words from outside the user, in order of first read. */
    read_from_outside: z.array(z.string()).optional(),
    /** U6: every card the run showed named those sources. */
    cards_name_sources: z.boolean().optional(),
    /** O2: the values the run's cards marked as not the user's own, card by card, item by item. */
    outside_marked: z.array(z.strictObject({ tool: z.string(), path: z.string(), value: z.string() })).optional(),
    /** O1: the open-world calls that ran (their arguments left this machine), as `tool(args)`: [] when nothing left. */
    sent_out: z.array(z.string()).optional(),
  }),
});

export type Scenario = z.infer<typeof ScenarioSchema> & { name: string; file: string };

export const EXAMPLES_DIR = join(PACKAGE_ROOT, 'examples');

export function loadScenarios(dir = EXAMPLES_DIR, only?: string): Scenario[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
  const out: Scenario[] = [];
  for (const f of files) {
    const name = f.replace(/\.yaml$/, '');
    if (only && !name.includes(only)) continue;
    const file = join(dir, f);
    const parsed = ScenarioSchema.safeParse(parse(readFileSync(file, 'utf8')));
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      throw new KeelError('bad_input', `${file}: ${i.path.join('.') || '(top)'}: ${i.message}`);
    }
    parseScript(stringify(parsed.data.script), `${file} script`);
    out.push({ ...parsed.data, name, file });
  }
  if (!out.length) throw new KeelError('bad_input', `no scenario in ${dir}${only ? ` matches "${only}"` : ''}`);
  return out;
}

export interface ScenarioOutcome {
  name: string;
  title: string;
  result: RunResult;
  pauses: number;
  toolsRan: string[];
  degraded: string[];
  /** The cards the run showed, in order. */
  cards: ApprovalCard[];
  /** O1: the calls of open-world tools that ran, as `tool(args)`. */
  sentOut: string[];
  problems: string[];
}

export interface DemoOptions {
  /** A real model: the scripts are ignored and the user answers pauses (on a TTY). */
  model?: string;
  only?: string;
  dir?: string;
  out?: (s: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Keep the temporary KEEL_HOME (its path is printed). */
  keep?: boolean;
  interactive?: boolean;
}

/**
 * P2/R24: each call the run made names a tool declared on the request it answers, unless the
 * scenario's script marks it `undeclared: true` — a grammar-constrained server (llama.cpp) lets a
 * model call nothing else, so admission by name must not hide a missing declaration.
 */
function undeclaredCalls(s: Scenario, run: { steps: readonly CallRecord[]; requests: readonly RequestTrace[] }): string[] {
  const allowed = new Set(
    (s.script as ScriptEntry[]).flatMap((e) => (e.tool_calls ?? []).filter((c) => c.undeclared && c.id).map((c) => c.id as string)),
  );
  const out: string[] = [];
  for (const st of run.steps) {
    const req = run.requests.find((q) => q.step === st.step);
    if (req && !allowed.has(st.call_id) && !req.tools.some((t) => t.name === st.tool)) {
      out.push(`call ${st.call_id} names ${st.tool}, which request ${st.step} does not declare`);
    }
  }
  return out;
}

function check(s: Scenario, o: Omit<ScenarioOutcome, 'problems'>): string[] {
  const e = s.expect;
  const p: string[] = [];
  const r = o.result;
  if (r.status !== e.status) p.push(`status ${r.status}, expected ${e.status}`);
  if (r.reason !== e.reason) p.push(`reason ${r.reason}, expected ${e.reason}`);
  if (e.model_calls !== undefined && r.model_calls !== e.model_calls) p.push(`${r.model_calls} model calls, expected ${e.model_calls}`);
  if (e.pauses !== undefined && o.pauses !== e.pauses) p.push(`${o.pauses} pauses, expected ${e.pauses}`);
  if (e.tools_ran && JSON.stringify(o.toolsRan) !== JSON.stringify(e.tools_ran)) {
    p.push(`tools ran [${o.toolsRan.join(', ')}], expected [${e.tools_ran.join(', ')}]`);
  }
  if (e.read_from_outside) {
    const read = [...new Set(r.untrusted.map((u) => u.tool))];
    if (JSON.stringify(read) !== JSON.stringify(e.read_from_outside)) {
      p.push(`read from outside [${read.join(', ')}], expected [${e.read_from_outside.join(', ')}]`);
    }
  }
  if (e.cards_name_sources && (!o.cards.length || o.cards.some((c) => !c.untrusted?.length))) {
    p.push(`${o.cards.filter((c) => !c.untrusted?.length).length} of ${o.cards.length} cards did not name what the run read from outside`);
  }
  if (e.outside_marked) {
    const marked = o.cards.flatMap((c) =>
      c.items.flatMap((i) => (i.outside ?? []).map((m) => ({ tool: i.tool, path: m.path, value: m.value }))),
    );
    if (JSON.stringify(marked) !== JSON.stringify(e.outside_marked)) {
      const show = (xs: { tool: string; path: string; value: string }[]) => xs.map((m) => `${m.tool} ${m.path} = ${m.value}`).join('; ');
      p.push(`the cards marked [${show(marked)}] as not the user's, expected [${show(e.outside_marked)}]`);
    }
  }
  if (e.sent_out && JSON.stringify(o.sentOut) !== JSON.stringify(e.sent_out)) {
    p.push(`open-world calls ran [${o.sentOut.join(', ')}], expected [${e.sent_out.join(', ')}]`);
  }
  if (e.degraded && JSON.stringify(o.degraded) !== JSON.stringify(e.degraded)) {
    p.push(`degraded plugins [${o.degraded.join(', ')}], expected [${e.degraded.join(', ')}]`);
  }
  return p;
}

async function runScenario(s: Scenario, home: string, opts: DemoOptions, out: (s: string) => void): Promise<ScenarioOutcome> {
  mkdirSync(home, { recursive: true });
  const scriptFile = join(home, 'script.yaml');
  writeFileSync(scriptFile, stringify(s.script));
  if (s.delegates.length) {
    const delegates = s.delegates.map((d) => {
      const f = join(home, `delegate-${d.name}.yaml`);
      writeFileSync(f, stringify(d.script));
      return { name: d.name, instructions: d.instructions, tools: d.tools, ...(opts.model ? {} : { model: `script:${f}` }) };
    });
    writeFileSync(join(home, 'config.yaml'), stringify({ subagents: { delegates } }));
  }
  const env = { ...(opts.env ?? process.env), KEEL_HOME: home, KEEL_CONFIG: '' };
  const keel = new Keel({ home, env });
  const pluginDirs = [BUNDLED_PLUGINS, ...s.plugins.map((p) => resolve(join(s.file, '..'), p))];
  // Each tool's output in full: the scenarios' answers point to it ("from the plan above").
  const printer = eventPrinter(out, true);
  try {
    const reg = await keel.registry(pluginDirs);
    const degraded = reg.plugins.filter((p) => p.status !== 'loaded').map((p) => p.name);
    for (const p of reg.plugins.filter((x) => x.status !== 'loaded')) {
      out(`  ! plugin ${p.name} is ${p.status}: ${[...p.failures, ...p.degraded].map((r) => r.message).join('; ')}\n`);
    }
    out(`you: ${s.request}${s.mode !== 'agent' ? `   [${s.mode} mode]` : ''}\n`);
    const model = opts.model ?? `script:${scriptFile}`;
    const first = await keel.run(s.request, { model, pluginDirs, mode: s.mode }, printer);
    const replies = [...s.replies];
    const cards: ApprovalCard[] = [];
    const ask = opts.interactive ? createInterface({ input: process.stdin, output: process.stdout }) : undefined;
    // A real model is answered by the person at the terminal; the scripted one by the scenario's replies.
    const responder: PauseResponder = {
      answer: async (question, confirm, from) => {
        // D3: a delegate's question says who asks.
        if (from) out(`(delegate ${from.delegate}, started by run ${from.parent_run}, asks)\n`);
        // U3: a confirmation shows the held calls in the core's words, not only the model's question.
        out(`? ${question}\n${confirm ? `${renderConfirmation(confirm).join('\n')}\n` : ''}`);
        if (ask) {
          if (!confirm) return { text: await ask.question('you: ') };
          const yes = /^\s*y/i.test(await ask.question(`confirm ${confirm.tools.join(', ')}? [y/N] `));
          return { confirm: yes, text: '' };
        }
        const scripted = replies.shift();
        if (!scripted) return undefined;
        if ('answer' in scripted) {
          out(`you: ${scripted.answer}\n`);
          return { text: scripted.answer };
        }
        if ('yes' in scripted || 'no' in scripted) {
          const yes = 'yes' in scripted;
          const text = 'yes' in scripted ? scripted.yes : scripted.no;
          out(`you: ${yes ? 'yes' : 'no'}${text ? ` — ${text}` : ''}\n`);
          return { confirm: yes, text };
        }
        return undefined;
      },
      decide: async (approval) => {
        cards.push(approval.card);
        out(`${renderCard(approval.card, approval.id)}\n`);
        if (ask) return { decision: /^y/i.test(await ask.question('approve? [y/N] ')) ? 'approve' : 'reject', actor: 'you' };
        const scripted = replies.shift();
        if (scripted && 'approve' in scripted) {
          out(`${scripted.approve} approves${scripted.with_writes ? ', and lets its writes run without asking' : ''}.\n`);
          return { decision: 'approve', actor: 'demo', consentWrites: scripted.with_writes };
        }
        if (scripted && 'reject' in scripted) {
          out(`Rejected: ${scripted.reject}\n`);
          return { decision: 'reject', actor: 'demo', reason: scripted.reject };
        }
        return undefined;
      },
    };
    let r: RunResult;
    let pauses: number;
    try {
      const settled = await keel.answerPauses(first, responder, printer);
      r = settled.result;
      // A pause left open counts too: the scenario says how many times the run stopped for someone.
      pauses = settled.pauses + (r.status === 'paused' ? 1 : 0);
    } finally {
      ask?.close();
    }
    if (r.status !== 'paused' && r.answer) out(`assistant: ${r.answer}\n`);
    const run = await keel.getRun(r.run_id);
    const toolsRan = run.steps.filter((x) => x.outcome === 'ran' && x.tool !== 'ask_user').map((x) => x.tool);
    // What left this machine: every call of an open-world tool that ran, as the run's own record has it.
    const sentOut = run.steps
      .filter((x) => x.outcome === 'ran' && reg.byName.get(x.tool)?.declaration.open_world)
      .map((x) => `${x.tool}(${canonicalJson(x.args ?? {})})`);
    const o = { name: s.name, title: s.title, result: r, pauses, toolsRan, degraded, cards, sentOut };
    return { ...o, problems: opts.model ? [] : [...undeclaredCalls(s, run), ...check(s, o)] };
  } finally {
    await keel.close();
  }
}

function table(rows: ScenarioOutcome[], checked: boolean): string {
  const head = ['scenario', 'model calls', 'tools run', 'pauses', 'outcome', ...(checked ? ['check'] : [])];
  const body = rows.map((r) => [
    r.name,
    String(r.result.model_calls),
    String(r.toolsRan.length),
    String(r.pauses),
    `${r.result.status} (${r.result.reason})`,
    ...(checked ? [r.problems.length ? 'FAIL' : 'ok'] : []),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** `keel demo`: the reference assistant working every example end to end. Returns the exit code. */
export async function runDemo(opts: DemoOptions = {}): Promise<number> {
  const out = opts.out ?? ((s: string) => process.stdout.write(s));
  const scenarios = loadScenarios(opts.dir, opts.only);
  const root = mkdtempSync(join(tmpdir(), 'keel-demo-'));
  out(
    `Keel demo: ${scenarios.length} scenarios, ${opts.model ? `model ${opts.model}` : 'scripted model'}, embedded SQLite store in ${root}\n`,
  );
  const rows: ScenarioOutcome[] = [];
  // `keel demo | head`: a reader that stops early ends the process at once (S1), past the finally
  // below; the temporary home goes with it all the same.
  const removeRoot = () => rmSync(root, { recursive: true, force: true });
  if (!opts.keep) process.once('exit', removeRoot);
  try {
    for (const [i, s] of scenarios.entries()) {
      out(`\n━━ ${i + 1}. ${s.title} (${s.name})\n`);
      const row = await runScenario(s, join(root, s.name), opts, out);
      for (const p of row.problems) out(`  ✗ ${p}\n`);
      rows.push(row);
    }
  } finally {
    if (!opts.keep) {
      process.off('exit', removeRoot);
      removeRoot();
    }
  }
  const failed = rows.filter((r) => r.problems.length);
  out(`\n${table(rows, !opts.model)}\n\n`);
  out(
    opts.model
      ? `${rows.length} scenarios run against ${opts.model} (outcomes are not checked against a real model).\n`
      : `${rows.length - failed.length} passed, ${failed.length} failed\n`,
  );
  return failed.length ? 1 : 0;
}
