import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ToolCall } from '../types/index.js';
import type { FileCache } from '../util/file-cache.js';
import { yamlParseCached } from '../util/yaml.js';
import { type AssistantReply, type ModelClient, ModelError, type ModelEvent, type ModelRequest } from './types.js';

/**
 * One scripted reply (P2). Stable format:
 *   - tool_calls: [{ id: c1, name: upcoming_dues, args: { within_days: 15 } }]
 *   - text: "Here is what I found."
 * Extensions for tests: `arguments: "<raw text>"` instead of `args` (malformed JSON, R21),
 * and `error: "message"` (the provider fails).
 */
export interface ScriptEntry {
  text?: string;
  tool_calls?: { id?: string; name: string; args?: Record<string, unknown>; arguments?: string }[];
  error?: string;
  /** Wait this long before replying (a slow model, for timing tests); aborted by the request's signal. */
  delay_ms?: number;
}

/** A script's text → its replies, checked; `cache` remembers the parse across processes (yamlParseCached). */
export function parseScript(text: string, where: string, cache?: FileCache): ScriptEntry[] {
  let data: unknown;
  try {
    data = yamlParseCached(text, cache);
  } catch (err) {
    throw new ModelError(`${where}: the script is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!Array.isArray(data)) throw new ModelError(`${where}: a script is a YAML list of replies (text: or tool_calls:)`);
  data.forEach((e, i) => {
    const at = `${where}: entry ${i + 1}`;
    if (!e || typeof e !== 'object' || Array.isArray(e)) throw new ModelError(`${at} is not a mapping`);
    const unknown = Object.keys(e).filter((k) => !['text', 'tool_calls', 'error', 'delay_ms'].includes(k));
    if (unknown.length) throw new ModelError(`${at} has unknown field(s) ${unknown.join(', ')} (expected text, tool_calls)`);
    if (e.text === undefined && e.tool_calls === undefined && e.error === undefined) {
      throw new ModelError(`${at} has neither text nor tool_calls`);
    }
    if (e.text !== undefined && typeof e.text !== 'string') throw new ModelError(`${at}: text must be a string`);
    if (e.tool_calls !== undefined) {
      if (!Array.isArray(e.tool_calls)) throw new ModelError(`${at}: tool_calls must be a list`);
      for (const c of e.tool_calls) {
        if (!c || typeof c.name !== 'string') throw new ModelError(`${at}: every tool call needs a name`);
      }
    }
  });
  return data as ScriptEntry[];
}

/** Tool-call ids the script leaves out are generated from the position, so they are stable. */
function toReply(entry: ScriptEntry, seq: number): AssistantReply {
  const tool_calls: ToolCall[] = (entry.tool_calls ?? []).map((c, i) => {
    const id = c.id ?? `call_${seq + 1}_${i + 1}`;
    if (c.arguments !== undefined) {
      try {
        const parsed = JSON.parse(c.arguments);
        return { id, name: c.name, args: parsed };
      } catch {
        return { id, name: c.name, raw_args: c.arguments };
      }
    }
    return { id, name: c.name, args: c.args ?? {} };
  });
  return { text: entry.text ?? '', tool_calls, usage: { input: 0, output: 0 } };
}

/** `script:FILE`: replies from a YAML list, one per model call, offline and deterministic. */
/** Scripts read so far, by path, kept while the file is unchanged (a server starts many runs on one). */
const parsed = new Map<string, { mtimeMs: number; size: number; entries: ScriptEntry[] }>();

function readScript(path: string, shown: string, cache: FileCache | undefined): ScriptEntry[] {
  let text: string;
  let st: { mtimeMs: number; size: number };
  try {
    st = statSync(path);
    const hit = parsed.get(path);
    if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.entries;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ModelError(`cannot read script ${shown}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  const entries = parseScript(text, shown, cache);
  if (parsed.size > 256) parsed.clear();
  parsed.set(path, { mtimeMs: st.mtimeMs, size: st.size, entries });
  return entries;
}

export class ScriptModel implements ModelClient {
  readonly spec: string;
  private readonly entries: ScriptEntry[];
  private readonly file: string;

  /** `cache`: where parsed scripts are remembered across processes (none: parsed every time). */
  constructor(file: string, entries?: ScriptEntry[], cache?: FileCache) {
    // Stored with the run as an absolute path: a run continued from another folder finds its script.
    this.file = entries ? file : resolve(file);
    this.spec = `script:${this.file}`;
    this.entries = entries ?? readScript(this.file, file, cache);
  }

  async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    const entry = this.entries[req.seq];
    if (!entry) {
      throw new ModelError(
        `script ${this.file} ran out: model call ${req.seq + 1} was asked for but the script has ${this.entries.length} ${this.entries.length === 1 ? 'entry' : 'entries'}`,
      );
    }
    if (entry.delay_ms) await sleep(entry.delay_ms, req.signal);
    if (entry.error !== undefined) throw new ModelError(entry.error);
    const reply = toReply(entry, req.seq);
    if (reply.text) yield { type: 'text_delta', text: reply.text };
    for (const call of reply.tool_calls) yield { type: 'tool_call', call };
    yield { type: 'done', reply };
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason ?? new Error('aborted'));
    });
  });
}
