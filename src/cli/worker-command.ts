/**
 * `keel worker --store postgres://… [--concurrency N]` (#15): takes legs of runs from the job queue
 * in the PostgreSQL store and drives them; start as many as the load needs, on any machine. SIGTERM
 * or Ctrl-C stops it gracefully: running legs pause at a safe point and are queued again for
 * another worker. A worker that dies is covered by its runs' leases.
 */
import type { Command } from 'commander';
import { BUNDLED_PLUGINS } from '../config/paths.js';
import { KeelError } from '../util/errors.js';
import type { Io } from './main.js';

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new KeelError('bad_input', `--concurrency must be a positive whole number, got "${v}"`);
  return n;
}

export function registerWorker(program: Command, io: Io): void {
  program
    .command('worker')
    .description("take legs of runs from the PostgreSQL store's job queue and drive them (keel serve queues them there)")
    .option('--concurrency <n>', 'legs driven at once (default 4)', positiveInt)
    .addHelpText(
      'after',
      `
Examples:
  # two workers beside a server, on one database
  $ keel worker --store postgres://keel:PASSWORD@db.internal:5432/keel --concurrency 8
  $ KEEL_STORE=postgres://keel:PASSWORD@db.internal:5432/keel keel worker
`,
    )
    .action(async (o: { concurrency?: number }) => {
      const { Keel } = await import('../keel/keel.js');
      const { PostgresStore } = await import('../store/postgres.js');
      const { startWorker } = await import('../server/workers/worker.js');
      const { Alerts } = await import('../server/alerts/alerts.js');
      const { Tokens } = await import('../server/access/tokens.js');
      const keel = new Keel({ env: io.env, defaultPluginDirs: [BUNDLED_PLUGINS] });
      try {
        const store = keel.store;
        if (!(store instanceof PostgresStore)) {
          throw new KeelError('config', 'keel worker takes legs from a PostgreSQL store: pass --store postgres://… or set KEEL_STORE');
        }
        const config = keel.getConfig();
        keel.policy(); // a mistake in the config or the policy stops the worker before it takes a leg
        const concurrency = o.concurrency ?? 4;
        const log = (line: string) => io.err(`${line}\n`);
        // The webhooks and Web Push of the legs this worker drives (as keel serve sends those of its own):
        // config.yaml's notify, and pushes to the subscriptions of this home's approver tokens.
        const alerts = await Alerts.start({ config, store, tokens: Tokens.at(keel.home), env: io.env, log });
        let stopping = false;
        const worker = await startWorker({
          keel,
          store,
          concurrency,
          log,
          onEvent: (runId, e) => {
            // A leg paused because this worker stops is queued again for another: no one waits on it.
            if (e.type === 'text_delta' || (stopping && e.type === 'paused' && e.pause.kind === 'interrupted')) return;
            alerts.event(runId, e);
          },
        });
        io.out(`keel worker: taking legs from ${store.target.shown} (schema ${store.schema}), ${concurrency} at once\n`);
        // The CLI's own signal handling ends a process with no run of its own at once; a worker stops gracefully instead.
        const saved = (['SIGINT', 'SIGTERM'] as const).map((sig) => [sig, process.listeners(sig)] as const);
        for (const [sig] of saved) process.removeAllListeners(sig);
        try {
          await new Promise<void>((resolve) => {
            const stop = (sig: NodeJS.Signals) => {
              if (stopping) process.exit(sig === 'SIGINT' ? 130 : 143);
              stopping = true;
              io.err(`keel worker: ${sig}: stopping; running legs pause at a safe point and are queued again\n`);
              worker
                .stop()
                .then(() => alerts.drain(2000))
                .then(resolve, resolve);
            };
            process.on('SIGINT', stop);
            process.on('SIGTERM', stop);
          });
        } finally {
          for (const [sig, listeners] of saved) {
            process.removeAllListeners(sig);
            for (const l of listeners) process.on(sig, l as (s: NodeJS.Signals) => void);
          }
        }
      } finally {
        await keel.close();
      }
    });
}
