/**
 * Tracing after the GenAI semantic conventions (src/util/telemetry.ts): real runs through Keel with
 * a scripted model, their spans caught by an in-memory exporter.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { DiagLogLevel, diag, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { streamRun } from '../../src/loop/legs.js';
import { createModel } from '../../src/models/index.js';
import { modelParts, startTelemetryFromEnv } from '../../src/util/telemetry.js';
import { FIXTURES, ROOT } from '../support/helpers.js';
import { Harness } from '../support/keel.js';

const DUES = { id: 'c1', name: 'upcoming_dues', args: { within_days: 15 } };
const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1', 'm2'] } };

/**
 * An SDK registered for this test only: every span ends in the returned exporter. When the test is
 * over, every span started has been ended, and none twice (the SDK warns of that through diag).
 */
function recordSpans(t: TestContext): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  let started = 0;
  let ended = 0;
  const counter: SpanProcessor = {
    onStart: () => void started++,
    onEnd: () => void ended++,
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const provider = new BasicTracerProvider({ spanProcessors: [counter, new SimpleSpanProcessor(exporter)] });
  assert.ok(trace.setGlobalTracerProvider(provider), 'no other provider is registered');
  const warnings: string[] = [];
  const warn = (msg: string) => void warnings.push(msg);
  diag.setLogger({ error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
  t.after(async () => {
    trace.disable();
    diag.disable();
    await provider.shutdown();
    assert.equal(ended, started, 'every span started was ended');
    assert.deepEqual(warnings, [], 'no span was ended twice');
  });
  return exporter;
}

const named = (spans: ReadableSpan[], prefix: string) => spans.filter((s) => s.name.startsWith(prefix));
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const attrs = (s: ReadableSpan, ...keys: string[]) => Object.fromEntries(keys.map((k) => [k, s.attributes[k]]));

test('telemetry: a read call and an answer — one invoke_agent span, two chat spans and one execute_tool span under it', async (t) => {
  const spans = recordSpans(t);
  const h = new Harness([{ tool_calls: [DUES] }, { text: 'Two bills are due.' }]);
  t.after(() => h.close());
  const r = await h.run('What is due?');
  assert.equal(r.status, 'done');
  const all = spans.getFinishedSpans();
  const session = (await h.keel.getRun(r.run_id)).session_id;

  const [agent, ...moreAgents] = named(all, 'invoke_agent');
  assert.equal(moreAgents.length, 0);
  assert.equal(agent.name, 'invoke_agent keel');
  assert.equal(agent.kind, SpanKind.INTERNAL);
  assert.equal(parentOf(agent), undefined, 'a root: no context manager, no active span');
  assert.deepEqual(
    attrs(agent, 'gen_ai.operation.name', 'gen_ai.agent.name', 'gen_ai.conversation.id', 'keel.run.id', 'keel.run.mode', 'keel.leg'),
    {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'keel',
      'gen_ai.conversation.id': session,
      'keel.run.id': r.run_id,
      'keel.run.mode': 'agent',
      'keel.leg': 'start',
    },
  );
  assert.deepEqual(attrs(agent, 'keel.run.status', 'keel.run.reason'), { 'keel.run.status': 'done', 'keel.run.reason': 'final_answer' });
  assert.equal(agent.status.code, SpanStatusCode.UNSET);

  const chats = named(all, 'chat ');
  assert.equal(chats.length, 2);
  const file = h.model.slice('script:'.length);
  for (const chat of chats) {
    assert.equal(chat.name, `chat ${file}`);
    assert.equal(chat.kind, SpanKind.CLIENT);
    assert.equal(parentOf(chat), agent.spanContext().spanId);
    assert.equal(chat.spanContext().traceId, agent.spanContext().traceId);
    assert.deepEqual(
      attrs(
        chat,
        'gen_ai.operation.name',
        'gen_ai.provider.name',
        'gen_ai.request.model',
        'gen_ai.usage.input_tokens',
        'gen_ai.usage.output_tokens',
      ),
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'script',
        'gen_ai.request.model': file,
        'gen_ai.usage.input_tokens': 0,
        'gen_ai.usage.output_tokens': 0,
      },
    );
  }

  const tools = named(all, 'execute_tool');
  assert.equal(tools.length, 1);
  const [tool] = tools;
  assert.equal(tool.name, 'execute_tool upcoming_dues');
  assert.equal(tool.kind, SpanKind.INTERNAL);
  assert.equal(parentOf(tool), agent.spanContext().spanId);
  assert.deepEqual(
    attrs(
      tool,
      'gen_ai.operation.name',
      'gen_ai.tool.name',
      'gen_ai.tool.call.id',
      'gen_ai.tool.type',
      'keel.tool.outcome',
      'keel.tool.effect',
    ),
    {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'upcoming_dues',
      'gen_ai.tool.call.id': 'c1',
      'gen_ai.tool.type': 'function',
      'keel.tool.outcome': 'ran',
      'keel.tool.effect': 'read',
    },
  );
  assert.equal(tool.status.code, SpanStatusCode.UNSET);
  // In order: the first model call, the tool, the answer.
  const order = [chats[0], tool, chats[1]].map((s) => s.startTime[0] * 1e9 + s.startTime[1]);
  assert.deepEqual(
    order,
    [...order].sort((a, b) => a - b),
  );
});

test('telemetry (A1/A2): a destructive call waits on its card (awaiting_approval); the approval leg runs it (ran)', async (t) => {
  const spans = recordSpans(t);
  const h = new Harness([{ tool_calls: [TRASH] }, { text: 'Moved both promotions to Trash.' }]);
  t.after(() => h.close());
  const r = await h.run('trash the two promotions');
  assert.equal(r.reason, 'awaiting_approval');
  let all = spans.getFinishedSpans();
  const [first] = named(all, 'invoke_agent');
  assert.deepEqual(attrs(first, 'keel.leg', 'keel.run.status', 'keel.run.reason'), {
    'keel.leg': 'start',
    'keel.run.status': 'paused',
    'keel.run.reason': 'awaiting_approval',
  });
  assert.equal(first.status.code, SpanStatusCode.UNSET, 'a pause is no error');
  const [held, ...others] = named(all, 'execute_tool');
  assert.equal(others.length, 0);
  assert.deepEqual(attrs(held, 'gen_ai.tool.call.id', 'keel.tool.outcome', 'keel.tool.effect'), {
    'gen_ai.tool.call.id': 't1',
    'keel.tool.outcome': 'awaiting_approval',
    'keel.tool.effect': 'destructive',
  });
  assert.equal(held.status.code, SpanStatusCode.UNSET);

  spans.reset();
  const { result } = await h.keel.respondToApproval(r.approval!.id, 'approve', 'ana');
  assert.equal(result.status, 'done');
  all = spans.getFinishedSpans();
  const agents = named(all, 'invoke_agent');
  assert.equal(agents.length, 1);
  const [second] = agents;
  assert.deepEqual(attrs(second, 'keel.run.id', 'keel.leg', 'keel.run.status', 'keel.run.reason'), {
    'keel.run.id': r.run_id,
    'keel.leg': 'approval',
    'keel.run.status': 'done',
    'keel.run.reason': 'final_answer',
  });
  const [ran] = named(all, 'execute_tool');
  assert.equal(parentOf(ran), second.spanContext().spanId);
  assert.deepEqual(attrs(ran, 'gen_ai.tool.name', 'gen_ai.tool.call.id', 'keel.tool.outcome', 'keel.tool.effect'), {
    'gen_ai.tool.name': 'trash_email',
    'gen_ai.tool.call.id': 't1',
    'keel.tool.outcome': 'ran',
    'keel.tool.effect': 'destructive',
  });
  assert.equal(named(all, 'chat ').length, 1, 'the model call after the approved call');
});

test('telemetry (R13/R15/R21): calls the core answers itself get their span and outcome — unknown, held, invalid, repeat', async (t) => {
  const spans = recordSpans(t);
  const h = new Harness([
    {
      tool_calls: [
        { id: 'u1', name: 'no_such_tool', args: {}, undeclared: true },
        { id: 'w1', name: 'create_reminder', args: { title: 'Pay Wingtip Bank', due: '2026-09-30' } },
        { id: 'i1', name: 'upcoming_dues', arguments: '{not json' },
        DUES,
      ],
    },
    { tool_calls: [{ ...DUES, id: 'c2' }] },
    { text: 'Done.' },
  ]);
  t.after(() => h.close());
  await h.run('What is due? Create a reminder for it.');
  const tools = named(spans.getFinishedSpans(), 'execute_tool');
  assert.deepEqual(
    tools.map((s) => [
      s.attributes['gen_ai.tool.call.id'],
      s.attributes['keel.tool.outcome'],
      s.attributes['keel.tool.effect'],
      s.status.code,
    ]),
    [
      ['u1', 'unknown_tool', undefined, SpanStatusCode.ERROR],
      ['w1', 'held_for_confirmation', 'write', SpanStatusCode.ERROR],
      ['i1', 'invalid_arguments', 'read', SpanStatusCode.ERROR],
      ['c1', 'ran', 'read', SpanStatusCode.UNSET],
      ['c2', 'repeat', 'read', SpanStatusCode.UNSET],
    ],
  );
  assert.equal(tools[0].attributes['error.type'], 'unknown_tool');
});

test('telemetry (C3/C4): a write Plan mode declares but refuses to run is denied_by_mode', async (t) => {
  const spans = recordSpans(t);
  const h = new Harness([{ tool_calls: [{ id: 'w1', name: 'write_file', args: { path: 'a.md', content: 'v1' } }] }, { text: 'ok' }], {
    pluginDirs: [join(ROOT, 'test', 'fixtures', 'modes')],
  });
  t.after(() => h.close());
  const r = await h.run('write a.md', 'plan');
  assert.equal(r.steps[0].outcome, 'denied_by_mode');
  const [tool] = named(spans.getFinishedSpans(), 'execute_tool');
  assert.deepEqual(attrs(tool, 'gen_ai.tool.name', 'keel.tool.outcome', 'keel.tool.effect'), {
    'gen_ai.tool.name': 'write_file',
    'keel.tool.outcome': 'denied_by_mode',
    'keel.tool.effect': 'write',
  });
  assert.equal(tool.status.code, SpanStatusCode.ERROR);
});

test('telemetry (P2): a model error marks its chat span and the failed leg as errors, with no key in the message', async (t) => {
  const spans = recordSpans(t);
  const h = new Harness([{ error: 'upstream 401: api-key: abcdef0123456789abcdef' }]);
  t.after(() => h.close());
  const r = await h.run('hello');
  assert.equal(r.reason, 'model_error');
  const all = spans.getFinishedSpans();
  const [chat] = named(all, 'chat ');
  assert.equal(chat.status.code, SpanStatusCode.ERROR);
  assert.equal(chat.attributes['error.type'], 'ModelError');
  assert.match(chat.status.message ?? '', /upstream 401/);
  assert.doesNotMatch(JSON.stringify([chat.status, chat.events]), /abcdef0123456789/);
  assert.equal(chat.attributes['gen_ai.usage.input_tokens'], undefined);
  const [agent] = named(all, 'invoke_agent');
  assert.equal(agent.status.code, SpanStatusCode.ERROR);
  assert.deepEqual(attrs(agent, 'keel.run.status', 'keel.run.reason', 'error.type'), {
    'keel.run.status': 'failed',
    'keel.run.reason': 'model_error',
    'error.type': 'model_error',
  });
});

test('telemetry: a consumer that stops the leg at a text delta still ends the chat span and the leg span, once each', async (t) => {
  const spans = recordSpans(t);
  const h = new Harness([{ text: 'A long answer, cut short.' }]);
  t.after(() => h.close());
  const deps = { registry: await h.keel.registry([FIXTURES]), model: await createModel(h.model), store: null };
  for await (const e of streamRun(deps, { message: 'hello' })) {
    if (e.type === 'text_delta') break;
  }
  const all = spans.getFinishedSpans();
  assert.deepEqual(all.map((s) => s.name).sort(), [`chat ${h.model.slice('script:'.length)}`, 'invoke_agent keel']);
  assert.equal(all.find((s) => s.name === 'invoke_agent keel')?.attributes['keel.run.status'], 'running');
});

test('telemetry: with no SDK registered nothing is recorded and nothing throws', async (t) => {
  const h = new Harness([{ tool_calls: [DUES] }, { tool_calls: [TRASH] }]);
  t.after(() => h.close());
  const r = await h.run('What is due? Then trash the promotions');
  assert.equal(r.reason, 'awaiting_approval');
  const { result } = await h.keel.respondToApproval(r.approval!.id, 'reject', 'ana');
  assert.equal(result.reason, 'model_error', 'the script ran out');
  assert.equal(trace.getTracer('keel').startSpan('probe').isRecording(), false);
});

test('telemetry: model specs give provider and model, never credentials', () => {
  assert.deepEqual(modelParts('ollama:qwen2.5:7b'), { provider: 'ollama', model: 'qwen2.5:7b' });
  assert.deepEqual(modelParts('openai-compatible:org@qwen2.5@https://user:secret@llm.example:8443/v1'), {
    provider: 'openai-compatible',
    model: 'org@qwen2.5',
    server: { address: 'llm.example', port: 8443 },
  });
  assert.deepEqual(modelParts('script:/tmp/s.yaml'), { provider: 'script', model: '/tmp/s.yaml' });
});

test('telemetry: startTelemetryFromEnv does nothing without an endpoint, and exports OTLP/HTTP to one when set', async (t) => {
  assert.equal(await startTelemetryFromEnv({}), undefined);
  assert.equal(await startTelemetryFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_SDK_DISABLED: 'true' }), undefined);
  await assert.rejects(startTelemetryFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }), /OTEL_EXPORTER_OTLP_ENDPOINT is not a URL/);

  const bodies: { url: string; body: string }[] = [];
  const collector = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      bodies.push({ url: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((res) => collector.listen(0, '127.0.0.1', res));
  t.after(() => collector.close());
  const port = (collector.address() as AddressInfo).port;

  const shutdown = await startTelemetryFromEnv({
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}/`,
    OTEL_SERVICE_NAME: 'keel-assistant',
  });
  assert.ok(shutdown);
  t.after(() => trace.disable());
  const h = new Harness([{ tool_calls: [DUES] }, { text: 'Two bills are due.' }]);
  t.after(() => h.close());
  await h.run('What is due?');
  await shutdown();
  assert.ok(bodies.length > 0, 'the spans reached the collector');
  assert.ok(bodies.every((b) => b.url === '/v1/traces'));
  const sent = bodies.map((b) => b.body).join('\n');
  for (const name of ['invoke_agent keel', 'execute_tool upcoming_dues', 'chat ']) assert.ok(sent.includes(name), name);
  assert.ok(sent.includes('keel-assistant'), 'the service is named by OTEL_SERVICE_NAME');
  assert.equal(trace.getTracer('keel').startSpan('probe').isRecording(), false, 'shut down: the global provider is gone');
});
