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
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, KEEL_BIN, ROOT, script, tempHome } from '../support/helpers.js';

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
  pause?: { kind: string; approval_id?: string } | null;
  approval?: { id: string };
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
  violations: { trial: string; problem: string }[];
  ms: number;
}

async function show(runId: string, env: Record<string, string>): Promise<RunJson | undefined> {
  const r = await cli(['runs', 'show', runId, '--json'], env);
  return r.code === 0 ? (JSON.parse(r.stdout) as RunJson) : undefined;
}

async function latestRun(env: Record<string, string>): Promise<string | undefined> {
  const r = await cli(['runs', 'list', '--json'], env);
  return r.code === 0 ? (JSON.parse(r.stdout) as { run_id: string }[])[0]?.run_id : undefined;
}

/** Finishes a run as a user would after a crash; returns a problem, or undefined when it ended. */
async function finish(runId: string, env: Record<string, string>): Promise<string | undefined> {
  for (let i = 0; i < 8; i++) {
    const run = await show(runId, env);
    if (!run) return `run ${runId} is lost`;
    if (run.status === 'done' || run.status === 'failed') return undefined;
    let r: Cli;
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

export async function crashMatrix(): Promise<CrashMatrix> {
  const out: CrashMatrix = { trials: 0, kills: 0, violations: [], ms: 0 };
  const started = performance.now();
  for (const sc of SCENARIOS) {
    for (let stepIndex = 0; stepIndex < sc.steps.length; stepIndex++) {
      for (const [point, maxPerPoint] of pointsOf(stepIndex, sc)) {
        for (let n = 1; n <= maxPerPoint; n++) {
          const home = tempHome('keel-crash-');
          const env = { KEEL_HOME: home };
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
              approvalId = json.approval?.id ?? approvalId;
            }
            if (!killed) {
              rmSync(home, { recursive: true, force: true });
              break; // this point is not passed n times in this step: the next point
            }
            out.trials++;
            out.kills++;
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
