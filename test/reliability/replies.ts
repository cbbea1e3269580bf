/**
 * The reply campaign: generated model replies — malformed and non-object arguments, unknown and odd
 * names, duplicate and missing ids, huge and deeply nested values, parallel mixes of reads, writes,
 * destructive and mode-denied calls — through the real engine and the SQLite store, with every pause
 * answered at random (answers, yes/no, approve/reject, plans approved with their writes) in every mode.
 *
 * Invariants checked after each case (a broken one is a violation, with the case to replay it):
 * no exception escapes; no run is left running; every call is answered exactly once, in order, with
 * its id; nothing held, denied, unknown, invalid or awaiting approval executed; a destructive call or
 * pinned write executed only under an approved card, and at most once; a confirm-once write executed
 * only after a yes (or a plan approved with its writes); the transcript is storable and its results
 * are strings.
 */
import fc from 'fast-check';
import { recordApprovalAnswer } from '../../src/approvals/respond.js';
import { collect, streamApprovalContinuation, streamResume, streamRun } from '../../src/loop/legs.js';
import { normalizeDeclaration } from '../../src/manifest/schema.js';
import type { ModelClient, ModelEvent, ModelRequest } from '../../src/models/types.js';
import { type Registry, registryOf } from '../../src/plugin-host/host.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { askUser, reportGoal, submitGoal, submitPlan } from '../../src/tools/builtins.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { Message, Mode, RunResult, RunState, ToolCall, ToolSpec } from '../../src/types/index.js';

interface Executed {
  run_id: string;
  call_id: string;
  tool: string;
}

const executed: Executed[] = [];

function logged(name: string, effect: 'read' | 'write' | 'destructive', extra: Record<string, unknown> = {}): ToolSpec {
  return makeToolSpec(
    {
      name,
      description: `${name} (${effect})`,
      parameters: { type: 'object', properties: { item: { type: 'string' }, n: { type: 'integer' } }, additionalProperties: true },
      execute: (_args, ctx) => {
        executed.push({ run_id: ctx.run_id, call_id: ctx.call_id, tool: name });
        return `${name} done`;
      },
      describe: (a) => ({ title: `${name} ${String(a.item ?? '')}`, lines: [] }),
    },
    'fuzz',
    normalizeDeclaration({ effect, ...extra }),
  );
}

const POOL: ToolSpec[] = [
  askUser,
  submitPlan,
  submitGoal,
  reportGoal,
  logged('look', 'read'),
  logged('note', 'write'),
  logged('free', 'write', { confirm: 'never' }),
  logged('draft', 'write', { confirm: 'never', contract_modes: 'declare' }),
  logged('wipe', 'destructive'),
  logged('mail', 'write', { approval: 'pinned' }),
];
const REGISTRY: Registry = registryOf(POOL);
const NAMES = POOL.map((t) => t.name);

/** One generated call, before ids are given. */
type GenCall = { name: string; args: unknown; raw?: string; id: 'fresh' | 'dup' | 'missing' };
type GenReply = { text: string; calls: GenCall[] };
type Decision = { kind: 'answer' | 'yes' | 'no' | 'approve' | 'approve_writes' | 'reject'; text: string };

export interface FuzzCase {
  mode: Mode;
  replies: GenReply[];
  decisions: Decision[];
}

const deep = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { d: v };
  return v;
};

const argsArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ item: fc.string({ maxLength: 12 }) }, { requiredKeys: [] }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.record({ n: fc.oneof(fc.integer(), fc.double(), fc.string()) }) },
  { weight: 1, arbitrary: fc.integer({ min: 60, max: 400 }).map((d) => ({ item: 'x', deep: deep(d) })) },
  { weight: 1, arbitrary: fc.constant({ item: 'y'.repeat(1_100_000) }) },
);

const callArb: fc.Arbitrary<GenCall> = fc.record({
  name: fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom(...NAMES) },
    { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
    { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'task', 'LOOK', 'look ', '') },
  ),
  args: argsArb,
  raw: fc.oneof(
    { weight: 10, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom('{"item": ', 'not json', '[1,2', '"str"', 'null', '{"item":"ok"}') },
  ),
  id: fc.oneof(
    { weight: 30, arbitrary: fc.constant('fresh' as const) },
    { weight: 1, arbitrary: fc.constantFrom('dup' as const, 'missing' as const) },
  ),
});

