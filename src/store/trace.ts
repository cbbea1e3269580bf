/**
 * How a run's trace is laid out in a store, shared by every implementation: a call's result kept
 * once (in its tool message), menus and system prompts content-addressed.
 */
import type { CallRecord, Message, RunEvent, RunState } from '../types/index.js';
import { sha1Hex } from '../util/hash.js';

/**
 * A call's result is stored once: when the tool message that answers the call (the k-th answering its
 * id, for the call's k-th record) holds the same text, the record keeps a reference instead.
 */
export type StepRow = CallRecord & { result_in_message?: true };

function nthAnswer(messages: readonly Message[], callId: string, k: number): string | undefined {
  let seen = 0;
  for (const m of messages) {
    if (m.role === 'tool' && m.call_id === callId && seen++ === k) return m.content;
  }
  return undefined;
}

export function stepRow(run: RunState, seq: number): StepRow {
  const c = run.steps[seq];
  let k = 0;
  for (let i = 0; i < seq; i++) if (run.steps[i].call_id === c.call_id) k++;
  if (c.result !== '' && nthAnswer(run.messages, c.call_id, k) === c.result) return { ...c, result: '', result_in_message: true };
  return c;
}

export function stepsFrom(rows: StepRow[], messages: readonly Message[]): CallRecord[] {
  const seen = new Map<string, number>();
  return rows.map((row) => {
    const k = seen.get(row.call_id) ?? 0;
    seen.set(row.call_id, k + 1);
    if (!row.result_in_message) return row;
    const { result_in_message: _, ...c } = row;
    return { ...c, result: nthAnswer(messages, c.call_id, k) ?? '' };
  });
}

/**
 * The journal's text of an event (SQLite). JSON, except that a request's menu — the same names at
 * every step while it is valid — is kept once, as a content-addressed blob, and named by its key
 * (`tools_blob`); `keep` stores the blob and returns the key. readEvents puts the menu back.
 */
export function eventJson(ev: RunEvent, keep: (b: { body: string; hash: string }) => string): string {
  if (ev.type === 'model_request' && ev.tools) {
    return `{"type":"model_request","step":${ev.step},"declared":${ev.declared},"dropped":${ev.dropped},"tools_blob":"${keep(toolsBlob(ev.tools))}"}`;
  }
  return JSON.stringify(ev);
}

/** The events of a journal row's text (one event, or an array of them), each as it was written. */
export function readEvents(text: string, blob: (hash: string) => string): RunEvent[] {
  const parsed = JSON.parse(text) as RunEvent | RunEvent[];
  const events = Array.isArray(parsed) ? parsed : [parsed];
  for (const ev of events) {
    if (ev.type !== 'model_request') continue;
    const kept = ev as typeof ev & { tools_blob?: string };
    if (kept.tools_blob === undefined) continue;
    ev.tools = JSON.parse(blob(kept.tools_blob));
    delete kept.tools_blob;
  }
  return events;
}

const toolsBlobCache = new WeakMap<object, { body: string; hash: string }>();
/**
 * A menu as a blob: a request's declarations, or a request event's names. The same menu (same array,
 * see the engine's menu memo) is serialised and hashed once per process.
 */
export function toolsBlob(tools: readonly object[]): { body: string; hash: string } {
  let b = toolsBlobCache.get(tools);
  if (!b) {
    const body = JSON.stringify(tools);
    b = { body, hash: contentHash(body) };
    toolsBlobCache.set(tools, b);
  }
  return b;
}

let lastText: string | undefined;
let lastHash = '';
/**
 * Content key for deduplicating trace blobs. A run's steps send the same system prompt (the same
 * string, most often): the last one's key is remembered.
 */
export function contentHash(s: string): string {
  if (s !== lastText) {
    lastHash = sha1Hex(s);
    lastText = s;
  }
  return lastHash;
}
