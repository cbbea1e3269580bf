/**
 * `keel policy init|schema|check|explain` (issue 37): the operator's Cedar policy file, written,
 * described, checked before it ships and tried on a call. The file is the one named on the command
 * line, else the config's `policy_file:` (relative to the config file). The engine is an optional
 * package: without it each command says which to install (exit 2).
 */
import { existsSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { keelHome } from '../config/paths.js';
import type { Keel } from '../keel/keel.js';
import type { Principal } from '../policy/cedar.js';
import { MODES, type Mode, type ToolSpec, type UntrustedSource } from '../types/index.js';
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
  ],
  explain: [
    ['keel policy explain pay --args \'{"amount": 900, "to": "bob"}\'', 'as you, in agent mode'],
    ['keel policy explain wipe --args \'{"path": "/"}\' --as ivan:interns', 'as a token named ivan in the group interns'],
    ['keel policy explain post_url --args \'{"url": "https://x"}\' --read-from read_email', 'after the run read an email'],
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
  const poolOf = async (dirs: string[]): Promise<ToolSpec[]> => (await (await getKeel(false)).registry(dirs)).pool;
  const cedar = () => import('../policy/cedar.js');

  policy
    .command('init')
    .description('write a starter policy file: every call permitted with its declared gate, and commented examples')
    .argument('[file]', "where to write it (default: the config's policy_file, else ./policy.cedar)")
    .option('-p, --plugins <dir>', 'plugin folder (repeatable), for examples naming its tools', collectList, [])
    .option('--force', 'overwrite an existing file')
    .addHelpText('after', examples(EXAMPLES.init))
    .action(async (given: string | undefined, o: { plugins: string[]; force?: boolean }) => {
      const file = await fileOf(given, 'policy.cedar');
      if (existsSync(file) && !o.force) throw new KeelError('bad_input', `${file} exists: pass --force to overwrite it`);
      writeFileSync(file, (await cedar()).starterPolicy(await poolOf(o.plugins)));
      io.out(`Wrote ${file}. Check it with: keel policy check ${file}\n`);
      if (!given && !(await configured())) io.out(`Keel uses it once the config file says so: policy_file: ${file}\n`);
    });

  policy
    .command('schema')
    .description('print the Cedar schema generated from the mounted tools (what a policy can read)')
    .option('-p, --plugins <dir>', 'plugin folder (repeatable); default KEEL_PLUGINS or the bundled plugins', collectList, [])
    .addHelpText('after', examples(EXAMPLES.schema))
    .action(async (o: { plugins: string[] }) => {
      io.out((await cedar()).policySchemaText(await poolOf(o.plugins)));
    });

  policy
    .command('check')
    .description('validate a policy file against the generated schema: errors (exit 1) and warnings, each at file:line:col')
    .argument('[file]', "the policy file (default: the config's policy_file)")
    .option('-p, --plugins <dir>', 'plugin folder (repeatable); default KEEL_PLUGINS or the bundled plugins', collectList, [])
    .option('--json', 'print JSON: the diagnostics and the policies')
    .addHelpText('after', examples(EXAMPLES.check))
    .action(async (given: string | undefined, o: { plugins: string[]; json?: boolean }) => {
      const file = await fileOf(given);
      const { CedarPolicy } = await cedar();
      const { policy: p, diagnostics } = await CedarPolicy.diagnose(file, await poolOf(o.plugins));
      const errors = diagnostics.filter((d) => d.severity === 'error').length;
      const warnings = diagnostics.length - errors;
      if (o.json) io.out(`${JSON.stringify({ file, ok: errors === 0, diagnostics, policies: p?.policies ?? [] }, setsAsLists)}\n`);
      else {
        for (const d of diagnostics) io.out(`${d.at}: ${d.severity}: ${d.message}\n`);
        const count = p ? `${p.policies.length} ${p.policies.length === 1 ? 'policy' : 'policies'}` : 'not loaded';
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
    .option('--json', 'print the verdict as JSON')
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
        const pool = await poolOf(o.plugins);
        const tool = pool.find((t) => t.name === name);
        if (!tool) throw new KeelError('bad_input', `no tool named ${name} is mounted (keel plugins check lists them)`);
        const problem = tool.checkArgs(args);
        if (problem) throw new KeelError('bad_input', `--args: ${problem}`);
        const principal = await principalOf(o.as, io);
        const untrusted: UntrustedSource[] = o.readFrom.map((t, i) => ({ tool: t, call_id: `explain_${i}`, label: `--read-from ${t}` }));
        if (o.untrusted && !untrusted.length) untrusted.push({ tool: '', call_id: 'explain', label: '--untrusted' });
        const { CedarPolicy } = await cedar();
        const p = await CedarPolicy.load(file, pool);
        const verdict = p.evaluate({
          tool,
          args: args as Record<string, unknown>,
          mode: o.mode as Mode,
          session: o.session ?? null,
          principal,
          untrusted,
          at,
          ...(o.timeZone ? { timeZone: o.timeZone } : {}),
        });
        if (o.json) {
          io.out(`${JSON.stringify({ tool: name, principal, policy: p.hash, ...verdict })}\n`);
          return;
        }
        const what =
          verdict.decision === 'forbid'
            ? verdict.policies.length
              ? 'forbidden: the call is denied before it runs'
              : 'forbidden: no permit matches (Cedar denies by default)'
            : verdict.decision === 'ask'
              ? 'ask: an approval card pinned to these arguments'
              : `permit: the tool's declared gate (${tool.policy?.declared_gate ?? tool.gate})`;
        const lines = [
          `${name} as ${principal.name} (${principal.kind}${principal.role ? `, ${principal.role}` : ''}${principal.groups.length ? `, groups ${principal.groups.join(', ')}` : ''}), mode ${o.mode}: ${what}`,
          ...verdict.policies.map((id) => `  by ${id}${atOf(p.policies, id)}`),
          ...(verdict.approvers ? [`  approvers: ${verdict.approvers.join(', ')}`] : []),
          ...(verdict.errors ?? []).map((e) => `  error: ${e}`),
        ];
        io.out(`${lines.join('\n')}\n`);
      },
    );
}

const atOf = (policies: readonly { id: string; at: string }[], id: string) => {
  const p = policies.find((x) => x.id === id);
  // A generated id (`policy3 (file:line)`) already says where it is.
  return p && !/^policy\d+ \(.*\)$/.test(id) ? ` (${p.at})` : '';
};

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