const replyArb: fc.Arbitrary<GenReply> = fc.record({
  text: fc.oneof(fc.constant(''), fc.string({ maxLength: 30 })),
  calls: fc.array(callArb, { minLength: 0, maxLength: 4 }),
});

export const caseArb: fc.Arbitrary<FuzzCase> = fc.record({
  mode: fc.constantFrom<Mode>('agent', 'agent', 'plan', 'goal'),
  replies: fc.array(replyArb, { minLength: 1, maxLength: 5 }),
  decisions: fc.array(
    fc.record({
      kind: fc.constantFrom<Decision['kind']>('answer', 'yes', 'no', 'approve', 'approve_writes', 'reject'),
      text: fc.string({ maxLength: 16 }),
    }),
    { maxLength: 5 },
  ),
});

/** Replays the generated replies by position; past the end, a plain answer. */
class FuzzModel implements ModelClient {
  readonly spec = 'fuzz:replies';
  private readonly replies: { text: string; tool_calls: ToolCall[] }[];

  constructor(c: FuzzCase) {
    let n = 0;
    this.replies = c.replies.map((r, i) => {
      const tool_calls: ToolCall[] = [];
      for (const g of r.calls) {
        const id = g.id === 'missing' ? '' : g.id === 'dup' && tool_calls.length ? tool_calls[0].id : `c${i}_${n++}`;
        if (g.raw !== undefined) {
          let parsed: unknown;
          try {
            parsed = JSON.parse(g.raw);
          } catch {
            tool_calls.push({ id, name: g.name, raw_args: g.raw });
            continue;
          }
          tool_calls.push({ id, name: g.name, args: parsed as Record<string, unknown> });
        } else tool_calls.push({ id, name: g.name, args: g.args as Record<string, unknown> });
      }
      return { text: r.text, tool_calls };
    });
  }

  async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    const reply = this.replies[req.seq] ?? { text: 'That is all.', tool_calls: [] };
    yield { type: 'done', reply };
  }
}

export interface CaseOutcome {
  violations: string[];
  calls: number;
  executions: number;
  pauses: number;
}

/** Runs one case through the engine and the store and checks every invariant. */
export async function runCase(c: FuzzCase, store: SqliteStore): Promise<CaseOutcome> {
  const violations: string[] = [];
  const deps = { registry: REGISTRY, model: new FuzzModel(c), store, limits: { maxSteps: 8, maxResultChars: 2_000 }, countTokens: false };
  const from = executed.length;
  let r: RunResult | undefined;
  let pauses = 0;
  try {
    r = await collect(streamRun(deps, { message: 'fuzz the tools', mode: c.mode }));
    for (const d of c.decisions) {
      if (r.status !== 'paused') break;
      pauses++;
      if (r.question !== undefined) {
        const confirm = r.confirm ? d.kind === 'yes' || d.kind === 'approve' || d.kind === 'approve_writes' : undefined;
        r = await collect(streamResume(deps, r.run_id, { text: d.text || 'ok', confirm }));
      } else if (r.approval) {
        const decision = d.kind === 'reject' || d.kind === 'no' ? 'reject' : 'approve';
        const consentWrites = d.kind === 'approve_writes' && decision === 'approve' && r.approval.card.offers_write_consent === true;
        const a = await recordApprovalAnswer(store, r.approval.id, decision, 'fuzz', null, new Date(), { consentWrites });
        r = await collect(streamApprovalContinuation(deps, a));
      } else break;
    }
  } catch (err) {
    violations.push(`an exception escaped: ${(err as Error)?.stack ?? String(err)}`);
  }
  const mine = executed.slice(from);
  if (!r) return { violations, calls: 0, executions: mine.length, pauses };
  const run = (await store.loadRun(r.run_id)) as RunState;
  if (run.status === 'running') violations.push('the run was left running');
  violations.push(...checkTranscript(run));
  violations.push(...(await checkExecutions(run, mine, store)));
  const calls = run.messages.reduce((n, m) => n + (m.role === 'assistant' ? m.tool_calls.length : 0), 0);
  return { violations, calls, executions: mine.length, pauses };
}

