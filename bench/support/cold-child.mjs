/**
 * One cold start, in a fresh process (bench/cold.ts spawns it once per sample): import the agent
 * core, build N tools and the agent, then run one scripted conversation on a zero-latency replayed
 * model — timing each part, with the model's and the tools' own time taken out of the first run.
 * Plain JavaScript, so no transform runs: Keel from its package entry (dist/lib, as a user of the
 * package imports it), pi-agent-core from its own dist/.
 *
 *   node bench/support/cold-child.mjs keel|pi TOOLS STEPS STORE(none|sqlite) KEEL_ROOT [HOME]
 *
 * HOME: a KEEL_HOME kept between processes (its caches filled by the ones before); without it, a new
 * empty one, removed after.
 *
 * Prints one JSON line: { import_ms, setup_ms, first_run_ms, model_ms, tools_ms, rss_mb }.
 * setup = building the tools + constructing the agent; first run = the run's wall time − model − tools.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const [impl, toolsArg, stepsArg, store, keelRoot, keptHome] = process.argv.slice(2);
const TOOLS = Number(toolsArg);
const STEPS = Number(stepsArg);
const now = () => performance.now();
const meter = { model: 0, tools: 0 };

// The conversation of bench/support/conversation.ts, restated here (this file is not compiled).
const DOMAINS = ['notes', 'tickets', 'invoices', 'calendar', 'contacts', 'docs', 'metrics', 'logs', 'orders', 'files'];
const REQUEST = 'Read the nine project files and tell me what they say.';
const FINAL_TEXT = 'The nine files describe the release plan, the budget and the on-call rota; nothing is overdue.';
const toolName = (i) => `read_${DOMAINS[i % DOMAINS.length]}_${String(i).padStart(4, '0')}`;
const description = (i) => `Read one ${DOMAINS[i % DOMAINS.length]} record (source ${i}) by path and return its text, at most limit lines.`;
const output = (name, args) => `${name} ${String(args.path)}: 42 lines. First line: "Quarterly plan, owner Dana, due in 15 days."`;
const replies = [];
for (let k = 0; k < STEPS - 1; k++) {
  const index = (k * 7919 + 3) % TOOLS;
  replies.push({ id: `call_${k + 1}`, name: toolName(index), args: { path: `/data/file_${k + 1}.txt`, limit: 100 } });
}
const timedTool = (name) => async (args) => {
  const t0 = now();
  const text = output(name, args);
  meter.tools += now() - t0;
  return text;
};

async function keel() {
  const t0 = now();
  // The package's entry as a user imports it: its bundle (dist/lib), or the compiled modules for a
  // checkout from before the library was bundled.
  const bundled = join(keelRoot, 'dist', 'lib', 'index.js');
  const entry = existsSync(bundled) ? bundled : join(keelRoot, 'dist', 'src', 'index.js');
  const { Keel, defineTool } = await import(pathToFileURL(entry).href);
  const t1 = now();
  if (process.env.KEEL_COLD_MARKS) process._rawDebug('MARK imported');
  const tools = [];
  for (let i = 0; i < TOOLS; i++) {
    const name = toolName(i);
    tools.push(
      defineTool({
        name,
        description: description(i),
        effect: 'read',
        parameters: {
          type: 'object',
          properties: {
            path: { type: 'string', description: 'Path of the record to read.' },
            limit: { type: 'integer', description: 'Maximum number of lines to return.' },
          },
          required: ['path'],
          additionalProperties: false,
        },
        execute: timedTool(name),
      }),
    );
  }
  const home = keptHome || mkdtempSync(join(tmpdir(), 'keel-bench-cold-'));
  // No plugin folders, no config: the application's own tools only (KEEL_PLUGINS is cleared by the parent).
  const agent = new Keel({ home, tools, ...(store === 'none' ? { store: null } : {}) });
  const t2 = now();
  if (process.env.KEEL_COLD_MARKS) process._rawDebug('MARK set up');
  // A zero-latency replayed model (a ModelClient of the application's own): its time is the model's.
  const model = {
    spec: 'bench:replay',
    stream(req) {
      const t = now();
      const r = replies[req.seq];
      const events = r
        ? [
            { type: 'tool_call', call: { id: r.id, name: r.name, args: { ...r.args } } },
            {
              type: 'done',
              reply: { text: '', tool_calls: [{ id: r.id, name: r.name, args: { ...r.args } }], usage: { input: 0, output: 0 } },
            },
          ]
        : [
            { type: 'text_delta', text: FINAL_TEXT },
            { type: 'done', reply: { text: FINAL_TEXT, tool_calls: [], usage: { input: 0, output: 0 } } },
          ];
      meter.model += now() - t;
      let i = 0;
      return {
        [Symbol.asyncIterator]: () => ({
          next: () => {
            const s = now();
            const p = Promise.resolve(i < events.length ? { value: events[i++], done: false } : { value: undefined, done: true });
            meter.model += now() - s;
            return p;
          },
        }),
      };
    },
  };
  const result = await agent.run(REQUEST, { model });
  const t3 = now();
  if (result.status !== 'done' || result.answer !== FINAL_TEXT || result.model_calls !== STEPS) {
    throw new Error(`keel run ended ${result.status}/${result.reason} after ${result.model_calls} calls: ${result.answer}`);
  }
  await agent.close();
  if (!keptHome) rmSync(home, { recursive: true, force: true });
  return { import_ms: t1 - t0, setup_ms: t2 - t1, run_wall_ms: t3 - t2 };
}

async function pi() {
  const t0 = now();
  const [{ Agent }, ai] = await Promise.all([import('@mariozechner/pi-agent-core'), import('@mariozechner/pi-ai')]);
  const t1 = now();
  const { Type, registerFauxProvider, fauxAssistantMessage, fauxToolCall, createAssistantMessageEventStream } = ai;
  const tools = [];
  for (let i = 0; i < TOOLS; i++) {
    const name = toolName(i);
    const run = timedTool(name);
    tools.push({
      name,
      label: name,
      description: description(i),
      parameters: Type.Object(
        {
          path: Type.String({ description: 'Path of the record to read.' }),
          limit: Type.Optional(Type.Integer({ description: 'Maximum number of lines to return.' })),
        },
        { additionalProperties: false },
      ),
      execute: async (_id, params) => ({ content: [{ type: 'text', text: await run(params) }], details: {} }),
    });
  }
  const faux = registerFauxProvider({ tokenSize: { min: 1e9, max: 1e9 } });
  const agentOf = () =>
    new Agent({
      initialState: { systemPrompt: 'You are a helpful assistant.', model: faux.getModel(), tools },
      streamFn: (_m, _context) => {
        // The replayed reply: its events pushed into a fresh stream (timed as the model's).
        const t = now();
        const r = replies[call++];
        const message = r
          ? fauxAssistantMessage(fauxToolCall(r.name, { ...r.args }, { id: r.id }), { stopReason: 'toolUse' })
          : fauxAssistantMessage(FINAL_TEXT);
        const out = createAssistantMessageEventStream();
        out.push({ type: 'start', partial: message });
        out.push({ type: 'done', reason: message.stopReason, message });
        out.end(message);
        meter.model += now() - t;
        return out;
      },
    });
  let call = 0;
  const agent = agentOf();
  const t2 = now();
  await agent.prompt(REQUEST);
  const t3 = now();
  const msgs = agent.state.messages;
  const last = msgs[msgs.length - 1];
  const text = last?.role === 'assistant' ? last.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : '';
  const results = msgs.filter((m) => m.role === 'toolResult');
  if (text !== FINAL_TEXT || results.length !== STEPS - 1 || results.some((m) => m.isError)) {
    throw new Error(`pi run did not follow the script: ${results.length} results, last="${text}" ${agent.state.errorMessage ?? ''}`);
  }
  return { import_ms: t1 - t0, setup_ms: t2 - t1, run_wall_ms: t3 - t2 };
}

const r = impl === 'keel' ? await keel() : await pi();
process.stdout.write(
  `${JSON.stringify({
    import_ms: r.import_ms,
    setup_ms: r.setup_ms,
    first_run_ms: r.run_wall_ms - meter.model - meter.tools,
    model_ms: meter.model,
    tools_ms: meter.tools,
    rss_mb: process.memoryUsage().rss / 2 ** 20,
  })}\n`,
);
