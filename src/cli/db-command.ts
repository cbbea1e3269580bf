/**
 * `keel db migrate` and `keel db status` (S4), and the `--store` option every command that opens the
 * store takes. The PostgreSQL store's schema is a list of numbered migrations: Keel applies the
 * missing ones when it first connects; `keel db migrate` applies them alone (before an upgrade is
 * rolled out, say), and `keel db status` shows which are applied and which are pending.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { keelHome } from '../config/paths.js';
import { KeelError } from '../util/errors.js';
import { redact } from '../util/redact.js';
import { examples } from './help.js';
import type { Io } from './main.js';
import { registerWorker } from './worker-command.js';

/** What the store setting names: a PostgreSQL URL, or the SQLite file. */
function storeSpec(io: Io): { postgres: string } | { sqlite: string } {
  const spec = io.env.KEEL_STORE?.trim();
  if (!spec) return { sqlite: join(keelHome(io.env), 'keel.db') };
  if (/^postgres(ql)?:\/\//i.test(spec)) return { postgres: spec };
  if (spec.startsWith('sqlite:') && spec.length > 'sqlite:'.length) return { sqlite: spec.slice('sqlite:'.length) };
  throw new KeelError(
    'config',
    `--store/KEEL_STORE=${redact(spec)} is not a store Keel knows: write sqlite:PATH or postgres://USER@HOST:PORT/DATABASE (USER:PASSWORD@ with a password)`,
  );
}

const pad = (v: number) => String(v).padStart(4, '0');

const URL_EXAMPLE = 'postgres://keel:PASSWORD@db.internal:5432/keel';

export function registerDb(program: Command, io: Io): void {
  program.option(
    '--store <url>',
    'the store: postgres://USER:PASSWORD@HOST:PORT/DATABASE (shared by servers and workers) or sqlite:PATH; default KEEL_STORE, else KEEL_HOME/keel.db',
  );
  // Every command opens the store through KEEL_STORE: --store sets it for this process. (`keel serve
  // --work` is serve's own option: it sets KEEL_SERVE_WORK.)
  program.hook('preAction', () => {
    const o = program.opts<{ store?: string }>();
    if (o.store !== undefined) io.env.KEEL_STORE = o.store;
  });
  registerWorker(program, io);

  const db = program
    .command('db')
    .description("the store's schema: apply migrations, show which are applied (PostgreSQL)")
    .addHelpText(
      'after',
      examples([
        [`keel db status --store ${URL_EXAMPLE}`, ''],
        [`KEEL_STORE=${URL_EXAMPLE} keel db migrate`, 'before rolling out a new Keel'],
      ]),
    );

  db.command('migrate')
    .description('apply the migrations the PostgreSQL store lacks (Keel also does when it starts), under a lock, then exit')
    .option('--json', 'print { applied, migrations } as JSON')
    .addHelpText('after', examples([[`keel db migrate --store ${URL_EXAMPLE}`, 'apply what is pending, then exit']]))
    .action(async (o: { json?: boolean }) => {
      const spec = storeSpec(io);
      if ('sqlite' in spec) {
        const { openStore } = await import('../store/open.js');
        await openStore(keelHome(io.env), io.env).close(); // the SQLite file brings its schema up to date when opened
        if (o.json) io.out(`${JSON.stringify({ store: 'sqlite', file: spec.sqlite, applied: [] })}\n`);
        else io.out(`The SQLite store ${spec.sqlite} is up to date (it migrates itself when it is opened).\n`);
        return;
      }
      const { migrate, migrationStatus, withPostgres } = await import('../store/postgres.js');
      const out = await withPostgres(spec.postgres, async (c, target) => {
        const applied = await migrate(c, target.schema);
        return { target, applied, status: await migrationStatus(c, target.schema) };
      });
      if (o.json) {
        io.out(
          `${JSON.stringify({ store: 'postgres', schema: out.target.schema, applied: out.applied, migrations: out.status.migrations })}\n`,
        );
        return;
      }
      const name = (v: number) => out.status.migrations.find((m) => m.version === v)?.name ?? '';
      if (out.applied.length) {
        io.out(
          `Applied ${out.applied.map((v) => `${pad(v)} ${name(v)}`).join(', ')} to ${out.target.shown} (schema ${out.target.schema}).\n`,
        );
      } else io.out(`${out.target.shown} (schema ${out.target.schema}) is up to date: nothing to apply.\n`);
    });

  db.command('status')
    .description("list the PostgreSQL store's migrations: applied (when) and pending; changes nothing")
    .option('--json', 'print { migrations: [{ version, name, applied_at }], pending, unknown } as JSON')
    .addHelpText('after', examples([[`keel db status --store ${URL_EXAMPLE}`, 'applied (when) and pending']]))
    .action(async (o: { json?: boolean }) => {
      const spec = storeSpec(io);
      if ('sqlite' in spec) {
        if (o.json) io.out(`${JSON.stringify({ store: 'sqlite', file: spec.sqlite, migrations: [], pending: 0, unknown: [] })}\n`);
        else io.out(`The SQLite store ${spec.sqlite} migrates itself when it is opened: there is nothing to list.\n`);
        return;
      }
      const { migrationStatus, withPostgres } = await import('../store/postgres.js');
      const { target, status } = await withPostgres(spec.postgres, async (c, t) => ({
        target: t,
        status: await migrationStatus(c, t.schema),
      }));
      const pending = status.migrations.filter((m) => m.applied_at === null).length;
      if (o.json) {
        io.out(
          `${JSON.stringify({ store: 'postgres', schema: target.schema, migrations: status.migrations, pending, unknown: status.unknown })}\n`,
        );
        return;
      }
      io.out(`PostgreSQL store ${target.shown} (schema ${target.schema})\n`);
      for (const m of status.migrations) {
        io.out(`  ${pad(m.version)} ${m.name.padEnd(24)} ${m.applied_at ? `applied ${m.applied_at}` : 'pending'}\n`);
      }
      for (const v of status.unknown) io.out(`  ${pad(v)} ${'(unknown)'.padEnd(24)} applied by a newer Keel\n`);
      io.out(
        `${status.migrations.length - pending} applied, ${pending} pending${pending ? ': keel db migrate applies them (Keel also does when it starts)' : ''}\n`,
      );
      if (status.unknown.length) io.err('keel: warning: the database was migrated by a newer Keel: upgrade this one before using it\n');
    });
}
