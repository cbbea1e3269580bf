// The email plugin's own agent loop: a deterministic, rule-based planner (no model) over tools the
// plugin builds itself and passes through api.declareTool (R4), so each one carries its manifest
// declaration. The agent is declared read, so it runs only tools whose declaration is read.
import type Database from 'better-sqlite3';
import type { PluginAPI } from '../../src/plugin-host/types.js';
import type { ToolContext, ToolDefinition, ToolOutput, ToolSpec } from '../../src/types/index.js';
import {
  addDays,
  CATEGORIES,
  type Category,
  type Email,
  getEmail,
  line,
  plural,
  search,
  shortDate,
  terms,
  threadOf,
  today,
} from './mailbox.js';

type Db = () => Database.Database;
type Args = Record<string, unknown>;
const err = (content: string) => ({ content, is_error: true });
const quote = (s: string) => `“${s}”`;

// ---- the agent's internal tools (declared in plugin.yaml, never in the model's pool) -------------

function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return (flat.match(/^.*?[.!?](\s|$)/)?.[0] ?? flat).trim();
}

function questionsIn(text: string): string[] {
  return (text.replace(/\s+/g, ' ').match(/[^.!?]*\?/g) ?? []).map((q) => q.trim()).filter((q) => q.length > 3);
}

export interface Classification {
  id: string;
  intent: 'needs_reply' | 'action_required' | 'fyi' | 'record' | 'notification' | 'promotion';
  urgency: 'high' | 'normal' | 'low';
  reason: string;
}

const ACTION =
  /\b(due|payment|deadline|action needed|enroll|reset your password|please pay|by (monday|tuesday|wednesday|thursday|friday|sep|oct))\b/i;

export function classify(e: Email): Classification {
  const c = (intent: Classification['intent'], urgency: Classification['urgency'], reason: string) => ({
    id: e.id,
    intent,
    urgency,
    reason,
  });
  if (e.category === 'promotions') return c('promotion', 'low', `marketing from ${e.from_name}`);
  if (e.category === 'social') return c('notification', 'low', `a ${e.from_name} notification`);
  const asks = questionsIn(e.body);
  if (e.category === 'personal' && asks.length > 0)
    return c('needs_reply', e.important ? 'high' : 'normal', `${e.from_name} asks: “${asks[0]}”`);
  const action = `${e.subject} ${e.body}`.match(ACTION);
  if (action) return c('action_required', e.important ? 'high' : 'normal', e.gist ?? firstSentence(e.body));
  if (e.category === 'finance') return c('record', 'low', `${e.from_name}: ${e.subject}${e.attachments ? ' (with attachment)' : ''}`);
  return c('fyi', e.important ? 'normal' : 'low', e.gist ?? e.subject);
}

