/**
 * The crash matrix and the races, process-level through the real CLI.
 *
 * Crash matrix: the confirm, approval and plan scenarios, with the process killed (as by kill -9,
 * KEEL_TEST_CRASH_AT) at each persistence point of each command in turn — every save of the run, the
 * claim of a pause, the ledger's intent, right after an approved call. After each kill the scenario is
 * finished the way a user would (keel resume, answer, approve). Invariants: no pause or approval is
 * lost, no call runs twice, no run is left running (every one ends or waits for someone).
 *
 * Races: several processes answering, approving or continuing the same run at once, many rounds:
 * exactly one wins each round, and the pinned call runs once.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, KEEL_BIN, ROOT, script, tempHome } from '../support/helpers.js';
import type { ProcessStore } from '../support/stores.js';

interface Cli {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string>): Promise<Cli> {
  const base = { ...process.env };
  delete base.KEEL_PLUGINS;
  delete base.KEEL_TEST_CRASH_AT;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KEEL_BIN, ...args], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

const lines = (home: string, file: string) =>
  existsSync(join(home, file))
    ? readFileSync(join(home, file), 'utf8')
        .split('\n')
        .filter((l) => l.trim())
    : [];

interface RunJson {
  run_id: string;
  status: string;
  reason: string;
  question?: string;
  confirm?: unknown;
  pause?: { kind: string; approval_id?: string; child_run?: string } | null;
  approval?: { id: string };
  /** D2: a run waiting for its delegate, and what the delegate waits for. */
  task?: { run_id: string; waiting?: { approval?: { id: string } } };
}

const R1 = { title: 'Pay Wingtip Bank', due: '2026-09-30' };
const R2 = { title: 'Pay Contoso Energy', due: '2026-10-02' };

interface Scenario {
  name: string;
  /** The commands of the happy path, in order; `$RUN` and `$APPROVAL` are filled in. */
  steps: string[][];
  script: unknown[];
  mode?: string;
  /** Executions of side effects, for "nothing twice" (each line names one call). */
  effects: (home: string) => string[];
  /** Written into the trial's home before its first step (a delegate's config). */
  setup?: (home: string) => void;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'confirm',
    script: [
      { tool_calls: [{ id: 'c1', name: 'upcoming_dues', args: { within_days: 15 } }] },
      { tool_calls: [{ id: 'c2', name: 'create_reminder', args: R1 }] },
      { tool_calls: [{ id: 'c3', name: 'ask_user', args: { question: 'Create both?' } }] },
      { tool_calls: [{ id: 'c4', name: 'create_reminder', args: R1 }] },
      { tool_calls: [{ id: 'c5', name: 'create_reminder', args: R2 }] },
      { text: 'Both reminders are set.' },
    ],
    steps: [
      ['run', '--json', 'dues and reminders'],
      ['resume', '$RUN', '--yes', '--json'],
    ],
    effects: (home) => lines(home, 'reminders.jsonl'),
  },
  {
    name: 'approval',
    script: [{ tool_calls: [{ id: 't1', name: 'trash_email', args: { ids: ['m1', 'm2'] } }] }, { text: 'Trashed both.' }],
    steps: [
      ['run', '--json', 'trash the promotions'],
      ['approvals', 'approve', '$APPROVAL', '--json'],
    ],
    effects: (home) => lines(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')),
  },
  {
    name: 'plan',
    mode: 'plan',
    script: [
      { tool_calls: [{ id: 'p1', name: 'submit_plan', args: { summary: 'two reminders', steps: ['Create both reminders'] } }] },
      { tool_calls: [{ id: 'w1', name: 'create_reminder', args: R1 }] },
      { tool_calls: [{ id: 'w2', name: 'create_reminder', args: R2 }] },
      { text: 'Both reminders are set.' },
    ],
    steps: [
      ['run', '--json', 'plan the reminders'],
      ['approvals', 'approve', '$APPROVAL', '--allow-writes', '--json'],
    ],
    effects: (home) => lines(home, 'reminders.jsonl'),
  },
  {
    // D1/D2 (issue 38): the parent starts a delegate and waits for it; the delegate's destructive call waits on its card.
    name: 'delegate',
    script: [
      { tool_calls: [{ id: 't', name: 'task', args: { agent: 'cleaner', prompt: 'Trash the promotions m1 and m2.' } }] },
      { tool_calls: [{ id: 'w', name: 'task_wait', args: { id: 'tk_1' } }] },
      { text: 'The cleaner trashed both.' },
    ],
    steps: [
      ['run', '--json', 'trash the promotions'],
      ['approvals', 'approve', '$APPROVAL', '--json'],
    ],
    effects: (home) => lines(home, 'mail-calls.log').filter((l) => l.startsWith('trash_email')),
    setup: (home) => {
      const child = script(
        home,
        [{ tool_calls: [{ id: 'd1', name: 'trash_email', args: { ids: ['m1', 'm2'] } }] }, { text: 'Trashed both.' }] as never,
        'delegate.yaml',
      );
      const config = [
        'subagents:',
        '  delegates:',
        '    - name: cleaner',
        '      instructions: You tidy the inbox.',
        '      tools: [search_inbox, trash_email]',
        `      model: ${JSON.stringify(child)}`,
      ];
      writeFileSync(join(home, 'config.yaml'), `${config.join('\n')}\n`);
    },
  },
];

