/**
 * The mode-switch campaign (issue 27, item 1; C2, C5): a run driven by one process, its session's
 * mode switched by another process over the same store, on SQLite and on PostgreSQL. Each round
 * the run makes one write per step (an in-code `stamp`, kept declared in Plan so a call of it is
 * denied by mode, C3); at a step chosen at random its read tool `probe` has a second process
 * switch the session to Plan — in turn a Keel of its own (switch-mode.ts, as `keel chat`'s /mode or
 * another library user would; the probe waits for it to exit) and a `keel serve` on the same store
 * (`PUT /v1/sessions/{id}/mode`, as the console's Switch). Invariants: every write before
 * the switch ran; no write after it ran (each is denied by mode); the run ends in Plan and its trace
 * notes the switch.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Keel } from '../../src/keel/keel.js';
import { ROOT, script, tempHome } from '../support/helpers.js';
import { modeTools } from '../support/mode-tools.js';
import { call, cliServer } from '../support/server.js';

export interface ModeSwitches {
  rounds: number;
  /** Writes the model asked for, those that ran, and those denied by mode after a switch. */
  writes: number;
  ran: number;
  denied: number;
  /** Rounds whose switch came through `keel serve` (PUT /v1/sessions/{id}/mode); the rest through a Keel process. */
  server_rounds: number;
  violations: { round: string; problem: string }[];
  ms: number;
}

/** Switches the session's mode from another process (test/reliability/switch-mode.ts). */
function switchFromAnotherProcess(env: Record<string, string>, session: string, mode: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'reliability', 'switch-mode.ts'), session, mode], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`the switching process exited ${code}: ${err.trim()}`))));
  });
}

/** `store`: 'sqlite' (a file under the round's home) or a PostgreSQL URL (with its own ?schema=). */
export async function modeSwitches(
  stores: { name: string; url: () => Promise<string | undefined> }[],
  rounds = 3,
  steps = 5,
): Promise<ModeSwitches> {
  const out: ModeSwitches = { rounds: 0, writes: 0, ran: 0, denied: 0, server_rounds: 0, violations: [], ms: 0 };
  const started = performance.now();
  let seed = 27;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (const st of stores) {
    for (let round = 0; round < rounds; round++) {
      const home = tempHome('keel-modes-');
      const url = await st.url();
      const env: Record<string, string> = { KEEL_HOME: home, ...(url ? { KEEL_STORE: url } : {}) };
      const label = `${st.name} round ${round + 1} (${round % 2 === 1 ? 'a server switches' : 'a process switches'})`;
      const at = 1 + Math.floor(random() * (steps - 1)); // the step whose probe switches: 1..steps-1
      // Odd rounds switch through a server process: started before the run, on the same store.
      const via = round % 2 === 1 ? 'server' : 'process';
      let keel: Keel | undefined;
      let server: Awaited<ReturnType<typeof cliServer>> | undefined;
      try {
        if (via === 'server') server = await cliServer(home, env);
        const admin = server ? (/admin token: (\S+)/.exec(server.stdout())?.[1] ?? '') : '';
        const { tools, stamped } = modeTools(async (runId) => {
          const run = await keel!.getRun(runId);
          if (!server) return switchFromAnotherProcess(env, run.session_id, 'plan');
          const r = await call(server.url, 'PUT', `/v1/sessions/${run.session_id}/mode`, { token: admin, body: { mode: 'plan' } });
          if (r.status !== 200) throw new Error(`PUT /v1/sessions/${run.session_id}/mode: ${r.status} ${JSON.stringify(r.body)}`);
        });
        keel = new Keel({ home, env: { ...process.env, ...env }, tools });
        const entries: unknown[] = [];
        for (let i = 1; i <= steps; i++) {
          const calls: unknown[] = [{ id: `s${i}`, name: 'stamp', args: { doc: String(i) } }];
          if (i === at) calls.push({ id: 'p', name: 'probe', args: {} });
          entries.push({ tool_calls: calls });
        }
        entries.push({ text: 'Done.' });
        const r = await keel.run('stamp the documents', { model: script(home, entries as never), pluginDirs: [] });
        out.rounds++;
        if (server) out.server_rounds++;
        out.writes += steps;
        out.ran += stamped.length;
        const expected = Array.from({ length: at }, (_, i) => String(i + 1));
        if (JSON.stringify(stamped) !== JSON.stringify(expected)) {
          out.violations.push({
            round: label,
            problem: `switched during step ${at}: stamps ${JSON.stringify(stamped)} ran, expected ${JSON.stringify(expected)}`,
          });
        }
        const denied = r.steps.filter((s) => s.tool === 'stamp' && s.outcome === 'denied_by_mode').length;
        out.denied += denied;
        if (denied !== steps - at)
          out.violations.push({ round: label, problem: `${denied} writes denied by mode, expected ${steps - at}` });
        if (r.mode !== 'plan') out.violations.push({ round: label, problem: `the run ended in ${r.mode} mode` });
        const stored = await keel.getRun(r.run_id);
        if (!stored.notes.includes('mode switched from agent to plan during the run'))
          out.violations.push({ round: label, problem: `the switch is not noted: ${JSON.stringify(stored.notes)}` });
      } catch (err) {
        out.violations.push({ round: label, problem: String(err instanceof Error ? err.message : err) });
      } finally {
        if (server) {
          server.child.kill('SIGTERM');
          await server.exited;
        }
        await keel?.close();
        rmSync(home, { recursive: true, force: true });
      }
    }
  }
  out.ms = Math.round(performance.now() - started);
  return out;
}
