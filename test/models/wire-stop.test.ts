// Issue 26, R28, P3: how a reply ends, on the wire, per protocol. A reply the server stopped at its
// output token limit (OpenAI finish_reason "length", Anthropic stop_reason "max_tokens") is cut off:
// its text is never the answer (the run fails `truncated`, naming the limit) and its cut-off tool call
// is answered as cut off and never run. An empty reply is asked again once, then ends the run saying
// the model replied with nothing. None of them ends `done` on the reply that was cut or empty.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FIXTURE_PLUGINS, ROUTES, resultFor, WireWorld } from './wire-support.js';

for (const route of ROUTES) {
  describe(`wire stop reasons (${route.protocol}): ${route.spec}`, () => {
    test('R28 truncated: a text reply cut off at the token limit fails the run, naming the limit; it is not the answer', async () => {
      const w = await WireWorld.start(route, [
        { text: 'Your bills due soon are Wingtip Bank and Con', stop: 'length', usage: { input: 100, output: 16 } },
      ]);
      try {
        const r = await w.keel().run('Which bills are due soon?', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        assert.equal(r.status, 'failed', r.answer ?? '');
        assert.equal(r.reason, 'truncated');
        assert.match(r.answer ?? '', /cut off at its output token limit/);
        assert.match(r.answer ?? '', /after 16 tokens/, 'the answer names the limit');
        assert.ok(!(r.answer ?? '').startsWith('Your bills'), 'the cut-off text is not the answer');
        assert.equal(w.gateway.requests.length, 1);
      } finally {
        await w.close();
      }
    });

    test('issue 26: a tool call cut off at the token limit is never run; the model is told it was cut off, with the limit', async () => {
      const id = route.id;
      const w = await WireWorld.start(route, [
        {
          tool_calls: [{ id: id('rem'), name: 'create_reminder', args: { title: 'Pay Wingtip Bank', due: '2026-09-30' } }],
          stop: 'length',
          usage: { input: 100, output: 64 },
        },
        {
          tool_calls: [{ id: id('dues'), name: 'upcoming_dues', args: { within_days: 15 } }],
          stop: 'length',
          usage: { input: 100, output: 64 },
        },
        { text: 'I could not finish: my replies were cut off.' },
      ]);
      try {
        const r = await w.keel().run('Remind me to pay Wingtip Bank', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        // Both calls were answered by the core: neither a held write nor a read ran.
        assert.deepEqual(
          r.steps.map((s) => [s.tool, s.outcome]),
          [
            ['create_reminder', 'invalid_arguments'],
            ['upcoming_dues', 'invalid_arguments'],
          ],
        );
        assert.deepEqual(w.lines('reminders.jsonl'), []);
        assert.deepEqual(w.lines('finance-calls.log'), [], 'a cut-off read is not run either');
        assert.deepEqual(r.effects, [], 'nothing started');
        const told = resultFor(w.gateway, 1, id('rem'));
        assert.match(
          told.content,
          /create_reminder was not run: your reply was cut off at the output token limit \(reached after 64 tokens\)/,
        );
        assert.doesNotMatch(told.content, /not valid JSON|not confirmed/);
        if (route.protocol === 'anthropic') assert.equal(told.is_error, true);
        assert.equal(w.gateway.requests.length, 3);
        assert.equal(r.answer, 'I could not finish: my replies were cut off.', 'the model answers on a reply that was not cut');
      } finally {
        await w.close();
      }
    });

    test('issue 26: an empty reply is asked again once; two in a row end the run saying the model replied with nothing', async () => {
      const w = await WireWorld.start(route, [{ text: '' }, { text: '' }]);
      try {
        const r = await w.keel().run('Which bills are due soon?', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        assert.equal(r.status, 'failed', r.answer ?? '');
        assert.equal(r.reason, 'model_error');
        assert.match(
          r.answer ?? '',
          new RegExp(`the model ${route.spec} replied with nothing \\(no text and no tool call\\), also when asked again`),
        );
        assert.equal(w.gateway.requests.length, 2, 'asked once more, not more');
        assert.equal(r.model_calls, 2);
        // The empty reply never joins the transcript: the second request is the first one again.
        assert.deepEqual(w.gateway.requests[1].body.messages, w.gateway.requests[0].body.messages);
      } finally {
        await w.close();
      }
    });

    test('issue 26: one empty reply, then an answer: the run ends on the answer', async () => {
      const w = await WireWorld.start(route, [{ text: '' }, { text: 'Wingtip Bank and Contoso Energy.' }]);
      try {
        const r = await w.keel().run('Which bills are due soon?', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        assert.equal(r.status, 'done', r.answer ?? '');
        assert.equal(r.answer, 'Wingtip Bank and Contoso Energy.');
        assert.equal(w.gateway.requests.length, 2);
      } finally {
        await w.close();
      }
    });
  });
}
