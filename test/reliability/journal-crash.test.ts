/**
 * Issue 29 (S5): a step's last result, its save and the next request's event are one write. A
 * process killed (as by kill -9) just before any save of a run, or just after it, and the run then
 * carried on with `keel resume`, loses neither an event a client may have seen nor a step: every
 * call of the run has exactly one tool_result in the journal — the one the run's trace keeps —
 * nothing is repeated, the ids grow, and every model request of the trace has its event. On SQLite
 * and PostgreSQL, through the real CLI.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/types/index.js';
import { type CliResult, FIXTURES, keel, script, tempHome } from '../support/helpers.js';
import { dropSchemas } from '../support/pg.js';
import { PROCESS_STORES } from '../support/stores.js';

after(() => dropSchemas());

/**
 * Kills a fresh `keel run` (its ARGS, on a new home and the store `kind`) at each pass of each
 * point, one kill a trial, until a run no longer reaches the nth pass: `ended` checks that run,
 * `check` each killed one, given its store and the run it left. Returns the trials checked.
 */
async function killEverywhere(
  kind: (typeof PROCESS_STORES)[number],
  steps: unknown[],
  args: string[],
  ended: (r: CliResult) => void,
  check: (at: string, store: Store, runId: string, env: Record<string, string>) => Promise<void>,
): Promise<string[]> {
  const trials: string[] = [];
  for (const point of ['before_save', 'save']) {
    for (let n = 1; ; n++) {
      const home = tempHome('keel-journal-crash-');
      try {
        const env: Record<string, string> = { KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', ...(await kind.env()) };
        const model = script(home, steps as never);
        const r = await keel(['run', '--json', '--model', model, ...args], { ...env, KEEL_TEST_CRASH_AT: `${point}:${n}` });
        if (r.signal !== 'SIGKILL') {
          ended(r);
          break; // this point is passed fewer than n times in a run
        }
        const store: Store = env.KEEL_STORE ? new PostgresStore(env.KEEL_STORE) : new SqliteStore(join(home, 'keel.db'));
        try {
          const runId = (await store.listRuns({ limit: 1 }))[0]?.id;
          if (!runId) continue; // killed before the run was stored: nothing to carry on
          await check(`${point}:${n}`, store, runId, env);
          trials.push(`${point}:${n}`);
        } finally {
          await store.close();
        }
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    }
  }
  return trials;
}

const day = (i: number) => `2026-03-0${i}`;
/** Three steps of one read each (a different day each), then the answer. */
const SCRIPT = [
  ...[1, 2, 3].map((i) => ({ tool_calls: [{ id: `c${i}`, name: 'calendar_lookup', args: { day: day(i) } }] })),
  { text: 'Three days looked up.' },
];

for (const kind of PROCESS_STORES) {
  test(`S5/#29 (${kind.name}): killed before or after any save, then resumed — each call has one tool_result in the journal, the trace's; ids grow; every request has its event`, async () => {
    const trials = await killEverywhere(
      kind,
      SCRIPT,
      ['--plugins', join(FIXTURES, 'calendar'), 'look up three days'],
      (r) => assert.equal(r.code, 0, r.stderr),
      async (at, store, runId, env) => {
        const before = await store.loadRun(runId);
        if (before?.status === 'running') {
          const resumed = await keel(['resume', runId], { ...env });
          assert.ok(resumed.code === 0 || resumed.code === 1, `${at}: resume exited ${resumed.code}: ${resumed.stderr}`);
        }
        const run = await store.loadRun(runId);
        assert.ok(run && (run.status === 'done' || run.status === 'failed'), `${at}: the run ended`);
        const events = await store.listEvents({ run_id: runId });
        const ids = events.map((e) => e.id);
        assert.deepEqual(
          ids,
          [...ids].sort((x, y) => x - y),
          `${at}: ids grow`,
        );
        const results = events.flatMap((e) => (e.event.type === 'tool_result' ? [e.event.record] : []));
        for (const step of run.steps) {
          const shown = results.filter((x) => x.call_id === step.call_id);
          assert.equal(
            shown.length,
            1,
            `${at}: ${step.call_id} has ${shown.length} tool_result events (${shown.map((x) => x.outcome).join(', ')})`,
          );
          assert.equal(shown[0].outcome, step.outcome, `${at}: ${step.call_id}: the journal shows what the trace keeps`);
        }
        assert.equal(results.length, run.steps.length, `${at}: no tool_result without its step in the trace`);
        const requests = events.filter((e) => e.event.type === 'model_request').length;
        assert.ok(requests >= run.requests.length, `${at}: ${requests} request events for ${run.requests.length} requests`);
      },
    );
    assert.ok(trials.length >= 6, `killed and checked at ${trials.join(', ')}`);
  });
}

/** A read, then a destructive call that waits for its card, then the answer. */
const CARD_SCRIPT = [
  { tool_calls: [{ id: 's1', name: 'search_inbox', args: { query: 'promotions' } }] },
  { tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] },
  { text: 'Trashed it.' },
];

for (const kind of PROCESS_STORES) {
  test(`A1/S5 (${kind.name}): killed before or after any save of a run that pauses for a card — a card is never stored without its run paused on it; carried on, the run has one card, answered, and the call ran once`, async () => {
    const trials = await killEverywhere(
      kind,
      CARD_SCRIPT,
      ['--plugins', join(FIXTURES, 'mail'), 'trash the promotions'],
      (r) => assert.equal(r.code, 3, `paused for the card: ${r.stderr}`),
      async (at, store, runId, env) => {
        // Right after the kill: a card only with its run paused on it.
        const killed = await store.loadRun(runId);
        for (const a of await store.listApprovals({ run_id: runId })) {
          assert.ok(
            killed?.status === 'paused' && killed.pause?.kind === 'approval' && killed.pause.approval_id === a.id,
            `${at}: card ${a.id} is stored but the run is ${killed?.status} (${killed?.pause?.kind ?? 'no pause'}): no one could answer it`,
          );
        }
        for (let i = 0; i < 4; i++) {
          const run = await store.loadRun(runId);
          if (run?.status === 'done' || run?.status === 'failed') break;
          const step =
            run?.status === 'paused' && run.pause?.kind === 'approval'
              ? await keel(['approvals', 'approve', run.pause.approval_id], env)
              : await keel(['resume', runId], env);
          assert.ok(step.code === 0 || step.code === 3, `${at}: carrying on exited ${step.code}: ${step.stderr}`);
        }
        const run = await store.loadRun(runId);
        assert.equal(run?.status, 'done', `${at}: the run ended`);
        const cards = await store.listApprovals({ run_id: runId });
        assert.deepEqual(
          cards.map((a) => a.status),
          ['approved'],
          `${at}: one card, answered (${cards.map((a) => `${a.id} ${a.status}`).join(', ')})`,
        );
        assert.equal(run?.steps.filter((x) => x.tool === 'trash_email' && x.outcome === 'ran').length, 1, `${at}: trashed once`);
      },
    );
    assert.ok(trials.length >= 4, `killed and checked at ${trials.join(', ')}`);
  });
}
