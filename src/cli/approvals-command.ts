/**
 * `keel approvals list|approve|reject`: the approval cards, answered locally or on a server
 * (--server), one or several at once (A8), edited before approval (A7). Never answers a card twice,
 * nor lets one card's failure stop the others of a batch; never prints a card but through the
 * context's io, escaped for the terminal.
 */
import { type Command, Option } from 'commander';
import type { AppNeeds } from '../keel/options.js';
import { KeelError } from '../util/errors.js';
import { osUser } from '../util/user.js';
import { type CommandContext, EXIT, type Shown, storeName } from './context.js';

// What the actions print with, loaded when one runs: `keel --help` loads only the registration.
const views = async () => ({ ...(await import('../approvals/card.js')), ...(await import('./render.js')) });

export function registerApprovals(program: Command, { io, getKeel, remote, finish, printer, stopLive, setCode }: CommandContext): void {
  const approvals = program.command('approvals').description('approval cards for destructive calls and pinned writes');
  approvals
    .command('list')
    .description('approval cards, newest first, each with its run and when it expires')
    .addOption(new Option('--status <status>', 'only this status').choices(['pending', 'approved', 'rejected', 'expired']))
    .option('--json', 'print JSON (an array of approvals: id, run_id, status, card, …)')
    .action(async (o: { status?: 'pending' | 'approved' | 'rejected' | 'expired'; json?: boolean }) => {
      const { renderCard, status } = await views();
      const server = remote();
      const rows = server ? await server.listApprovals(o.status) : await (await getKeel()).listApprovals({ status: o.status });
      if (o.json) io.out(`${JSON.stringify(rows)}\n`);
      else if (!rows.length) io.out(`No approvals in ${storeName(io.env, server)}.\n`);
      else {
        for (const a of rows) {
          io.out(`${a.id}  ${status(a.status, 8)} run ${a.run_id}  requested ${a.requested_at}  expires ${a.expires_at}\n`);
          io.out(`${renderCard(a.card).replace(/^/gm, '    ')}\n`);
        }
      }
    });
  for (const decision of ['approve', 'reject'] as const) {
    const cmd = approvals
      .command(decision)
      .description(
        decision === 'approve'
          ? 'approve a card: exactly the calls it shows run, once, and its run goes on'
          : 'reject a card: nothing runs, and its run goes on so the model can say so',
      )
      .argument('[ids...]', 'approval ids (keel approvals list shows them); several are answered one by one, each once')
      .option('--run <run>', 'also every pending card of this run')
      .option('-r, --reason <text>', 'why (kept in the audit)')
      .option('--as <actor>', 'who answers (default: the OS user)')
      .option('--json', 'print the continued run as one JSON object')
      .option('-q, --quiet', "print only the run's answer: no tool trace, no status line");
    if (decision === 'approve') {
      cmd.option('--allow-writes', 'a plan or goal: also let the confirm-once writes made while carrying it out run without asking');
      cmd.option(
        '--args <json>',
        'run the card\'s call with these arguments instead, checked as the model’s are: a JSON object; a card of several calls takes {"CALL_ID": {...}}',
      );
    }
    cmd.action(async (ids: string[], o: { reason?: string; as?: string; allowWrites?: boolean; args?: string; run?: string } & Shown) => {
      const { appRunAnswered, status } = await views();
      const server = remote();
      if (server && o.as) throw new KeelError('bad_input', '--as does not apply with --server: the server records the name of your token');
      const edit = o.args === undefined ? undefined : (await import('./edit-args.js')).editArguments(o.args);
      const all = [...ids];
      if (o.run !== undefined) {
        const pending = server
          ? await server.listApprovals('pending')
          : await (await getKeel()).listApprovals({ status: 'pending', run_id: o.run });
        for (const a of pending) if (a.run_id === o.run && !all.includes(a.id)) all.push(a.id);
        if (!all.length) throw new KeelError('not_found', `run ${o.run} has no pending card`, 'keel approvals list --status pending');
      }
      if (!all.length) cmd.error("error: missing required argument 'id'", { exitCode: EXIT.usage, code: 'commander.missingArgument' });
      if (edit && all.length > 1) throw new KeelError('bad_input', '--args edits one card: give exactly one approval id with it');
      const answer = (id: string) =>
        server
          ? server.respondToApproval(id, decision, o.reason ?? null, printer(o), { consentWrites: o.allowWrites, arguments: edit })
          : getKeel().then((k) =>
              k.answerCard(id, decision, {
                actor: o.as ?? osUser(io.env),
                reason: o.reason ?? null,
                onEvent: printer(o),
                consentWrites: o.allowWrites,
                arguments: edit,
                // A9: the machine's own user, holding the store file, answers any card; with --server the token's groups apply.
                who: { name: o.as ?? osUser(io.env), groups: [], kind: 'user' },
              }),
            );
      if (all.length > 1) {
        // A8: each card on its own and once; one answered meanwhile is reported and the others go on.
        let failed = 0;
        for (const id of all) {
          try {
            const answered = await answer(id);
            const { approval, result } = answered;
            const app = (answered as { app?: AppNeeds }).app;
            if (result) stopLive();
            const after = result
              ? `, run ${result.run_id} ${result.status}`
              : app
                ? `, run ${approval.run_id} continues when its application resumes it`
                : '';
            io.out(
              o.json ? `${JSON.stringify({ id, outcome: 'answered', approval, result })}\n` : `${id}: ${status(approval.status)}${after}\n`,
            );
            if (result?.status === 'failed') failed++;
          } catch (err) {
            if (!(err instanceof KeelError) || err.code === 'unavailable') throw err;
            failed++;
            io.out(
              o.json ? `${JSON.stringify({ id, outcome: err.code, error: err.message })}\n` : `${id}: not ${decision}d: ${err.message}\n`,
            );
          }
        }
        setCode(failed ? EXIT.failed : EXIT.ok);
        return;
      }
      const id = all[0];
      const answered = await answer(id);
      const { approval, result } = answered;
      const app = (answered as { app?: AppNeeds }).app;
      if (app) {
        // R18: a library app's run, with a model or tools in code this process lacks: the answer is kept; the app carries it on.
        io.out(o.json ? `${JSON.stringify({ approval, continues: 'app', needs: app })}\n` : `${appRunAnswered(approval, app)}\n`);
        return;
      }
      if (!result) {
        // An MCP session's card: the MCP server holding the call carries it out (or not) now.
        io.out(
          o.json
            ? `${JSON.stringify({ approval })}\n`
            : `Approval ${approval.id}: ${approval.status}. The MCP session carries it out: its client gets the outcome on the waiting call, or by calling again with the same arguments.\n`,
        );
        return;
      }
      if (!o.json) io.err(`Approval ${approval.id}: ${status(approval.status)}.\n`);
      finish(result, o);
    });
  }
}
