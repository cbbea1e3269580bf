/**
 * The run's journal: every event a leg emits (but text deltas) is kept in the store before anyone
 * sees it, in the compact form live clients receive. A client that lost its connection reads what
 * it missed from here, by id, then follows the live events: nothing is lost and nothing repeated.
 */
import type { LoopEvent, Pause, PauseSummary, RunEvent, RunOutcome, RunResult, StoredEvent } from '../types/index.js';
import type { RunWriter } from './run.js';

/**
 * An event as this process journaled it: the row a store read gives back for it (its id, run, time
 * and journal form), and `prev`, the id of the run's event just before it in the journal (0: the
 * run's first event) when its writer knows that no other event of the run lies between — which lets
 * a live stream that already sent `prev` send this one without reading the store (issue 49).
 */
export interface JournaledEvent extends StoredEvent {
  prev?: number;
}

const journaledAs = new WeakMap<LoopEvent, JournaledEvent>();
let kept = false;

/**
 * Asked by a server whose live streams send journaled events without reading them back: from now
 * on this process's run writers say what they journaled each event as. Off by default — an
 * application driving runs through the library has no one to tell.
 */
export function keepJournaled(): void {
  kept = true;
}

/** Whether run writers keep what they journal events as (keepJournaled). */
export const journaledKept = (): boolean => kept;

/** The writer tells what it journaled an event as (once it has its id). */
export function noteJournaled(e: LoopEvent, j: JournaledEvent): void {
  journaledAs.set(e, j);
}

/** What this process journaled `e` as, if it did (a store's event; none for a text delta or without a store). */
export function journaledOf(e: LoopEvent): JournaledEvent | undefined {
  return journaledAs.get(e);
}

/** A menu of at most this many tools is named in the journal. */
const MENU_NAMES = 64;
const menus = new WeakMap<object, { name: string; available: boolean }[]>();

/** The journal's form of an event (none for a text delta: the assistant event carries the whole text). */
export function toRunEvent(e: LoopEvent): RunEvent | undefined {
  switch (e.type) {
    case 'text_delta':
      return undefined;
    case 'run_started':
      return { type: e.type, run_id: e.run_id, session_id: e.session_id, mode: e.mode, request: e.request, resumed: e.resumed };
    case 'model_request': {
      // Counts, and the names of a small menu: a pool of thousands would otherwise weigh on every step.
      const declared = e.tools.length;
      if (declared > MENU_NAMES) return { type: e.type, step: e.step, declared, dropped: e.dropped.length };
      // A menu is the same array across steps and runs while it is valid: summarised once.
      let tools = menus.get(e.tools);
      if (!tools) {
        tools = e.tools.map((t) => ({ name: t.name, available: t.available }));
        menus.set(e.tools, tools);
      }
      return { type: e.type, step: e.step, declared, dropped: e.dropped.length, tools };
    }
    case 'assistant':
      return { type: e.type, step: e.step, text: e.text, tool_calls: e.tool_calls };
    case 'tool_result':
      return { type: e.type, step: e.step, record: e.record };
    case 'paused':
      return { type: e.type, pause: summarizePause(e.pause) };
    case 'run_finished':
      return { type: e.type, result: outcomeOf(e.result) };
  }
}

export function summarizePause(p: Pause): PauseSummary {
  if (p.kind === 'interrupted') return p;
  const { results: _r, calls: _c, ...rest } = p;
  return rest;
}

export function outcomeOf(r: RunResult): RunOutcome {
  const { requests: _q, steps: _s, ...rest } = r;
  return rest;
}

/**
 * Follows a leg, passing each event through `f` on its way out. A consumer that stops early closes
 * the leg too (its timer, its spans, its count of running legs), as does an `f` that fails. Not a
 * generator of its own: each `next()` goes straight to the leg's, and an event `f` passes on as it
 * is costs no promise turn (an async generator's layer cost every event several, at every run).
 */
export function mapEvents(
  gen: AsyncGenerator<LoopEvent, RunResult>,
  f: (e: LoopEvent) => LoopEvent | Promise<LoopEvent>,
): AsyncGenerator<LoopEvent, RunResult> {
  const fail = (err: unknown): Promise<never> =>
    gen.return(undefined as never).then(
      () => Promise.reject(err),
      () => Promise.reject(err),
    );
  const step = (
    n: IteratorResult<LoopEvent, RunResult>,
  ): IteratorResult<LoopEvent, RunResult> | Promise<IteratorResult<LoopEvent, RunResult>> => {
    if (n.done) return n;
    const out = f(n.value);
    if (!(out instanceof Promise)) return out === n.value ? n : { done: false, value: out };
    return out.then((value) => ({ done: false, value }), fail);
  };
  const mapped: AsyncGenerator<LoopEvent, RunResult> = {
    next: (...a) => gen.next(...a).then(step, fail),
    return: (v) => gen.return(v),
    throw: (e) => gen.throw(e),
    [Symbol.asyncIterator]: () => mapped,
  };
  return mapped;
}

/**
 * Keeps each event of a leg in the run's journal before passing it on with its id. An event a save
 * already journaled (it has its id) and a text delta pass straight on.
 */
export function journaled(run: RunWriter, gen: AsyncGenerator<LoopEvent, RunResult>): AsyncGenerator<LoopEvent, RunResult> {
  return mapEvents(gen, (e) =>
    // Each event a leg yields is a new object, passed on once: it takes its id itself.
    e.id !== undefined || e.type === 'text_delta' ? e : run.record(e).then((id) => (id === undefined ? e : Object.assign(e, { id }))),
  );
}
