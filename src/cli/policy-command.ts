/**
 * `keel policy init|schema|check|explain` (issue 37): the operator's Cedar policy file, written,
 * described, checked before it ships and tried on a call. The file is the one named on the command
 * line, else the config's `policy_file:` (relative to the config file). The pool is the plugins' tools
 * and, with `--app MODULE`, an application's own tools declared in code (issue 47): the module
 * exports the list it gives `new Keel({ tools })`. Check and explain are the library's own
 * (`keel.checkPolicy`, `keel.explainPolicy`); this file reads the flags and prints. The engine is an
 * optional package: without it each command says which to install (exit 2).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { keelHome } from '../config/paths.js';
import type { Keel } from '../keel/keel.js';
import type { Principal } from '../policy/cedar.js';
import { type AppTool, MODES, type Mode, type ToolSpec } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { osUser } from '../util/user.js';
import { collectList } from './context.js';
import { examples } from './help.js';
import type { Io } from './main.js';

const EXAMPLES: Record<string, [string, string][]> = {
  policy: [
    ['keel policy init', 'a starter file: every call with its declared gate'],
    ['keel policy check', "validate the config's policy_file"],
    ['keel policy explain pay --args \'{"amount": 900, "to": "bob"}\' --as alice:finance', 'one call decided'],
  ],
  init: [
    ['keel policy init', "the config's policy_file, else ./policy.cedar"],
    ['keel policy init ops/policy.cedar --plugins ./plugins', 'with examples naming your tools'],
  ],
  schema: [['keel policy schema --plugins ./plugins', 'what a policy can read of your tools']],
  check: [
    ['keel policy check', "the config's policy_file"],
    ['keel policy check ops/policy.cedar --plugins ./plugins', ''],
    ['keel policy check --app ./tools.mjs', "with the app's own tools (the module exports `tools`)"],
  ],
  explain: [
    ['keel policy explain pay --args \'{"amount": 900, "to": "bob"}\'', 'as you, in agent mode'],
    ['keel policy explain wipe --args \'{"path": "/"}\' --as ivan:interns', 'as a token named ivan in the group interns'],
    ['keel policy explain post_url --args \'{"url": "https://x"}\' --read-from read_email', 'after the run read an email'],
    ['keel policy explain send_money --args \'{"to": "bob", "amount": 5}\' --app ./tools.mjs', "an app's own tool"],
  ],
};

export function registerPolicy(
  program: Command,
  io: Io,
  getKeel: (withStore?: boolean) => Promise<Keel>,
  setCode: (code: number) => void,
): void {
  const policy = program
    .command('policy')
    .description("the operator's Cedar policy file (policy_file: in config.yaml): write, describe, check, explain")
    .addHelpText('after', examples(EXAMPLES.policy));

  /** The config's policy_file (the config is read when a command runs: `keel --help` loads none of it). */
  const configured = async (): Promise<string | null> => {
    const { loadConfig, policyFileOf } = await import('../config/config.js');
    return policyFileOf(loadConfig(keelHome(io.env), io.env));
  };
  /** The file named, else the config's policy_file; none is a usage error (init has its own default). */
  const fileOf = async (given: string | undefined, fallback?: string): Promise<string> => {
    if (given) return given;
    const named = await configured();
    if (named) return named;
    if (fallback) return fallback;
    throw new KeelError(
      'bad_input',
      'no policy file: name one, or set policy_file: in the config file (KEEL_CONFIG or KEEL_HOME/config.yaml)',
    );
  };
  const poolOf = async (dirs: string[], app?: string): Promise<readonly ToolSpec[]> =>
    (await (await getKeel(false)).registry(dirs, await appToolsOf(app))).pool;
  const cedar = () => import('../policy/cedar.js');
  const APP = ['--app <module>', "an application's module that exports its tools declared in code (export const tools = [...])"] as const;

  policy
    .command('init')
    .description('write a starter policy file: every call permitted with its declared gate, and commented examples')
    .argument('[file]', "where to write it (default: the config's policy_file, else ./policy.cedar)")
    .option('-p, --plugins <dir>', 'plugin folder (repeatable), for examples naming its tools', collectList, [])
    .option(...APP)
    .option('--force', 'overwrite an existing file')
    .addHelpText('after', examples(EXAMPLES.init))
    .action(async (given: string | undefined, o: { plugins: string[]; app?: string; force?: boolean }) => {
      const file = await fileOf(given, 'policy.cedar');
      if (existsSync(file) && !o.force) throw new KeelError('bad_input', `${file} exists: pass --force to overwrite it`);
      writeFileSync(file, (await cedar()).starterPolicy(await poolOf(o.plugins, o.app)));
      io.out(`Wrote ${file}. Check it with: keel policy check ${file}\n`);
      if (!given && !(await configured())) io.out(`Keel uses it once the config file says so: policy_file: ${file}\n`);
    });

  policy
    .command('schema')
    .description('print the Cedar schema generated from the mounted tools (what a policy can read)')
    .option('-p, --plugins <dir>', 'plugin folder (repeatable); default KEEL_PLUGINS or the bundled plugins', collectList, [])
    .option(...APP)
    .addHelpText('after', examples(EXAMPLES.schema))
    .action(async (o: { plugins: string[]; app?: string }) => {
      io.out((await cedar()).policySchemaText(await poolOf(o.plugins, o.app)));
    });

  policy
    .command('check')
    .description('validate a policy file against the generated schema: errors (exit 1) and warnings, each at file:line:col')
    .argument('[file]', "the policy file (default: the config's policy_file)")
    .option('-p, --plugins <dir>', 'plugin folder (repeatable); default KEEL_PLUGINS or the bundled plugins', collectList, [])
    .option(...APP)
    .option('--json', 'print JSON: the diagnostics and the policies')
    .addHelpText('after', examples(EXAMPLES.check))
    .action(async (given: string | undefined, o: { plugins: string[]; app?: string; json?: boolean }) => {
      const file = await fileOf(given);
      const keel = await getKeel(false);
      const r = await keel.checkPolicy({ file, pluginDirs: o.plugins, tools: await appToolsOf(o.app) });
      const errors = r.diagnostics.filter((d) => d.severity === 'error').length;
      const warnings = r.diagnostics.length - errors;
      if (o.json) io.out(`${JSON.stringify(r, setsAsLists)}\n`);
      else {
        for (const d of r.diagnostics) io.out(`${d.at}: ${d.severity}: ${d.message}\n`);
        const count = r.ok ? `${r.policies.length} ${r.policies.length === 1 ? 'policy' : 'policies'}` : 'not loaded';
        io.out(`${file}: ${count}, ${errors} error(s), ${warnings} warning(s)\n`);
      }
      setCode(errors ? 1 : 0);
    });

  policy
    .command('explain')
    .description('decide one call as the policy file would, and print the decision and the policies that made it')
    .argument('<tool>', 'the tool')
    .requiredOption('--args <json>', "the call's arguments, a JSON object")
    .option('--file <file>', "the policy file (default: the config's policy_file)")
    .option('--as <principal>', 'who starts the run: a token name from keel tokens, NAME:GROUP1,GROUP2 to give groups (default: you)')
    .option('--mode <mode>', `the session's mode (${MODES.join(', ')})`, 'agent')
    .option('--untrusted', 'the run has read content from outside you')
    .option('--read-from <tool>', 'the run has read untrusted results of this tool (repeatable; implies --untrusted)', collectList, [])
    .option('--session <id>', 'the session')
    .option('--at <time>', 'the time of the call (ISO 8601; default now)')
    .option('--time-zone <zone>', 'the IANA time zone of context.hour and context.weekday (default the local one)')
    .option('-p, --plugins <dir>', 'plugin folder (repeatable); default KEEL_PLUGINS or the bundled plugins', collectList, [])
    .option(...APP)
    .option('--json', 'print the decision as JSON')
    .addHelpText('after', examples(EXAMPLES.explain))
    .action(
      async (
        name: string,
        o: {
          args: string;
          file?: string;
          as?: string;
          mode: string;
          untrusted?: boolean;
          readFrom: string[];
          session?: string;
          at?: string;
          timeZone?: string;
          plugins: string[];
          app?: string;
          json?: boolean;
        },
      ) => {
        if (!MODES.includes(o.mode as Mode)) throw new KeelError('bad_input', `--mode must be one of ${MODES.join(', ')}, got "${o.mode}"`);
        let args: unknown;
        try {
          args = JSON.parse(o.args);
        } catch (err) {
          throw new KeelError('bad_input', `--args is not JSON: ${(err as Error).message}`);
        }
        if (!args || typeof args !== 'object' || Array.isArray(args)) throw new KeelError('bad_input', '--args must be a JSON object');
        const at = o.at ? new Date(o.at) : new Date();
        if (Number.isNaN(at.getTime())) throw new KeelError('bad_input', `--at must be a time (ISO 8601), got "${o.at}"`);
        const file = await fileOf(o.file);
        const keel = await getKeel(false);
        const x = await keel.explainPolicy(name, args as Record<string, unknown>, {
          file,
          pluginDirs: o.plugins,
          tools: await appToolsOf(o.app),
          principal: await principalOf(o.as, io),
          mode: o.mode as Mode,
          untrusted: o.untrusted === true,
          readFrom: o.readFrom,
          session: o.session ?? null,
          at,
          ...(o.timeZone ? { timeZone: o.timeZone } : {}),
        });
        if (o.json) {
          // The policy's decision at the top (decision, policies, approvers, …), then the gate's answer.
          const { text: _text, file: _file, verdict, tool, principal, policy, ...rest } = x;
          io.out(`${JSON.stringify({ tool, principal, policy, ...verdict, ...rest })}\n`);
          return;
        }
        io.out(x.text);
      },
    );
}

