/**
 * bench/a2a: what a task costs `keel serve` over A2A (issue 48) against the same run over the plain
 * HTTP API, measured in the same bench run, on the same server process.
 *
 *   node --import tsx bench/a2a.ts [--runs 200] [--rounds 5] [--concurrency 8] [--warmup 40] [--no-write]
 *
 * One `keel serve` (dist/, as a user runs it: `npm run build` first) on a fresh KEEL_HOME with the
 * fixture plugins, `--allow-model script:`. Two workloads, each on the scripted model with no delay:
 *
 * - answer: one model call, a text answer. API: POST /v1/runs, then the run's SSE stream until
 *   `run_finished`. A2A: the official client's blocking SendMessage, until the task is completed.
 * - card: a destructive call (trash_email) waits on its card, is approved, and the run answers (two
 *   model calls). API: POST /v1/runs, SSE until the pause, POST /v1/approvals/{id}, SSE again until
 *   `run_finished`. A2A: SendMessage (input-required, the card's data part), then SendMessage with
 *   `{ approval, decision: "approve" }` on the task (completed).
 *
 * Each side runs --runs tasks per workload, in --rounds rounds that alternate which side goes first,
 * --concurrency at a time. The server's CPU (utime + stime, /proc/PID/stat) is read around each
 * batch: CPU ms per task, per side, and the ratio A2A / API. The client's CPU (this process) is
 * reported beside it. Every task is checked (completed, with the answer; the card's call ran).
 * Writes bench/results/a2a.json. No wall-clock assertion: figures and ratios.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { stringify } from 'yaml';
import { readSse } from '../src/util/sse.js';
import { a2aClient, a2aMessage, answerOf, asTask, dataOf } from '../test/support/a2a.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const KEEL_BIN = join(ROOT, 'bin', 'keel.js');
const PLUGINS = join(ROOT, 'test', 'fixtures', 'plugins');
const CLK_TCK = 100;

function arg(name: string, fallback: string): number {
  const i = process.argv.indexOf(`--${name}`);
  return Number(i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback);
}
const RUNS = arg('runs', '200');
const ROUNDS = arg('rounds', '5');
const CONCURRENCY = arg('concurrency', '8');
const WARMUP = arg('warmup', '40');
const WRITE = !process.argv.includes('--no-write');

const children = new Set<ChildProcess>();
const dirs = new Set<string>();
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function procCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}
const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function startServe(home: string): Promise<{ url: string; admin: string; child: ChildProcess }> {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('KEEL_')) delete env[k];
  const child = spawn(process.execPath, [KEEL_BIN, 'serve', '--port', '0', '--plugins', PLUGINS, '--allow-model', 'script:'], {
    cwd: ROOT,
    env: { ...env, KEEL_HOME: home, KEEL_COUNT_TOKENS: '0', KEEL_MAX_CONCURRENT_RUNS: String(CONCURRENCY * 2) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  return new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error(`keel serve did not start:\n${out}`)), 30_000);
    child.stdout?.on('data', (d) => {
      out += d;
      const u = /listening on (http:\/\/\S+)/.exec(out);
      const a = /admin token: (\S+)/.exec(out);
      if (u && a) {
        clearTimeout(t);
        res({ url: u[1], admin: a[1], child });
      }
    });
    child.once('exit', (code) => rej(new Error(`keel serve exited ${code}:\n${out}`)));
  });
}

interface Api {
  url: string;
  token: string;
}

async function post(api: Api, path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${api.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** A run's SSE stream read until its `run_finished`; returns that event's result and id. */
async function untilFinished(
  api: Api,
  runId: string,
  after?: string,
): Promise<{ result: { status: string; reason: string; answer?: string; approval?: { id: string } }; id?: string }> {
  const ac = new AbortController();
  const res = await fetch(`${api.url}/v1/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${api.token}`, accept: 'text/event-stream', ...(after ? { 'last-event-id': after } : {}) },
    signal: ac.signal,
  });
  if (!res.body) throw new Error(`no stream for ${runId}: ${res.status}`);
  try {
    for await (const e of readSse(res.body)) {
      if (e.event !== 'run_finished') continue;
      return { result: JSON.parse(e.data).result, id: e.id };
    }
  } finally {
    ac.abort();
  }
  throw new Error(`run ${runId}: the stream ended before run_finished`);
}

