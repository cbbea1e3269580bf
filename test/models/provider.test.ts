// P1: the pi-ai provider layer on its own, against the fake gateway (both protocols):
// spec resolution, streaming, ids, raw arguments (R21), schemas, usage and cost, failures.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import * as PiAi from '@mariozechner/pi-ai';
import { getModel } from '@mariozechner/pi-ai';
import { createModel } from '../../src/models/index.js';
import { loadPi, ollamaBaseUrl } from '../../src/models/provider.js';
import { type AssistantReply, ModelError, type ModelEvent, type ModelRequest } from '../../src/models/types.js';
import type { Message, ToolDeclaration } from '../../src/types/index.js';
import { declaredTools, FakeGateway, history, type ScriptedReply } from '../support/fake-gateway.js';
import { ROUTES } from './wire-support.js';

const TOOLS: ToolDeclaration[] = [
  {
    name: 'lookup',
    description: 'Look something up',
    parameters: {
      type: 'object',
      properties: { q: { type: 'string', description: 'what to look up' }, limit: { type: 'integer', minimum: 1, default: 5 } },
      required: ['q'],
      additionalProperties: false,
      $defs: { unused: { type: 'string' } },
    },
  },
  { name: 'note', description: 'Write a note', parameters: { type: 'object', properties: { text: { type: 'string' } } } },
];

