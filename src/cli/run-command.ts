/**
 * `keel run` and `keel resume`: a request run until it answers, asks or waits for a card, and a
 * paused run continued, locally or on a server (--server). Never prints a model's or a tool's text
 * itself: the run's end and its trace go through the context (finish, printer), escaped for the terminal.
 */
import { type Command, Option } from 'commander';
import type { Confirmation, Mode } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { askYesNo, type CommandContext, collectList, type Shown } from './context.js';

export function registerRun(program: Command, { getKeel, telemetry, remote, finish, printer }: CommandContext): void {
  program
    .command('run')
    .description('run a request until it answers, asks you something, or needs your approval')
    .argument('<message...>', 'what you want done; - reads it from stdin')
    .option('-m, --model <spec>', 'model spec (script:FILE, ollama:MODEL, openai:MODEL, …); default KEEL_MODEL')
    .option('-p, --plugins <dir>', 'plugin folder (repeatable); default KEEL_PLUGINS or the bundled plugins', collectList, [])
    .addOption(new Option('--mode <mode>', "session mode (default: the session's, else agent)").choices(['agent', 'plan', 'goal']))
    .option('-s, --session <id>', 'continue a session: the run sees its transcript, mode and contract (see keel runs show)')
    .option('--json', 'print the run as one JSON object on stdout')
    .option('-q, --quiet', 'print only the answer: no tool trace, no status line')
    .addHelpText(
      'after',
      `
The answer goes to stdout; the tool trace and the status line go to stderr. Exit code 3 means the
run is paused for you: answer with keel resume (a question) or keel approvals (a card).`,
    )
    .action(async (words: string[], o: { model?: string; plugins: string[]; mode?: Mode; session?: string } & Shown) => {
      const message = words.length === 1 && words[0] === '-' ? [await readStdin()] : words;
      const server = remote();
      if (server) {
        finish(
          await server.run(message.join(' '), { model: o.model, pluginDirs: o.plugins, mode: o.mode, session: o.session }, printer(o)),
          o,
        );
        return;
      }
      // Spans go to an OTLP collector only when OTEL_EXPORTER_OTLP_ENDPOINT is set (nothing is loaded otherwise).
      const stopTelemetry = await telemetry();
      try {
        const r = await (await getKeel()).run(
          message.join(' '),
          { model: o.model, pluginDirs: o.plugins, mode: o.mode, session: o.session },
          printer(o),
        );
        finish(r, o);
      } finally {
        await stopTelemetry?.();
      }
    });

  program
    .command('resume')
    .description('continue a paused run: answer its question (a confirmation: --yes or --no), or continue after its approval was answered')
    .argument('<run_id>')
    .option('-a, --answer <text>', "the answer to the run's question (with --yes/--no: what else the user says)")
    .option('-y, --yes', 'confirm the writes the question asks about')
    .option('--no', 'decline them: nothing is written')
    .option('-m, --model <spec>', "model spec (default: the run's own)")
    .option('--json', 'print the run as one JSON object on stdout')
    .option('-q, --quiet', 'print only the answer: no tool trace, no status line')
    .action(async (runId: string, o: { answer?: string; yes?: boolean; no?: boolean; model?: string } & Shown) => {
      if (o.yes && o.no) throw new KeelError('bad_input', '--yes and --no contradict each other: pass one of them');
      let confirm = o.yes ? true : o.no ? false : undefined;
      const server = remote();
      if (server) {
        if (o.model)
          throw new KeelError('bad_input', '--model does not apply with --server: the server continues the run with its own model');
        if (o.answer === undefined && confirm === undefined) {
          finish(await server.continueRun(runId, printer(o)), o);
          return;
        }
        if (confirm === undefined && process.stdin.isTTY) {
          const r = await server.getRun(runId);
          if (r.confirm) confirm = await askYesNo(`${r.question}\n${await confirmationText(r.confirm)}\nConfirm? [y/n] `);
        }
        finish(await server.resume(runId, { text: o.answer ?? '', confirm }, printer(o)), o);
        return;
      }
      const k = await getKeel();
      if (o.answer === undefined && confirm === undefined) {
        finish(await k.resume(runId, { model: o.model, onEvent: printer(o) }), o);
        return;
      }
      // A confirmation without a decision is asked for on a terminal; elsewhere the run refuses it.
      if (confirm === undefined && process.stdin.isTTY) {
        const pause = (await k.getRun(runId)).pause;
        if (pause?.kind === 'ask_user' && pause.confirm)
          confirm = await askYesNo(`${pause.question}\n${await confirmationText(pause.confirm)}\nConfirm? [y/n] `);
      }
      finish(await k.answer(runId, { text: o.answer ?? '', confirm }, { model: o.model, onEvent: printer(o) }), o);
    });
}

/** The held calls a confirmation asks about, as the terminal shows them (loaded when asked: not for `keel --help`). */
async function confirmationText(confirm: Confirmation): Promise<string> {
  return (await import('../approvals/card.js')).renderConfirmation(confirm).join('\n');
}

/** `keel run -`: the request from stdin (bounded, like any request). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > 1_000_000) throw new KeelError('bad_input', 'the request on stdin is larger than 1 MB');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (!text) throw new KeelError('bad_input', 'keel run -: stdin was empty; say what you want done');
  return text;
}
