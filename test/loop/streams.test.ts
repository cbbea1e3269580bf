/**
 * The streaming API's generators (streamRun, streamResume, …) hand out the leg's own events: no
 * generator stands between (issue 29), and they still behave as an async generator of the run does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EngineDeps } from '../../src/loop/engine.js';
import { collect, streamResume, streamRun } from '../../src/loop/legs.js';
import { ScriptModel } from '../../src/models/script.js';
import { registryOf } from '../../src/plugin-host/host.js';
import type { LoopEvent } from '../../src/types/index.js';

function deps(touched: string[]): EngineDeps {
  const model = new ScriptModel('inline', [{ text: 'hello' }]);
  return {
    registry: registryOf([]),
    store: null,
    get model() {
      touched.push('model');
      return model;
    },
  };
}

test('S1: a stream closed before its first event starts no run', async () => {
  const touched: string[] = [];
  const gen = streamRun(deps(touched), { message: 'hi' });
  const r = await gen.return(undefined as never);
  assert.equal(r.done, true);
  assert.deepEqual(touched, [], 'nothing of the run was made');
  assert.deepEqual(await gen.next(), { done: true, value: undefined }, 'and it stays closed');
  assert.deepEqual(touched, []);
  const thrown = streamRun(deps(touched), { message: 'hi' });
  await assert.rejects(thrown.throw(new Error('stop')), /stop/);
  assert.deepEqual(await thrown.next(), { done: true, value: undefined });
  assert.deepEqual(touched, [], 'nor after a throw()');
});

test('S1: a stream is an async generator of the run: events in order, the result as its return value, iterable with for await', async () => {
  const touched: string[] = [];
  const gen = streamRun(deps(touched), { message: 'hi' });
  assert.equal(gen[Symbol.asyncIterator](), gen);
  // Two next() calls asked at once are answered in order.
  const [a, b] = await Promise.all([gen.next(), gen.next()]);
  assert.equal(!a.done && a.value.type, 'run_started');
  assert.equal(!b.done && b.value.type, 'model_request');
  const seen: LoopEvent['type'][] = [];
  for await (const e of gen) seen.push(e.type);
  assert.deepEqual(seen, ['text_delta', 'assistant', 'run_finished']);
  const r = await collect(streamRun(deps(touched), { message: 'hi' }));
  assert.equal(r.status, 'done');
  assert.equal(r.answer, 'hello');
});

test('S1: a stream whose leg cannot be opened rejects its first next() with the reason, then is over', async () => {
  const gen = streamResume(deps([]), 'run_missing', { text: 'yes' });
  await assert.rejects(gen.next(), /no store/);
  assert.deepEqual(await gen.next(), { done: true, value: undefined });
});

test('S1: a consumer that stops after the first event closes the run’s own generator (its finally blocks run)', async () => {
  const touched: string[] = [];
  const gen = streamRun(deps(touched), { message: 'hi' });
  for await (const e of gen) {
    assert.equal(e.type, 'run_started');
    break;
  }
  assert.deepEqual(await gen.next(), { done: true, value: undefined }, 'the leg is closed, not left mid-run');
});