/** The persistence points each step of a scenario passes: a new run only saves; an answer claims, then saves, then (approved) the ledger. */
function pointsOf(step: number, sc: Scenario): [point: string, max: number][] {
  if (step === 0) return [['save', 6]];
  const approved = sc.name !== 'confirm';
  return [
    ['claim', 1],
    ['save', 6],
    ...(approved
      ? ([
          ['ledger-start', 1],
          ['after-approved-call', 1],
        ] as [string, number][])
      : []),
  ];
}

export interface CrashMatrix {
  trials: number;
  kills: number;
  /** Kills per scenario (the rows of the matrix): confirm, approval, plan, delegate. */
  by_scenario: Record<string, number>;
  violations: { trial: string; problem: string }[];
  ms: number;
}

async function show(runId: string, env: Record<string, string>): Promise<RunJson | undefined> {
  const r = await cli(['runs', 'show', runId, '--json'], env);
  return r.code === 0 ? (JSON.parse(r.stdout) as RunJson) : undefined;
}

/** The newest run the user started (a delegate's run is its parent's, D1). */
async function latestRun(env: Record<string, string>): Promise<string | undefined> {
  const r = await cli(['runs', 'list', '--json'], env);
  return r.code === 0
    ? (JSON.parse(r.stdout) as { run_id: string; parent_run?: string | null }[]).find((x) => !x.parent_run)?.run_id
    : undefined;
}

/** Finishes a run as a user would after a crash; returns a problem, or undefined when it ended. */
async function finish(runId: string, env: Record<string, string>): Promise<string | undefined> {
  for (let i = 0; i < 8; i++) {
    const run = await show(runId, env);
    if (!run) return `run ${runId} is lost`;
    if (run.status === 'done' || run.status === 'failed') return undefined;
    let r: Cli;
    const child = run.status === 'paused' && run.pause?.kind === 'task' ? await show(run.pause.child_run ?? '', env) : undefined;
    if (child && child.status !== 'done' && child.status !== 'failed') {
      // D2: the parent waits for its delegate: the delegate is finished as any run is, and its end carries the parent on.
      const problem = await finish(child.run_id, env);
      if (problem) return `its delegate: ${problem}`;
      continue;
    }
    if (run.status === 'paused' && run.pause?.kind === 'ask_user') r = await cli(['resume', runId, '--yes'], env);
    else if (run.status === 'paused' && run.pause?.kind === 'approval') {
      const list = JSON.parse((await cli(['approvals', 'list', '--json'], env)).stdout) as { id: string; status: string }[];
      const a = list.find((x) => x.id === run.pause?.approval_id);
      if (!a) return `approval ${run.pause?.approval_id} is lost`;
      r = a.status === 'pending' ? await cli(['approvals', 'approve', a.id, '--allow-writes'], env) : await cli(['resume', runId], env);
      if (!ok(r) && /is not a plan or a goal/.test(r.stderr)) r = await cli(['approvals', 'approve', a.id], env);
    } else r = await cli(['resume', runId], env);
    if (!ok(r) && r.code !== 1) return `cannot carry the run on (exit ${r.code}): ${r.stderr.trim().slice(0, 300)}`;
  }
  return `run ${runId} never ended`;
}

