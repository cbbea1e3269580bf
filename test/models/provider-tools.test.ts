// P4: the pi-ai adapter converts a menu's declarations once, not on every request — the same
// converted tools go out for every request that declares the same array (and a declaration shared by
// two arrays is converted once); over Anthropic the whole schemas still go out on every request (P3).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as PiAi from '@mariozechner/pi-ai';
import { collect, streamRun } from '../../src/loop/legs.js';
import { createModel } from '../../src/models/index.js';
import { ProviderModel, piToolConversions, resolveTarget } from '../../src/models/provider.js';
import type { ModelRequest } from '../../src/models/types.js';
import { type Registry, registryOf } from '../../src/plugin-host/host.js';
import { askUser } from '../../src/tools/builtins.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { ToolDeclaration } from '../../src/types/index.js';
import { declaredTools, FakeGateway } from '../support/fake-gateway.js';
import { ROUTES } from './wire-support.js';

const decl = (name: string): ToolDeclaration => ({
  name,
  description: `The ${name} tool`,
  parameters: { type: 'object', properties: { q: { type: 'string', description: 'what to look for' } }, required: ['q'] },
});

/** pi-ai with its stream replaced: records each context and answers from a script of replies. */
function recordingPi(replies: PiAi.AssistantMessage[]) {
  const contexts: PiAi.Context[] = [];
  const pi = {
    ...PiAi,
    stream: ((_model: PiAi.Model<PiAi.Api>, context: PiAi.Context) => {
      contexts.push(context);
      const message = replies.shift() ?? PiAi.fauxAssistantMessage('done');
      const s = PiAi.createAssistantMessageEventStream();
      for (const [i, block] of message.content.entries()) {
        if (block.type === 'toolCall') {
          s.push({ type: 'toolcall_delta', contentIndex: i, delta: JSON.stringify(block.arguments), partial: message });
          s.push({ type: 'toolcall_end', contentIndex: i, toolCall: block, partial: message });
        }
      }
      s.push({ type: 'done', reason: message.stopReason === 'toolUse' ? 'toolUse' : 'stop', message });
      s.end(message);
      return s;
    }) as typeof PiAi.stream,
  };
  return { pi, contexts };
}

function provider(pi: typeof PiAi): ProviderModel {
  const target = resolveTarget('openai', 'gpt-4o-mini', 'openai:gpt-4o-mini', { OPENAI_API_KEY: 'sk-test' });
  return new ProviderModel('openai:gpt-4o-mini', target, pi);
}

async function send(model: ProviderModel, tools: readonly ToolDeclaration[]): Promise<void> {
  const req: ModelRequest = { system: 'You are a test.', messages: [{ role: 'user', content: 'hi' }], tools, seq: 0 };
  for await (const _ of model.stream(req)) {
    // drained
  }
}

