/**
 * pi-agent-core's side of the loop bench: its `Agent` with N read tools, driven by pi-ai's faux
 * provider replaying the same conversation.
 *
 * Making the faux provider zero-latency: `tokensPerSecond` is left unset (no setTimeout, one microtask
 * per chunk) and `tokenSize` is huge, so each content block arrives as one delta, as Keel's replay
 * model sends one event per block. The faux provider still does per-call work a real provider would
 * not (structuredClone of the reply, a usage estimate that JSON-serialises the whole context with all
 * tools). That is model time: the stream function below drains the faux stream completely, timed, and
 * hands the agent a replayed stream, so everything the agent does with the events stays on its side.
 */
import { Agent, type AgentTool, type StreamFn } from '@mariozechner/pi-agent-core';
import {
  type Api,
  type AssistantMessage,
  type AssistantMessageEvent,
  type AssistantMessageEventStream,
  type Context,
  createAssistantMessageEventStream,
  type FauxProviderRegistration,
  fauxAssistantMessage,
  fauxToolCall,
  type Model,
  registerFauxProvider,
  type SimpleStreamOptions,
  streamSimple,
  Type,
} from '@mariozechner/pi-ai';
import { benchTools, FINAL_TEXT, REQUEST, type ScriptedReply, toolOutput } from './conversation.js';
import { type Meter, now } from './timing.js';

export interface PiCase {
  faux: FauxProviderRegistration;
  tools: AgentTool[];
  replies: readonly ScriptedReply[];
  streamFn: StreamFn | FauxStream;
  system: string;
}

export function registerZeroLatencyFaux(): FauxProviderRegistration {
  return registerFauxProvider({ tokenSize: { min: 1e9, max: 1e9 } });
}

export function piTools(count: number, tools: Meter): AgentTool[] {
  return benchTools(count).map((t) => ({
    name: t.name,
    label: t.name,
    description: t.description,
    parameters: Type.Object(
      {
        path: Type.String({ description: 'Path of the record to read.' }),
        limit: Type.Optional(Type.Integer({ description: 'Maximum number of lines to return.' })),
      },
      { additionalProperties: false },
    ),
    execute: async (_id: string, params: unknown) => {
      const t0 = now();
      const text = toolOutput(t.name, params as Record<string, unknown>);
      const result = { content: [{ type: 'text' as const, text }], details: {} };
      tools.ms += now() - t0;
      return result;
    },
  }));
}

/** pi-ai's own streamSimple (dispatching to the faux provider), fully drained inside the model meter. */
export function meteredStreamFn(model: Meter): StreamFn {
  return async (m, context, options) => {
    const t0 = now();
    const inner = streamSimple(m, context, options);
    const events: AssistantMessageEvent[] = [];
    for await (const e of inner) events.push(e);
    const final: AssistantMessage = await inner.result();
    const out = createAssistantMessageEventStream();
    for (const e of events) out.push(e);
    out.end(final);
    model.ms += now() - t0;
    return out;
  };
}

/**
 * A model call as both agents of the fair pairing make it: a function that returns pi-ai's own
 * event stream at once (as `stream` and `streamSimple` do). pi-agent-core takes it as its `streamFn`;
 * Keel's pi-ai adapter (src/models/provider.ts) takes it as the `stream` of the pi-ai it is given.
 */
export type FauxStream = (model: Model<Api>, context: Context, options?: SimpleStreamOptions) => AssistantMessageEventStream;

/**
 * Live: every call goes to pi-ai's faux provider (its context serialisation, clone and deltas) with
 * the context the agent built. The faux stream is drained completely, timed as the model's, and its
 * events reach the agent through a fresh stream once drained, so what the agent does with them is
 * its own time. The stream is handed back at once; the drain runs while the agent waits on it.
 */
export function liveFauxStream(model: Meter): FauxStream {
  return (m, context, options) => {
    const out = createAssistantMessageEventStream();
    const t0 = now();
    const inner = streamSimple(m, context, options);
    void (async () => {
      const events: AssistantMessageEvent[] = [];
      for await (const e of inner) events.push(e);
      const final = await inner.result();
      model.ms += now() - t0;
      for (const e of events) out.push(e);
      out.end(final);
    })();
    return out;
  };
}

/**
 * Pre-recorded: the faux provider's events for each reply, recorded once before the bench, then
 * pushed into a fresh stream per call (timed as the model's). No per-call faux work and none of its
 * garbage lands near the agent's own time. Call `reset()` before every run.
 */
export async function recordedFauxStream(c: PiCase, model: Meter): Promise<{ stream: FauxStream; reset: () => void }> {
  const recorded: { events: AssistantMessageEvent[]; final: AssistantMessage }[] = [];
  for (const reply of fauxReplies(c.replies)) {
    c.faux.setResponses([reply]);
    const inner = streamSimple(c.faux.getModel(), { systemPrompt: c.system, messages: [], tools: [] });
    const events: AssistantMessageEvent[] = [];
    for await (const e of inner) events.push(e);
    recorded.push({ events, final: await inner.result() });
  }
  let call = 0;
  const stream: FauxStream = () => {
    const t0 = now();
    const r = recorded[call++];
    if (!r) throw new Error(`the recorded faux stream ran out at call ${call}`);
    const out = createAssistantMessageEventStream();
    for (const e of r.events) out.push(e);
    out.end(r.final);
    model.ms += now() - t0;
    return out;
  };
  return {
    stream,
    reset: () => {
      call = 0;
    },
  };
}

/** The stricter variant for pi-agent-core alone (kept for the existing rows): see recordedFauxStream. */
export async function recordedStreamFn(c: PiCase, model: Meter): Promise<{ streamFn: StreamFn; reset: () => void }> {
  const r = await recordedFauxStream(c, model);
  return { streamFn: r.stream, reset: r.reset };
}

function fauxReplies(replies: readonly ScriptedReply[]): AssistantMessage[] {
  return replies.map((r) =>
    r.kind === 'text'
      ? fauxAssistantMessage(r.text)
      : fauxAssistantMessage(fauxToolCall(r.call.name, { ...r.call.args }, { id: r.call.id }), { stopReason: 'toolUse' }),
  );
}

/** Scripts the faux provider for the next run (outside the timed region). */
export function scriptFaux(c: PiCase): void {
  c.faux.setResponses(fauxReplies(c.replies));
}

/** One run, start to final answer: a fresh Agent (as Keel starts a fresh run state), one prompt. */
export async function runPiOnce(c: PiCase): Promise<Agent> {
  const agent = new Agent({
    initialState: { systemPrompt: c.system, model: c.faux.getModel(), tools: c.tools },
    streamFn: c.streamFn,
  });
  await agent.prompt(REQUEST);
  return agent;
}

/** Checks a finished run against the script (outside the timed region). */
export function checkPiRun(agent: Agent, steps: number): void {
  const msgs = agent.state.messages;
  const assistants = msgs.filter((m) => m.role === 'assistant');
  const results = msgs.filter((m) => m.role === 'toolResult');
  const last = assistants[assistants.length - 1];
  const text = last?.role === 'assistant' ? last.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : '';
  if (assistants.length !== steps || text !== FINAL_TEXT || results.length !== steps - 1 || results.some((r) => r.isError)) {
    throw new Error(
      `pi run did not follow the script: ${assistants.length} assistant messages, ${results.length} tool results, error=${agent.state.errorMessage}, last="${text}"`,
    );
  }
}