export function agentTools(db: Db): ToolDefinition[] {
  return [
    {
      name: 'find_emails',
      description: 'Find inbox emails by words, category, date and unread state; returns ids and one line per email.',
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string' },
          categories: { type: 'array', items: { type: 'string', enum: [...CATEGORIES] } },
          since: { type: 'string' },
          unread_only: { type: 'boolean' },
          limit: { type: 'integer', minimum: 1, maximum: 50 },
        },
        additionalProperties: false,
      },
      execute: (args) => {
        const r = search(db(), {
          query: args.query as string | undefined,
          since: args.since as string | undefined,
          unread_only: args.unread_only === true,
        });
        if ('error' in r) return err(r.error);
        const cats = (args.categories as Category[] | undefined) ?? [...CATEGORIES];
        const rows = r.rows.filter((e) => cats.includes(e.category)).slice(0, (args.limit as number) ?? 10);
        return { content: rows.map(line).join('\n') || 'no emails', details: { ids: rows.map((e) => e.id), loose: r.loose } };
      },
    },
    {
      name: 'classify_email',
      description:
        'Classify emails by what they ask of the owner: needs_reply, action_required, fyi, record, notification or promotion, with urgency and a reason.',
      parameters: {
        type: 'object',
        properties: { ids: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 30 } },
        required: ['ids'],
        additionalProperties: false,
      },
      execute: (args) => {
        const out: Classification[] = [];
        for (const id of args.ids as string[]) {
          const e = getEmail(db(), id);
          if (!e) return err(`no email with id ${id}`);
          out.push(classify(e));
        }
        return { content: out.map((c) => `${c.id}: ${c.intent} (${c.urgency}) — ${c.reason}`).join('\n'), details: { results: out } };
      },
    },
    {
      name: 'summarize_thread',
      description: 'Summarize the thread an email belongs to: who wrote, when, what each message says, and what is asked of the owner.',
      parameters: {
        type: 'object',
        properties: { id: { type: 'string' } },
        required: ['id'],
        additionalProperties: false,
      },
      execute: (args) => {
        const e = getEmail(db(), args.id as string);
        if (!e) return err(`no email with id ${String(args.id)}`);
        const msgs = threadOf(db(), e.thread_id);
        const people = [...new Set(msgs.map((m) => m.from_name))];
        const subject = msgs[0].subject.replace(/^re:\s*/i, '');
        const out = [
          `${quote(subject)}: ${plural(msgs.length, 'message')} from ${people.join(', ')}, ${shortDate(msgs[0].date.slice(0, 10))}${msgs.length > 1 ? ` – ${shortDate(msgs[msgs.length - 1].date.slice(0, 10))}` : ''}.`,
        ];
        for (const m of msgs) out.push(`• ${m.from_name.split(' ')[0]}, ${shortDate(m.date)}: ${m.gist ?? firstSentence(m.body)}.`);
        const asks = msgs.flatMap((m) =>
          questionsIn(m.body)
            .filter((q) => /\b(jamie|you|your)\b/i.test(q))
            .map((q) => `${m.from_name.split(' ')[0]}: “${q}”`),
        );
        if (asks.length) out.push(`Asked of you: ${asks.join(' ')}`);
        return { content: out.join('\n'), details: { thread_id: e.thread_id, ids: msgs.map((m) => m.id) } };
      },
    },
  ];
}

/** Declares each tool through the host (R4); a refused tool is left out of the agent's toolbox. */
export function buildToolbox(api: Pick<PluginAPI, 'declareTool'>, defs: ToolDefinition[]): Map<string, ToolSpec> {
  const box = new Map<string, ToolSpec>();
  for (const def of defs) {
    const spec = api.declareTool(def);
    if (spec) box.set(spec.name, spec);
  }
  return box;
}

// ---- the planner -------------------------------------------------------------------------------

interface Step {
  tool: string;
  args: Args;
  content: string;
  is_error: boolean;
  details?: unknown;
}

type Next = { tool: string; args: Args } | { done: string };

const COMMAND_WORDS = new Set(
  'summarize summarise summary recap catch up thread conversation classify categorize categorise triage reply replies respond answer need needs attention urgent action item items todo do did does say said says about tell me should what which who whats is are was were latest recent new last week today unread emails email mail inbox please can you tell give list'.split(
    ' ',
  ),
);

function topic(instruction: string): string {
  return terms(instruction)
    .filter((t) => !COMMAND_WORDS.has(t))
    .join(' ');
}

function goal(instruction: string): 'summarize' | 'triage' | 'classify' | 'find' {
  const s = instruction.toLowerCase();
  if (/summar|recap|catch me up|thread|conversation/.test(s)) return 'summarize';
  if (/triage|need(s)?( a)? (reply|response|answer)|attention|what should i|urgent|action items?|to-?do|respond to/.test(s))
    return 'triage';
  if (/classif|categori|what kind/.test(s)) return 'classify';
  return 'find';
}

function idsOf(step: Step | undefined): string[] {
  return ((step?.details as { ids?: string[] } | undefined)?.ids ?? []).slice();
}

function triageAnswer(results: Classification[], db: Database.Database): string {
  const pick = (i: Classification['intent']) => results.filter((r) => r.intent === i);
  const order = (xs: Classification[]) => [...xs].sort((a, b) => (a.urgency === b.urgency ? 0 : a.urgency === 'high' ? -1 : 1));
  const fmt = (c: Classification) => {
    const e = getEmail(db, c.id)!;
    return `• ${c.id} ${e.from_name}, ${quote(e.subject)}: ${c.reason}${c.urgency === 'high' ? ' [urgent]' : ''}`;
  };
  const out: string[] = [];
  const reply = order(pick('needs_reply'));
  const act = order(pick('action_required'));
  if (reply.length) out.push(`Needs a reply (${reply.length}):`, ...reply.map(fmt));
  if (act.length) out.push(`Needs action (${act.length}):`, ...act.map(fmt));
  const rest = results.length - reply.length - act.length;
  if (out.length === 0) out.push(`Nothing in the ${plural(results.length, 'email')} looked at needs a reply or action.`);
  else if (rest > 0) out.push(`The other ${rest} are for information only.`);
  return out.join('\n');
}