/**
 * `--app MODULE`: the application's tools declared in code, from a module that exports the list it
 * gives `new Keel({ tools })` — `export const tools = [...]`, or as its default export. Imported as a
 * plugin's entry is (TypeScript through tsx; `keel` and `zod` shared when the app has none).
 */
async function appToolsOf(module: string | undefined): Promise<readonly AppTool[] | undefined> {
  if (module === undefined) return undefined;
  const file = resolve(module);
  if (!existsSync(file)) throw new KeelError('bad_input', `--app ${module}: no such file`);
  const { importEntry } = await import('../plugin-host/host.js');
  let m: { tools?: unknown; default?: unknown };
  try {
    m = (await importEntry(file)) as typeof m;
  } catch (err) {
    throw new KeelError('bad_input', `--app ${module} did not load: ${(err as Error).message}`);
  }
  // A TypeScript module loaded as CommonJS (no "type": "module" beside it) has its exports under `default`.
  const inner = m.default as { tools?: unknown; default?: unknown } | undefined;
  const tools = [m.tools, inner?.tools, m.default, inner?.default].find((v) => Array.isArray(v));
  if (!Array.isArray(tools))
    throw new KeelError(
      'bad_input',
      `--app ${module} exports no tools: export the list your app gives new Keel({ tools }), as \`export const tools = [...]\` (or its default export)`,
    );
  return tools as AppTool[];
}

