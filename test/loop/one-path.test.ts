/**
 * One path per rule: the behaviours that went wrong while a rule was decided in several layers
 * (a mode check that looked like a plugin crash, a second mount path, a leg without its final
 * event, a session that did not exist until its first run ended).
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import { SAY } from '../../src/loop/sentences.js';
import type { LoopEvent, ToolContext } from '../../src/types/index.js';
import { calls, FIXTURES, keel, ROOT, tempHome } from '../support/helpers.js';
import { assertPaired, Harness } from '../support/keel.js';

const NOTES = join(ROOT, 'test', 'fixtures', 'one-path', 'notes');
const CORE_NAMES = join(ROOT, 'test', 'fixtures', 'one-path', 'core_names');
const IMPOSTOR = join(ROOT, 'test', 'fixtures', 'bad-plugins', 'duplicates', 'third_core');

interface Probe {
  saved?: string[];
  onToolCall?: (e: { tool: string; run_id: string }) => Promise<void>;
  onRead?: (ctx: ToolContext) => Promise<void>;
}
const probe = (p: Probe | undefined) => {
  (globalThis as { __onePath?: Probe }).__onePath = p;
};

test('C4/C5/R6: the session switches to plan mode while a write’s onToolCall hook runs — denied_by_mode with the one sentence, no failure charged', async (t) => {
  const h = new Harness(
    [{ tool_calls: [{ id: 'w1', name: 'save_note', args: { text: 'hi' } }] }, { text: 'I could not save it in plan mode.' }],
    {
      pluginDirs: [NOTES],
    },
  );
  const saved: string[] = [];
  t.after(async () => {
    probe(undefined);
    await h.close();
  });
  probe({
    saved,
    onToolCall: async (e) => {
      const started = h.events.find((x) => x.type === 'run_started');
      if (e.tool === 'save_note' && started?.type === 'run_started') await h.keel.setMode(started.session_id, 'plan');
    },
  });
  const r = await h.run('save a note saying hi');
  assert.equal(r.status, 'done', r.answer ?? '');
  assert.equal(r.steps[0].outcome, 'denied_by_mode');
  assert.equal(r.steps[0].result, SAY.deniedByMode('save_note', 'plan', 'submit_plan'));
  assert.deepEqual(saved, [], 'the handler never ran');
  assert.deepEqual(r.effects, [], 'nothing started, so no effect is recorded');
  const notes = (await h.keel.registry([NOTES])).plugins.find((p) => p.name === 'notes');
  assert.equal(notes?.runtime_failures, 0, 'a mode denial is not the plugin’s failure');
  assert.equal(r.mode, 'plan');
  assert.ok(r.notes.includes('mode switched from agent to plan during the run'), r.notes.join('; '));
});

test('R2/R5/R8: keel plugins check reports a plugin that takes a core tool name exactly as a run mounts it — refused, degraded', async (t) => {
  const home = tempHome();
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const cli = await keel(['plugins', 'check', IMPOSTOR, '--json'], { KEEL_HOME: home });
  assert.equal(cli.code, 1, 'a degraded plugin fails the check');
  const checked = JSON.parse(cli.stdout) as { plugins: { name: string; status: string; degraded: { kind: string; tool: string }[] }[] };
  assert.equal(checked.plugins[0].status, 'degraded');
  assert.deepEqual(
    checked.plugins[0].degraded.map((r) => [r.kind, r.tool]),
    [['duplicate_tool', 'ask_user']],
  );

  const k = new Keel({ home });
  t.after(() => k.close());
  const forRun = await k.registry([IMPOSTOR]);
  assert.deepEqual(JSON.parse(JSON.stringify(forRun.plugins)), checked.plugins, 'the same report as a run’s mount');
  assert.equal(forRun.byName.get('ask_user')?.plugin, 'core');
});

test('R5: a core tool name is refused whether or not this Keel offers that built-in', async (t) => {
  const home = tempHome();
  const k = new Keel({ home, store: null });
  t.after(async () => {
    await k.close();
    rmSync(home, { recursive: true, force: true });
  });
  const reg = await k.registry([CORE_NAMES]);
  const report = reg.plugins[0];
  assert.equal(report.status, 'degraded');
  assert.deepEqual(report.degraded.map((r) => r.tool).sort(), ['memory_search', 'task']);
  assert.deepEqual(
    report.tools.map((x) => x.name),
    ['own_lookup'],
  );
  assert.equal(reg.byName.has('memory_search'), false, 'no memory tools without a store, and no impostor either');
});

test('A4: an approval that expired unanswered — the continuation ends like every leg, with run_finished, and answers the held call', async (t) => {
  const TRASH = { id: 't1', name: 'trash_email', args: { ids: ['m1'] } };
  for (const via of ['resume', 'approve'] as const) {
    const h = new Harness([{ tool_calls: [TRASH] }, { text: 'never reached' }], { limits: { approvalTtlMs: 1 } });
    t.after(() => h.close());
    const r = await h.run('trash the first promotion');
    assert.equal(r.reason, 'awaiting_approval');
    const id = r.approval?.id ?? '';
    await new Promise((res) => setTimeout(res, 20));
    const events: LoopEvent[] = [];
    const out =
      via === 'resume'
        ? await h.keel.continueRun(r.run_id, (e) => events.push(e))
        : (await h.keel.respondToApproval(id, 'approve', 'ana', null, (e) => events.push(e))).result;
    assert.equal(out.status, 'failed', via);
    assert.equal(out.reason, 'approval_expired');
    assert.deepEqual(
      events.map((e) => e.type),
      ['run_started', 'tool_result', 'run_finished'],
      via,
    );
    const last = events.at(-1);
    assert.deepEqual(last?.type === 'run_finished' && last.result, out);
    const t1 = out.steps.find((s) => s.call_id === 't1');
    assert.equal(t1?.outcome, 'error');
    assert.equal(t1?.result, SAY.approvalExpired('trash_email', id));
    assert.equal(calls(h.home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length, 0, 'nothing ran');
    const run = await h.keel.getRun(r.run_id);
    assertPaired(run.messages);
    assert.equal(run.pause, null);
  }
});

test('C1: changing the mode of a session during its first run works, and the run decides in the new mode from its next step', async (t) => {
  const h = new Harness(
    [
      { tool_calls: [{ id: 'r1', name: 'read_notes', args: {} }] },
      // Undeclared: the model calls the write it saw before the switch (a real server would refuse it).
      { tool_calls: [{ id: 'w1', name: 'save_note', args: { text: 'milk' }, undeclared: true }] },
      { text: 'Here is my plan instead.' },
    ],
    { pluginDirs: [NOTES] },
  );
  const saved: string[] = [];
  t.after(async () => {
    probe(undefined);
    await h.close();
  });
  let session = '';
  probe({
    saved,
    onRead: async (ctx) => {
      session = (await h.keel.getRun(ctx.run_id)).session_id;
      await h.keel.setMode(session, 'plan');
    },
  });
  const r = await h.run('read my notes, then save one');
  assert.equal(r.steps[0].outcome, 'ran', r.steps[0].result);
  // In plan mode a write that is not `contract_modes: declare` leaves the menu, so the call is unknown (C3).
  assert.match(r.requests[1].system, /You are in plan mode/);
  assert.equal(
    r.requests[1].tools.some((x) => x.name === 'save_note'),
    false,
  );
  assert.equal(r.steps[1].outcome, 'unknown_tool');
  assert.deepEqual(saved, []);
  assert.equal(r.mode, 'plan');
  assert.equal((await h.keel.store?.getSession(session))?.mode, 'plan');
});

test('C1: a streaming consumer switches the session as its first run starts (the session exists from the first event)', async (t) => {
  const h = new Harness([{ text: 'planning' }], { pluginDirs: [FIXTURES] });
  t.after(() => h.close());
  let result: Awaited<ReturnType<typeof h.run>> | undefined;
  const gen = h.keel.stream('plan my week', { model: h.model, pluginDirs: [FIXTURES] });
  for (let n = await gen.next(); ; n = await gen.next()) {
    if (n.done) {
      result = n.value;
      break;
    }
    if (n.value.type === 'run_started') await h.keel.setMode(n.value.session_id, 'plan');
  }
  assert.equal(result.mode, 'plan');
  assert.match(result.requests[0].system, /You are in plan mode/);
});

test('C1: a paused run whose session another process switched to plan mode continues in plan mode', async (t) => {
  const h = new Harness(
    [
      { tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'What should the note say?' } }] },
      // Undeclared: the model calls the write it saw before the switch (a real server would refuse it).
      { tool_calls: [{ id: 'w1', name: 'save_note', args: { text: 'milk' }, undeclared: true }] },
      { text: 'I will plan it instead.' },
    ],
    { pluginDirs: [NOTES] },
  );
  const saved: string[] = [];
  t.after(async () => {
    probe(undefined);
    await h.close();
  });
  probe({ saved });
  const r = await h.run('save a note');
  assert.equal(r.reason, 'awaiting_user_input');
  const session = (await h.keel.getRun(r.run_id)).session_id;
  const other = new Keel({ home: h.home });
  await other.setMode(session, 'plan');
  await other.close();
  const out = await h.resume(r.run_id, 'milk');
  assert.equal(out.mode, 'plan');
  assert.ok(out.notes.includes('mode switched from agent to plan while paused'), out.notes.join('; '));
  assert.equal(out.steps.find((s) => s.call_id === 'w1')?.outcome, 'unknown_tool', 'hidden in plan mode (C3)');
  assert.deepEqual(saved, []);
});