type Side = 'api' | 'a2a';
type Workload = 'answer' | 'card';

/** One task of a workload on a side, checked. */
async function task(side: Side, w: Workload, api: Api, client: Client, model: string, i: number): Promise<void> {
  const request = `${w === 'card' ? 'trash email m1' : 'what is on my calendar'} (${i})`;
  if (side === 'a2a') {
    let t = asTask(await client.sendMessage(a2aMessage({ text: request, model })));
    if (w === 'card') {
      if (t.status?.state !== TaskState.TASK_STATE_INPUT_REQUIRED) throw new Error(`a2a ${request}: ${t.status?.state}`);
      const { approval } = dataOf(t.status?.message);
      t = asTask(await client.sendMessage(a2aMessage({ taskId: t.id, data: { approval, decision: 'approve' } })));
    }
    if (t.status?.state !== TaskState.TASK_STATE_COMPLETED || !answerOf(t).length) throw new Error(`a2a ${request}: ${t.status?.state}`);
    return;
  }
  const started = await post(api, '/v1/runs', { request, model });
  if (started.status !== 202) throw new Error(`api ${request}: ${started.status} ${JSON.stringify(started.json)}`);
  const runId = started.json.run_id as string;
  let end = await untilFinished(api, runId);
  if (w === 'card') {
    if (end.result.status !== 'paused' || !end.result.approval) throw new Error(`api ${request}: ${JSON.stringify(end.result)}`);
    const answered = await post(api, `/v1/approvals/${end.result.approval.id}`, { decision: 'approve' });
    if (answered.status !== 200) throw new Error(`api ${request}: ${answered.status}`);
    end = await untilFinished(api, runId, end.id);
  }
  if (end.result.status !== 'done' || !end.result.answer) throw new Error(`api ${request}: ${JSON.stringify(end.result)}`);
}

/** n tasks, `CONCURRENCY` at a time; the server's and this process's CPU over them. */
async function batch(
  side: Side,
  w: Workload,
  n: number,
  ctx: { api: Api; client: Client; model: string; pid: number; next: () => number },
) {
  const cpu0 = procCpuMs(ctx.pid);
  const self0 = selfCpuMs();
  const t0 = performance.now();
  let left = n;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, n) }, async () => {
      while (left > 0) {
        left--;
        await task(side, w, ctx.api, ctx.client, ctx.model, ctx.next());
      }
    }),
  );
  return { server_cpu_ms: procCpuMs(ctx.pid) - cpu0, client_cpu_ms: selfCpuMs() - self0, wall_ms: performance.now() - t0 };
}

const round1 = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