/** Decides the next step from the instruction and what the steps so far returned. */
export function plan(instruction: string, steps: Step[], db: Database.Database): Next {
  const g = goal(instruction);
  const last = steps[steps.length - 1];
  if (last?.is_error) return { done: `I stopped: ${last.tool} failed (${last.content}).` };
  const named = instruction.match(/\bm\d{3}\b/gi)?.map((m) => m.toLowerCase()) ?? [];
  const q = topic(instruction);
  const found = steps.find((s) => s.tool === 'find_emails');
  if (g === 'triage') {
    if (!found)
      return { tool: 'find_emails', args: { since: addDays(today(db), -6), categories: ['personal', 'finance', 'updates'], limit: 30 } };
    const ids = idsOf(found);
    if (ids.length === 0) return { done: 'No personal, finance or update emails arrived in the last 7 days.' };
    const classified = steps.find((s) => s.tool === 'classify_email');
    if (!classified) return { tool: 'classify_email', args: { ids } };
    return { done: triageAnswer((classified.details as { results: Classification[] }).results, db) };
  }
  if (g === 'classify') {
    const ids = named.length ? named : idsOf(found);
    if (ids.length === 0 && !found)
      return { tool: 'find_emails', args: q ? { query: q, limit: 10 } : { since: addDays(today(db), -6), limit: 10 } };
    if (ids.length === 0) return { done: `No emails match '${q}'.` };
    const classified = steps.find((s) => s.tool === 'classify_email');
    if (!classified) return { tool: 'classify_email', args: { ids } };
    return { done: classified.content };
  }
  // summarize, or find: locate the emails, then summarize the best match's thread.
  const target = named[0] ?? idsOf(found)[0];
  if (!target) {
    if (found) return { done: q ? `No emails about '${q}'.` : 'Tell me what to look for (a sender, a subject or a few words).' };
    if (!q) return { done: 'Tell me what to look for (a sender, a subject or a few words).' };
    return { tool: 'find_emails', args: { query: q, limit: 5 } };
  }
  const summary = steps.find((s) => s.tool === 'summarize_thread');
  if (!summary) return { tool: 'summarize_thread', args: { id: target } };
  const others = idsOf(found).filter((id) => !idsOf(summary).includes(id));
  const more = others.length ? `\nOther matches: ${others.map((id) => `${id} ${quote(getEmail(db, id)!.subject)}`).join('; ')}.` : '';
  return { done: `${summary.content}${more}` };
}

function normalize(out: ToolOutput): { content: string; is_error: boolean; details?: unknown } {
  return typeof out === 'string' ? { content: out, is_error: false } : { is_error: false, ...out };
}

export async function runAgent(instruction: string, toolbox: Map<string, ToolSpec>, db: Database.Database, ctx: ToolContext, maxSteps = 6) {
  const steps: Step[] = [];
  let answer: string | undefined;
  for (let i = 0; i < maxSteps && answer === undefined; i++) {
    const next = plan(instruction, steps, db);
    if ('done' in next) {
      answer = next.done;
      break;
    }
    const spec = toolbox.get(next.tool);
    if (!spec) {
      answer = `I cannot take the next step: the email agent has no tool ${next.tool} (it is not declared in the plugin's manifest).`;
      break;
    }
    if (spec.declaration.effect !== 'read') {
      answer = `I will not run ${next.tool}: it is declared ${spec.declaration.effect}, and the email agent only reads.`;
      break;
    }
    const problem = spec.checkArgs(next.args);
    const result = problem ? { content: `invalid arguments: ${problem}`, is_error: true } : normalize(await spec.execute(next.args, ctx));
    steps.push({ tool: next.tool, args: next.args, ...result });
  }
  answer ??= `I stopped after ${plural(maxSteps, 'step')} without finishing; raise max_steps or narrow the request.`;
  const trace = steps.map((s, i) => `${i + 1}. ${s.tool} ${JSON.stringify(s.args)}${s.is_error ? ' (failed)' : ''}`).join('\n');
  return {
    content: steps.length ? `${answer}\n\nSteps taken:\n${trace}` : answer,
    details: { steps: steps.map(({ tool, args, is_error }) => ({ tool, args, is_error })) },
  };
}
