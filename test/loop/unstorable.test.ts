/**
 * Issue 27 (item 2): text no store can hold — an emoji cut in half by KEEL_MAX_RESULT_CHARS, a lone
 * UTF-16 surrogate or a NUL from the model, a tool, the user's request, answer or reason — is made
 * storable where it enters (U+FFFD, noted), the same on SQLite and PostgreSQL; on PostgreSQL the
 * save used to fail (JSONB refuses it) and the run was taken over and failed again, forever. A save
 * the store refuses for good ends the run `failed` (`store_error`) instead.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import { RunWriter } from '../../src/loop/run.js';
import type { ModelClient, ModelEvent } from '../../src/models/types.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { defineTool } from '../../src/tools/define.js';
import type { Store, ToolCall } from '../../src/types/index.js';
import { capText } from '../../src/util/bounds.js';
import { cutText, storableText, storableValue, truncate } from '../../src/util/text.js';
import { tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';

after(() => dropSchemas());

const EMOJI = '😀';
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what this looks for
const LONE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const STORES: [string, () => Promise<Store>][] = [
  ['sqlite', async () => new SqliteStore(join(tempHome('keel-unstorable-'), 'keel.db'))],
  ['postgres', async () => new PostgresStore(withSchema(await testPgUrl(), freshSchema()))],
];

function model(replies: { text: string; tool_calls: ToolCall[] }[]): ModelClient {
  return {
    spec: 'test:unstorable',
    async *stream(req): AsyncIterable<ModelEvent> {
      const reply = replies[req.seq];
      if (!reply) throw new Error(`no reply ${req.seq}`);
      yield { type: 'done', reply };
    },
  };
}

test('issue 27: capText and truncate cut on code points: an emoji at every cut point is kept whole or left out whole', () => {
  for (let max = 1; max <= 12; max++) {
    for (let at = 0; at <= max + 1; at++) {
      const text = `${'a'.repeat(at)}${EMOJI}${'b'.repeat(20)}`;
      const capped = capText(text, max);
      assert.doesNotMatch(capped, LONE, `max ${max}, emoji at ${at}`);
      const kept = capped.split('\n[… cut by Keel')[0];
      assert.ok(kept.length <= max, `max ${max}, emoji at ${at}: keeps ${kept.length}`);
      assert.ok(kept.length >= max - 1, 'at most the one half-character is left out');
      assert.match(capped, new RegExp(`${text.length - kept.length} more characters`));
      assert.doesNotMatch(truncate(text, max), LONE);
      assert.equal(cutText(text, max), kept);
    }
  }
});

test('issue 27: storableText replaces NUL and lone surrogates (not pairs, bidi controls or U+FFFD) and counts them; storableValue does keys and values', () => {
  assert.deepEqual(storableText(`a\u0000b\uD800c\uDC00${EMOJI}\u202E\uFFFD`), {
    text: `a\uFFFDb\uFFFDc\uFFFD${EMOJI}\u202E\uFFFD`,
    replaced: 3,
  });
  assert.deepEqual(storableText(`${EMOJI.slice(0, 1)}`), { text: '\uFFFD', replaced: 1 });
  const plain = { a: ['x', 1, { b: EMOJI }] };
  assert.equal(storableValue(plain).value, plain, 'unchanged: the same object');
  const frozen = Object.freeze({ ['k\u0000']: Object.freeze(['\uDFFF', 2]) });
  const made = storableValue(frozen);
  assert.deepEqual(made, { value: { 'k\uFFFD': ['\uFFFD', 2] }, replaced: 2 });
  assert.ok(Object.isFrozen(made.value) && Object.isFrozen(made.value['k\uFFFD']), 'frozen like the original');
});

for (const [name, open] of STORES) {
  test(`issue 27 (${name}): an emoji cut by KEEL_MAX_RESULT_CHARS, lone surrogates and NUL from the model, a tool, the request and the answer are stored as U+FFFD and noted; the run ends done`, async (t) => {
    const store = await open();
    const home = tempHome('keel-unstorable-home-');
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes.',
      effect: 'read',
      parameters: { type: 'object', properties: { s: { type: 'string' } }, required: ['s'] } as const,
      // Nine characters, then an emoji straddling the cut at 10, then a lone surrogate and a NUL past it.
      execute: () => `123456789${EMOJI}tail \uD800 \u0000`,
    });
    const keel = new Keel({ home, store, tools: [echo], env: { ...process.env, KEEL_MAX_RESULT_CHARS: '10', KEEL_PLUGINS: '' } });
    t.after(() => keel.close());
    const m = model([
      { text: 'looking \uDC00', tool_calls: [{ id: 'c1', name: 'echo', args: { s: 'arg \uD83D', ['key\u0000']: 'v' } }] },
      { text: '', tool_calls: [{ id: 'c2', name: 'ask_user', args: { question: 'which \u0000 one?' } }] },
      { text: `done \uD800 ${EMOJI}`, tool_calls: [] },
    ]);
    const first = await keel.run('find \u0000 it \uDBFF', { model: m });
    assert.equal(first.status, 'paused', JSON.stringify(first));
    assert.equal(first.reason, 'awaiting_user_input');
    const done = await keel.answer(first.run_id, 'that \uD800 one', { model: m });
    assert.equal(done.status, 'done', JSON.stringify(done));
    assert.equal(done.answer, `done \uFFFD ${EMOJI}`);
    const run = await store.loadRun(first.run_id);
    assert.ok(run);
    assert.equal(run.request, 'find \uFFFD it \uFFFD');
    assert.doesNotMatch(
      JSON.stringify(run).replace(/\\u[0-9a-f]{4}/gi, (e) => String.fromCharCode(Number.parseInt(e.slice(2), 16))),
      LONE,
    );
    const call = run.messages.find((x) => x.role === 'assistant' && x.tool_calls.length && x.tool_calls[0].id === 'c1');
    assert.deepEqual(call?.role === 'assistant' ? call.tool_calls[0].args : null, { s: 'arg \uFFFD', 'key\uFFFD': 'v' });
    const result = run.messages.find((x) => x.role === 'tool' && x.call_id === 'c1');
    assert.ok(result?.role === 'tool');
    assert.ok(result.content.startsWith('123456789\n[… cut by Keel: 10 more characters'), result.content);
    const answer = run.messages.find((x) => x.role === 'tool' && x.call_id === 'c2');
    assert.ok(answer?.role === 'tool' && answer.content.includes('that \uFFFD one'), JSON.stringify(answer));
    for (const what of ['request', 'model reply', 'answer']) {
      assert.ok(
        run.notes.some((n) => n.startsWith(`${what}:`) && n.includes('U+FFFD')),
        `the run notes the ${what}'s replacement: ${run.notes.join(' | ')}`,
      );
    }
    for (const e of await store.listEvents({ run_id: first.run_id }))
      assert.doesNotMatch(JSON.stringify(e.event), /\\u0000|\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])/i);
  });

  test(`issue 27 (${name}): a card's words and a reason with a NUL or a lone surrogate (reject, cancel) are stored as U+FFFD`, async (t) => {
    const store = await open();
    const home = tempHome('keel-unstorable-home-');
    const wipe = defineTool({
      name: 'wipe',
      description: 'Wipes.',
      effect: 'destructive',
      parameters: { type: 'object', properties: {} } as const,
      execute: () => 'wiped',
      // The plugin's own words on the card: untrusted text too.
      describe: () => ({ title: 'Wipe \uD800 all', lines: ['every \u0000 row'] }),
    });
    const keel = new Keel({ home, store, tools: [wipe], env: { ...process.env, KEEL_PLUGINS: '' } });
    t.after(() => keel.close());
    const m = model([
      { text: '', tool_calls: [{ id: 'w1', name: 'wipe', args: {} }] },
      { text: 'nothing changed', tool_calls: [] },
      { text: '', tool_calls: [{ id: 'w2', name: 'wipe', args: {} }] },
    ]);
    const paused = await keel.run('wipe it', { model: m });
    assert.equal(paused.status, 'paused');
    assert.equal(paused.reason, 'awaiting_approval');
    const approvalId = paused.reason === 'awaiting_approval' ? paused.approval.id : '';
    const rejected = await keel.reject(approvalId, { actor: 'ana\u0000', reason: 'not \uD800 today', model: m });
    assert.equal(rejected.status, 'done', JSON.stringify(rejected));
    const a = await store.getApproval(approvalId);
    assert.equal(a?.card.items[0].title, 'Wipe \uFFFD all');
    assert.deepEqual(a?.card.items[0].lines, ['every \uFFFD row']);
    assert.equal(a?.reason, 'not \uFFFD today');
    assert.equal(a?.answered_by, 'ana\uFFFD');
    const again = await keel.run('wipe it again', { model: model([{ text: '', tool_calls: [{ id: 'w3', name: 'wipe', args: {} }] }]) });
    assert.equal(again.status, 'paused');
    const cancelled = await keel.cancel(again.run_id, { actor: 'ops', reason: 'stop \u0000 \uDFFF' });
    assert.equal(cancelled.status, 'failed');
    const audit = await store.listAudit(again.run_id);
    assert.ok(
      audit.some((r) => r.action === 'cancel_run' && r.detail.includes('stop \uFFFD \uFFFD')),
      JSON.stringify(audit),
    );
  });

  test(`issue 27 (${name}): a save the store refuses for good ends the run failed (store_error), stored, instead of leaving it running for a takeover`, async (t) => {
    const store = await open();
    t.after(() => store.close());
    const run = await RunWriter.start({ request: 'hello', mode: 'agent', model: 'test:unstorable', plugin_dirs: [] }, store);
    // What slipped past every entry point: PostgreSQL refuses it; SQLite holds it changed. Both end the same way below.
    run.note('a lone \uD800 surrogate');
    if (name === 'postgres') {
      await assert.rejects(run.save(), /failed: the store refused to save it \(PostgreSQL refused the data \(22P02\)/);
      const stored = await store.loadRun(run.state.id);
      assert.equal(stored?.status, 'failed');
      assert.equal(stored?.reason, 'store_error');
      assert.ok(stored?.notes.includes('a lone \uFFFD surrogate'), JSON.stringify(stored?.notes));
      assert.ok(stored?.notes.some((n) => n.startsWith('store error: PostgreSQL refused the data')));
      assert.match(stored?.answer ?? '', /^The run stopped: PostgreSQL refused the data/);
    } else {
      await run.save();
      assert.equal((await store.loadRun(run.state.id))?.status, 'running');
    }
    // A value no store can write as JSON (a bigint): the same end on both stores.
    const other = await RunWriter.start({ request: 'hello', mode: 'agent', model: 'test:unstorable', plugin_dirs: [] }, store);
    (other.state.effects as unknown[]).push({ call_id: 'x', tool: 't', effect: 'write', n: 1n });
    await assert.rejects(other.save(), /the store refused to save it/);
    const failed = await store.loadRun(other.state.id);
    assert.equal(failed?.status, 'failed');
    assert.equal(failed?.reason, 'store_error');
  });
}

test('issue 27/29: storable checks find what storableText replaces (a lone surrogate, a NUL) and pass whole pairs; a reply with nothing to replace comes back as the very same array', async () => {
  const { isStorable, holdsUnstorable } = await import('../../src/util/text.js');
  const { storableReply, mapSame } = await import('../../src/loop/storable.js');
  const { admitReply } = await import('../../src/loop/pipeline.js');
  for (const s of ['', 'plain', `pair ${EMOJI}`, 'é ü ñ', 'x'.repeat(5000)]) assert.equal(isStorable(s), true, s);
  for (const s of ['a\u0000b', '\uD83D', 'x\uDE00', `${EMOJI.slice(1)}${EMOJI.slice(0, 1)}`]) {
    assert.equal(isStorable(s), false, JSON.stringify(s));
    assert.ok(storableText(s).replaced > 0, JSON.stringify(s));
  }
  assert.equal(holdsUnstorable({ a: [{ b: 'ok' }], c: 1 }), false);
  assert.equal(holdsUnstorable({ a: [{ b: 'bad\u0000' }] }), true);
  assert.equal(holdsUnstorable({ ['k\uD800']: 1 }), true, 'a key too');
  const calls: ToolCall[] = [
    { id: 'c1', name: 'read', args: { path: 'a' } },
    { id: 'c2', name: 'read', args: { path: 'b' } },
  ];
  assert.equal(storableReply('fine', calls).calls, calls, 'nothing replaced: the same array');
  const admitted = admitReply(calls);
  assert.ok('calls' in admitted && admitted.calls === calls, 'nothing bounded: the same array');
  const dirty: ToolCall[] = [calls[0], { id: 'c3', name: 'read', args: { path: 'x\u0000' } }];
  const out = storableReply('fine', dirty);
  assert.notEqual(out.calls, dirty);
  assert.equal(out.calls[0], dirty[0], 'an unchanged call is kept as it was');
  assert.deepEqual(out.calls[1].args, { path: 'x\uFFFD' });
  assert.equal(out.replaced, 1);
  assert.deepEqual(dirty[1].args, { path: 'x\u0000' }, 'the model’s own array and call are left as they were');
  assert.deepEqual(
    mapSame([1, 2, 3], (x) => (x === 2 ? 20 : x)),
    [1, 20, 3],
  );
});
