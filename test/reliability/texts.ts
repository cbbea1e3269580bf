/**
 * The text campaign (issue 27): text no store can hold as it stands — lone UTF-16 surrogates, NUL,
 * bidi controls, 1 MB texts, and an emoji at every cut point of KEEL_MAX_RESULT_CHARS — as the
 * request, the model's text, a call's arguments (values and keys), a tool's output, a question and
 * the user's answer, through the real Keel on each store it is given (SQLite and PostgreSQL).
 *
 * Invariants checked after each case (a broken one is a violation, with the case to replay it):
 * no save fails (no exception escapes, no run is left running or failed); the run ends done with
 * the model's last text as its answer, made storable; what the store holds of the run and its
 * journal has no NUL and no lone surrogate, and reads back the same from both stores; a text that
 * needed replacing is noted; a cut output keeps at most KEEL_MAX_RESULT_CHARS code units and never
 * half an emoji.
 */
import { rmSync } from 'node:fs';
import { Keel } from '../../src/keel/keel.js';
import type { ModelClient, ModelEvent } from '../../src/models/types.js';
import { defineTool } from '../../src/tools/define.js';
import type { Store } from '../../src/types/index.js';
import { canonicalJson } from '../../src/util/json.js';
import { storableText } from '../../src/util/text.js';
import { tempHome } from '../support/helpers.js';

/** KEEL_MAX_RESULT_CHARS for the campaign: small, so every cut point is tried. */
export const CUT = 24;
const EMOJI = '😀';

/** The pieces texts are made of: the hostile ones and ordinary ones around them. */
const ATOMS = [
  '\uD800',
  '\uDBFF',
  '\uDC00',
  '\uDFFF',
  '\u0000',
  '\u202E',
  '\u2066',
  '\u2069',
  '\u200F',
  '\u061C',
  EMOJI,
  'é',
  'a',
  ' ',
  '\n',
  '"',
  '\\',
];

