/**
 * The core's own tools (ask_user, memory_*, find_tools, …) and their declarations, in code. Never
 * declares a core tool weaker than what it does.
 */
import { normalizeDeclaration, type ToolDeclarationInput } from '../manifest/schema.js';
import type { MemoryStore, SchemaVerdicts, ToolContext, ToolDefinition, ToolSpec } from '../types/index.js';
import { truncate } from '../util/text.js';
import { makeToolSpec } from './spec.js';

/**
 * R5: the core's own tools declare their effects here, in code, not in any manifest.
 * memory_* and record_feedback are writes the user's own sentence authorises (confirm: never);
 * invoke_pending_action and promote_recommendation act on something outside the conversation
 * (confirm: once); the subagent tools stay declared in contract modes.
 */
export const CORE_DECLARATIONS: Record<string, ToolDeclarationInput> = {
  ask_user: { effect: 'read' },
  memory_search: { effect: 'read' },
  memory_correct: { effect: 'write', confirm: 'never' },
  memory_forget: { effect: 'write', confirm: 'never' },
  memory_restore: { effect: 'write', confirm: 'never' },
  record_feedback: { effect: 'write', confirm: 'never' },
  invoke_pending_action: { effect: 'write', confirm: 'once' },
  promote_recommendation: { effect: 'write', confirm: 'once' },
  task: { effect: 'write', confirm: 'never', contract_modes: 'declare' },
  task_wait: { effect: 'write', confirm: 'never', contract_modes: 'declare' },
  task_list: { effect: 'write', confirm: 'never', contract_modes: 'declare' },
  task_stop: { effect: 'write', confirm: 'never', contract_modes: 'declare' },
  // C1: the proposal waits for the user's approval (a card), which switches the session to Agent.
  submit_plan: { effect: 'write', approval: 'pinned' },
  submit_goal: { effect: 'write', approval: 'pinned' },
  // Changes nothing of the user's: it records, in the run, how far an approved goal has come.
  report_goal: { effect: 'read', pinned: true },
  // Searches the pool the mode lets the model see; what it finds joins the menu (R31). Offered above the cap only.
  find_tools: { effect: 'read' },
};

/**
 * A core tool, its handler typed by its arguments. The cast is sound in this one place: the call
 * pipeline checks the arguments against `parameters` before any handler sees them.
 */
export function coreTool<Args extends Record<string, unknown>>(def: ToolDefinition<Args>, extra: Partial<ToolSpec> = {}): ToolSpec {
  const decl = CORE_DECLARATIONS[def.name];
  if (!decl) throw new Error(`core tool ${def.name} has no declaration in CORE_DECLARATIONS`);
  return { ...makeToolSpec(def as unknown as ToolDefinition, 'core', normalizeDeclaration(decl), CORE_SCHEMAS), ...extra };
}

/**
 * The core's own parameter schemas are Keel's code, checked against the JSON Schema meta-schema by
 * a test (test/tools/spec-parameters.test.ts), not on every start: making the core tools loads no
 * validator until a call's arguments are checked.
 */
const CORE_SCHEMAS: SchemaVerdicts = { valid: () => true };

const str = (description: string) => ({ type: 'string', description });

export const askUser = coreTool({
  name: 'ask_user',
  description: 'Ask the user one question and wait for the answer. The run pauses until the user replies.',
  parameters: {
    type: 'object',
    properties: { question: str('The question, with everything the user needs to answer it.') },
    required: ['question'],
    additionalProperties: false,
  },
  execute: () => {
    throw new Error('ask_user is answered by the user, never executed');
  },
});

/**
 * U2: what a memory written now is marked with: nothing when the run has read only the user's own
 * words, else where its other words came from — kept with the memory, so a later run that reads it
 * back counts it as untrusted.
 */
