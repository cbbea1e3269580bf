/**
 * The mode-switch campaign (issue 27, item 1; C2, C5): a run driven by one process, its session's
 * mode switched by another process over the same store, on SQLite and on PostgreSQL. Each round
 * the run makes one write per step (an in-code `stamp`, kept declared in Plan so a call of it is
 * denied by mode, C3); at a step chosen at random its read tool `probe` has a second process
 * switch the session to Plan (and waits for that process to exit). Invariants: every write before
 * the switch ran; no write after it ran (each is denied by mode); the run ends in Plan and its trace
 * notes the switch.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Keel } from '../../src/keel/keel.js';
import { defineTool } from '../../src/tools/define.js';
import { ROOT, script, tempHome } from '../support/helpers.js';

export interface ModeSwitches {
  rounds: number;
  /** Writes the model asked for, those that ran, and those denied by mode after a switch. */
  writes: number;
  ran: number;
  denied: number;
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
  const out: ModeSwitches = { rounds: 0, writes: 0, ran: 0, denied: 0, violations: [], ms: 0 };
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
      const label = `${st.name} round ${round + 1}`;
      const at = 1 + Math.floor(random() * (steps - 1)); // the step whose probe switches: 1..steps-1
      const stamped: number[] = [];
      let keel: Keel | undefined;
      try {
        const probe = defineTool({
          name: 'probe',
          description: 'Look at something',
          parameters: { type: 'object', properties: {} } as const,
          effect: 'read',
          execute: async (_args, ctx) => {
            const run = await keel!.getRun(ctx.run_id);
            await switchFromAnotherProcess(env, run.session_id, 'plan');
            return 'looked';
          },
        });
        const stamp = defineTool({
          name: 'stamp',
          description: 'Stamp a document',
          parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } as const,
          effect: 'write',
          confirm: 'never',
          contract_modes: 'declare',
          execute: ({ n }) => {
            stamped.push(n);
            return `Stamped ${n}.`;
          },
        });
        keel = new Keel({ home, env: { ...process.env, ...env }, tools: [probe, stamp] });
        const entries: unknown[] = [];
        for (let i = 1; i <= steps; i++) {
          const calls: unknown[] = [{ id: `s${i}`, name: 'stamp', args: { n: i } }];
          if (i === at) calls.push({ id: 'p', name: 'probe', args: {} });
          entries.push({ tool_calls: calls });
        }
        entries.push({ text: 'Done.' });
        const r = await keel.run('stamp the documents', { model: script(home, entries as never), pluginDirs: [] });
        out.rounds++;
        out.writes += steps;
        out.ran += stamped.length;
        const expected = Array.from({ length: at }, (_, i) => i + 1);
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
        await keel?.close();
        rmSync(home, { recursive: true, force: true });
      }
    }
  }
  out.ms = Math.round(performance.now() - started);
  return out;
}