describe('P4: declarations are converted once per menu, not per request', () => {
  test('two requests declaring the same array send the very same converted tools, converted once', async () => {
    const { pi, contexts } = recordingPi([]);
    const model = provider(pi);
    const menu = [decl('lookup_a'), decl('note_a'), decl('list_a')];
    const before = piToolConversions.count;
    await send(model, menu);
    assert.equal(piToolConversions.count - before, 3, 'each declaration converted on the first request');
    await send(model, menu);
    await send(model, menu);
    assert.equal(piToolConversions.count - before, 3, 'no conversion on the later requests');
    assert.equal(contexts.length, 3);
    assert.ok(contexts[1].tools === contexts[0].tools && contexts[2].tools === contexts[0].tools, 'the same array goes out');
    assert.deepEqual(
      contexts[0].tools?.map((t) => [t.name, t.description]),
      menu.map((t) => [t.name, t.description]),
    );
    for (const [i, t] of menu.entries()) assert.equal(contexts[0].tools?.[i].parameters, t.parameters, 'the declared schema, as it is');
  });

  test('a new menu converts only the declarations no earlier menu had; a model client of its own shares them', async () => {
    const { pi, contexts } = recordingPi([]);
    const first = [decl('lookup_b'), decl('note_b')];
    const before = piToolConversions.count;
    await send(provider(pi), first);
    const second = [first[0], decl('admitted_b'), first[1]];
    await send(provider(pi), second);
    assert.equal(piToolConversions.count - before, 3, 'only admitted_b was converted for the second menu');
    assert.equal(contexts[1].tools?.[0], contexts[0].tools?.[0]);
    assert.equal(contexts[1].tools?.[2], contexts[0].tools?.[1]);
    assert.deepEqual(
      contexts[1].tools?.map((t) => t.name),
      ['lookup_b', 'admitted_b', 'note_b'],
    );
  });

  test('a run over many steps converts each declared pool tool once (the loop declares one array per menu)', async () => {
    const tools = Array.from({ length: 30 }, (_, i) =>
      makeToolSpec({ ...decl(`read_${i}`), execute: (args) => `read_${i}: ${String(args.q)}` }, 'p4'),
    );
    const pool = [askUser, ...tools];
    const registry: Registry = registryOf(pool);
    const replies = [3, 17, 29, 8].map((k, i) =>
      PiAi.fauxAssistantMessage(PiAi.fauxToolCall(`read_${k}`, { q: `q${i}` }, { id: `call_${i}` }), { stopReason: 'toolUse' }),
    );
    replies.push(PiAi.fauxAssistantMessage('All read.'));
    const { pi, contexts } = recordingPi(replies);
    const before = piToolConversions.count;
    const result = await collect(streamRun({ registry, model: provider(pi), store: null }, { message: 'read four things' }));
    assert.equal(result.status, 'done', result.answer ?? undefined);
    assert.equal(result.model_calls, 5);
    assert.equal(piToolConversions.count - before, pool.length, 'every declared tool converted once over five requests');
    for (const c of contexts) assert.equal(c.tools, contexts[0].tools, 'every step sends the first step’s converted tools');
    // The transcript too: each message is converted once, and every later request sends that conversion.
    for (let k = 1; k < contexts.length; k++) {
      const earlier = contexts[k - 1].messages;
      assert.equal(contexts[k].messages.length, earlier.length + 2, 'a reply and its result more');
      for (let i = 0; i < earlier.length; i++) assert.equal(contexts[k].messages[i], earlier[i], `request ${k + 1}, message ${i + 1}`);
    }
    assert.deepEqual(
      contexts[4].messages.map((m) => m.role),
      ['user', ...Array.from({ length: 4 }, () => ['assistant', 'toolResult']).flat()],
    );
  });
});

for (const route of ROUTES.filter((r) => r.protocol === 'anthropic')) {
  describe(`P4 over ${route.protocol}: the cached conversion still sends whole schemas every time (P3)`, () => {
    let g: FakeGateway;
    before(async () => {
      g = await FakeGateway.start([], { strict: true });
    });
    after(() => g.close());

    test('two requests with the same declarations: both carry every schema whole, and the strict gateway accepts both', async () => {
      const tools: ToolDeclaration[] = [
        {
          name: 'lookup',
          description: 'Look something up',
          parameters: {
            type: 'object',
            properties: { q: { type: 'string' }, limit: { type: 'integer', minimum: 1, default: 5 } },
            required: ['q'],
            additionalProperties: false,
          },
        },
      ];
      g.push({ text: 'one' }, { text: 'two' });
      const model = await createModel(route.spec, route.env(g));
      for (const seq of [0, 1]) {
        for await (const _ of model.stream({ system: 'You are a test.', messages: [{ role: 'user', content: 'hi' }], tools, seq })) {
          // drained
        }
      }
      assert.equal(g.requests.length, 2);
      for (const r of g.requests) {
        assert.equal(r.status, 200, r.error);
        assert.deepEqual(declaredTools(r)[0].parameters, tools[0].parameters, 'the schema goes out whole');
      }
    });
  });
}
