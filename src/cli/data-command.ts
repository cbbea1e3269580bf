/**
 * `keel data reset`: the reference plugins' local data deleted and re-seeded. Never deletes
 * anything without asking on a terminal, or without --yes elsewhere.
 */
import type { Command } from 'commander';
import { KeelError } from '../util/errors.js';
import { askYesNo, type CommandContext, collectList } from './context.js';

export function registerData(program: Command, { io, getKeel, setCode }: CommandContext): void {
  const data = program.command('data').description("the reference plugins' local data");
  data
    .command('reset')
    .description("delete and re-seed each plugin's data under KEEL_HOME (plugins that export reset(home))")
    .option('-p, --plugins <dir>', 'plugin folder (repeatable)', collectList, [])
    .option('-y, --yes', 'do it without asking (needed when not on a terminal)')
    .action(async (o: { plugins: string[]; yes?: boolean }) => {
      // It deletes the plugins' data: asked on a terminal, and never by a script that did not say --yes.
      if (!o.yes) {
        if (!process.stdin.isTTY)
          throw new KeelError('bad_input', "keel data reset deletes each plugin's data under KEEL_HOME: pass --yes to do it");
        if (!(await askYesNo("Delete and re-seed each plugin's data under KEEL_HOME? [y/n] "))) {
          io.out('Nothing was reset.\n');
          return;
        }
      }
      const rows = await (await getKeel(false)).resetData(o.plugins);
      for (const r of rows) io.out(`${r.plugin.padEnd(20)} ${r.status}${r.message ? `: ${r.message}` : ''}\n`);
      setCode(rows.some((r) => r.status === 'failed') ? 1 : 0);
    });
}
