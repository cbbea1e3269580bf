// The fake gateway itself (P3), spoken to directly with fetch: both protocols, streaming and
// not (pi-ai only ever streams), the pairing rules every real API enforces, and strict mode.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FakeGateway, type ScriptedReply } from '../support/fake-gateway.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected field by field
type Json = any;

const REPLY: ScriptedReply = {
  text: 'Checking your bills.',
  tool_calls: [
    { id: 'call_1', name: 'upcoming_dues', args: { within_days: 15 } },
    { id: 'call_2', name: 'calendar_lookup', args: { day: '2026-09-30' } },
  ],
  usage: { input: 321, output: 45 },
};

const OPENAI_TOOLS = ['upcoming_dues', 'calendar_lookup'].map((name) => ({
  type: 'function',
  function: { name, description: name, parameters: { type: 'object', properties: {} } },
}));
const ANTHROPIC_TOOLS = ['upcoming_dues', 'calendar_lookup'].map((name) => ({
  name,
  description: name,
  input_schema: { type: 'object', properties: {} },
}));

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** SSE frames as {event?, data} in order. */
async function sse(res: Response): Promise<{ event?: string; data: string }[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((f) => f.trim())
    .map((f) => {
      const lines = f.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      return { event, data };
    });
}

describe('OpenAI chat completions', () => {
  test('non-streaming: one chat.completion with text, tool calls (JSON-string arguments) and usage', async () => {
    const g = await FakeGateway.start([REPLY]);
    try {
      const res = await post(`${g.openaiBaseUrl}/chat/completions`, {
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        tools: OPENAI_TOOLS,
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /application\/json/);
      const body: Json = await res.json();
      assert.equal(body.object, 'chat.completion');
      const choice = body.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.content, 'Checking your bills.');
      assert.deepEqual(
        choice.message.tool_calls.map((c: Json) => [c.id, c.type, c.function.name, JSON.parse(c.function.arguments)]),
        [
          ['call_1', 'function', 'upcoming_dues', { within_days: 15 }],
          ['call_2', 'function', 'calendar_lookup', { day: '2026-09-30' }],
        ],
      );
      assert.deepEqual(body.usage, { prompt_tokens: 321, completion_tokens: 45, total_tokens: 366 });
      assert.equal(g.requests[0].stream, false);
      assert.equal(g.requests[0].body.messages[0].content, 'hi', 'the request body is recorded');
    } finally {
      await g.close();
    }
  });

  test('streaming: chunked content and tool_call deltas by index, finish_reason, usage chunk, [DONE]', async () => {
    const g = await FakeGateway.start([REPLY]);
    try {
      const res = await post(`${g.openaiBaseUrl}/chat/completions`, {
        model: 'm',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'hi' }],
        tools: OPENAI_TOOLS,
      });
      assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
      const frames = await sse(res);
      assert.equal(frames.at(-1)?.data, '[DONE]');
      const chunks: Json[] = frames.slice(0, -1).map((f) => JSON.parse(f.data));
      assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
      const deltas = chunks.flatMap((c) => c.choices.map((ch: Json) => ch.delta));
      assert.equal(deltas.map((d) => d.content ?? '').join(''), 'Checking your bills.');
      assert.ok(deltas.filter((d) => d.content).length > 1, 'the text is split over several chunks');
      const calls = new Map<number, { id?: string; name?: string; args: string; pieces: number }>();
      for (const d of deltas) {
        for (const tc of d.tool_calls ?? []) {
          const c = calls.get(tc.index) ?? { args: '', pieces: 0 };
          if (tc.id) c.id = tc.id;
          if (tc.function?.name) c.name = tc.function.name;
          if (tc.function?.arguments) {
            c.args += tc.function.arguments;
            c.pieces++;
          }
          calls.set(tc.index, c);
        }
      }
      assert.deepEqual(
        [...calls.values()].map((c) => [c.id, c.name, JSON.parse(c.args)]),
        [
          ['call_1', 'upcoming_dues', { within_days: 15 }],
          ['call_2', 'calendar_lookup', { day: '2026-09-30' }],
        ],
      );
      assert.ok(
        [...calls.values()].every((c) => c.pieces > 1),
        'arguments arrive in several deltas',
      );
      assert.equal(chunks.flatMap((c) => c.choices.map((ch: Json) => ch.finish_reason)).filter(Boolean)[0], 'tool_calls');
      const usage = chunks.find((c) => c.usage);
      assert.deepEqual(usage.choices, []);
      assert.equal(usage.usage.prompt_tokens, 321);
    } finally {
      await g.close();
    }
  });

  test('replies are served in order across requests; running out is a 500 that says so', async () => {
    const g = await FakeGateway.start([{ text: 'one' }, { text: 'two' }]);
    try {
      const ask = () => post(`${g.openaiBaseUrl}/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(((await (await ask()).json()) as Json).choices[0].message.content, 'one');
      assert.equal(((await (await ask()).json()) as Json).choices[0].message.content, 'two');
      const r = await ask();
      assert.equal(r.status, 500);
      assert.match(((await r.json()) as Json).error.message, /no scripted reply left for request 3/);
    } finally {
      await g.close();
    }
  });

  test('scripted errors come back as OpenAI error bodies', async () => {
    const g = await FakeGateway.start([{ error: { status: 429, message: 'Rate limit reached' } }]);
    try {
      const r = await post(`${g.openaiBaseUrl}/chat/completions`, { model: 'm', messages: [] });
      assert.equal(r.status, 429);
      assert.equal(((await r.json()) as Json).error.message, 'Rate limit reached');
    } finally {
      await g.close();
    }
  });
});

describe('Anthropic messages', () => {
  test('non-streaming: one message with text and tool_use blocks (object input) and usage', async () => {
    const g = await FakeGateway.start([REPLY]);
    try {
      const res = await post(`${g.anthropicBaseUrl}/v1/messages`, {
        model: 'm',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        tools: ANTHROPIC_TOOLS,
      });
      assert.equal(res.status, 200);
      const body: Json = await res.json();
      assert.equal(body.type, 'message');
      assert.equal(body.stop_reason, 'tool_use');
      assert.deepEqual(body.content, [
        { type: 'text', text: 'Checking your bills.' },
        { type: 'tool_use', id: 'call_1', name: 'upcoming_dues', input: { within_days: 15 } },
        { type: 'tool_use', id: 'call_2', name: 'calendar_lookup', input: { day: '2026-09-30' } },
      ]);
      assert.deepEqual(body.usage, { input_tokens: 321, output_tokens: 45 });
    } finally {
      await g.close();
    }
  });

  test('streaming: message_start, content blocks with text_delta / input_json_delta, message_delta, message_stop', async () => {
    const g = await FakeGateway.start([REPLY]);
    try {
      const res = await post(`${g.anthropicBaseUrl}/v1/messages`, {
        model: 'm',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
        tools: ANTHROPIC_TOOLS,
      });
      const frames = await sse(res);
      const events = frames.map((f) => ({ event: f.event, data: JSON.parse(f.data) }));
      for (const e of events) assert.equal(e.event, e.data.type, 'the event name matches the data type');
      const kinds = events.map((e) => e.event).filter((k) => k !== 'ping');
      assert.equal(kinds[0], 'message_start');
      assert.deepEqual(kinds.slice(-2), ['message_delta', 'message_stop']);
      const blocks = new Map<number, { start: Json; text: string; json: string }>();
      for (const { data } of events) {
        if (data.type === 'content_block_start') blocks.set(data.index, { start: data.content_block, text: '', json: '' });
        if (data.type === 'content_block_delta') {
          const b = blocks.get(data.index)!;
          if (data.delta.type === 'text_delta') b.text += data.delta.text;
          if (data.delta.type === 'input_json_delta') b.json += data.delta.partial_json;
        }
      }
      assert.equal(events.filter((e) => e.event === 'content_block_stop').length, 3);
      const [text, t1, t2] = [...blocks.values()];
      assert.equal(text.text, 'Checking your bills.');
      assert.deepEqual(
        [t1.start.type, t1.start.id, t1.start.name, JSON.parse(t1.json)],
        ['tool_use', 'call_1', 'upcoming_dues', { within_days: 15 }],
      );
      assert.deepEqual([t2.start.id, JSON.parse(t2.json)], ['call_2', { day: '2026-09-30' }]);
      const delta = events.find((e) => e.event === 'message_delta')!.data;
      assert.equal(delta.delta.stop_reason, 'tool_use');
      assert.equal(delta.usage.output_tokens, 45);
      assert.equal(events[0].data.message.usage.input_tokens, 321);
    } finally {
      await g.close();
    }
  });
});

describe('pairing (always) and strict mode (P3)', () => {
  const openaiHistory = (toolName: string, resultId = 'call_9') => [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_9', type: 'function', function: { name: toolName, arguments: '{}' } }] },
    { role: 'tool', tool_call_id: resultId, content: 'result' },
  ];
  const anthropicHistory = (toolName: string, resultId = 'toolu_9') => [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: toolName, input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: resultId, content: 'result' }] },
  ];

  test('history naming an undeclared tool: strict → 400 naming it; lenient → served', async () => {
    for (const strict of [true, false]) {
      const g = await FakeGateway.start([{ text: 'a' }, { text: 'b' }], { strict });
      try {
        const o = await post(`${g.openaiBaseUrl}/chat/completions`, {
          model: 'm',
          messages: openaiHistory('write_file'),
          tools: OPENAI_TOOLS,
        });
        const a = await post(`${g.anthropicBaseUrl}/v1/messages`, {
          model: 'm',
          max_tokens: 9,
          messages: anthropicHistory('write_file'),
          tools: ANTHROPIC_TOOLS,
        });
        if (strict) {
          assert.equal(o.status, 400);
          assert.match(((await o.json()) as Json).error.message, /'write_file'.*not declared/);
          assert.equal(a.status, 400);
          const body: Json = await a.json();
          assert.equal(body.type, 'error');
          assert.match(body.error.message, /'write_file'.*not declared/);
          assert.equal(g.remaining, 2, 'a refused request consumes no reply');
        } else {
          assert.equal(o.status, 200);
          assert.equal(a.status, 200);
        }
        // Declared: accepted either way.
        const ok = await post(`${g.openaiBaseUrl}/chat/completions`, {
          model: 'm',
          messages: openaiHistory('upcoming_dues'),
          tools: OPENAI_TOOLS,
        });
        if (strict) assert.equal(ok.status, 200);
      } finally {
        await g.close();
      }
    }
  });

  test('a scripted reply calling an undeclared tool: strict → 400, lenient → served', async () => {
    const reply: ScriptedReply = { tool_calls: [{ id: 'call_x', name: 'write_file', args: {} }] };
    for (const strict of [true, false]) {
      const g = await FakeGateway.start([reply, reply], { strict });
      try {
        const o = await post(`${g.openaiBaseUrl}/chat/completions`, {
          model: 'm',
          messages: [{ role: 'user', content: 'hi' }],
          tools: OPENAI_TOOLS,
        });
        const a = await post(`${g.anthropicBaseUrl}/v1/messages`, {
          model: 'm',
          max_tokens: 9,
          messages: [{ role: 'user', content: 'hi' }],
          tools: ANTHROPIC_TOOLS,
        });
        assert.equal(o.status, strict ? 400 : 200);
        assert.equal(a.status, strict ? 400 : 200);
        if (strict)
          assert.match(((await o.json()) as Json).error.message, /attempted to call tool 'write_file' which was not in request.tools/);
      } finally {
        await g.close();
      }
    }
  });

  test('results must answer the calls by id, like the real APIs (even when not strict)', async () => {
    const g = await FakeGateway.start([{ text: 'never' }]);
    try {
      // A result under a different id.
      const o1 = await post(`${g.openaiBaseUrl}/chat/completions`, { model: 'm', messages: openaiHistory('upcoming_dues', 'call_other') });
      assert.equal(o1.status, 400);
      const a1 = await post(`${g.anthropicBaseUrl}/v1/messages`, {
        model: 'm',
        max_tokens: 9,
        messages: anthropicHistory('upcoming_dues', 'toolu_other'),
      });
      assert.equal(a1.status, 400);
      assert.match(((await a1.json()) as Json).error.message, /toolu_other/);
      // A call left without a result.
      const o2 = await post(`${g.openaiBaseUrl}/chat/completions`, { model: 'm', messages: openaiHistory('upcoming_dues').slice(0, 2) });
      assert.equal(o2.status, 400);
      assert.match(((await o2.json()) as Json).error.message, /call_9/);
      const a2 = await post(`${g.anthropicBaseUrl}/v1/messages`, {
        model: 'm',
        max_tokens: 9,
        messages: [...anthropicHistory('upcoming_dues').slice(0, 2), { role: 'user', content: 'and?' }],
      });
      assert.equal(a2.status, 400);
      assert.equal(g.remaining, 1);
      assert.deepEqual(
        g.requests.map((r) => r.status),
        [400, 400, 400, 400],
      );
    } finally {
      await g.close();
    }
  });

  test('unknown routes are 404', async () => {
    const g = await FakeGateway.start([]);
    try {
      const r = await post(`${g.url}/v1/responses`, {});
      assert.equal(r.status, 404);
    } finally {
      await g.close();
    }
  });
});
