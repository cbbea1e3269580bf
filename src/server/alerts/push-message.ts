/**
 * What a Web Push says (S7), as JSON `{title, body, url, tag}` encrypted for the browser:
 *   - a card: its title — the plugin's words for the call ("Move 3 email(s) to Trash"), Keel's
 *     "N actions need your approval" for several, the tool's name when the plugin has none — with
 *     every argument value it contains masked as "…", control and bidirectional-override characters
 *     dropped, cut at MAX_TITLE_CHARS; a fixed body; the link `/runs/RUN#card-ID`.
 *   - a question: Keel's fixed words only (the question is the model's text, never sent); the link
 *     `/runs/RUN`.
 * Never the arguments, the card's lines, the request, nor anything a model wrote.
 */
import type { Pause } from '../../types/index.js';
import { storableText, truncate } from '../../util/text.js';

/** The longest title a push carries (a lock screen shows about this much). */
export const MAX_TITLE_CHARS = 120;

export const CARD_BODY = 'Waiting for your approval in Keel.';
export const QUESTION_TITLE = 'A run has a question for you';
export const CONFIRM_TITLE = 'A run waits for your yes or no';
export const QUESTION_BODY = 'Answer it in Keel.';

export interface PushMessage {
  title: string;
  body: string;
  /** A path on the console's origin. */
  url: string;
  /** Notifications with the same tag replace each other. */
  tag: string;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this removes
const UNSHOWN = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;

/** Text for a lock screen: storable, no control or direction-changing characters, spaces collapsed, bounded. */
export function plainTitle(s: string, max = MAX_TITLE_CHARS): string {
  const t = storableText(s).text.replace(UNSHOWN, ' ').replace(/\s+/g, ' ').trim();
  return truncate(t, max);
}

/**
 * Every string (and number) in `args`, nested, all of them: arguments are bounded where they enter a
 * run (1,000,000 characters, 64 levels), and a title may quote any of them. `seen` guards a value
 * reached twice (shared, or a cycle an application built).
 */
function leaves(v: unknown, out: string[], seen: Set<object>): void {
  if (typeof v === 'string') out.push(v);
  else if (typeof v === 'number' && Number.isFinite(v)) out.push(String(v));
  else if (v && typeof v === 'object' && !seen.has(v)) {
    seen.add(v);
    for (const x of Array.isArray(v) ? v : Object.values(v)) leaves(x, out, seen);
  }
}

/** Each UTF-16 code unit's fold, looked up once (0: not yet). */
const FOLDED = new Uint16Array(0x10000);

/** Lower case of one code unit, or itself when its lower case is longer: indexes stay the same. */
function foldUnit(c: number): number {
  if (c < 0x80) return c >= 0x41 && c <= 0x5a ? c + 0x20 : c;
  let f = FOLDED[c];
  if (f === 0) {
    const l = String.fromCharCode(c).toLowerCase();
    f = FOLDED[c] = l.length === 1 ? l.charCodeAt(0) : c;
  }
  return f;
}

function fold(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) out += String.fromCharCode(foldUnit(s.charCodeAt(i)));
  return out;
}

/** How much of a title is looked at (a push shows MAX_TITLE_CHARS of it). */
const MASK_TITLE = 1_000;
/** A run of the title this long that also appears in an argument is masked; shorter values only as whole words. */
const MASK_RUN = 4;

/**
 * The title's runs of MASK_RUN characters (folded) that appear in some value: indexed by their first
 * and last two code units, so every value is read once, character by character, whatever its length
 * and however many values there are — never a search per run, nor a copy of the values.
 */
function runsFound(low: string, values: readonly string[]): boolean[] {
  const found: boolean[] = new Array(Math.max(0, low.length - MASK_RUN + 1)).fill(false);
  const runs = new Map<number, Map<number, number[]>>();
  for (let i = 0; i + MASK_RUN <= low.length; i++) {
    const head = ((low.charCodeAt(i) << 16) | low.charCodeAt(i + 1)) >>> 0;
    const tail = ((low.charCodeAt(i + 2) << 16) | low.charCodeAt(i + 3)) >>> 0;
    let tails = runs.get(head);
    if (!tails) runs.set(head, (tails = new Map()));
    const at = tails.get(tail);
    if (at) at.push(i);
    else tails.set(tail, [i]);
  }
  let left = [...runs.values()].reduce((n, t) => n + t.size, 0);
  for (const v of values) {
    if (left === 0) break;
    // a b c d: the value's last four code units, folded (no run spans two values).
    let a = 0;
    let b = 0;
    let c = 0;
    let d = 0;
    for (let k = 0; k < v.length; k++) {
      a = b;
      b = c;
      c = d;
      d = foldUnit(v.charCodeAt(k));
      if (k < MASK_RUN - 1) continue;
      const tails = runs.get(((a << 16) | b) >>> 0);
      const tail = ((c << 16) | d) >>> 0;
      const at = tails?.get(tail);
      if (!tails || !at) continue;
      for (const i of at) found[i] = true;
      tails.delete(tail);
      if (--left === 0) break;
    }
  }
  return found;
}

