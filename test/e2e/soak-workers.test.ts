/**
 * #15 soak on PostgreSQL: 200 scripted runs — questions, approval cards and plan mode — through one
 * `keel serve` and three `keel worker` processes, one of which is killed (-9) and started again every
 * few seconds. At the end no run is lost (every one finished), no card is lost (every one answered
 * and its run carried on), and no approved call ran twice (counted by the fixture tool's own log).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { calls, script } from '../support/helpers.js';
import { dropSchemas } from '../support/pg.js';
import { pgDeployment, startKeelWorker, type WorkerProcess } from '../support/workers.js';

after(() => dropSchemas());
const RUNS = 200;
const DONE = { delay_ms: 400, text: 'Done.' };

/** Every worker started, killed ones too: their logs explain a run left behind. */
const started: WorkerProcess[] = [];
async function startWorker(env: Record<string, string>) {
  const w = await startKeelWorker(env, 4);
  started.push(w);
  return w.child;
}

test('#15 soak: 200 runs (questions, cards, plan mode) across 3 workers, one killed and restarted every few seconds: 0 runs lost, 0 cards lost, 0 duplicate executions', async (t) => {
  const { home, env, store, api } = await pgDeployment(t, 'keel-soak-', { KEEL_LEASE_MS: '1500', KEEL_PLUGINS: '' });

  const models = {
    question: script(
      home,
      [{ delay_ms: 400, tool_calls: [{ id: 'q1', name: 'ask_user', args: { question: 'Which folder?' } }] }, DONE, DONE, DONE] as never,
      'q.yaml',
    ),
    card: script(
      home,
      [{ delay_ms: 400, tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, DONE, DONE, DONE] as never,
      'a.yaml',
    ),
    plan: script(
      home,
      [
        { delay_ms: 400, tool_calls: [{ id: 'p1', name: 'submit_plan', args: { summary: 'look first', steps: ['search the inbox'] } }] },
        { delay_ms: 400, tool_calls: [{ id: 's1', name: 'search_inbox', args: { query: 'deals' } }] },
        DONE,
        DONE,
        DONE,
      ] as never,
      'p.yaml',
    ),
  };
  const kinds = ['question', 'card', 'plan'] as const;
  // Each request names what its script calls, so the tool is on that request's menu (the scripted model refuses an undeclared call, P2).

  const workers = [await startWorker(env), await startWorker(env), await startWorker(env)];
  const ids: { id: string; kind: (typeof kinds)[number] }[] = [];
  for (let i = 0; i < RUNS; i++) {
    const kind = kinds[i % 3];
    const r = await api('POST', '/v1/runs', {
      request: `soak ${i}: trash the email from the inbox`,
      model: models[kind],
      ...(kind === 'plan' ? { mode: 'plan' } : {}),
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    ids.push({ id: r.body.run_id, kind });
  }

  // One worker is killed and started again every few seconds, while the runs go on.
  let kills = 0;
  let next = 0;
  let stopKilling = false;
  const killer = (async () => {
    while (!stopKilling) {
      await new Promise((r) => setTimeout(r, 1500));
      if (stopKilling) break;
      const k = next++ % workers.length;
      workers[k].kill('SIGKILL');
      kills++;
      workers[k] = await startWorker(env);
    }
  })();

  // Answer what waits: questions through the API, cards approved through the API.
  const deadline = Date.now() + 300_000;
  let finished = 0;
  while (Date.now() < deadline) {
    const paused = await store.listRuns({ status: 'paused', limit: 500 });
    for (const p of paused) {
      const run = await store.loadRun(p.id);
      if (run?.status !== 'paused' || !run.pause) continue;
      if (run.pause.kind === 'ask_user') await api('POST', `/v1/runs/${run.id}/answer`, { text: 'Promotions' });
      else if (run.pause.kind === 'approval') await api('POST', `/v1/approvals/${run.pause.approval_id}`, { decision: 'approve' });
      else await api('POST', `/v1/runs/${run.id}/continue`);
    }
    const counts = await Promise.all(
      ['done', 'failed'].map(async (status) => (await store.listRuns({ status: status as 'done', limit: 1000 })).length),
    );
    finished = counts[0] + counts[1];
    if (finished === RUNS) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  stopKilling = true;
  await killer;
  assert.ok(kills >= 3, `workers were killed while the runs went on (${kills})`);

  const runs = await Promise.all(ids.map(async ({ id }) => store.loadRun(id)));
  assert.equal(runs.filter((r) => r === undefined).length, 0, '0 runs lost: every run is in the store');
  const notDone = runs.filter((r) => r?.status !== 'done').map((r) => `${r?.id} ${r?.status} ${r?.reason} (held by ${r?.owner})`);
  const logs = notDone.length
    ? started.flatMap((w) =>
        w
          .err()
          .split('\n')
          .filter((l) => notDone.some((n) => l.includes(n.split(' ')[0])))
          .map((l) => `${w.owner}: ${l}`),
      )
    : [];
  assert.deepEqual(notDone, [], `every run finished; the workers said of those that did not:\n${logs.join('\n')}`);
  const cards = await store.listApprovals();
  const byRun = (id: string) => runs.find((r) => r?.id === id);
  const unanswered = cards
    .filter((a) => a.status !== 'approved')
    .map((a) => {
      const r = byRun(a.run_id);
      return `${a.id} ${a.status} run ${a.run_id} pause_seq ${a.pause_seq} (the run: ${r?.status} ${r?.reason}, pause_seq ${r?.pause_seq}, its cards ${cards
        .filter((c) => c.run_id === a.run_id)
        .map((c) => `${c.id}@${c.pause_seq} ${c.status}`)
        .join(', ')})`;
    });
  assert.deepEqual(unanswered, [], '0 cards lost: every card was answered');
  // One card per card and plan run; a run without one says what it did instead.
  const byId = new Map(runs.map((r) => [r?.id, r]));
  const proposals = ids.filter((x) => x.kind !== 'question');
  const cardless = proposals
    .filter((x) => !cards.some((a) => a.run_id === x.id))
    .map((x) => {
      const r = byId.get(x.id);
      const steps = r?.steps.map((st) => `${st.call_id} ${st.tool} ${st.outcome}: ${st.result.slice(0, 100)}`).join('; ');
      return `${x.id} (${x.kind}) ${r?.status} ${r?.reason} model_calls=${r?.model_calls} steps=[${steps}] notes=${JSON.stringify(r?.notes)}`;
    });
  assert.deepEqual(cardless, [], 'one card per card and plan run');
  assert.equal(cards.length, proposals.length, 'and no more');
  const cardRuns = ids.filter((x) => x.kind === 'card').length;

  // Exactly-once: each approved trash call ran at most once; one that never finished is reported as of unknown outcome.
  const trashed = calls(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')).length;
  const unknown = runs.filter((r) =>
    r?.steps.some((s) => s.tool === 'trash_email' && /outcome of trash_email is unknown/.test(s.result)),
  ).length;
  assert.ok(trashed <= cardRuns, `0 duplicate executions: ${trashed} trash calls for ${cardRuns} approved cards`);
  assert.ok(
    trashed + unknown >= cardRuns,
    `every approved call ran or is reported as of unknown outcome (${trashed} ran, ${unknown} unknown)`,
  );
  for (const w of workers) w.kill('SIGTERM');
  const takenOver = runs.filter((r) => r?.notes.some((n) => n.startsWith('taken over') || n.includes('the question is open again'))).length;
  process.stderr.write(
    `soak: ${RUNS} runs, ${kills} workers killed, ${takenOver} runs taken over, ${trashed} approved calls ran, ${unknown} reported as of unknown outcome\n`,
  );
});
