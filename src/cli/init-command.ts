/**
 * `keel plugins init`: the command's definition, cheap to load (the MCP client, the manifest
 * checker and the scaffold are imported when the command runs).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { keelHome } from '../config/paths.js';
import type { Effect } from '../manifest/schema.js';
import { KeelError } from '../util/errors.js';
import type { Io } from './main.js';

function collectEnv(v: string, prev: Record<string, string>): Record<string, string> {
  const eq = v.indexOf('=');
  if (eq <= 0) throw new KeelError('bad_input', `--env ${v}: expected KEY=VALUE`);
  return { ...prev, [v.slice(0, eq)]: v.slice(eq + 1) };
}

/**
 * `keel plugins init --from-mcp "CMD ARGS" [--name NAME] [--out DIR] [--force] [--env K=V]`. (The
 * version is unused: a new plugin links the Keel that made it, whatever its version.)
 */
export function registerPluginsInit(plugins: Command, io: Io, _version: string): void {
  plugins
    .command('init')
    .description(
      "make a new TypeScript plugin in ./NAME (manifest, typed tools, a test, a script to try it); with --from-mcp, draft a plugin.yaml from an MCP server's tools and their annotations",
    )
    .argument('[name]', 'the new plugin (without --from-mcp)')
    .option('--from-mcp <command>', 'the stdio MCP server to start, as one quoted command line')
    .option('--name <name>', "plugin name for --from-mcp (default: from the server's name)")
    .option('--out <dir>', 'write into DIR (default: ./NAME; with --from-mcp, print the manifest)')
    .option('--force', 'overwrite an existing plugin.yaml')
    .option(
      '--env <key=value>',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the manifest's own substitution syntax, shown to the user.
      'environment for the server, kept in mcp.env (repeatable; ${KEEL_HOME} and ${PLUGIN_DIR} allowed)',
      collectEnv,
      {},
    )
    .action(
      async (
        newName: string | undefined,
        o: { fromMcp?: string; name?: string; out?: string; force?: boolean; env: Record<string, string> },
      ) => {
        if (!o.fromMcp) {
          const { scaffoldPlugin } = await import('./scaffold.js');
          if (!newName)
            throw new KeelError(
              'bad_input',
              'keel plugins init NAME makes a new plugin; --from-mcp "CMD ARGS" drafts one for an MCP server',
            );
          const made = scaffoldPlugin(newName, o.out, o.force);
          io.out(
            `Made ${made.dir}: ${made.files.join(', ')}.\n` +
              `Next: keel plugins check ${made.dir} (nothing to install); its own test: cd ${made.dir} && npm install && npm test\n`,
          );
          return;
        }
        if (newName) throw new KeelError('bad_input', 'give a NAME or --from-mcp, not both (--name names the drafted plugin)');
        const { initFromMcp } = await import('./plugins-init.js');
        const draft = await initFromMcp({
          commandLine: o.fromMcp,
          name: o.name,
          out: o.out,
          force: o.force,
          env: o.env,
          home: keelHome(io.env),
        });
        if (!draft.file) return io.out(draft.yaml);
        const count = (e: Effect) => draft.tools.filter((t) => t.effect === e).length;
        io.out(
          `Wrote ${draft.file}: ${draft.tools.length} tools of ${draft.server.name} ` +
            `(${count('read')} read, ${count('write')} write, ${count('destructive')} destructive).\n` +
            `Review each effect, then: keel plugins check ${resolve(draft.file, '..')}\n`,
        );
      },
    );
}
