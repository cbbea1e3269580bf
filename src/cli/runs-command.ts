/**
 * `keel runs list|cancel|show`: the stored runs and their traces, locally or on a server (--server).
 * Never prints an empty list without naming the store it looked in (S4), and never prints a run's
 * text but through the context's io, escaped for the terminal.
 */
import type { Command } from 'commander';
import type { RunResult } from '../types/index.js';
import { osUser } from '../util/user.js';
import { type CommandContext, EXIT, positiveInt, type Shown, storeName } from './context.js';

// Loaded when an action runs: `keel --help` loads only the registration.
const render = () => import('./render.js');

export function registerRuns(program: Command, { io, getKeel, remote, finish, printer, setCode }: CommandContext): void {
  const runs = program.command('runs').description('stored runs and their traces');
  runs
    .command('list')
    .description('the latest runs, newest first')
    .option('-n, --limit <n>', 'how many', (v) => positiveInt(v, '--limit'), 50)
    .option('--json', 'print JSON (an array of runs, each with run_id)')
    .action(async (o: { limit: number; json?: boolean }) => {
      const { renderRunList, runRow } = await render();
      const server = remote();
      const rows = server ? await server.listRuns(o.limit) : (await (await getKeel()).listRuns({ limit: o.limit })).map(runRow);
      // S4: an empty list names the store it looked in (an app's ./.keel is not the CLI's ~/.keel).
      io.out(o.json ? `${JSON.stringify(rows)}\n` : rows.length ? renderRunList(rows) : `No runs in ${storeName(io.env, server)}.\n`);
    });
  runs
    .command('cancel')
    .description('end a paused or stalled run for good (its pending card is rejected); audited')
    .argument('<run_id>')
    .option('-r, --reason <text>', 'why (kept in the run and the audit)')
    .option('--as <actor>', 'who cancels (default: the OS user)')
    .option('--json', 'print the ended run as one JSON object')
    .action(async (runId: string, o: { reason?: string; as?: string } & Shown) => {
      const r = await (await getKeel()).cancel(runId, { actor: o.as ?? osUser(io.env), reason: o.reason ?? null, onEvent: printer(o) });
      finish(r, o);
      setCode(EXIT.ok);
    });
  runs
    .command('show')
    .description("a run's trace: each request's menu, each call and its outcome, the pause, the answer")
    .argument('<run_id>')
    .option('--json', 'print the whole run state as JSON')
    .action(async (runId: string, o: { json?: boolean }) => {
      const { renderEnd, renderRunShow } = await render();
      const server = remote();
      if (server) {
        // The server's view of the run: keel run --json's shape, with its session, model and times.
        const r = await server.getRun(runId);
        if (o.json) io.out(`${JSON.stringify(r)}\n`);
        else {
          // A paused run says what it waits for and how to answer (a confirmation: a yes or a no).
          const end = renderEnd(r as RunResult);
          io.out(`${r.run_id}  ${r.status}  ${r.reason ?? ''}  session ${r.session_id}\n${end.out}${r.status === 'paused' ? end.err : ''}`);
        }
        return;
      }
      const keel = await getKeel();
      const run = await keel.getRun(runId);
      const children = await keel.children(runId);
      if (o.json) {
        // One name for a run's id in every JSON the CLI prints: run_id.
        const { id, ...rest } = run;
        io.out(`${JSON.stringify({ run_id: id, ...rest, parent_run: run.parent?.run_id ?? null, children })}\n`);
      } else io.out(renderRunShow(run, children));
    });
}
