/**
 * Issue 47 (D5): `max_total` holds under concurrency. With `subagents.max_total: 2`, four runs whose
 * first reply is a `task`, started at once over `keel serve`'s API, start two delegates, not four: the
 * store counts the delegates' runs not over and inserts the new one atomically (SQLite: under the
 * file's write lock; PostgreSQL: under an advisory lock, here with the server working its own queue).
 * The other two parents are told the limit was reached, in a result they can act on.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { stringify } from 'yaml';
import { script, tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';
import { type TestServer, testServer } from '../support/server.js';

after(() => dropSchemas());

interface RunView {
  run_id: string;
  status: string;
  reason: string | null;
  parent_run?: string | null;
  steps: { call_id: string; tool: string; result: string }[];
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const v = await f();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`D5 (${kind}): four runs started at once whose first reply is a task start no more delegates than max_total (2)`, async (t) => {
    const home = tempHome('keel-delegates-race-');
    writeFileSync(
      join(home, 'config.yaml'),
      stringify({
        subagents: {
          max_total: 2,
          delegates: [
            {
              name: 'cleaner',
              instructions: 'You tidy things up.',
              tools: ['search_inbox'],
              // Slow enough that every parent's task call meets the delegates of the others still running.
              model: script(home, [{ delay_ms: 1500, text: 'Tidied.' }], 'child.yaml'),
            },
          ],
        },
      }),
    );
    const env: Record<string, string> = { KEEL_MAX_CONCURRENT_RUNS: '8' };
    if (kind === 'postgres') Object.assign(env, { KEEL_STORE: withSchema(await testPgUrl(), freshSchema()), KEEL_SERVE_WORK: '1' });
    const s: TestServer = await testServer(env, home);
    t.after(() => s.close());
    const model = script(home, [
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Tidy up.' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'Done.' },
    ]);
    const started = await Promise.all(
      [1, 2, 3, 4].map((i) => s.api('POST', '/v1/runs', { token: s.approver, body: { request: `tidy up ${i}`, model } })),
    );
    for (const r of started) assert.equal(r.status, 202, JSON.stringify(r.body));
    const ids = started.map((r) => r.body.run_id as string);
    // Every parent's task call has its result (a delegate started, or the limit).
    const parents = await until('each task call answered', async () => {
      const runs = await Promise.all(ids.map(async (id) => (await s.api('GET', `/v1/runs/${id}`, { token: s.viewer })).body as RunView));
      return runs.every((r) => r.steps.some((x) => x.call_id === 't')) ? runs : undefined;
    });
    const all = (await s.api('GET', '/v1/runs?limit=50', { token: s.viewer })).body.runs as { run_id: string; parent_run: string | null }[];
    const delegates = all.filter((r) => r.parent_run);
    assert.equal(delegates.length, 2, `delegates started: ${delegates.length}`);
    const refused = parents.filter((r) =>
      /^No task started: 2 delegates are already running in total \(limit 2\)/.test(r.steps.find((x) => x.call_id === 't')?.result ?? ''),
    );
    assert.equal(refused.length, 2, JSON.stringify(parents.map((r) => r.steps.find((x) => x.call_id === 't')?.result)));
    // Everything settles: the delegates end and wake their parents; the refused parents answer without one.
    await until('every run over', async () => {
      const runs = await Promise.all(ids.map(async (id) => (await s.api('GET', `/v1/runs/${id}`, { token: s.viewer })).body as RunView));
      return runs.every((r) => r.status === 'done') ? runs : undefined;
    });
  });
}