async function drain(model: { stream(r: ModelRequest): AsyncIterable<ModelEvent> }, req: Partial<ModelRequest> = {}) {
  const events: ModelEvent[] = [];
  for await (const e of model.stream({
    system: 'You are a test.',
    messages: [{ role: 'user', content: 'hi' }],
    tools: TOOLS,
    seq: 0,
    ...req,
  })) {
    events.push(e);
  }
  const done = events.at(-1);
  assert.equal(done?.type, 'done', 'the stream ends with done');
  return { events, reply: (done as { reply: AssistantReply }).reply };
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

test("P1: a provider run's parts of pi-ai are pi-ai's own: its API module's stream function, the registry and JSON repair its index exports", async () => {
  const subpaths = {
    'openai-completions': (await import('@mariozechner/pi-ai/openai-completions')).streamOpenAICompletions,
    'anthropic-messages': (await import('@mariozechner/pi-ai/anthropic')).streamAnthropic,
    'google-generative-ai': (await import('@mariozechner/pi-ai/google')).streamGoogle,
  } as const;
  for (const [api, stream] of Object.entries(subpaths)) {
    const parts = await loadPi(api as keyof typeof subpaths, 'the test');
    assert.equal(parts.stream, stream, api);
    // The same module instances the index re-exports, not copies: one registry, one repair.
    assert.equal(parts.getModels, PiAi.getModels, api);
    assert.equal(parts.parseJsonWithRepair, PiAi.parseJsonWithRepair, api);
    assert.equal(await loadPi(api as keyof typeof subpaths, 'the test'), parts, `${api}: loaded once`);
  }
});

describe('model specs (P1)', () => {
  test('a missing API key is a ModelError naming the variable', async () => {
    const cases: [string, RegExp][] = [
      ['openai:gpt-4o-mini', /OPENAI_API_KEY/],
      ['anthropic:claude-sonnet-4-5', /ANTHROPIC_API_KEY/],
      ['google:gemini-2.5-flash', /GEMINI_API_KEY or GOOGLE_API_KEY/],
    ];
    for (const [spec, re] of cases) {
      await assert.rejects(
        createModel(spec, {}),
        (e: unknown) => e instanceof ModelError && re.test(e.message) && e.message.includes(spec),
      );
    }
    // An empty value is no key either.
    await assert.rejects(createModel('openai:gpt-4o-mini', { OPENAI_API_KEY: '  ' }), /OPENAI_API_KEY/);
  });

  test('keys come from the env Keel was given; google takes GOOGLE_API_KEY too; ollama needs none', async () => {
    assert.equal((await createModel('google:gemini-2.5-flash', { GOOGLE_API_KEY: 'g' })).spec, 'google:gemini-2.5-flash');
    assert.equal((await createModel('ollama:qwen2.5:7b', {})).spec, 'ollama:qwen2.5:7b');
  });

  test('openai-compatible needs MODEL@URL; the model name may contain ":" and "@"', async () => {
    await assert.rejects(
      createModel('openai-compatible:llama', {}),
      (e: unknown) => e instanceof ModelError && /MODEL@URL/.test(e.message),
    );
    await assert.rejects(createModel('openai-compatible:llama@ftp://x', {}), /MODEL@URL/);
    const g = await FakeGateway.start([{ text: 'ok' }]);
    try {
      const m = await createModel(`openai-compatible:org/model:q4@v2@${g.openaiBaseUrl}`, {
        KEEL_API_KEY: 'keel-key',
        OPENAI_API_KEY: 'openai-key',
      });
      await drain(m);
      assert.equal(g.requests[0].body.model, 'org/model:q4@v2');
      assert.equal(g.requests[0].headers.authorization, 'Bearer keel-key', 'KEEL_API_KEY wins over OPENAI_API_KEY');
      // Third-party servers get no OpenAI-only fields.
      assert.equal(g.requests[0].body.store, undefined);
      assert.equal(g.requests[0].body.tools[0].function.strict, undefined);
    } finally {
      await g.close();
    }
  });

  test('OLLAMA_HOST is read as Ollama reads it', () => {
    assert.equal(ollamaBaseUrl(undefined), 'http://127.0.0.1:11434/v1');
    assert.equal(ollamaBaseUrl(''), 'http://127.0.0.1:11434/v1');
    assert.equal(ollamaBaseUrl('0.0.0.0'), 'http://0.0.0.0:11434/v1');
    assert.equal(ollamaBaseUrl('127.0.0.1:9999'), 'http://127.0.0.1:9999/v1');
    assert.equal(ollamaBaseUrl('http://gpu-box:11434/'), 'http://gpu-box:11434/v1');
    assert.equal(ollamaBaseUrl('https://ollama.example.com/v1'), 'https://ollama.example.com/v1');
  });

  test('ollama: OLLAMA_HOST without a scheme reaches /v1/chat/completions with no key, system role', async () => {
    const g = await FakeGateway.start([{ text: 'hello from ollama' }]);
    try {
      const m = await createModel('ollama:qwen2.5:7b', { OLLAMA_HOST: g.url.replace('http://', '') });
      const { reply } = await drain(m);
      assert.equal(reply.text, 'hello from ollama');
      assert.equal(g.requests[0].path, '/v1/chat/completions');
      assert.equal(g.requests[0].body.model, 'qwen2.5:7b');
      assert.equal(g.requests[0].body.messages[0].role, 'system');
      assert.equal(reply.usage?.cost, 0, 'a local model costs nothing');
    } finally {
      await g.close();
    }
  });
});

for (const route of ROUTES) {
  describe(`provider over ${route.protocol} (${route.spec})`, () => {
    let g: FakeGateway;
    before(async () => {
      g = await FakeGateway.start([], { strict: true });
    });
    after(() => g.close());
    const model = () => createModel(route.spec, route.env(g));
    const serve = (...r: ScriptedReply[]) => {
      g.requests.length = 0;
      g.push(...r);
    };

    test('text streams as deltas; tool calls keep the provider ids; done carries the whole reply', async () => {
      const a = route.id('a');
      const b = route.id('b');
      serve({
        text: 'Let me look that up.',
        tool_calls: [
          { id: a, name: 'lookup', args: { q: 'dues', limit: 2 } },
          { id: b, name: 'note', args: { text: 'ünïcödé "quoted"' } },
        ],
      });
      const { events, reply } = await drain(await model());
      const deltas = events.flatMap((e) => (e.type === 'text_delta' ? [e.text] : []));
      assert.ok(deltas.length > 1, 'the text arrived in pieces');
      assert.equal(deltas.join(''), 'Let me look that up.');
      const calls = events.flatMap((e) => (e.type === 'tool_call' ? [e.call] : []));
      assert.deepEqual(calls, [
        { id: a, name: 'lookup', args: { q: 'dues', limit: 2 } },
        { id: b, name: 'note', args: { text: 'ünïcödé "quoted"' } },
      ]);
      assert.equal(reply.text, 'Let me look that up.');
      assert.deepEqual(reply.tool_calls, calls);
      assert.equal(g.requests[0].stream, true, 'pi-ai streams');
    });

    test('R21: arguments that are not JSON come back as raw_args, exactly as sent', async () => {
      const id = route.id('raw');
      serve({ tool_calls: [{ id, name: 'lookup', arguments: '{"q": "dues", ' }] });
      const { reply } = await drain(await model());
      assert.deepEqual(reply.tool_calls, [{ id, name: 'lookup', raw_args: '{"q": "dues", ' }]);
    });

    test('history goes out with the same ids, results paired, is_error kept, and the declared schemas whole', async () => {
      const a = route.id('h1');
      const b = route.id('h2');
      serve({ text: 'fine' });
      const messages: Message[] = [
        { role: 'user', content: 'look up dues and take a note' },
        {
          role: 'assistant',
          content: 'On it.',
          tool_calls: [
            { id: a, name: 'lookup', args: { q: 'dues' } },
            { id: b, name: 'note', raw_args: '{"text": ' },
          ],
        },
        { role: 'tool', call_id: a, name: 'lookup', content: 'Wingtip Bank: 3,150.40', is_error: false },
        { role: 'tool', call_id: b, name: 'note', content: 'Invalid arguments for note: not valid JSON', is_error: true },
      ];
      await drain(await model(), { messages });
      const r = g.requests[0];
      assert.equal(r.status, 200, r.error);
      const h = history(r);
      assert.deepEqual(
        h.calls.map((c) => [c.id, c.name, JSON.parse(c.args)]),
        [
          [a, 'lookup', { q: 'dues' }],
          [b, 'note', {}],
        ],
      );
      assert.deepEqual(
        h.results.map((x) => [x.id, x.content]),
        [
          [a, 'Wingtip Bank: 3,150.40'],
          [b, 'Invalid arguments for note: not valid JSON'],
        ],
      );
      if (route.protocol === 'anthropic') {
        assert.deepEqual(
          h.results.map((x) => x.is_error),
          [false, true],
        );
      }
      const wire = declaredTools(r);
      assert.deepEqual(
        wire.map((t) => t.name),
        TOOLS.map((t) => t.name),
      );
      for (const [i, t] of TOOLS.entries()) {
        assert.equal(wire[i].description, t.description);
        assert.deepEqual(wire[i].parameters, t.parameters, `${t.name}: the schema goes out whole`);
      }
    });

    test("usage and cost reported by the provider arrive in done (cost from the model's price)", async () => {
      serve({ text: 'priced', usage: { input: 1200, output: 300 } });
      const { reply } = await drain(await model());
      const [provider, id] = route.spec.split(':') as ['openai' | 'anthropic', string];
      const price = (getModel as (p: string, m: string) => { cost: { input: number; output: number } })(provider, id).cost;
      assert.equal(reply.usage?.input, 1200);
      assert.equal(reply.usage?.output, 300);
      const expected = (1200 * price.input + 300 * price.output) / 1_000_000;
      assert.ok(expected > 0);
      assert.ok(Math.abs((reply.usage?.cost ?? -1) - expected) < 1e-12, `cost ${reply.usage?.cost} ≠ ${expected}`);
    });

    test("an HTTP error is a ModelError with the provider's message, after exactly one request", async () => {
      serve({ error: { status: 503, message: 'the model is overloaded' } });
      await assert.rejects(
        drain(await model()),
        (e: unknown) => e instanceof ModelError && /HTTP 503/.test(e.message) && /the model is overloaded/.test(e.message),
      );
      assert.equal(g.requests.length, 1, 'no retries');
    });

    test('HTTP 401 names the key variable to check', async () => {
      serve({ error: { status: 401, message: 'invalid x-api-key' } });
      const keyVar = route.protocol === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY';
      await assert.rejects(
        drain(await model()),
        (e: unknown) => e instanceof ModelError && e.message.includes(keyVar) && /invalid x-api-key/.test(e.message),
      );
    });

    test('strict gateway: a response calling an undeclared tool is refused with 400, and that text reaches the ModelError', async () => {
      serve({ tool_calls: [{ id: route.id('x'), name: 'delete_everything', args: {} }] });
      await assert.rejects(
        drain(await model()),
        (e: unknown) => e instanceof ModelError && /HTTP 400/.test(e.message) && /delete_everything/.test(e.message),
      );
    });

    test('an aborted request is a ModelError, not a hang', async () => {
      serve({ text: 'slow', delayMs: 5_000 });
      const ctl = new AbortController();
      setTimeout(() => ctl.abort(), 100);
      const t0 = Date.now();
      await assert.rejects(
        drain(await model(), { signal: ctl.signal }),
        (e: unknown) => e instanceof ModelError && /cancel/.test(e.message),
      );
      assert.ok(Date.now() - t0 < 3_000);
    });
  });
}

describe('unreachable servers fail fast with what to do (P1)', () => {
  test('ollama: names the URL, `ollama serve` and `ollama pull MODEL`', async () => {
    const port = await closedPort();
    const m = await createModel('ollama:qwen2.5:7b', { OLLAMA_HOST: `http://127.0.0.1:${port}` });
    const t0 = Date.now();
    await assert.rejects(drain(m), (e: unknown) => {
      assert.ok(e instanceof ModelError);
      assert.ok(e.message.includes(`http://127.0.0.1:${port}/v1`), e.message);
      assert.ok(e.message.includes('ollama serve'), e.message);
      assert.ok(e.message.includes('ollama pull qwen2.5:7b'), e.message);
      assert.ok(e.message.includes('--model'), e.message);
      return true;
    });
    assert.ok(Date.now() - t0 < 3_000, `took ${Date.now() - t0} ms (retries?)`);
  });

  for (const [spec, env] of [
    ['openai-compatible:m@URL', {}],
    ['anthropic:claude-sonnet-4-5', { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: 'URL' }],
    ['openai:gpt-4o-mini', { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'URL/v1' }],
  ] as const) {
    test(`${spec.split(':')[0]}: names the URL tried`, async () => {
      const url = `http://127.0.0.1:${await closedPort()}`;
      const fill = (s: string) => s.replace('URL', url);
      const m = await createModel(fill(spec), Object.fromEntries(Object.entries(env).map(([k, v]) => [k, fill(v)])));
      const t0 = Date.now();
      await assert.rejects(drain(m), (e: unknown) => e instanceof ModelError && e.message.includes(url) && /cannot reach/.test(e.message));
      // Issue 26: the URL once, not "the server at URL at URL".
      await assert.rejects(drain(m), (e: unknown) => (e as Error).message.split(url).length - 1 === 1);
      assert.ok(Date.now() - t0 < 3_000);
    });
  }
});