function writtenAfter(ctx: ToolContext): string | undefined {
  const read = ctx.untrusted ?? [];
  if (!read.length) return undefined;
  const first = read[0];
  return truncate(
    `written by run ${ctx.run_id} after it read ${first.tool}: ${first.label}${read.length > 1 ? ` and ${read.length - 1} more` : ''}`,
    240,
  );
}

/** The memory built-ins over the store's memories (R5). */
export function memoryTools(store: MemoryStore): ToolSpec[] {
  const idArg = { id: { type: 'integer', description: 'The memory id, as memory_search shows it.' } };
  const show = (m: { id: number; text: string; status: string }) => `#${m.id} ${m.text}${m.status === 'forgotten' ? ' (forgotten)' : ''}`;
  return [
    coreTool<{ query: string }>({
      name: 'memory_search',
      description: 'Search what the user asked you to remember (facts, preferences).',
      parameters: { type: 'object', properties: { query: str('Words to look for.') }, required: ['query'], additionalProperties: false },
      execute: async (a) => {
        const found = await store.memorySearch(a.query, 10);
        if (!found.length) return `No memory matches "${a.query}".`;
        // U2: a memory a run wrote after reading others' words is read back as untrusted: an injection never becomes a trusted fact.
        const tainted = found.filter((m) => m.untrusted !== undefined);
        if (!tainted.length) return found.map(show).join('\n');
        return {
          content: found.map(show).join('\n'),
          untrusted: true,
          source: `memory ${tainted.map((m) => `#${m.id}`).join(', ')} (${tainted[0].untrusted})`,
        };
      },
    }),
    coreTool<{ id?: number; text: string }>(
      {
        name: 'memory_correct',
        description: 'Remember a fact the user states, or correct memory #id with the new text.',
        parameters: {
          type: 'object',
          properties: { ...idArg, text: str('The fact, in one sentence.') },
          required: ['text'],
          additionalProperties: false,
        },
        execute: async (a, ctx) => {
          const untrusted = writtenAfter(ctx);
          if (a.id === undefined) return `Remembered ${show(await store.memoryAdd(a.text, untrusted))}.`;
          const m = await store.memoryUpdate(a.id, { text: a.text, status: 'active', untrusted: untrusted ?? null });
          return m ? `Corrected: ${show(m)}.` : { content: `No memory #${a.id}.`, is_error: true };
        },
      },
      { carriesProvenance: true },
    ),
    coreTool<{ id: number }>({
      name: 'memory_forget',
      description: 'Forget memory #id (it can be restored with memory_restore).',
      parameters: { type: 'object', properties: idArg, required: ['id'], additionalProperties: false },
      execute: async (a) => {
        const m = await store.memoryUpdate(a.id, { status: 'forgotten' });
        return m ? `Forgot #${m.id}.` : { content: `No memory #${a.id}.`, is_error: true };
      },
    }),
    coreTool<{ id: number }>({
      name: 'memory_restore',
      description: 'Restore forgotten memory #id.',
      parameters: { type: 'object', properties: idArg, required: ['id'], additionalProperties: false },
      execute: async (a) => {
        const m = await store.memoryUpdate(a.id, { status: 'active' });
        return m ? `Restored ${show(m)}.` : { content: `No memory #${a.id}.`, is_error: true };
      },
    }),
    coreTool<{ text: string }>(
      {
        name: 'record_feedback',
        description: "Record the user's feedback about how you worked, in their words.",
        parameters: { type: 'object', properties: { text: str('The feedback.') }, required: ['text'], additionalProperties: false },
        execute: async (a, ctx) => {
          await store.addFeedback(ctx.run_id, a.text);
          return 'Feedback recorded.';
        },
      },
      { carriesProvenance: true },
    ),
  ];
}

/** R31: the name of the core's tool search (the menu offers it only when the pool outgrows the cap). */
export const FIND_TOOLS = 'find_tools';
/** R31: the longest query find_tools takes. */
export const FIND_TOOLS_MAX_QUERY = 200;

