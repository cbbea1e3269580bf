/**
 * O2: the user's own words, and the values of a call that are not among them. After a run has read
 * words from outside the user, an open-world call (its arguments reach a third party) runs unseen
 * only when every value that could carry data — each string and number, and each key an object's
 * schema does not name — is made of words the user wrote in this session. Pure: no I/O, and never
 * takes a word from a tool's result, the model's text or a plugin (a value from the user's own notes
 * is exactly what must not leave unseen).
 */
import type { CallRecord, JsonSchema, Message, OutsideValue, TaskParent } from '../types/index.js';

export type { OutsideValue };

/** The user's words, as tokens (lower case, NFKC) and as one text (for scripts written without spaces). */
export interface OwnWords {
  readonly tokens: ReadonlySet<string>;
  readonly text: string;
}

/**
 * Words that carry no data of the user's by themselves: a URL's scheme and `www`, and English
 * function words a model adds when it rewords a request as a query ("weather in Lisbon").
 */
const NEUTRAL = new Set(
  'http https www a an the of in on at to for from by with and or about is are be what how when where which who near me my'.split(' '),
);

/** Letters and digits; a run of them is a token. */
const TOKEN = /[\p{L}\p{N}]+/gu;
/** Scripts written without spaces between words: a token of theirs is the user's when it is part of their text. */
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;
/** How much of a value a card quotes. */
const QUOTE = 80;

function normal(text: string): string {
  return text.normalize('NFKC').toLowerCase();
}

/** The user's own words from what they wrote: their requests, answers and edits. */
export function ownWordsOf(texts: Iterable<string>): OwnWords {
  const tokens = new Set<string>();
  const all: string[] = [];
  for (const t of texts) {
    const n = normal(t);
    all.push(n);
    for (const m of n.matchAll(TOKEN)) tokens.add(m[0]);
  }
  return { tokens, text: all.join('\n') };
}

/** Whether one piece of text is made only of the user's words (and neutral ones). */
export function isOwn(text: string, own: OwnWords): boolean {
  for (const m of normal(text).matchAll(TOKEN)) {
    const w = m[0];
    if (own.tokens.has(w) || NEUTRAL.has(w)) continue;
    if (UNSPACED.test(w) && own.text.includes(w)) continue;
    return false;
  }
  return true;
}

function quote(v: string): string {
  return v.length > QUOTE ? `${v.slice(0, QUOTE - 1)}…` : v;
}

function subschema(schema: JsonSchema | undefined, key: string): JsonSchema | undefined {
  const props = schema?.properties as Record<string, JsonSchema> | undefined;
  if (props && Object.hasOwn(props, key)) return props[key];
  const extra = schema?.additionalProperties;
  return extra && typeof extra === 'object' ? (extra as JsonSchema) : undefined;
}

function itemsOf(schema: JsonSchema | undefined): JsonSchema | undefined {
  const items = schema?.items;
  return items && typeof items === 'object' && !Array.isArray(items) ? (items as JsonSchema) : undefined;
}

/** A value the tool's own schema fixes (`enum`, `const`): a choice among the author's words, not the run's data. */
function fixedBySchema(schema: JsonSchema | undefined, v: unknown): boolean {
  if (!schema) return false;
  if (Object.hasOwn(schema, 'const') && schema.const === v) return true;
  return Array.isArray(schema.enum) && schema.enum.includes(v);
}

/**
 * O2: the values of `args` that are not the user's own, in the order met (at most `limit`): each
 * string and finite number the schema does not fix, and each object key the schema does not name.
 * Booleans and null carry no data of their own. Iterative, so no nesting can overflow the stack.
 */
export function outsideValues(args: Record<string, unknown>, schema: JsonSchema | undefined, own: OwnWords, limit = 20): OutsideValue[] {
  const out: OutsideValue[] = [];
  const stack: { v: unknown; path: string; schema: JsonSchema | undefined }[] = [{ v: args, path: '', schema }];
  while (stack.length && out.length < limit) {
    const { v, path, schema: s } = stack.pop() as (typeof stack)[number];
    if (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) {
      if (fixedBySchema(s, v)) continue;
      const text = String(v);
      if (!isOwn(text, own)) out.push({ path: path || '(arguments)', value: quote(text) });
    } else if (Array.isArray(v)) {
      const item = itemsOf(s);
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: `${path}[${i}]`, schema: item });
    } else if (v !== null && typeof v === 'object') {
      const props = s?.properties as Record<string, unknown> | undefined;
      const entries = Object.entries(v as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, x] = entries[i];
        const at = path ? `${path}.${k}` : k;
        stack.push({ v: x, path: at, schema: subschema(s, k) });
        // A key the schema does not name is the model's text too: it can carry data as well as a value.
        if (!(props && Object.hasOwn(props, k))) stack.push({ v: k, path: `${at} (key)`, schema: undefined });
      }
    }
  }
  return out;
}

/** What a run holds of what the user wrote (a RunState's parts). */
export interface WrittenBy {
  messages: readonly Message[];
  steps: readonly CallRecord[];
  parent?: Pick<TaskParent, 'request' | 'depth'>;
}

/** The core's own messages to the model carry this mark: they are not the user's words. */
export const CORE_MESSAGE_MARK = '[Keel]';

/**
 * O2: what the user wrote in this session, from the run's own record: the requests (the session's
 * earlier ones are in its transcript), their answers to `ask_user`, and the values they typed in an
 * edit of a card. A delegate's request is its parent model's words, never the user's: a delegate of a
 * top-level run takes that run's request instead, one deeper none (its own questions' answers only).
 */
export function userTexts(run: WrittenBy): string[] {
  const texts: string[] = [];
  if (run.parent) {
    if (run.parent.depth === 1) texts.push(run.parent.request);
  } else {
    for (const m of run.messages) if (m.role === 'user' && !m.content.startsWith(CORE_MESSAGE_MARK)) texts.push(m.content);
  }
  for (const m of run.messages) if (m.role === 'tool' && m.name === 'ask_user' && !m.is_error) texts.push(m.content);
  for (const r of run.steps) if (r.edited_by && r.args) texts.push(JSON.stringify(r.args));
  return texts;
}
