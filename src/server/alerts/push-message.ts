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

/** Every string (and number) in `args`, nested, at most `limit` of them. */
function leaves(v: unknown, out: string[], limit: number, depth = 0): void {
  if (out.length >= limit || depth > 10) return;
  if (typeof v === 'string') out.push(v);
  else if (typeof v === 'number' && Number.isFinite(v)) out.push(String(v));
  else if (Array.isArray(v)) for (const x of v) leaves(x, out, limit, depth + 1);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) leaves(x, out, limit, depth + 1);
}

/** Lower case, one code unit for one (a letter whose lower case is longer is kept): indexes stay the same. */
function fold(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const l = s[i].toLowerCase();
    out += l.length === 1 ? l : s[i];
  }
  return out;
}

/** How many characters of argument text a title is compared with, and how long a title may be. */
const MASK_HAYSTACK = 50_000;
const MASK_TITLE = 1_000;
/** A run of the title this long that also appears in an argument is masked; shorter values only as whole words. */
const MASK_RUN = 4;

/**
 * `title` with the argument text in it replaced by "…": a plugin's card title may quote the call
 * ("Send \"Q3 numbers\" to bob@example.com"), whole or cut or joined otherwise ("Send email to
 * a@x.com, b@y.com" from "a@x.com,b@y.com"), and a push never carries the arguments. Every run of
 * MASK_RUN or more characters that also appears inside an argument value (a string or a number,
 * nested, compared case-insensitively) is masked, and a shorter value of two or three characters
 * where it stands as a whole word. It may mask a word the plugin wrote that an argument happens to
 * hold too: a push says less rather than more.
 */
export function maskArguments(title: string, args: readonly unknown[]): string {
  const values: string[] = [];
  for (const a of args) leaves(a, values, 1000);
  const t = title.slice(0, MASK_TITLE);
  const low = fold(t);
  // NUL between values: no run spans two of them (a title made storable holds no NUL).
  const hay = fold(values.join('\u0000')).slice(0, MASK_HAYSTACK);
  const masked = new Uint8Array(t.length);
  for (let i = 0; i < t.length; ) {
    // The longest run from i found in the arguments (every prefix of a match matches too).
    let lo = 0;
    let hi = t.length - i;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (hay.includes(low.slice(i, i + mid))) lo = mid;
      else hi = mid - 1;
    }
    if (lo >= MASK_RUN) {
      // The spaces around a run stay: "to …", not "to…".
      let from = i;
      let to = i + lo;
      while (from < to && /\s/.test(t[from])) from++;
      while (to > from && /\s/.test(t[to - 1])) to--;
      masked.fill(1, from, to);
      i += lo;
    } else i++;
  }
  for (const v of new Set(values.map((x) => fold(x.trim())))) {
    if (v.length < 2 || v.length >= MASK_RUN) continue;
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
    const title = plainTitle(
      maskArguments(
        pause.card.title,
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
