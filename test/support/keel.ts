import { rmSync } from 'node:fs';
import { Keel, type KeelOptions } from '../../src/keel/keel.js';
import type { ScriptEntry } from '../../src/models/script.js';
import type { Answer, LoopEvent, Mode, RunResult } from '../../src/types/index.js';
import { FIXTURES, script, tempHome } from './helpers.js';

/** A Keel on a fresh temp home with the fixture plugins, driven by a scripted model. */
export class Harness {
  readonly home = tempHome();
  keel: Keel;
  model: string;
  events: LoopEvent[] = [];

  constructor(
    entries: ScriptEntry[],
    readonly opts: KeelOptions & { pluginDirs?: string[] } = {},
  ) {
    this.model = script(this.home, entries);
    this.keel = new Keel({ home: this.home, ...opts });
  }

  run(message: string, mode: Mode = 'agent'): Promise<RunResult> {
    return this.keel.run(message, { model: this.model, pluginDirs: this.opts.pluginDirs ?? [FIXTURES], mode }, (e) => this.events.push(e));
  }

  /** Resumes as a new process would: a new Keel over the same home. */
  async resume(runId: string, answer: string | Answer): Promise<RunResult> {
    await this.keel.close();
    this.keel = new Keel({ home: this.home, ...this.opts });
    return this.keel.answer(runId, answer, { onEvent: (e) => this.events.push(e) });
  }

  async close(): Promise<void> {
    await this.keel.close();
    rmSync(this.home, { recursive: true, force: true });
  }
}

/** Every tool call the model made has exactly one result with its id, in call order (R19, R22). */
export function assertPaired(messages: { role: string; tool_calls?: { id: string }[]; call_id?: string }[]): void {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== 'assistant' || !m.tool_calls?.length) continue;
    const ids = m.tool_calls.map((c) => c.id);
    const results = messages.slice(i + 1, i + 1 + ids.length).map((r) => (r.role === 'tool' ? r.call_id : `<${r.role}>`));
    if (JSON.stringify(results) !== JSON.stringify(ids)) {
      throw new Error(`tool results ${JSON.stringify(results)} do not answer calls ${JSON.stringify(ids)} in order`);
    }
  }
}
