/**
 * Issue 29 (S5): a step's last result, its save and the next request's event are one write. A
 * process killed (as by kill -9) just before any save of a run, or just after it, and the run then
 * carried on with `keel resume`, loses neither an event a client may have seen nor a step: every
 * call of the run has exactly one tool_result in the journal — the one the run's trace keeps —
 * nothing is repeated, the ids grow, and every model request of the trace has its event. On SQLite
 * and PostgreSQL, through the real CLI.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/types/index.js';
import { FIXTURES, KEEL_BIN, ROOT, script, tempHome } from '../support/helpers.js';
import { dropSchemas } from '../support/pg.js';
import { PROCESS_STORES } from '../support/stores.js';

after(() => dropSchemas());

function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const base = { ...process.env };
  delete base.KEEL_PLUGINS;
  delete base.KEEL_TEST_CRASH_AT;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KEEL_BIN, ...args], {
      cwd: ROOT,
      env: { ...base, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}

const day = (i: number) => `2026-03-0${i}`;
/** Three steps of one read each (a different day each), then the answer. */
const SCRIPT = [
  ...[1, 2, 3].map((i) => ({ tool_calls: [{ id: `c${i}`, name: 'calendar_lookup', args: { day: day(i) } }] })),
  { text: 'Three days looked up.' },
];

for (const kind of PROCESS_STORES) {
  test(`S5/#29 (${kind.name}): killed before or after any save, then resumed — each call has one tool_result in the journal, the trace's; ids grow; every request has its event`, async () => {
    const trials: string[] = [];
    for (const point of ['before_save', 'save']) {
      for (let n = 1; ; n++) {
        const home = tempHome('keel-journal-crash-');
        try {
          const env: Record<string, string> = { KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', ...(await kind.env()) };
          const model = script(home, SCRIPT as never);
          const r = await cli(['run', '--json', '--model', model, '--plugins', join(FIXTURES, 'calendar'), 'look up three days'], {
            ...env,
            KEEL_TEST_CRASH_AT: `${point}:${n}`,
          });
          if (r.signal !== 'SIGKILL') {
            assert.equal(r.code, 0, r.stderr);
            break; // this point is passed fewer than n times in a run
          }
          const store: Store = env.KEEL_STORE ? new PostgresStore(env.KEEL_STORE) : new SqliteStore(join(home, 'keel.db'));
          try {
            const runId = (await store.listRuns({ limit: 1 }))[0]?.id;
            if (!runId) continue; // killed before the run was stored: nothing to carry on
            const before = await store.loadRun(runId);
            if (before?.status === 'running') {
              const resumed = await cli(['resume', runId], { ...env });
              assert.ok(resumed.code === 0 || resumed.code === 1, `${point}:${n}: resume exited ${resumed.code}: ${resumed.stderr}`);
            }
            const run = await store.loadRun(runId);
            assert.ok(run && (run.status === 'done' || run.status === 'failed'), `${point}:${n}: the run ended`);
            const events = await store.listEvents({ run_id: runId });
            const ids = events.map((e) => e.id);
            assert.deepEqual(
              ids,
              [...ids].sort((a, b) => a - b),
              `${point}:${n}: ids grow`,
            );
            const results = events.flatMap((e) => (e.event.type === 'tool_result' ? [e.event.record] : []));
            for (const step of run.steps) {
              const shown = results.filter((x) => x.call_id === step.call_id);
              assert.equal(
                shown.length,
                1,
                `${point}:${n}: ${step.call_id} has ${shown.length} tool_result events (${shown.map((x) => x.outcome).join(', ')})`,
              );
              assert.equal(shown[0].outcome, step.outcome, `${point}:${n}: ${step.call_id}: the journal shows what the trace keeps`);
            }
            assert.equal(results.length, run.steps.length, `${point}:${n}: no tool_result without its step in the trace`);
            const requests = events.filter((e) => e.event.type === 'model_request').length;
            assert.ok(requests >= run.requests.length, `${point}:${n}: ${requests} request events for ${run.requests.length} requests`);
            trials.push(`${point}:${n}`);
          } finally {
            await store.close();
          }
        } finally {
          rmSync(home, { recursive: true, force: true });
        }
      }
    }
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
    const trials: string[] = [];
    for (const point of ['before_save', 'save']) {
      for (let n = 1; ; n++) {
        const home = tempHome('keel-card-crash-');
        try {
          const env: Record<string, string> = { KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', ...(await kind.env()) };
          const model = script(home, CARD_SCRIPT as never);
          const r = await cli(['run', '--json', '--model', model, '--plugins', join(FIXTURES, 'mail'), 'trash the promotions'], {
            ...env,
            KEEL_TEST_CRASH_AT: `${point}:${n}`,
          });
          if (r.signal !== 'SIGKILL') {
            assert.equal(r.code, 3, `paused for the card: ${r.stderr}`);
            break; // this point is passed fewer than n times before the pause
          }
          const store: Store = env.KEEL_STORE ? new PostgresStore(env.KEEL_STORE) : new SqliteStore(join(home, 'keel.db'));
          try {
            const runId = (await store.listRuns({ limit: 1 }))[0]?.id;
            if (!runId) continue;
            // Right after the kill: a card only with its run paused on it.
            const killed = await store.loadRun(runId);
            for (const a of await store.listApprovals({ run_id: runId })) {
              assert.ok(
                killed?.status === 'paused' && killed.pause?.kind === 'approval' && killed.pause.approval_id === a.id,
                `${point}:${n}: card ${a.id} is stored but the run is ${killed?.status} (${killed?.pause?.kind ?? 'no pause'}): no one could answer it`,
              );
            }
            for (let i = 0; i < 4; i++) {
              const run = await store.loadRun(runId);
              if (run?.status === 'done' || run?.status === 'failed') break;
              const step =
                run?.status === 'paused' && run.pause?.kind === 'approval'
                  ? await cli(['approvals', 'approve', run.pause.approval_id], env)
                  : await cli(['resume', runId], env);
              assert.ok(step.code === 0 || step.code === 3, `${point}:${n}: carrying on exited ${step.code}: ${step.stderr}`);
            }
            const run = await store.loadRun(runId);
            assert.equal(run?.status, 'done', `${point}:${n}: the run ended`);
            const cards = await store.listApprovals({ run_id: runId });
            assert.deepEqual(
              cards.map((a) => a.status),
              ['approved'],
              `${point}:${n}: one card, answered (${cards.map((a) => `${a.id} ${a.status}`).join(', ')})`,
            );
            assert.equal(
              run?.steps.filter((x) => x.tool === 'trash_email' && x.outcome === 'ran').length,
              1,
              `${point}:${n}: trashed once`,
            );
            trials.push(`${point}:${n}`);
          } finally {
            await store.close();
          }
        } finally {
          rmSync(home, { recursive: true, force: true });
        }
      }
    }
    assert.ok(trials.length >= 4, `killed and checked at ${trials.join(', ')}`);
  });
}