/** A CLI step that worked: done (0), or paused for the user (3), as the CLI documents its exit codes. */
const ok = (r: { code: number | null }) => r.code === 0 || r.code === 3;

export async function crashMatrix(only?: readonly string[]): Promise<CrashMatrix> {
  const out: CrashMatrix = { trials: 0, kills: 0, by_scenario: {}, violations: [], ms: 0 };
  const started = performance.now();
  for (const sc of SCENARIOS) {
    if (only && !only.includes(sc.name)) continue;
    out.by_scenario[sc.name] = 0;
    for (let stepIndex = 0; stepIndex < sc.steps.length; stepIndex++) {
      for (const [point, maxPerPoint] of pointsOf(stepIndex, sc)) {
        for (let n = 1; n <= maxPerPoint; n++) {
          const home = tempHome('keel-crash-');
          const env = { KEEL_HOME: home };
          sc.setup?.(home);
          const model = script(home, sc.script as never);
          const trial = `${sc.name} step ${stepIndex + 1} (${sc.steps[stepIndex][0]}) at ${point}:${n}`;
          let runId: string | undefined;
          let approvalId: string | undefined;
          let killed = false;
          try {
            for (let i = 0; i < sc.steps.length; i++) {
              const args = sc.steps[i].map((a) => (a === '$RUN' ? (runId ?? '') : a === '$APPROVAL' ? (approvalId ?? '') : a));
              const full =
                args[0] === 'run'
                  ? ['run', ...(sc.mode ? ['--mode', sc.mode] : []), '--model', model, '--plugins', FIXTURES, ...args.slice(1)]
                  : args;
              const crash: Record<string, string> = i === stepIndex ? { KEEL_TEST_CRASH_AT: `${point}:${n}` } : {};
              const r = await cli(full, { ...env, ...crash });
              if (r.signal === 'SIGKILL') {
                killed = true;
                runId ??= await latestRun(env);
                break;
              }
              if (!ok(r)) {
                out.violations.push({
                  trial,
                  problem: `step ${i + 1} failed without a crash (exit ${r.code}): ${r.stderr.trim().slice(0, 300)}`,
                });
                break;
              }
              const json = JSON.parse(r.stdout) as RunJson;
              runId = json.run_id;
              approvalId = json.approval?.id ?? json.task?.waiting?.approval?.id ?? approvalId;
            }
            if (!killed) {
              rmSync(home, { recursive: true, force: true });
              break; // this point is not passed n times in this step: the next point
            }
            out.trials++;
            out.kills++;
            out.by_scenario[sc.name]++;
            if (!runId) {
              // Killed before the run was stored: nothing may have happened.
              if (sc.effects(home).length) out.violations.push({ trial, problem: 'effects without a stored run' });
              continue;
            }
            const problem = await finish(runId, env);
            if (problem) out.violations.push({ trial, problem });
            const effects = sc.effects(home);
            if (new Set(effects).size !== effects.length)
              out.violations.push({ trial, problem: `a call ran twice: ${JSON.stringify(effects)}` });
          } finally {
            rmSync(home, { recursive: true, force: true });
          }
        }
      }
    }
  }
  out.ms = Math.round(performance.now() - started);
  return out;
}