/** JSON of the policies' scopes: a Set as a list. */
const setsAsLists = (_k: string, v: unknown) => (v instanceof Set ? [...v] : v);

/**
 * `--as`: NAME:GROUP1,GROUP2 gives the groups; a bare NAME is a token of `keel tokens` (its role,
 * and its groups when tokens have them), else refused; no --as is you, the local user.
 */
async function principalOf(as: string | undefined, io: Io): Promise<Principal> {
  if (as === undefined) return { kind: 'user', name: osUser(), groups: [] };
  const [name, groupList] = as.split(/:(.*)/s, 2);
  if (!name) throw new KeelError('bad_input', '--as needs a name: a token from keel tokens, or NAME:GROUP1,GROUP2');
  const { Tokens } = await import('../server/access/tokens.js');
  const token = Tokens.at(keelHome(io.env))
    .list()
    .find((t) => t.name === name && !t.revoked_at) as { name: string; role: string; groups?: readonly string[] } | undefined;
  if (!token && groupList === undefined)
    throw new KeelError(
      'bad_input',
      `--as ${name}: no active token of that name (keel tokens list); write ${name}:GROUP1,GROUP2 to try one anyway`,
    );
  const groups =
    groupList !== undefined
      ? groupList
          .split(',')
          .map((g) => g.trim())
          .filter(Boolean)
      : [...(token?.groups ?? [])];
  return { kind: 'token', name, ...(token ? { role: token.role } : {}), groups };
}
