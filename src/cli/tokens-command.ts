/**
 * `keel tokens create|list|revoke|groups`: the API tokens of keel serve, with their roles and
 * approver groups (A9). Never keeps a token, only its hash, and never shows one but once, when it
 * is made.
 */
import { type Command, Option } from 'commander';
import { keelHome } from '../config/paths.js';
import type { Role } from '../server/access/tokens.js';
import { KeelError } from '../util/errors.js';
import { type CommandContext, collectList } from './context.js';

export function registerTokens(program: Command, { io }: CommandContext): void {
  const tokens = program.command('tokens').description('API tokens for keel serve (viewer, approver, admin); only hashes are kept');
  tokens
    .command('create')
    .description('make a token; it is printed once, and only its hash is kept')
    .requiredOption('--name <name>', 'who or what holds it (audited with every answer)')
    .addOption(
      new Option('--role <role>', 'viewer reads; approver also starts runs and answers; admin also manages tokens')
        .choices(['viewer', 'approver', 'admin'])
        .default('approver'),
    )
    .option('--group <group>', 'an approver group the token is in (repeatable): it may answer the cards routed to it', collectList, [])
    .option('--json', 'print JSON')
    .action(async (o: { name: string; role: Role; group: string[]; json?: boolean }) => {
      const t = (await tokenFile()).create(o.name, o.role, new Date(), o.group);
      if (o.json) io.out(`${JSON.stringify(t)}\n`);
      else {
        const groups = t.groups.length ? `, groups ${t.groups.join(', ')}` : '';
        io.err(`Token ${t.name} (${t.role}${groups}, ${t.id}). It is shown this once; keep it somewhere safe:\n`);
        io.out(`${t.token}\n`);
      }
    });
  tokens
    .command('list')
    .description('the tokens: name, role, groups, when made, when revoked')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const rows = (await tokenFile()).list();
      if (o.json) io.out(`${JSON.stringify(rows)}\n`);
      else if (!rows.length) io.out('No tokens (keel serve makes an admin token on its first start).\n');
      else
        for (const t of rows)
          io.out(
            `${t.id}  ${t.name.padEnd(20)} ${t.role.padEnd(9)} ${(t.groups.length ? t.groups.join(',') : '-').padEnd(16)} created ${t.created_at}${t.revoked_at ? `  revoked ${t.revoked_at}` : ''}\n`,
          );
    });
  tokens
    .command('revoke')
    .description('revoke a token at once: its holder is refused from the next call')
    .argument('<id_or_name>')
    .action(async (idOrName: string) => {
      const t = (await tokenFile()).revoke(idOrName);
      io.out(`Token ${t.name} (${t.id}) revoked.\n`);
    });
  tokens
    .command('groups')
    .description("a token's approver groups: shown, or changed with --set, --add or --remove; a running server sees it at once")
    .argument('<id_or_name>')
    .option('--set <groups>', 'exactly these groups, comma-separated ("" for none)')
    .option('--add <group>', 'add a group (repeatable)', collectList, [])
    .option('--remove <group>', 'remove a group (repeatable)', collectList, [])
    .option('--json', 'print JSON')
    .action(async (idOrName: string, o: { set?: string; add: string[]; remove: string[]; json?: boolean }) => {
      const file = await tokenFile();
      if (o.set !== undefined && (o.add.length || o.remove.length))
        throw new KeelError('bad_input', 'give --set, or --add and --remove: not both');
      const changes = o.set !== undefined || o.add.length > 0 || o.remove.length > 0;
      const set = o.set
        ?.split(',')
        .map((g) => g.trim())
        .filter(Boolean);
      const t = changes
        ? file.setGroups(idOrName, { set, add: o.add, remove: o.remove })
        : file.list().find((r) => !r.revoked_at && (r.id === idOrName || r.name === idOrName));
      if (!t) throw new KeelError('not_found', `no active token ${idOrName}`, 'keel tokens list shows them');
      if (o.json) io.out(`${JSON.stringify({ id: t.id, name: t.name, groups: t.groups })}\n`);
      else io.out(`Token ${t.name} (${t.id}): ${t.groups.length ? `groups ${t.groups.join(', ')}` : 'in no group'}.\n`);
    });
  const tokenFile = async () => {
    const { Tokens } = await import('../server/access/tokens.js');
    return Tokens.at(keelHome(io.env));
  };
}