/** Every call answered exactly once, right after its reply, in call order; results are strings; the whole is storable. */
function checkTranscript(run: RunState): string[] {
  const out: string[] = [];
  const m: readonly Message[] = run.messages;
  let lastAssistant = -1;
  for (let i = 0; i < m.length; i++) if (m[i].role === 'assistant') lastAssistant = i;
  for (let i = 0; i < m.length; i++) {
    const msg = m[i];
    if (msg.role === 'tool' && typeof msg.content !== 'string') out.push(`tool result ${msg.call_id} is not a string`);
    if (msg.role !== 'assistant' || !msg.tool_calls.length) continue;
    if (run.status === 'paused' && i === lastAssistant) continue; // its results wait in the pause
    const ids = msg.tool_calls.map((c) => c.id);
    const results = m.slice(i + 1, i + 1 + ids.length).map((x) => (x.role === 'tool' ? x.call_id : `<${x.role}>`));
    if (JSON.stringify(results) !== JSON.stringify(ids))
      out.push(`results ${JSON.stringify(results)} do not answer calls ${JSON.stringify(ids)}`);
    if (new Set(ids).size !== ids.length) out.push(`a reply with repeated ids joined the transcript: ${JSON.stringify(ids)}`);
  }
  try {
    JSON.stringify(run);
  } catch (err) {
    out.push(`the run cannot be serialised: ${(err as Error).message}`);
  }
  return out;
}

async function checkExecutions(run: RunState, mine: Executed[], store: SqliteStore): Promise<string[]> {
  const out: string[] = [];
  // A run left paused keeps its current step's records in the pause.
  const pending = run.pause && run.pause.kind !== 'interrupted' ? run.pause.calls : [];
  const records = [...run.steps, ...pending];
  const byCall = new Map(records.map((s) => [s.call_id, s]));
  const approvals = await store.listApprovals({ run_id: run.id });
  const approvedCalls = new Set(approvals.filter((a) => a.status === 'approved').flatMap((a) => a.items.map((i) => i.call_id)));
  const counts = new Map<string, number>();
  for (const e of mine) {
    if (e.run_id !== run.id) continue;
    counts.set(e.call_id, (counts.get(e.call_id) ?? 0) + 1);
    const rec = byCall.get(e.call_id);
    if (!rec) {
      out.push(`${e.tool} (${e.call_id}) executed but has no record`);
      continue;
    }
    if (rec.outcome !== 'ran') out.push(`${e.tool} (${e.call_id}) executed, but its record says ${rec.outcome}`);
    const spec = REGISTRY.byName.get(e.tool);
    if (spec?.gate === 'approval' && !approvedCalls.has(e.call_id)) out.push(`${e.tool} (${e.call_id}) ran without an approved card`);
    if (spec?.gate === 'confirm_once') {
      const at = records.indexOf(rec);
      const before = records.slice(0, at);
      const consent = before.some((s) => (s.tool === 'ask_user' && s.decision === 'yes') || s.consent_writes);
      if (!consent) out.push(`${e.tool} (${e.call_id}) ran without a yes`);
    }
  }
  for (const [id, n] of counts) if (n > 1) out.push(`call ${id} executed ${n} times`);
  return out;
}

export interface ReplyCampaign {
  cases: number;
  calls: number;
  executions: number;
  pauses: number;
  violations: { case: string; problems: string[] }[];
  seed: number;
  ms: number;
}

/** Runs `numRuns` generated cases (fast-check), collecting every violation instead of stopping at the first. */
export async function replyCampaign(numRuns: number, seed = Date.now() % 2 ** 31): Promise<ReplyCampaign> {
  const store = new SqliteStore(':memory:');
  const totals: ReplyCampaign = { cases: 0, calls: 0, executions: 0, pauses: 0, violations: [], seed, ms: 0 };
  const started = performance.now();
  await fc.assert(
    fc.asyncProperty(caseArb, async (c) => {
      const o = await runCase(c, store);
      totals.cases++;
      totals.calls += o.calls;
      totals.executions += o.executions;
      totals.pauses += o.pauses;
      if (o.violations.length && totals.violations.length < 20) {
        totals.violations.push({ case: JSON.stringify(c).slice(0, 2_000), problems: o.violations.slice(0, 5) });
      }
      return true;
    }),
    { numRuns, seed, endOnFailure: false },
  );
  totals.ms = Math.round(performance.now() - started);
  await store.close();
  return totals;
}