async function main(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-a2a-'));
  dirs.add(home);
  const scripts: Record<Workload, string> = {
    answer: join(home, 'answer.yaml'),
    card: join(home, 'card.yaml'),
  };
  writeFileSync(scripts.answer, stringify([{ text: 'Nothing is on your calendar on Monday.' }]));
  writeFileSync(
    scripts.card,
    stringify([{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1'] } }] }, { text: 'Trashed m1.' }]),
  );
  const srv = await startServe(home);
  const token = JSON.parse(
    await (
      await fetch(`${srv.url}/v1/tokens`, {
        method: 'POST',
        headers: { authorization: `Bearer ${srv.admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bench', role: 'approver' }),
      })
    ).text(),
  ).token as string;
  const api = { url: srv.url, token };
  const client = await a2aClient(srv.url, token);
  let i = 0;
  const pid = srv.child.pid as number;
  const rows = [];
  for (const w of ['answer', 'card'] as Workload[]) {
    const ctx = { api, client, model: `script:${scripts[w]}`, pid, next: () => ++i };
    // Warm-up: both sides, the A2A module loaded, the JIT settled.
    await batch('api', w, WARMUP, ctx);
    await batch('a2a', w, WARMUP, ctx);
    const sum: Record<Side, { server_cpu_ms: number; client_cpu_ms: number; wall_ms: number }> = {
      api: { server_cpu_ms: 0, client_cpu_ms: 0, wall_ms: 0 },
      a2a: { server_cpu_ms: 0, client_cpu_ms: 0, wall_ms: 0 },
    };
    const per = Math.ceil(RUNS / ROUNDS);
    for (let r = 0; r < ROUNDS; r++) {
      const order: Side[] = r % 2 === 0 ? ['api', 'a2a'] : ['a2a', 'api'];
      for (const side of order) {
        const b = await batch(side, w, per, ctx);
        sum[side].server_cpu_ms += b.server_cpu_ms;
        sum[side].client_cpu_ms += b.client_cpu_ms;
        sum[side].wall_ms += b.wall_ms;
      }
    }
    const tasks = per * ROUNDS;
    const perTask = (side: Side) => ({
      server_cpu_ms_per_task: round1(sum[side].server_cpu_ms / tasks),
      client_cpu_ms_per_task: round1(sum[side].client_cpu_ms / tasks),
      wall_ms_per_task_at_concurrency: round1((sum[side].wall_ms / tasks) * CONCURRENCY),
    });
    const a = perTask('api');
    const b = perTask('a2a');
    rows.push({
      workload: w,
      tasks_per_side: tasks,
      api: a,
      a2a: b,
      ratio_server_cpu_a2a_over_api: round1(b.server_cpu_ms_per_task / a.server_cpu_ms_per_task),
      extra_server_cpu_ms_per_task: round1(b.server_cpu_ms_per_task - a.server_cpu_ms_per_task),
    });
    console.log(
      `${w}: server CPU per task ${a.server_cpu_ms_per_task} ms (API) vs ${b.server_cpu_ms_per_task} ms (A2A): ×${rows[rows.length - 1].ratio_server_cpu_a2a_over_api}`,
    );
  }
  srv.child.kill('SIGTERM');
  const git = (...a: string[]) => execFileSync('git', a, { cwd: ROOT, encoding: 'utf8' }).trim();
  const result = {
    date: new Date().toISOString(),
    node: process.version,
    git: { commit: git('rev-parse', '--short', 'HEAD'), src_dirty: git('status', '--porcelain', '--', 'src').length > 0 },
    machine: {
      os: `${process.platform} ${process.arch}`,
      cpu: cpus()[0]?.model,
      cpus: cpus().length,
      memory_gb: round1(totalmem() / 2 ** 30, 1),
    },
    load_average_1m: round1(loadavg()[0]),
    method: {
      server:
        'node bin/keel.js serve --port 0 --plugins test/fixtures/plugins --allow-model script: (dist/), fresh KEEL_HOME, SQLite, KEEL_COUNT_TOKENS=0',
      answer:
        'one model call (script:FILE, no delay), a text answer. API: POST /v1/runs + the run SSE stream until run_finished; A2A: blocking SendMessage (official @a2a-js/sdk client) until completed',
      card: 'trash_email waits on its card, approved, then a text answer (two model calls). API: POST /v1/runs, SSE to the pause, POST /v1/approvals/{id}, SSE to run_finished; A2A: SendMessage (input-required), SendMessage { approval, decision: approve } on the task (completed)',
      rounds: `${ROUNDS} rounds per workload, alternating which side goes first, ${CONCURRENCY} tasks at a time, after ${WARMUP} warm-up tasks per side`,
      cpu: 'server: utime+stime of the keel serve process (/proc/PID/stat, 10 ms ticks) over each batch; client: this process (process.cpuUsage), the official client on the A2A side and fetch + SSE on the API side',
    },
    rows,
  };
  if (WRITE) writeFileSync(join(ROOT, 'bench', 'results', 'a2a.json'), `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(rows, null, 2));
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
