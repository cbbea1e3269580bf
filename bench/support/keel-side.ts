/** Keel's side of the loop bench: a registry of N read tools, a zero-latency scripted model, one run. */

import type { EngineDeps } from '../../src/loop/engine.js';
import { collect, streamRun } from '../../src/loop/legs.js';
import type { ModelClient, ModelEvent, ModelRequest } from '../../src/models/types.js';
import type { Registry } from '../../src/plugin-host/host.js';
import { askUser } from '../../src/tools/builtins.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { ToolCall, ToolSpec } from '../../src/types/index.js';
import { benchTools, REQUEST, type ScriptedReply, toolOutput } from './conversation.js';
import { type Meter, now } from './timing.js';

/** The registry shape host.ts builds, without plugin folders: ask_user plus the N bench tools. */
export function benchRegistry(count: number, tools: Meter): Registry {
  const specs: ToolSpec[] = benchTools(count).map((t) =>
    makeToolSpec(
      {
        ...t,
        execute: (args) => tools.time(() => toolOutput(t.name, args)),
      },
      'bench',
    ),
  );
  const pool = [askUser, ...specs];
  return {
    plugins: [],
    pool,
    byName: new Map(pool.map((t) => [t.name, t])),
    hooks: { onToolCall: [], onToolResult: [] },
    chargeFailure() {},
    async close() {},
  };
}

/**
 * Replays the scripted replies with no latency at all: each reply's events are built before the run,
 * and the iterator hands them out one `next()` at a time. The time inside `next()` is the model's.
 */
export class ReplayModel implements ModelClient {
  readonly spec = 'bench:replay';
  private readonly events: ModelEvent[][];

  constructor(
    replies: readonly ScriptedReply[],
    private readonly meter: Meter,
  ) {
    this.events = replies.map((r) => {
      if (r.kind === 'text') {
        return [
          { type: 'text_delta', text: r.text },
          { type: 'done', reply: { text: r.text, tool_calls: [], usage: { input: 0, output: 0 } } },
        ];
      }
      const call: ToolCall = { id: r.call.id, name: r.call.name, args: { ...r.call.args } };
      return [
        { type: 'tool_call', call },
        { type: 'done', reply: { text: '', tool_calls: [call], usage: { input: 0, output: 0 } } },
      ];
    });
  }

  stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    const meter = this.meter;
    const t0 = now();
    const evs = this.events[req.seq];
    if (!evs) throw new Error(`replay ran out at model call ${req.seq + 1}`);
    let i = 0;
    meter.ms += now() - t0;
    return {
      [Symbol.asyncIterator]: () => ({
        next: () => {
          const t = now();
          const r: IteratorResult<ModelEvent> = i < evs.length ? { value: evs[i++], done: false } : { value: undefined, done: true };
          const p = Promise.resolve(r);
          meter.ms += now() - t;
          return p;
        },
      }),
    };
  }
}

/** One run, start to final answer. Throws when the run did not end the way the script says. */
export async function runKeelOnce(deps: EngineDeps, steps: number): Promise<void> {
  const result = await collect(streamRun(deps, { message: REQUEST }));
  if (result.status !== 'done' || result.reason !== 'final_answer' || result.model_calls !== steps) {
    throw new Error(`keel run ended ${result.status}/${result.reason} after ${result.model_calls} model calls: ${result.answer}`);
  }
  if (result.steps.some((s) => s.outcome !== 'ran')) throw new Error(`keel: a call did not run: ${JSON.stringify(result.steps)}`);
}