/** A small seeded generator, so a violation names the case that replays it. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

function hostile(r: () => number, n = 1 + Math.floor(r() * 12)): string {
  let out = '';
  for (let i = 0; i < n; i++) out += ATOMS[Math.floor(r() * ATOMS.length)];
  return out;
}

export interface TextCase {
  n: number;
  request: string;
  text: string;
  arg: string;
  key: string;
  output: string;
  question: string;
  answer: string;
  final: string;
}

/** The cases: an emoji at every cut point of the output, then generated ones, a few of them 1 MB. */
export function textCases(count: number, seed: number): TextCase[] {
  const r = rng(seed);
  const cases: TextCase[] = [];
  const big = (s: string) => `${'x'.repeat(1_000_000)}${s}`;
  for (let n = 0; n < count; n++) {
    const c: TextCase = {
      n,
      request: `do it ${hostile(r)}`,
      text: hostile(r),
      arg: hostile(r),
      key: `k${hostile(r, 2)}`,
      output: hostile(r, 40),
      question: `which one? ${hostile(r)}`,
      answer: `this ${hostile(r)}`,
      final: `done ${hostile(r)}`,
    };
    // Every cut point: the emoji starts at each offset from before the cut to after it.
    if (n <= CUT + 1) c.output = `${'a'.repeat(n)}${EMOJI}${'b'.repeat(CUT)}`;
    // Three 1 MB cases (each text of the run; the arguments at 200,000 characters, under their bound).
    if (n === CUT + 2) Object.assign(c, { request: big(c.request), text: big(c.text), question: `${'q'.repeat(200_000)}${c.question}` });
    if (n === CUT + 3) Object.assign(c, { answer: big(c.answer), final: big(c.final), arg: `${'y'.repeat(200_000)}${c.arg}` });
    if (n === CUT + 4) c.output = big(c.output);
    cases.push(c);
  }
  return cases;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what this looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The first string in `v` that no store can hold, with where it is. */
function findUnstorable(v: unknown, path = ''): string | undefined {
  if (typeof v === 'string') return UNSTORABLE.test(v) ? path : undefined;
  if (v === null || typeof v !== 'object') return undefined;
  for (const [k, x] of Object.entries(v)) {
    if (UNSTORABLE.test(k)) return `${path}.<key>`;
    const found = findUnstorable(x, `${path}.${k}`);
    if (found) return found;
  }
  return undefined;
}

function scripted(c: TextCase): ModelClient {
  const replies = [
    { text: c.text, tool_calls: [{ id: 'c1', name: 'echo', args: { s: c.arg, [c.key]: c.arg, n: c.n } }] },
    { text: '', tool_calls: [{ id: 'c2', name: 'ask_user', args: { question: c.question } }] },
    { text: c.final, tool_calls: [] },
  ];
  return {
    spec: 'fuzz:texts',
    async *stream(req): AsyncIterable<ModelEvent> {
      const reply = replies[req.seq];
      if (!reply) throw new Error(`case ${c.n}: no reply ${req.seq}`);
      yield { type: 'done', reply };
    },
  };
}

export interface TextReport {
  stores: string[];
  cases: number;
  runs: number;
  replaced_runs: number;
  save_failures: number;
  ms: number;
  seed: number;
  violations: string[];
}

/** Runs `count` cases through Keel on each store; the stores are closed by the caller. */
export async function textCampaign(stores: { name: string; store: Store }[], count = 40, seed = 27): Promise<TextReport> {
  const t0 = performance.now();
  const cases = textCases(count, seed);
  const violations: string[] = [];
  let runs = 0;
  let replacedRuns = 0;
  let saveFailures = 0;
  const outputs = new Map<number, string>();
  for (const c of cases) outputs.set(c.n, c.output);
  const echo = defineTool({
    name: 'echo',
    description: 'Echoes.',
    effect: 'read',
    parameters: { type: 'object', properties: { s: { type: 'string' }, n: { type: 'integer' } }, required: ['s', 'n'] } as const,
    execute: (a) => outputs.get(a.n) ?? '',
  });
  const held: Record<string, unknown[]> = {};
  for (const { name, store } of stores) {
    const home = tempHome('keel-texts-');
    const keel = new Keel({
      home,
      store: unclosed(store),
      tools: [echo],
      env: { ...process.env, KEEL_MAX_RESULT_CHARS: String(CUT), KEEL_COUNT_TOKENS: '0', KEEL_PLUGINS: '', KEEL_CONFIRM_ONCE_TOOLS: '' },
    });
    held[name] = [];
    try {
      for (const c of cases) {
        const where = `${name} case ${c.n} (seed ${seed})`;
        const model = scripted(c);
        runs++;
        try {
          const first = await keel.run(c.request, { model });
          if (first.status !== 'paused' || first.reason !== 'awaiting_user_input') {
            violations.push(`${where}: the run did not pause for its question (${first.status} ${first.reason})`);
            continue;
          }
          const done = await keel.answer(first.run_id, c.answer, { model });
          if (done.status !== 'done') {
            violations.push(`${where}: the run ended ${done.status} (${done.reason}) instead of done`);
            if (done.reason === 'store_error') saveFailures++;
            continue;
          }
          if (done.answer !== storableText(c.final).text) violations.push(`${where}: the answer is not the model's text made storable`);
          const stored = await store.loadRun(first.run_id);
          const journal = await store.listEvents({ run_id: first.run_id });
          const bad = findUnstorable(stored, 'run') ?? findUnstorable(journal, 'journal');
          if (bad) violations.push(`${where}: ${bad} holds text no store can hold`);
          const hostileIn = [c.request, c.text, c.arg, c.key, c.question, c.answer, c.final].some((s) => UNSTORABLE.test(s));
          const noted = stored?.notes.some((x) => x.includes('U+FFFD'));
          if (hostileIn && !noted) violations.push(`${where}: text was replaced but the run does not note it`);
          if (noted) replacedRuns++;
          const result = stored?.messages.find((m) => m.role === 'tool' && m.call_id === 'c1');
          const kept = result?.role === 'tool' ? result.content.split('\n[… cut by Keel')[0] : '';
          if (c.output.length > CUT && kept.length > CUT) violations.push(`${where}: the cut output keeps ${kept.length} code units`);
          held[name].push(normalize(stored, journal));
        } catch (err) {
          saveFailures++;
          violations.push(`${where}: ${(err as Error).stack?.split('\n').slice(0, 3).join(' ') ?? String(err)}`);
        }
      }
    } finally {
      await keel.close();
      rmSync(home, { recursive: true, force: true });
    }
  }
  // Both stores hold the same text: what one reads back, the other does too.
  const names = Object.keys(held);
  for (let i = 1; i < names.length; i++) {
    const a = held[names[0]];
    const b = held[names[i]];
    for (let k = 0; k < Math.min(a.length, b.length); k++) {
      // Key order is the store's (JSONB sorts keys): compared canonically.
      const x = canonicalJson(a[k]);
      const y = canonicalJson(b[k]);
      if (x !== y) {
        let d = 0;
        while (d < x.length && x[d] === y[d]) d++;
        violations.push(
          `${names[0]} and ${names[i]} read back case ${k} differently, from …${x.slice(Math.max(0, d - 60), d + 60)}… / …${y.slice(Math.max(0, d - 60), d + 60)}…`,
        );
      }
    }
  }
  return {
    stores: names,
    cases: cases.length,
    runs,
    replaced_runs: replacedRuns,
    save_failures: saveFailures,
    ms: Math.round(performance.now() - t0),
    seed,
    violations,
  };
}

/** What is compared across stores: the texts, without ids and times that differ by nature. */
function normalize(run: unknown, journal: { event: unknown }[]): unknown {
  const r = run as { messages: unknown; steps: unknown; notes: unknown; answer: unknown; request: unknown; pause: unknown };
  return {
    request: r.request,
    answer: r.answer,
    messages: r.messages,
    steps: r.steps,
    notes: r.notes,
    events: journal.map((e) => strip(e.event)),
  };
}

function strip(e: unknown): unknown {
  return JSON.parse(JSON.stringify(e, (k, v) => (['run_id', 'session_id', 'approval_id', 'at', 'id'].includes(k) ? undefined : v)));
}

/** The store as Keel gets it: closing the Keel leaves it open (the caller closes it). */
function unclosed(store: Store): Store {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'close') return async () => {};
      const v = Reflect.get(target, key, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