/**
 * R31: the tool search as the model sees it. The search itself needs the run's pool, mode and menu,
 * which the loop lends it (src/loop/find-tools.ts): this handler is never the one that runs.
 */
export const findTools = coreTool<{ query: string }>({
  name: FIND_TOOLS,
  description:
    'Find tools that are not on your list: describe in a few words what the tool should do. The best matches are added to your list for the rest of the conversation.',
  parameters: {
    type: 'object',
    properties: {
      query: { type: 'string', minLength: 1, maxLength: FIND_TOOLS_MAX_QUERY, description: 'What the tool should do, in a few words.' },
    },
    required: ['query'],
    additionalProperties: false,
  },
  execute: () => {
    throw new Error('find_tools is answered by the run it is called in, never executed on its own');
  },
});

const strList = (description: string) => ({ type: 'array', items: { type: 'string', minLength: 1 }, description });

/** C1: the contract modes' own submit tools; each exists only in its mode. */
export const submitPlan = coreTool<{ summary?: string; steps: string[] }>(
  {
    name: 'submit_plan',
    description:
      'Submit your plan for the user to approve: the ordered steps you will take. Approval switches to Agent mode and you then carry the plan out.',
    parameters: {
      type: 'object',
      properties: { summary: str('One line: what the plan achieves.'), steps: { ...strList('The steps, in order.'), minItems: 1 } },
      required: ['steps'],
      additionalProperties: false,
    },
    describe: (a) => ({
      title: `Approve this plan${a.summary ? `: ${a.summary}` : ''}? (switches to Agent mode)`,
      lines: a.steps.map((s, i) => `${i + 1}. ${s}`),
    }),
    execute: () => 'Plan approved. You are in Agent mode now: carry out the steps in order.',
  },
  { onlyInModes: ['plan'] },
);

export const submitGoal = coreTool<{ outcome: string; criteria: string[]; boundaries?: string[] }>(
  {
    name: 'submit_goal',
    description:
      'Submit a goal for the user to approve: the outcome, the acceptance criteria that prove it, and the boundaries you will not cross. Approval switches to Agent mode.',
    parameters: {
      type: 'object',
      properties: {
        outcome: str('The outcome, in one sentence.'),
        criteria: { ...strList('Acceptance criteria, each checkable.'), minItems: 1 },
        boundaries: strList('What you will not do (stop and ask instead).'),
      },
      required: ['outcome', 'criteria'],
      additionalProperties: false,
    },
    describe: (a) => ({
      title: `Approve this goal: ${a.outcome}? (switches to Agent mode)`,
      lines: [...a.criteria.map((c) => `criterion: ${c}`), ...(a.boundaries ?? []).map((b) => `boundary: ${b}`)],
    }),
    execute: () => 'Goal approved. You are in Agent mode now: work until each criterion is verified, within the boundaries.',
  },
  { onlyInModes: ['goal'] },
);

/**
 * C1: under an approved goal the model reports progress here; the run goes on until every
 * criterion is reported verified, or a reported boundary stops it (the engine reads these calls).
 */
export const reportGoal = coreTool<{ verified?: number[]; evidence?: string; boundary?: string }>(
  {
    name: 'report_goal',
    description:
      'Report progress on the approved goal: which acceptance criteria (by number) you have verified, with the evidence, or the boundary that stops you.',
    parameters: {
      type: 'object',
      properties: {
        verified: { type: 'array', items: { type: 'integer', minimum: 1 }, description: 'Numbers of the criteria now verified.' },
        evidence: str('How you verified them.'),
        boundary: str('Set only when going on would cross a boundary: which one, and why you stop.'),
      },
      additionalProperties: false,
    },
    execute: (a) =>
      a.boundary ? `Stopping at a boundary: ${a.boundary}` : `Recorded: criteria ${(a.verified ?? []).join(', ') || 'none'} verified.`,
  },
  { onlyWithContract: 'goal' },
);