export interface Races {
  rounds: number;
  contenders: number;
  violations: { round: string; problem: string }[];
  ms: number;
}

/** `n` processes at once on the same run, `rounds` times per kind of race: exactly one may win. */
export async function races(rounds = 4, n = 3): Promise<Races> {
  const out: Races = { rounds: 0, contenders: n, violations: [], ms: 0 };
  const started = performance.now();
  const trash = SCENARIOS[1];
  const confirm = SCENARIOS[0];
  for (let round = 0; round < rounds; round++) {
    for (const kind of ['approve', 'answer', 'continue'] as const) {
      const home = tempHome('keel-race-');
      const env = { KEEL_HOME: home };
      try {
        const sc = kind === 'answer' ? confirm : trash;
        const model = script(home, sc.script as never);
        // The scenario's own request, which puts the tools its script calls on the menu (P2).
        const request = sc.steps[0].at(-1) ?? '';
        const first = JSON.parse((await cli(['run', '--json', '--model', model, '--plugins', FIXTURES, request], env)).stdout) as RunJson;
        let args: string[];
        if (kind === 'approve') args = ['approvals', 'approve', first.approval?.id ?? ''];
        else if (kind === 'answer') args = ['resume', first.run_id, '--yes'];
        else {
          // The answer is recorded by a process that dies before continuing; then n processes continue.
          await cli(['approvals', 'approve', first.approval?.id ?? ''], { ...env, KEEL_TEST_CRASH_AT: 'claim:1' });
          args = ['resume', first.run_id];
        }
        const results = await Promise.all(Array.from({ length: n }, () => cli(args, env)));
        out.rounds++;
        const winners = results.filter(ok).length;
        const label = `${kind} round ${round + 1}`;
        if (winners !== 1) {
          out.violations.push({
            round: label,
            problem: `${winners} winners: ${results.map((r) => `${r.code} ${r.stderr.trim().slice(0, 120)}`).join(' | ')}`,
          });
        }
        const losers = results.filter((r) => !ok(r));
        if (losers.some((r) => r.code !== 2)) out.violations.push({ round: label, problem: 'a loser did not exit 2 with a conflict' });
        const effects = sc.effects(home);
        if (new Set(effects).size !== effects.length)
          out.violations.push({ round: label, problem: `a call ran twice: ${JSON.stringify(effects)}` });
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    }
  }
  out.ms = Math.round(performance.now() - started);
  return out;
}

/**
 * The crash matrix's owner rows (issue 27, items 3 and 10; R18, S4): who may take a running run
 * over, with its owner hung inside a write (KEEL_TEST_HANG_IN_REMINDER) — through the real CLI, on
 * each store:
 * - alive, leased, on another host (a UTS namespace of its own: the host name differs, so its PID
 *   cannot be checked) and silent for 11 minutes by its last save: `keel resume` is refused while its
 *   lease is renewed; once it is killed and the lease runs out, the run is taken over;
 * - alive on this host: refused; killed (reaped), its lease still valid: taken over at once;
 * - killed but a zombie (its parent never reaps it), its lease still valid: dead, taken over at once;
 * - killed, and its PID reused by a later process (its start time differs), lease valid: dead, taken over.
 * Invariants: a refusal changes nothing and says why; a takeover reports the hung call as of unknown
 * outcome and never runs it; the run ends.
 */
export interface OwnerMatrix {
  trials: number;
  /** Rows this machine cannot make (no UTS namespace for another host name, no PID to reuse), with why. */
  unavailable: string[];
  refused: number;
  taken_over: number;
  violations: { trial: string; problem: string }[];
  ms: number;
}

const HUNG_SCRIPT = [
  { tool_calls: [{ id: 'r1', name: 'create_reminder', args: { title: 'pay rent' } }] },
  { text: 'I could not tell whether the reminder was made.' },
];

/** How to start a process under another host name, if this machine lets us (root, or user namespaces). */
function otherHostPrefix(): string[] | undefined {
  for (const prefix of [
    ['unshare', '-u'],
    ['unshare', '-r', '-u'],
  ]) {
    const r = spawnSync(prefix[0], [...prefix.slice(1), 'sh', '-c', 'hostname keel-other-host && hostname'], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim() === 'keel-other-host') return prefix;
  }
  return undefined;
}

function procState(pid: number): string | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

async function waitUntil(what: string, f: () => boolean | Promise<boolean>, ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * `keel run` hung inside a write, started through `sh` so that the test decides who reaps it:
 * `exec sleep` makes the shell a parent that never reaps (a zombie once killed), `wait` one that does.
 */
function hungOwner(home: string, env: Record<string, string>, o: { reap: boolean; prefix?: string[] }) {
  const base = { ...process.env };
  delete base.KEEL_PLUGINS;
  delete base.KEEL_TEST_CRASH_AT;
  const model = script(home, HUNG_SCRIPT as never, 'hung.yaml');
  const run = ['run', '--json', '--model', model, '--plugins', FIXTURES, 'remind me to pay rent'];
  const keelCmd = [process.execPath, KEEL_BIN, ...run].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const host = o.prefix ? 'hostname keel-other-host && ' : '';
  const log = (f: string) => `'${join(home, f)}'`;
  const sh = `${host}${keelCmd} >${log('owner.out')} 2>${log('owner.err')} & echo $!; ${o.reap ? 'wait' : 'exec sleep 300'}`;
  const argv = [...(o.prefix ?? []), 'sh', '-c', sh];
  const child = spawn(argv[0], argv.slice(1), {
    cwd: ROOT,
    env: { ...base, ...env, KEEL_TEST_HANG_IN_REMINDER: '1', KEEL_CONFIRM_ONCE_TOOLS: 'none' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const pid = new Promise<number>((res) => child.stdout.once('data', (d) => res(Number(String(d).trim().split('\n')[0]))));
  return { child, pid };
}

/** Makes the next process this kernel starts take `pid` (root only: ns_last_pid); the process, or undefined. */
async function reusePid(pid: number): Promise<ReturnType<typeof spawn> | undefined> {
  for (let i = 0; i < 20; i++) {
    try {
      writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid - 1));
    } catch {
      return undefined;
    }
    const c = spawn('sleep', ['300'], { stdio: 'ignore' });
    if (c.pid === pid) return c;
    c.kill('SIGKILL');
  }
  return undefined;
}

type OwnerRow = 'other-host, alive and leased' | 'this host, alive, then killed' | 'zombie' | 'PID reused';
const OWNER_ROWS: OwnerRow[] = ['other-host, alive and leased', 'this host, alive, then killed', 'zombie', 'PID reused'];

/** On each of `stores` (test/support/stores.ts), every owner row. */
export async function ownerMatrix(stores: ProcessStore[]): Promise<OwnerMatrix> {
  const out: OwnerMatrix = { trials: 0, unavailable: [], refused: 0, taken_over: 0, violations: [], ms: 0 };
  const started = performance.now();
  const prefix = otherHostPrefix();
  for (const st of stores) {
    for (const row of OWNER_ROWS) {
      const trial = `${st.name}: ${row}`;
      if (row.startsWith('other-host') && !prefix) {
        out.unavailable.push(`${trial}: no UTS namespace here (unshare -u), so no second host name`);
        continue;
      }
      const home = tempHome('keel-owner-');
      // Another host's owner is judged by its lease alone: a short one, so that it runs out soon once
      // the owner is killed. This host's owners hold a long one, so that only the OS's word ends them.
      const env = { KEEL_HOME: home, KEEL_LEASE_MS: row.startsWith('other-host') ? '4000' : '120000', ...(await st.env()) };
      const owner = hungOwner(home, env, { reap: row !== 'zombie', prefix: row.startsWith('other-host') ? prefix : undefined });
      const extra: ReturnType<typeof spawn>[] = [];
      const problem = (p: string) => out.violations.push({ trial, problem: p });
      try {
        const pid = await owner.pid;
        await waitUntil('the write to start', () => existsSync(join(home, 'reminder-started'))).catch((err: Error) => {
          throw new Error(`${err.message}; the owner said: ${lines(home, 'owner.err').join(' / ').slice(0, 400)}`);
        });
        const runId = await latestRun(env);
        if (!runId) throw new Error('the run is not listed');
        let recorded: (RunJson & { owner?: string }) | undefined;
        for (let i = 0; i < 3 && !recorded; i++) recorded = await show(runId, env);
        if (!recorded?.owner) throw new Error(`keel runs show ${runId} did not show the run's owner`);
        out.trials++;
        if (row === 'other-host, alive and leased' || row === 'this host, alive, then killed') {
          // Silent for 11 minutes by its last save: only its lease says it is alive.
          if (row.startsWith('other-host')) await st.setUpdatedAt(env, runId, new Date(Date.now() - 11 * 60_000).toISOString());
          const r = await cli(['resume', runId, '--json'], env);
          const why = row.startsWith('other-host') ? /still holds its lease/ : /is running in process/;
          if (r.code !== 2 || !why.test(r.stderr))
            problem(`a live owner's run was not refused (exit ${r.code}): ${r.stderr.trim().slice(0, 300)}`);
          else out.refused++;
          const after = (await show(runId, env)) as (RunJson & { owner?: string }) | undefined;
          if (after?.status !== 'running' || after.owner !== recorded?.owner)
            problem(`the refusal changed the run: ${after?.status}, owner ${after?.owner} (was ${recorded?.owner})`);
        }
        process.kill(pid, 'SIGKILL');
        if (row === 'zombie') {
          await waitUntil('the owner to be a zombie', () => procState(pid) === 'Z');
        } else {
          await waitUntil('the owner to be reaped', () => procState(pid) === undefined);
        }
        if (row === 'PID reused') {
          const reuser = await reusePid(pid);
          if (!reuser) {
            out.unavailable.push(`${trial}: the PID could not be handed to a new process here (needs root: ns_last_pid)`);
            out.trials--;
            continue;
          }
          extra.push(reuser);
        }
        // Taken over: at once when this host sees the owner dead; on another host once its lease ran out.
        let r: Cli | undefined;
        const deadline = Date.now() + 90_000;
        while (Date.now() < deadline) {
          r = await cli(['resume', runId, '--json'], env);
          if (r.code !== 2 || !row.startsWith('other-host') || !/still holds its lease/.test(r.stderr)) break;
          await new Promise((res) => setTimeout(res, 250));
        }
        if (row === 'zombie' && procState(pid) !== 'Z') problem('the zombie was reaped before the takeover: the row proved nothing');
        if (r?.code !== 0) {
          problem(`a dead owner's run was not taken over (exit ${r?.code}): ${r?.stderr.trim().slice(0, 300)}`);
          continue;
        }
        out.taken_over++;
        const done = JSON.parse(r.stdout) as RunJson & { steps: { call_id: string; result: string }[] };
        if (done.status !== 'done') problem(`the run ended ${done.status} (${done.reason})`);
        const hung = done.steps.filter((s) => s.call_id === 'r1');
        if (hung.length !== 1 || !/unknown/.test(hung[0].result))
          problem(`the hung call is not reported as of unknown outcome: ${JSON.stringify(hung)}`);
        if (lines(home, 'reminders.jsonl').length) problem('the hung call ran again after the takeover');
      } catch (err) {
        problem(String(err instanceof Error ? err.message : err));
      } finally {
        owner.child.kill('SIGKILL');
        try {
          process.kill(await owner.pid, 'SIGKILL');
        } catch {
          // gone already
        }
        for (const c of extra) c.kill('SIGKILL');
        rmSync(home, { recursive: true, force: true });
      }
    }
  }
  out.ms = Math.round(performance.now() - started);
  return out;
}