/**
 * `title` with the argument text in it replaced by "…": a plugin's card title may quote the call
 * ("Send \"Q3 numbers\" to bob@example.com"), whole or cut or joined otherwise ("Send email to
 * a@x.com, b@y.com" from "a@x.com,b@y.com"), and a push never carries the arguments. Every run of
 * MASK_RUN or more characters whose every MASK_RUN characters also appear inside an argument value
 * (a string or a number, nested, compared case-insensitively) is masked — every value, however long
 * the arguments and wherever the quoted one stands among them — and a shorter value of two or three
 * characters where it stands as a whole word. It may mask a word the plugin wrote that an argument
 * happens to hold too: a push says less rather than more.
 */
export function maskArguments(title: string, args: readonly unknown[]): string {
  const values: string[] = [];
  const seen = new Set<object>();
  for (const a of args) leaves(a, values, seen);
  const t = title.slice(0, MASK_TITLE);
  const low = fold(t);
  const masked = new Uint8Array(t.length);
  runsFound(low, values).forEach((hit, i) => {
    if (hit) masked.fill(1, i, i + MASK_RUN);
  });
  // The spaces around a masked stretch stay: "to …", not "to…".
  for (let i = 0; i < t.length; i++) {
    if (!masked[i] || (i > 0 && masked[i - 1])) continue;
    let to = i;
    while (to < t.length && masked[to]) to++;
    for (let k = i; k < to && /\s/.test(t[k]); k++) masked[k] = 0;
    for (let k = to - 1; k >= i && /\s/.test(t[k]); k--) masked[k] = 0;
    i = to;
  }
  for (const v of new Set(values.filter((x) => x.trim().length < MASK_RUN).map((x) => fold(x.trim())))) {
    if (v.length < 2) continue;
    for (let at = low.indexOf(v); at !== -1; at = low.indexOf(v, at + 1)) {
      const before = low[at - 1] ?? ' ';
      const after = low[at + v.length] ?? ' ';
      if (!/[\p{L}\p{N}]/u.test(before) && !/[\p{L}\p{N}]/u.test(after)) masked.fill(1, at, at + v.length);
    }
  }
  let out = '';
  for (let i = 0; i < t.length; i++) {
    if (!masked[i]) out += t[i];
    else if (!masked[i - 1] || i === 0) out += '…';
  }
  return out;
}

/** What a pause pushes, or undefined when it pushes nothing (an interruption). */
export function pushMessage(runId: string, pause: Pause): PushMessage | undefined {
  const run = encodeURIComponent(runId);
  if (pause.kind === 'approval') {
    // Made plain and cut first, then masked: the mask reads what a lock screen would show, however far
    // into the plugin's title it stood before spaces collapsed and control characters went.
    const title = plainTitle(
      maskArguments(
        plainTitle(pause.card.title),
        pause.items.flatMap((i) => [i.args, i.original_args ?? null]),
      ),
    );
    return {
      // A title left with no word of its own (all of it was argument text) says only what it is.
      title: /[\p{L}\p{N}]/u.test(title) ? title : 'An action needs your approval',
      body: CARD_BODY,
      url: `/runs/${run}#card-${encodeURIComponent(pause.approval_id)}`,
      tag: pause.approval_id.slice(0, 100),
    };
  }
  if (pause.kind === 'ask_user') {
    return {
      title: pause.confirm ? CONFIRM_TITLE : QUESTION_TITLE,
      body: QUESTION_BODY,
      url: `/runs/${run}`,
      tag: `${runId}:${pause.seq}`.slice(0, 100),
    };
  }
  return undefined;
}
