/**
 * The scripted model (P2): replies read from a YAML file, for deterministic runs. Never answers
 * with a tool the request did not declare, unless the script says so.
 */
import { constants, readFileSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
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
  /**
   * `undeclared: true` marks a call of a tool the request does not declare, made on purpose (R24's
   * admission by name, R21's unknown tool): any other such call is refused, as a grammar-constrained
   * server (llama.cpp) would never produce it.
   */
  tool_calls?: { id?: string; name: string; args?: Record<string, unknown>; arguments?: string; undeclared?: boolean }[];
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

/** A script is a regular file of at most this many bytes (P2): never a FIFO, a device or a folder. */
export const SCRIPT_MAX_BYTES = 16 * 1024 * 1024;

/** Scripts read so far, by path, kept while the file is unchanged (a server starts many runs on one). */
const parsed = new Map<string, { mtimeMs: number; size: number; entries: ScriptEntry[] }>();

function unreadable(shown: string, why: string): ModelError {
  return new ModelError(`cannot read script ${shown}: ${why}`);
}

/** Why a file cannot be a script (not a regular file, too large), or undefined. */
function notAScript(st: { isFile(): boolean; size: number }): string | undefined {
  if (!st.isFile()) return 'not a regular file';
  if (st.size > SCRIPT_MAX_BYTES) return `larger than ${SCRIPT_MAX_BYTES} bytes`;
  return undefined;
}

function remember(path: string, st: { mtimeMs: number; size: number }, text: string, shown: string, cache?: FileCache): ScriptEntry[] {
  const entries = parseScript(text, shown, cache);
  if (parsed.size > 256) parsed.clear();
  parsed.set(path, { mtimeMs: st.mtimeMs, size: st.size, entries });
  return entries;
}

/** A file error in words, not its code ("no such file", not "ENOENT"). */
function errnoWords(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const words: Record<string, string> = {
    ENOENT: 'no such file',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EISDIR: 'a folder, not a file',
    ENOTDIR: 'a part of the path is not a folder',
    ELOOP: 'too many symbolic links',
  };
  return code ? (words[code] ?? code) : String(err);
}

function readScript(path: string, shown: string, cache: FileCache | undefined): ScriptEntry[] {
  let text: string;
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
    const hit = parsed.get(path);
    if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.entries;
    const why = notAScript(st);
    if (why) throw unreadable(shown, why);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof ModelError) throw err;
    throw unreadable(shown, errnoWords(err));
  }
  return remember(path, st, text, shown, cache);
}

/**
 * Reads a script off the event loop (a server reads them while it serves): opened without blocking
 * (a FIFO cannot hold the open), then a regular file of at most SCRIPT_MAX_BYTES, checked on the
 * open file itself, and read only that far.
 */
export async function readScriptAsync(path: string, shown: string, cache?: FileCache): Promise<ScriptEntry[]> {
  // A script read before and unchanged since (a stat never blocks, on a FIFO neither): no open, no
  // read — a server starts hundreds of runs on one script.
  const known = parsed.get(path);
  if (known) {
    let now: ReturnType<typeof statSync> | undefined;
    try {
      now = statSync(path, { throwIfNoEntry: false });
    } catch {
      // read below, which says why in words
    }
    if (now?.isFile() && known.mtimeMs === now.mtimeMs && known.size === now.size) return known.entries;
  }
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const st = await handle.stat();
    const hit = parsed.get(path);
    if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size && st.isFile()) return hit.entries;
    const why = notAScript(st);
    if (why) throw unreadable(shown, why);
    const buf = Buffer.alloc(st.size + 1);
    let got = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, got, buf.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
      if (got > SCRIPT_MAX_BYTES) throw unreadable(shown, `larger than ${SCRIPT_MAX_BYTES} bytes`);
      if (got === buf.length) break;
    }
    if (got > st.size) throw unreadable(shown, 'it changed while it was read');
    return remember(path, st, buf.subarray(0, got).toString('utf8'), shown, cache);
  } catch (err) {
    if (err instanceof ModelError) throw err;
    throw unreadable(shown, errnoWords(err));
  } finally {
    await handle?.close().catch(() => {});
  }
}

/** `script:FILE`: replies from a YAML list, one per model call, offline and deterministic. */

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

  /** The same, read off the event loop (readScriptAsync): how `createModel` opens `script:FILE`. */
  static async open(file: string, cache?: FileCache): Promise<ScriptModel> {
    const path = resolve(file);
    return new ScriptModel(path, await readScriptAsync(path, file, cache));
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
    // P2: a scripted call names a tool this request declares, unless marked `undeclared: true`.
    const missing = (entry.tool_calls ?? []).filter((c) => !c.undeclared && !req.tools.some((t) => t.name === c.name));
    if (missing.length) {
      throw new ModelError(
        `script ${this.file}: entry ${req.seq + 1} calls ${missing.map((c) => c.name).join(', ')}, which model call ${req.seq + 1} does not declare (a real server would not let the model call it; declared: ${req.tools.map((t) => t.name).join(', ') || 'none'}); mark the call undeclared: true if that is the point`,
      );
    }
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
