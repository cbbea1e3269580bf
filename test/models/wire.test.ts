// P3: whole Keel runs through the real provider code (pi-ai) against a strict fake gateway,
// once per protocol. R15-R19 (confirm-once, pause, resume in a new process), A1-A2 (approval),
// C3-C4 (Plan mode keeps denied tools declared), R20/R28 (model_error).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, test } from 'node:test';
import { createModel } from '../../src/models/index.js';
import { ModelError } from '../../src/models/types.js';
import type { Shortlist } from '../../src/prompt/menu.js';
import type { LoopEvent } from '../../src/types/index.js';
import { declaredTools, history, type ScriptedReply } from '../support/fake-gateway.js';
import { allIds, assertWirePairing, FIXTURE_PLUGINS, ROUTES, resultFor, WIRE_PLUGINS, WireWorld } from './wire-support.js';

for (const route of ROUTES) {
  describe(`wire (${route.protocol}): ${route.spec}`, () => {
    test('R15-R19 confirm-once: held write, ask_user pause, resume in a new process, fan-out, ids round-trip', async () => {
      const id = route.id;
      const replies: ScriptedReply[] = [
        { tool_calls: [{ id: id('dues'), name: 'upcoming_dues', args: { within_days: 15 } }] },
        { tool_calls: [{ id: id('rem1'), name: 'create_reminder', args: { title: 'Pay Wingtip Bank', due: '2026-09-30' } }] },
        {
          text: 'I will ask first.',
          tool_calls: [
            {
              id: id('ask'),
              name: 'ask_user',
              args: { question: 'Create reminders for Wingtip Bank (09-30) and Contoso Energy (10-02)?' },
            },
          ],
        },
        {
          tool_calls: [
            { id: id('rem2'), name: 'create_reminder', args: { title: 'Pay Wingtip Bank', due: '2026-09-30' } },
            { id: id('rem3'), name: 'create_reminder', args: { title: 'Pay Contoso Energy', due: '2026-10-02' } },
          ],
        },
        { text: 'Done: two reminders are set, for Wingtip Bank and Contoso Energy.' },
      ];
      const w = await WireWorld.start(route, replies);
      try {
        const first = await w
          .keel()
          .run('Remind me of the bills due in the next 15 days', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        assert.equal(first.status, 'paused', first.answer ?? '');
        assert.equal(first.reason, 'awaiting_user_input');
        assert.match(first.question ?? '', /Wingtip Bank/);
        assert.equal(w.gateway.requests.length, 3);
        assert.deepEqual(w.lines('reminders.jsonl'), [], 'nothing is created before the user answers');

        // Request 2 carries the read result under the model's id; request 3 the held write's result.
        assert.match(resultFor(w.gateway, 1, id('dues')).content, /Wingtip Bank: 3,150.40/);
        const held = resultFor(w.gateway, 2, id('rem1'));
        assert.match(held.content, /not confirmed create_reminder/);
        if (route.protocol === 'anthropic') assert.equal(held.is_error, true);

        // A new Keel over the same home: the run resumes from the store, as in a new process.
        const events: LoopEvent[] = [];
        const second = await w.keel().resume(first.run_id, { text: 'yes', confirm: true }, {}, (e) => events.push(e));
        assert.equal(second.status, 'done', second.answer ?? '');
        assert.equal(second.reason, 'final_answer');
        assert.equal(second.answer, 'Done: two reminders are set, for Wingtip Bank and Contoso Energy.');
        const streamed = events.flatMap((e) => (e.type === 'text_delta' ? [e.text] : [])).join('');
        assert.equal(streamed, second.answer, 'the final answer streamed as text deltas');

        assert.equal(w.gateway.requests.length, 5);
        assert.equal(
          resultFor(w.gateway, 3, id('ask')).content,
          'The user confirmed: go ahead with create_reminder. They said: yes',
          'the answer is the ask_user result, same id',
        );
        assert.match(resultFor(w.gateway, 4, id('rem2')).content, /Reminder "Pay Wingtip Bank" created/);
        assert.match(resultFor(w.gateway, 4, id('rem3')).content, /Reminder "Pay Contoso Energy" created/);
        assert.equal(w.lines('reminders.jsonl').length, 2);

        // The last request replays the whole transcript: every call the model made, in order, each answered.
        assert.deepEqual(
          history(w.gateway.requests[4]).calls.map((c) => c.id),
          [id('dues'), id('rem1'), id('ask'), id('rem2'), id('rem3')],
        );
        assertWirePairing(w.gateway, allIds(replies));
        assert.ok(
          w.gateway.requests.every((r) => r.status === 200),
          'the strict gateway accepted every request',
        );
        const steps = second.steps.map((s) => [s.call_id, s.outcome]);
        assert.deepEqual(steps, [
          [id('dues'), 'ran'],
          [id('rem1'), 'held_for_confirmation'],
          [id('ask'), 'ran'],
          [id('rem2'), 'ran'],
          [id('rem3'), 'ran'],
        ]);
      } finally {
        await w.close();
      }
    });

    test('A1-A2 approval: destructive call pauses, approve in a new process, result goes back under the original id', async () => {
      const callId = route.id('trash');
      const replies: ScriptedReply[] = [
        { tool_calls: [{ id: callId, name: 'trash_email', args: { ids: ['m1', 'm2'] } }] },
        { text: 'Moved the two promotions to Trash.' },
      ];
      const w = await WireWorld.start(route, replies);
      try {
        const first = await w.keel().run('Trash the promotions', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        assert.equal(first.status, 'paused', first.answer ?? '');
        assert.equal(first.reason, 'awaiting_approval');
        assert.ok(first.approval?.id);
        assert.equal(w.gateway.requests.length, 1);
        assert.deepEqual(w.lines('mail-calls.log'), [], 'nothing runs before the approval');

        const { result } = await w.keel().respondToApproval(first.approval.id, 'approve', 'test-owner');
        assert.equal(result.status, 'done', result.answer ?? '');
        assert.equal(result.reason, 'final_answer');
        assert.equal(result.answer, 'Moved the two promotions to Trash.');
        assert.deepEqual(w.lines('mail-calls.log'), ['trash_email {"ids":["m1","m2"]}']);

        assert.equal(w.gateway.requests.length, 2);
        const r = resultFor(w.gateway, 1, callId);
        assert.equal(r.content, 'Moved 2 email(s) to Trash.');
        if (route.protocol === 'anthropic') assert.equal(r.is_error, false);
        assert.deepEqual(
          history(w.gateway.requests[1]).calls.map((c) => c.id),
          [callId],
        );
        assertWirePairing(w.gateway, allIds(replies));
        assert.ok(w.gateway.requests.every((x) => x.status === 200));
      } finally {
        await w.close();
      }
    });

    test('R22 parallel calls around an approval: each gated on its own, results in call order under their ids', async () => {
      const id = route.id;
      const replies: ScriptedReply[] = [
        {
          tool_calls: [
            { id: id('p1'), name: 'upcoming_dues', args: {} },
            { id: id('p2'), name: 'trash_email', args: { ids: ['m1'] } },
            { id: id('p3'), name: 'trash_email', args: { ids: ['m2'] } },
            { id: id('p4'), name: 'calendar_lookup', args: { day: 'Friday' } },
          ],
        },
        { text: 'Done.' },
      ];
      const w = await WireWorld.start(route, replies);
      try {
        const first = await w
          .keel()
          .run('Check dues, trash the promotions, look at Friday', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        assert.equal(first.reason, 'awaiting_approval');
        assert.equal(first.approval?.card.items.length, 2, 'one card pins both destructive calls');
        const { result } = await w.keel().respondToApproval(first.approval!.id, 'approve', 'test-owner');
        assert.equal(result.status, 'done', result.answer ?? '');
        const h = history(w.gateway.requests[1]);
        assert.deepEqual(
          h.results.map((r) => r.id),
          [id('p1'), id('p2'), id('p3'), id('p4')],
        );
        assert.match(h.results[3].content, /No events on Friday/);
        assert.deepEqual(w.lines('mail-calls.log'), ['trash_email {"ids":["m1"]}', 'trash_email {"ids":["m2"]}']);
        assertWirePairing(w.gateway, allIds(replies));
      } finally {
        await w.close();
      }
    });

    test('usage the provider reports lands in the run trace (R26)', async () => {
      const w = await WireWorld.start(route, [{ text: 'Hello.', usage: { input: 1500, output: 40 } }]);
      try {
        const keel = w.keel();
        const r = await keel.run('hi', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        const usage = (await keel.getRun(r.run_id)).requests[0].usage;
        assert.equal(usage?.input, 1500);
        assert.equal(usage?.output, 40);
        assert.ok((usage?.cost ?? 0) > 0, 'a priced model reports a cost');
      } finally {
        await w.close();
      }
    });

    test('A2 reject: nothing runs; the model is told under the original id and answers', async () => {
      const callId = route.id('trash');
      const replies: ScriptedReply[] = [
        { tool_calls: [{ id: callId, name: 'trash_email', args: { ids: ['m3'] } }] },
        { text: 'OK, I left the report draft where it is.' },
      ];
      const w = await WireWorld.start(route, replies);
      try {
        const first = await w.keel().run('Trash the report draft', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        assert.equal(first.reason, 'awaiting_approval');
        const { result } = await w.keel().respondToApproval(first.approval!.id, 'reject', 'test-owner', 'keep it');
        assert.equal(result.status, 'done', result.answer ?? '');
        assert.equal(result.answer, 'OK, I left the report draft where it is.');
        assert.deepEqual(w.lines('mail-calls.log'), [], 'nothing ran');
        const r = resultFor(w.gateway, 1, callId);
        assert.match(r.content, /rejected/);
        if (route.protocol === 'anthropic') assert.equal(r.is_error, true, 'a call that did not run is an error result');
        assertWirePairing(w.gateway, allIds(replies));
      } finally {
        await w.close();
      }
    });

    test('C3-C4 Plan mode: write_file/edit_file stay declared (label, same schema); the call is denied under its id; strict gateway accepts', async () => {
      const callId = route.id('write');
      const replies: ScriptedReply[] = [
        { text: 'ok' }, // the agent-mode run whose declarations are the reference
        { tool_calls: [{ id: callId, name: 'write_file', args: { path: 'notes.txt', content: 'hello' } }] },
        { text: 'Plan: 1. write notes.txt with "hello". Approve the plan and I will do it.' },
      ];
      const w = await WireWorld.start(route, replies);
      try {
        const keel = w.keel();
        const agent = await keel.run('What can you do with files?', { model: route.spec, pluginDirs: [WIRE_PLUGINS] });
        assert.equal(agent.status, 'done');
        const plan = await keel.run('Write hello into notes.txt', { model: route.spec, pluginDirs: [WIRE_PLUGINS], mode: 'plan' });
        assert.equal(plan.status, 'done', plan.answer ?? '');
        assert.equal(plan.reason, 'final_answer');
        assert.equal(w.gateway.requests.length, 3);
        assert.ok(
          w.gateway.requests.every((r) => r.status === 200),
          `the strict gateway rejected: ${w.gateway.requests.map((r) => r.error).filter(Boolean)}`,
        );

        const agentTools = new Map(declaredTools(w.gateway.requests[0]).map((t) => [t.name, t]));
        for (const req of [1, 2]) {
          const planTools = new Map(declaredTools(w.gateway.requests[req]).map((t) => [t.name, t]));
          for (const name of ['write_file', 'edit_file']) {
            const p = planTools.get(name);
            const a = agentTools.get(name);
            assert.ok(p, `plan request ${req + 1} declares ${name}`);
            assert.ok(a, `the agent request declares ${name}`);
            assert.ok(p.description.startsWith('[Unavailable in plan mode'), p.description);
            assert.ok(!a.description.startsWith('[Unavailable'), a.description);
            assert.equal(JSON.stringify(p.parameters), JSON.stringify(a.parameters), `${name}: the schema is unchanged`);
          }
          assert.ok(planTools.has('read_file'));
        }
        // The wire carries the plugin's schema whole (not a provider's trimmed copy of it).
        const trace = await keel.getRun(agent.run_id);
        for (const t of trace.requests[0].tools) {
          assert.equal(JSON.stringify(agentTools.get(t.name)?.parameters), JSON.stringify(t.parameters), `${t.name} schema on the wire`);
        }

        const denied = resultFor(w.gateway, 2, callId);
        assert.match(denied.content, /write_file/);
        assert.match(denied.content, /plan/i);
        if (route.protocol === 'anthropic') assert.equal(denied.is_error, true);
        assert.deepEqual(
          plan.steps.map((s) => [s.call_id, s.outcome, s.is_error]),
          [[callId, 'denied_by_mode', true]],
        );
        assert.equal(existsSync(w.file('workspace/notes.txt')), false, 'nothing was written');
        assert.deepEqual(w.lines('workspace-calls.log'), []);
        assertWirePairing(w.gateway, allIds(replies));

        // Control: the same conversation without the two declarations is what a strict gateway refuses.
        const run = await keel.getRun(plan.run_id);
        const sent = run.requests[1];
        const model = await createModel(route.spec, w.env);
        const tools = sent.tools.filter((t) => t.name !== 'write_file' && t.name !== 'edit_file');
        await assert.rejects(
          async () => {
            for await (const _ of model.stream({ system: sent.system, messages: run.messages.slice(0, -1), tools, seq: 9 })) {
              // drain
            }
          },
          (err: unknown) => err instanceof ModelError && /HTTP 400/.test(err.message) && /write_file/.test(err.message),
        );
        const control = w.gateway.requests[3];
        assert.equal(control.status, 400);
        assert.equal(w.gateway.remaining, 0, 'the refused request consumed no scripted reply');
      } finally {
        await w.close();
      }
    });

    test('R23 strict gateway: a tool the transcript already calls stays declared after the shortlist would drop it', async () => {
      const dues = route.id('dues');
      const replies: ScriptedReply[] = [
        { tool_calls: [{ id: dues, name: 'upcoming_dues', args: {} }] },
        { text: 'Two bills are due.' },
        // A second run in the same session: its history already calls upcoming_dues.
        { tool_calls: [{ id: route.id('dues2'), name: 'upcoming_dues', args: { within_days: 30 } }] },
        { text: 'Still two.' },
      ];
      const w = await WireWorld.start(route, replies);
      // Ranks upcoming_dues in on the first request only; afterwards only the always-kept rules hold it.
      let calls = 0;
      const shortlist: Shortlist = () => new Set(calls++ === 0 ? ['upcoming_dues'] : []);
      try {
        const k = w.keel({ shortlist });
        const first = await k.run('What is due?', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        const session = (await k.getRun(first.run_id)).session_id;
        const r = await k.run('And in the next month?', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS], session });
        assert.equal(r.status, 'done', r.answer ?? '');
        assert.ok(calls >= 2, 'the shortlist was asked again for the second run');
        for (const req of w.gateway.requests) {
          assert.ok(
            declaredTools(req).some((t) => t.name === 'upcoming_dues'),
            'upcoming_dues is declared in every request',
          );
          assert.equal(req.status, 200, req.error);
        }
        assert.ok(!declaredTools(w.gateway.requests[1]).some((t) => t.name === 'calendar_lookup'), 'the shortlist did drop others');
        assertWirePairing(w.gateway, allIds(replies));
      } finally {
        await w.close();
      }
    });

    test('R24 lenient gateway: a dropped pool tool called by name runs and is declared from then on', async () => {
      const id = route.id('cal');
      const replies: ScriptedReply[] = [
        { tool_calls: [{ id, name: 'calendar_lookup', args: { day: '2026-09-30' } }] },
        { text: 'Nothing that day.' },
      ];
      const w = await WireWorld.start(route, replies, { strict: false });
      try {
        const shortlist: Shortlist = () => new Set();
        const r = await w.keel({ shortlist }).run('Anything on Sept 30?', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        assert.equal(r.status, 'done', r.answer ?? '');
        assert.ok(!declaredTools(w.gateway.requests[0]).some((t) => t.name === 'calendar_lookup'));
        assert.ok(r.requests[0].dropped.includes('calendar_lookup'), 'the drop is recorded (no silent truncation)');
        assert.equal(r.steps[0].outcome, 'ran');
        assert.match(resultFor(w.gateway, 1, id).content, /No events on 2026-09-30/);
        assert.ok(declaredTools(w.gateway.requests[1]).some((t) => t.name === 'calendar_lookup'));
      } finally {
        await w.close();
      }
    });

    test('R20 timeout covers a model call that hangs', async () => {
      const w = await WireWorld.start(route, [{ text: 'too late', delayMs: 2_500 }]);
      w.env.KEEL_TIMEOUT_MS = '300';
      try {
        const t0 = Date.now();
        const r = await w.keel().run('hi', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        const took = Date.now() - t0;
        assert.equal(r.reason, 'timeout', `ended ${r.status}/${r.reason} after ${took} ms`);
        assert.ok(took < 1_500, `took ${took} ms`);
      } finally {
        await w.close();
      }
    });

    for (const failure of [
      { status: 500, message: 'upstream model overloaded, try later' },
      { status: 400, message: "Invalid value for 'temperature': must be between 0 and 2" },
    ]) {
      test(`R20/R28 model_error: HTTP ${failure.status} ends the run failed with the provider's message, no retries`, async () => {
        const w = await WireWorld.start(route, [{ error: failure }]);
        try {
          const r = await w.keel().run('What is due?', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
          assert.equal(r.status, 'failed');
          assert.equal(r.reason, 'model_error');
          assert.ok(r.answer?.includes(failure.message), r.answer ?? '');
          assert.ok(r.answer?.includes(`HTTP ${failure.status}`), r.answer ?? '');
          assert.equal(w.gateway.requests.length, 1, 'the provider did not retry');
          assert.equal(r.model_calls, 1);
        } finally {
          await w.close();
        }
      });
    }

    test('R21 unparseable tool-call arguments become an error result under the call id; the run goes on', async () => {
      const bad = route.id('bad');
      const replies: ScriptedReply[] = [
        { tool_calls: [{ id: bad, name: 'upcoming_dues', arguments: '{"within_days": 15' }] },
        { text: 'Sorry, I could not check your bills.' },
      ];
      const w = await WireWorld.start(route, replies);
      try {
        const r = await w.keel().run('What is due?', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        assert.equal(r.status, 'done', r.answer ?? '');
        assert.equal(r.steps[0].outcome, 'invalid_arguments');
        assert.equal(r.steps[0].args, null);
        const res = resultFor(w.gateway, 1, bad);
        assert.match(res.content, /not valid JSON/);
        assert.match(res.content, /within_days/);
        assert.deepEqual(w.lines('finance-calls.log'), [], 'the tool did not run');
        assertWirePairing(w.gateway, allIds(replies));
      } finally {
        await w.close();
      }
    });
  });
}
