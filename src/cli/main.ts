import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError, Help, Option } from 'commander';
import { renderCard, renderConfirmation } from '../approvals/card.js';
import { BUNDLED_PLUGINS, keelHome, PACKAGE_ROOT } from '../config/paths.js';
import type { Keel } from '../keel/keel.js';
import { ModelError } from '../models/types.js';
import type { Role } from '../server/access/tokens.js';
import type { LoopEvent, Mode, RunResult } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { redact } from '../util/redact.js';
import { forTerminal } from '../util/terminal.js';
import { osUser } from '../util/user.js';
import { applyColour, colourOn } from './colour.js';
import { editArguments } from './edit-args.js';
import { registerPluginsInit } from './init-command.js';
import { LiveView, withLive } from './live.js';
import { Remote } from './remote.js';
import { appRunAnswered, eventPrinter, renderEnd, renderPlugins, renderRunList, renderRunShow, runRow, status } from './render.js';

/** Keel's version, from its package.json. */
const VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
})();

export interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
  env: NodeJS.ProcessEnv;
}

/** Whether stdout and stderr are terminals (colour is for terminals only). */
export interface Tty {
  stdout: { isTTY?: boolean };
  stderr: { isTTY?: boolean };
}
const processTty: Tty = { stdout: process.stdout, stderr: process.stderr };

/** How a command that ends with a run shows it. */
interface Shown {
  json?: boolean;
  quiet?: boolean;
}

/** Each command's Examples section, by its path: `keel --help` and every `keel … --help` ends with one. */
const EXAMPLES: Record<string, [command: string, comment: string][]> = {
  keel: [
    ['keel run "what bills are due this week?"', 'ask, with the bundled reference plugins'],
    ['keel chat', 'an interactive session'],
    ['keel approvals list --status pending', 'cards waiting for you'],
    ['keel demo', 'the reference assistant working its scenarios'],
  ],
  'keel run': [
    ['keel run "remind me to call the plumber tomorrow at 9"', ''],
    ['keel run --model ollama:qwen3 "what is on my calendar on Friday?"', 'with a local model'],
    ['echo "summarise my notes" | keel run -', 'the request from stdin'],
    ['keel run --json "upcoming bills" | jq .answer', 'for scripts'],
    ['keel run --mode plan "tidy up my notes folder"', 'propose a plan first; nothing is written until you approve it'],
  ],
  'keel resume': [
    ['keel resume run_01H… --answer "the blue one"', 'answer the question the run asked'],
    ['keel resume run_01H… --yes', 'confirm the writes it holds'],
    ['keel resume run_01H… --no --answer "only the first two"', 'decline, and say why'],
    ['keel resume run_01H…', 'continue after its card was answered, or after an interruption'],
  ],
  'keel runs': [
    ['keel runs list', ''],
    ['keel runs show run_01H…', ''],
  ],
  'keel runs list': [
    ['keel runs list -n 5', ''],
    ['keel runs list --json | jq -r ".[].run_id"', 'the ids only'],
  ],
  'keel runs show': [
    ['keel runs show run_01H…', ''],
    ['keel runs show run_01H… --json | jq .steps', 'the calls'],
  ],
  'keel runs cancel': [['keel runs cancel run_01H… --reason "not needed any more"', '']],
  'keel plugins': [
    ['keel plugins check', ''],
    ['keel plugins init todo', 'a new plugin to start from'],
  ],
  'keel plugins check': [
    ['keel plugins check', 'the plugins keel run would use'],
    ['keel plugins check ./todo', 'one plugin folder'],
    ['keel plugins check ./todo/plugin.yaml --json', 'as data, for an editor or CI'],
  ],
  'keel plugins show': [
    ['keel plugins show calendar', 'a bundled plugin'],
    ['keel plugins show todo --plugins .', 'a plugin in this folder'],
  ],
  'keel plugins init': [
    ['keel plugins init todo && cd todo && npm install && npm test', ''],
    [
      'keel plugins init --from-mcp "npx -y @modelcontextprotocol/server-memory" --out ./memory',
      "draft a manifest from an MCP server's tools",
    ],
  ],
  'keel approvals': [
    ['keel approvals list --status pending', ''],
    ['keel approvals approve appr_01H…', ''],
  ],
  'keel approvals list': [['keel approvals list --status pending', 'what waits for you']],
  'keel approvals approve': [
    ['keel approvals approve appr_01H…', ''],
    ['keel approvals approve appr_01H… --reason "checked with Sam"', ''],
    ['keel approvals approve appr_01H… --allow-writes', 'a plan: its writes run without asking again'],
    ['keel approvals approve appr_01H… --args \'{"ids":["m2"]}\'', 'run the call with your arguments instead'],
    ['keel approvals approve appr_01A… appr_01B… appr_01C…', 'several cards, each answered once'],
    ['keel approvals reject --run run_01H…', 'every pending card of a run'],
  ],
  'keel approvals reject': [
    ['keel approvals reject appr_01H…', ''],
    ['keel approvals reject appr_01H… --reason "keep the March files"', ''],
  ],
  'keel chat': [
    ['keel chat', ''],
    ['keel chat --mode plan --model ollama:qwen3', 'start in plan mode, with a local model'],
  ],
  'keel demo': [
    ['keel demo', 'every scenario, with the scripted model'],
    ['keel demo --only bills', 'the scenarios whose file name contains "bills"'],
  ],
  'keel serve': [
    ['keel serve', 'on 127.0.0.1:7373; the first start prints an admin token'],
    ['keel serve --host 0.0.0.0 --port 8080 --model openai:gpt-4.1-mini', 'for other machines'],
  ],
  'keel mcp': [['keel mcp serve', '']],
  'keel mcp serve': [
    ['keel mcp serve', 'stdio, for an MCP client that starts Keel itself'],
    ['keel mcp serve --http 7374 --mode plan', 'Streamable HTTP, refusing every write'],
  ],
  'keel tokens': [
    ['keel tokens create --name phone --role approver', ''],
    ['keel tokens list', ''],
    ['keel tokens groups ana --add finance', ''],
  ],
  'keel tokens create': [['keel tokens create --name phone --role approver', 'a token that can answer cards']],
  'keel tokens list': [['keel tokens list --json', '']],
  'keel tokens revoke': [['keel tokens revoke phone', '']],
  'keel tokens groups': [
    ['keel tokens groups ana --add finance', 'ana may answer the cards routed to finance'],
    ['keel tokens groups ana --set finance,ops', 'exactly these'],
    ['keel tokens groups ana --set ""', 'in no group'],
  ],
  'keel data': [['keel data reset --yes', '']],
  'keel data reset': [
    ['keel data reset', 'asks first, on a terminal'],
    ['keel data reset --yes', 'in a script'],
  ],
};

function examples(rows: [string, string][]): string {
  const lines = rows.flatMap(([cmd, comment]) => (comment ? [`  # ${comment}`, `  $ ${cmd}`] : [`  $ ${cmd}`]));
  return `\nExamples:\n${lines.join('\n')}\n`;
}

const defaultIo: Io = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  env: process.env,
};

/** The exit codes, documented in the README and in `keel --help`. */
export const EXIT = {
  /** Done, or nothing to report. */
  ok: 0,
  /** The run failed (or a check found a failed, degraded or drifting plugin). */
  failed: 1,
  /** Bad input: a flag, an id, a file, the configuration. */
  usage: 2,
  /** The run is paused for the user: a question, a confirmation or an approval card. */
  paused: 3,
} as const;

export async function main(argv: string[], raw: Io = defaultIo, tty: Tty = processTty): Promise<number> {
  // Everything printed passes through forTerminal: what a model, a tool or a plugin wrote cannot
  // rewrite the screen (JSON output escapes control characters itself). Colour is added after, on a
  // terminal only, from markers only the CLI can make (colour.ts).
  const colour = { out: colourOn(tty.stdout, raw.env), err: colourOn(tty.stderr, raw.env) };
  const io: Io = {
    ...raw,
    out: (s) => raw.out(applyColour(forTerminal(s), colour.out)),
    err: (s) => raw.err(applyColour(forTerminal(s), colour.err)),
  };
  // Keel's data is the user's alone: folders 0700 and files 0600, plugin data included.
  const umask = process.umask(0o077);
  // S4: a command that fails before storing anything leaves no home behind that it made itself
  // (a `keel run` with no model used to leave an empty ~/.keel in an app whose home is ./.keel).
  const home = keelHome(io.env);
  const hadHome = existsSync(home);
  let code = 0;
  let keel: Keel | undefined;
  /** A command that reads or writes runs opens the store; one that only looks at plugins does not. */
  // Loaded on first use: `keel --help` and `keel --version` import nothing they do not need.
  const getKeel = async (withStore = true): Promise<Keel> => {
    const { Keel } = await import('../keel/keel.js');
    // The CLI offers the bundled reference plugins when no folder is named; a library user gets none.
    const defaultPluginDirs = [BUNDLED_PLUGINS];
    keel ??= new Keel(withStore ? { env: io.env, defaultPluginDirs } : { env: io.env, store: null, defaultPluginDirs });
    return keel;
  };
  const telemetry = async () => (await import('../util/telemetry.js')).startTelemetryFromEnv(io.env);

  /**
   * Live output (the model's text as it streams, a spinner while Keel waits): on a terminal only —
   * stdout and stderr both — and never with --json or --quiet. Set by the command's printer.
   */
  let live: LiveView | undefined;
  /**
   * A run's end: the answer (or what the run waits for, or the JSON) on stdout; warnings, how to go
   * on and the status line on stderr. The exit code says done, failed or paused.
   */
  const finish = (r: RunResult, o: Shown) => {
    // Warnings go to stderr whatever the format (and are in the JSON too): nothing fails silently.
    live?.stop();
    for (const w of r.warnings) io.err(`keel: warning: ${w}\n`);
    if (o.json) io.out(`${JSON.stringify(r)}\n`);
    else {
      const end = renderEnd(r);
      // The answer already on the screen, streamed as the model wrote it, is not printed twice.
      if (!live?.answerShown(r)) io.out(end.out);
      // --quiet keeps what the user must act on (how to answer a pause), and drops the status line.
      if (!o.quiet || r.status === 'paused') io.err(end.err);
    }
    code = r.status === 'failed' ? EXIT.failed : r.status === 'paused' ? EXIT.paused : EXIT.ok;
  };
  /** The tool trace, as the run goes, on stderr: none with --json or --quiet. */
  const printer = (o: Shown) => {
    if (o.json || o.quiet) return undefined;
    const trace = eventPrinter(io.err);
    if (!tty.stdout.isTTY || !tty.stderr.isTTY) return trace;
    live = new LiveView({ text: io.out, spin: raw.err });
    return withLive(live, trace);
  };
  /** Set while keel serve runs: a signal stops the server gracefully. */
  let stopServer: (() => void) | undefined;
  let serverStopping = false;

  const program = new Command('keel')
    .description('Keel: an agent core where every tool declares its effect, and the core enforces it.')
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    // A repeatable option starts empty; its description says what empty means (KEEL_PLUGINS, …),
    // so commander's "(default: [])" would only contradict it.
    .configureHelp({
      optionDescription: (option) => new Help().optionDescription(option).replace(/ \(default: (\[\]|\{\})\)/, ''),
    })
    .exitOverride()
    .showHelpAfterError('(keel --help lists the commands)')
    .option(
      '--server <url>',
      'talk to a keel serve (run, resume, runs, approvals) instead of the local store; default KEEL_SERVER, with KEEL_TOKEN',
    )
    .version(VERSION, '-V, --version', "print Keel's version")
    .addHelpText(
      'after',
      `
Exit codes:
  0  done          1  the run failed (or plugins check found a problem)
  2  bad input     3  the run is paused for you (a question, a confirmation, an approval card)

Environment:
  KEEL_MODEL    the model (script:FILE, ollama:MODEL, openai:MODEL, anthropic:MODEL, …)
  KEEL_PLUGINS  plugin folders (comma separated)     KEEL_HOME  where Keel keeps its data (~/.keel)
  KEEL_SERVER, KEEL_TOKEN  talk to a keel serve       NO_COLOR   no colour, even on a terminal
`,
    );
  /** The server named by --server or KEEL_SERVER, if any: the commands that can, talk to it. */
  const remote = () => Remote.from(program.opts<{ server?: string }>().server, io.env);

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
          if (r.confirm) confirm = await askYesNo(`${r.question}\n${renderConfirmation(r.confirm).join('\n')}\nConfirm? [y/n] `);
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
          confirm = await askYesNo(`${pause.question}\n${renderConfirmation(pause.confirm).join('\n')}\nConfirm? [y/n] `);
      }
      finish(await k.answer(runId, { text: o.answer ?? '', confirm }, { model: o.model, onEvent: printer(o) }), o);
    });

  const runs = program.command('runs').description('stored runs and their traces');
  runs
    .command('list')
    .description('the latest runs, newest first')
    .option('-n, --limit <n>', 'how many', (v) => positiveInt(v, '--limit'), 50)
    .option('--json', 'print JSON (an array of runs, each with run_id)')
    .action(async (o: { limit: number; json?: boolean }) => {
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
      code = EXIT.ok;
    });
  runs
    .command('show')
    .description("a run's trace: each request's menu, each call and its outcome, the pause, the answer")
    .argument('<run_id>')
    .option('--json', 'print the whole run state as JSON')
    .action(async (runId: string, o: { json?: boolean }) => {
      const server = remote();
      if (server) {
        // The server's view of the run: keel run --json's shape, with its session, model and times.
        const r = await server.getRun(runId);
        io.out(
          o.json
            ? `${JSON.stringify(r)}\n`
            : `${r.run_id}  ${r.status}  ${r.reason ?? ''}  session ${r.session_id}\n${renderEnd(r as RunResult).out}`,
        );
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

  const plugins = program.command('plugins').description('plugin manifests, registrations and drift');
  plugins
    .command('check')
    .description('mount plugins and report status, tools, degraded and drift rows (exit 1 when any is failed or degraded, or drifts)')
    .argument('[dirs...]', 'plugin folders, or plugin.yaml files (default KEEL_PLUGINS or the bundled plugins)')
    .option('--json', 'print JSON: plugins, healthy, counts; each problem with file, line and column')
    .action(async (dirs: string[], o: { json?: boolean }) => {
      const reg = await (await getKeel(false)).registry(dirs);
      const { registryHealthy } = await import('../plugin-host/host.js');
      const counts = {
        plugins: reg.plugins.length,
        failed: reg.plugins.filter((p) => p.status === 'failed').length,
        degraded: reg.plugins.filter((p) => p.status === 'degraded').length,
        drift: reg.plugins.reduce((n, p) => n + p.drift.length, 0),
      };
      if (counts.plugins === 0) {
        throw new KeelError(
          'bad_input',
          `no plugin in ${dirs.join(', ') || 'the plugin folders'}: a plugin folder holds a plugin.yaml, or folders that each do`,
        );
      }
      // One summary line: loaded, failed, degraded and drift together (the listing adds none of its own).
      const loaded = counts.plugins - counts.failed - counts.degraded;
      const summary = `${counts.plugins} plugin(s): ${loaded} loaded, ${counts.failed} failed, ${counts.degraded} degraded, ${counts.drift} drift row(s)\n`;
      io.out(
        o.json
          ? `${JSON.stringify({ plugins: reg.plugins, healthy: registryHealthy(reg), counts, policy: reg.policy })}\n`
          : `${renderPlugins(reg.plugins, false)}${(reg.policy?.unmatched ?? []).map((u) => `warning: ${u}\n`).join('')}${summary}`,
      );
      // Drift refuses nothing, but a manifest and its code that disagree are a mistake to fix: it fails the check.
      code = registryHealthy(reg) && counts.drift === 0 ? 0 : 1;
    });
  plugins
    .command('show')
    .description('one plugin: its status, its tools with effect and gate, its problems')
    .argument('<name>', 'plugin name')
    .option('-p, --plugins <dir>', 'plugin folder (repeatable)', collectList, [])
    .option('--json', 'print JSON')
    .action(async (name: string, o: { plugins: string[]; json?: boolean }) => {
      const reg = await (await getKeel(false)).registry(o.plugins);
      const p = reg.plugins.find((x) => x.name === name);
      if (!p) throw new KeelError('not_found', `no plugin named ${name} (found: ${reg.plugins.map((x) => x.name).join(', ') || 'none'})`);
      io.out(o.json ? `${JSON.stringify(p)}\n` : renderPlugins([p]));
      code = p.status === 'loaded' ? 0 : 1;
    });
  registerPluginsInit(plugins, io, VERSION);

  const approvals = program.command('approvals').description('approval cards for destructive calls and pinned writes');
  approvals
    .command('list')
    .description('approval cards, newest first, each with its run and when it expires')
    .addOption(new Option('--status <status>', 'only this status').choices(['pending', 'approved', 'rejected', 'expired']))
    .option('--json', 'print JSON (an array of approvals: id, run_id, status, card, …)')
    .action(async (o: { status?: 'pending' | 'approved' | 'rejected' | 'expired'; json?: boolean }) => {
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
      const server = remote();
      if (server && o.as) throw new KeelError('bad_input', '--as does not apply with --server: the server records the name of your token');
      const edit = o.args === undefined ? undefined : editArguments(o.args);
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
            const appModel = (answered as { appModel?: string }).appModel;
            if (result) live?.stop();
            const after = result
              ? `, run ${result.run_id} ${result.status}`
              : appModel
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
        code = failed ? EXIT.failed : EXIT.ok;
        return;
      }
      const id = all[0];
      const answered = await answer(id);
      const { approval, result } = answered;
      const appModel = (answered as { appModel?: string }).appModel;
      if (appModel) {
        // A library app's run, with a model written in code: the answer is kept; the app carries it on.
        io.out(o.json ? `${JSON.stringify({ approval, continues: 'app' })}\n` : `${appRunAnswered(approval, appModel)}\n`);
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

  program
    .command('chat')
    .description('an interactive session: requests, questions and approval cards inline; /mode, /approvals, /approve, /reject, /runs')
    .option('-m, --model <spec>', 'model spec; default KEEL_MODEL')
    .option('-p, --plugins <dir>', 'plugin folder (repeatable)', collectList, [])
    .addOption(new Option('--mode <mode>', 'starting mode').choices(['agent', 'plan', 'goal']).default('agent'))
    .action(async (o: { model?: string; plugins: string[]; mode: Mode }) => {
      const { chat } = await import('./chat.js');
      code = await chat(await getKeel(), {
        model: o.model,
        pluginDirs: o.plugins,
        mode: o.mode,
        input: process.stdin,
        out: io.out,
        err: io.err,
        // The spinner's own cursor moves only: never text from a run.
        spinnerOut: raw.out,
        tty: Boolean(process.stdout.isTTY),
      });
    });

  program
    .command('demo')
    .description('the reference assistant working the scenarios in examples/ end to end (embedded store, temporary KEEL_HOME)')
    .option('-m, --model <spec>', 'run the same requests against a real model (you answer the pauses on a TTY)')
    .option('--only <name>', 'only scenarios whose file name contains this')
    .option('--keep', 'keep the temporary KEEL_HOME')
    .option('--examples <dir>', 'scenario folder (default: the bundled examples/)')
    .action(async (o: { model?: string; only?: string; keep?: boolean; examples?: string }) => {
      const { runDemo } = await import('./demo.js');
      code = await runDemo({ ...o, dir: o.examples, out: io.out, env: io.env, interactive: Boolean(o.model && process.stdin.isTTY) });
    });

  program
    .command('serve')
    .description('Keel as a service: the HTTP API (/v1), live events, tokens and roles, webhooks')
    .option('--host <host>', 'address to listen on (127.0.0.1 is this machine only)', '127.0.0.1')
    .option('--port <port>', 'port (0: any free port)', (v) => portNumber(v), 7373)
    .option('-p, --plugins <dir>', 'plugin folder (repeatable); default KEEL_PLUGINS or the bundled plugins', collectList, [])
    .option('-m, --model <spec>', 'the model runs use unless a request names one; default KEEL_MODEL')
    .option('--allow-model <prefix>', 'a model spec prefix a request may choose (repeatable), e.g. script: or openai:', collectList, [])
    .option('--cors <origin>', 'an origin allowed to call the API from a browser (repeatable); none by default', collectList, [])
    .option('--work', 'on a PostgreSQL store: also drive the legs it queues, as a worker does (default: workers drive them)')
    .action(
      async (o: {
        host: string;
        port: number;
        plugins: string[];
        model?: string;
        allowModel: string[];
        cors: string[];
        work?: boolean;
      }) => {
        if (o.work) io.env.KEEL_SERVE_WORK = '1';
        const { startServer } = await import('../server/serve.js');
        const stopTelemetry = await telemetry();
        const srv = await startServer({
          host: o.host,
          port: o.port,
          pluginDirs: o.plugins,
          model: o.model,
          allowedModels: o.allowModel,
          corsOrigins: o.cors,
          env: io.env,
          defaultPluginDirs: [BUNDLED_PLUGINS],
          version: VERSION,
          log: (line) => io.err(`${line}\n`),
        });
        if (srv.adminToken) {
          io.err(`keel serve: first start: an admin token was made. It is shown this once; only its hash is kept:\n`);
          io.out(`admin token: ${srv.adminToken}\n`);
        }
        io.out(`keel serve: listening on ${srv.url}\n`);
        await new Promise<void>((resolveStop) => {
          stopServer = () => {
            io.err('keel serve: stopping\n');
            srv.close().then(resolveStop, resolveStop);
          };
        });
        await stopTelemetry?.();
        code = 0;
      },
    );

  const mcp = program.command('mcp').description("Keel as an MCP server: any MCP client gets Keel's governed tools");
  mcp
    .command('serve')
    .description("offer the plugins' tools over MCP (stdio, or Streamable HTTP with --http), every call governed by Keel")
    .option('-p, --plugins <dir>', 'plugin folder (repeatable); default KEEL_PLUGINS or the bundled plugins', collectList, [])
    .addOption(
      new Option('--mode <mode>', 'the session mode: plan and goal refuse writes (the tools stay listed)')
        .choices(['agent', 'plan', 'goal'])
        .default('agent'),
    )
    .option(
      '--http <port>',
      'serve Streamable HTTP on 127.0.0.1 at this port (0: any) instead of stdio; calls need an approver token',
      (v) => portNumber(v),
    )
    .option(
      '--wait <seconds>',
      'how long a call waits for its approval card before it returns, naming the card (default 5, at most 50: clients give up after 60)',
      (v) => positiveNumber(v, '--wait'),
    )
    .option(
      '--keep-cards',
      "when a client goes, leave its pending cards for the owner: the same call made again, from any session, gets the card's outcome (for clients that connect for each call)",
    )
    .option(
      '--idle-timeout <seconds>',
      'with --http: a session with no request for this long counts its client as gone, closing its cards as for a goodbye (default KEEL_MCP_IDLE_TIMEOUT_SECONDS, else 1800)',
      (v) => positiveNumber(v, '--idle-timeout'),
    )
    .action(async (o: { plugins: string[]; mode: Mode; http?: number; wait?: number; keepCards?: boolean; idleTimeout?: number }) => {
      const { DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS, mcpHttpLimits, serveMcpHttp, serveMcpStdio } = await import('../server/mcp/mcp.js');
      const wait = o.wait ?? DEFAULT_WAIT_SECONDS;
      if (wait > MAX_WAIT_SECONDS) {
        throw new KeelError(
          'bad_input',
          `--wait ${wait} is too long: at most ${MAX_WAIT_SECONDS} seconds, since MCP clients give up on a call after 60 seconds by default (a call returns naming its card, and calling again gets the outcome)`,
        );
      }
      const k = await getKeel();
      const { limitsFromEnv } = await import('../keel/keel.js');
      const server = io.env.KEEL_SERVER?.replace(/\/+$/, '');
      const ttl = limitsFromEnv(io.env).approvalTtlMs;
      const opts = {
        keel: k,
        pluginDirs: k.pluginDirs(o.plugins),
        mode: o.mode,
        waitMs: wait * 1000,
        keepCards: Boolean(o.keepCards),
        version: VERSION,
        ...(server ? { consoleUrl: `${server}/` } : {}),
        ...(ttl ? { approvalTtlMs: ttl } : {}),
      };
      await k.registry(opts.pluginDirs); // a broken plugin shows now, on stderr, not at the first call
      const { Tokens } = await import('../server/access/tokens.js');
      const tokens = Tokens.at(k.home);
      // The webhooks and Web Push of this server's cards, as keel serve and keel worker send their own.
      const store = k.store;
      const alerts = store
        ? await (await import('../server/alerts/alerts.js')).Alerts.start({
            config: k.getConfig(),
            store,
            tokens,
            env: io.env,
            log: (line) => io.err(`${line}\n`),
          })
        : undefined;
      let srv: { close(): Promise<void> };
      if (o.http !== undefined) {
        // S3: KEEL_MAX_BODY_BYTES as keel serve; a session idle past the timeout has lost its client.
        const limits = mcpHttpLimits(io.env);
        const idleMs = o.idleTimeout !== undefined ? o.idleTimeout * 1000 : limits.idleMs;
        const http = await serveMcpHttp({
          ...opts,
          alerts,
          tokens,
          port: o.http,
          maxBodyBytes: limits.maxBodyBytes,
          idleMs,
        });
        io.out(`keel mcp serve: listening on ${http.url}\n`);
        srv = http;
      } else {
        // stdout is the protocol's: nothing else is written there.
        srv = await serveMcpStdio({ ...opts, alerts });
      }
      await new Promise<void>((resolveStop) => {
        stopServer = () => resolveStop();
        if (o.http === undefined) process.stdin.once('end', () => resolveStop());
      });
      await srv.close();
      await alerts?.drain(2000);
      code = 0;
    });

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
      code = rows.some((r) => r.status === 'failed') ? 1 : 0;
    });

  // keel worker and keel db migrate|status, and --store (S4): listed after the everyday commands.
  (await import('./db-command.js')).registerDb(program, io);
  // keel policy init|schema|check|explain: the operator's Cedar policy file (issue 37).
  (await import('./policy-command.js')).registerPolicy(program, io, getKeel, (c) => {
    code = c;
  });

  // Ctrl-C / SIGTERM: a run stops at its next safe point and stays resumable (keel resume RUN);
  // a second signal, or one while no run is working, exits at once.
  let signalled: NodeJS.Signals | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    const exitCode = sig === 'SIGINT' ? 130 : 143;
    // keel serve stops gracefully and exits 0; a second signal quits at once.
    if (stopServer) {
      if (serverStopping) process.exit(exitCode);
      serverStopping = true;
      stopServer();
      return;
    }
    if (signalled || !keel?.interrupt(`interrupted by ${sig}`)) process.exit(exitCode);
    signalled = sig;
    io.err(`\nkeel: ${sig}: stopping the run at its next safe point (${sig === 'SIGINT' ? 'Ctrl-C' : sig} again to quit at once)\n`);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // S1: `keel … | head -1` — a reader that stopped early closes the pipe. What is left to print goes
  // nowhere and the command ends quietly, exit 0, with no EPIPE stack: a run working stops at its
  // next safe point as on Ctrl-C (resumable), a server stops as on SIGTERM, anything else ends now.
  // Kept after main() returns: the last write's error may come while bin/keel.js flushes.
  let pipeClosed = false;
  const onClosedPipe = (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE' && !(pipeClosed && err.code === 'ERR_STREAM_DESTROYED')) throw err;
    if (pipeClosed) return;
    pipeClosed = true;
    process.exitCode = 0;
    if (stopServer) {
      if (!serverStopping) {
        serverStopping = true;
        stopServer();
      }
      return;
    }
    if (!keel?.interrupt('the output was closed')) process.exit(0);
  };
  if (raw === defaultIo) for (const s of [process.stdout, process.stderr]) s.on('error', onClosedPipe);
  try {
    // A usage error points to that command's own help; each help ends with examples.
    const finishHelp = (c: Command, path: string) => {
      const rows = EXAMPLES[path];
      if (rows) c.addHelpText('after', examples(rows));
      for (const sub of c.commands) {
        const full = `${path} ${sub.name()}`;
        sub.showHelpAfterError(`(${full} --help shows its usage)`);
        finishHelp(sub, full);
      }
    };
    finishHelp(program, 'keel');
    await program.parseAsync(argv);
  } catch (err) {
    code = reportError(err, io);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    live?.stop();
    const forget = !hadHome && code === EXIT.usage && existsSync(home) && !(await storedAnything(keel, home));
    await keel?.close();
    if (forget) rmSync(home, { recursive: true, force: true });
    process.umask(umask);
  }
  if (pipeClosed) return EXIT.ok;
  return signalled ? (signalled === 'SIGINT' ? 130 : 143) : code;
}

/** Whether a home this command made holds anything worth keeping: a run, or a token. */
async function storedAnything(keel: Keel | undefined, home: string): Promise<boolean> {
  if (existsSync(join(home, 'tokens.json'))) return true;
  if (!keel?.store) return false;
  try {
    return (await keel.listRuns({ limit: 1 })).length > 0;
  } catch {
    return true;
  }
}

/**
 * Where a command looked (S4): the server, the store KEEL_STORE or --store names (its password
 * hidden), else the home's SQLite file's folder — so an empty list says which home it is.
 */
function storeName(env: NodeJS.ProcessEnv, server: Remote | undefined): string {
  if (server) return server.base;
  const spec = env.KEEL_STORE?.trim();
  return spec ? redact(spec) : keelHome(env);
}

function collectList(v: string, prev: string[]): string[] {
  return [...prev, v];
}

/** A yes/no question on the terminal (only called when stdin is a TTY). */
async function askYesNo(question: string): Promise<boolean> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    for (;;) {
      const a = (await rl.question(question)).trim().toLowerCase();
      if (a === 'y' || a === 'yes') return true;
      if (a === 'n' || a === 'no') return false;
    }
  } finally {
    rl.close();
  }
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

function positiveNumber(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new KeelError('bad_input', `${flag} must be a positive number, got "${v}"`);
  return n;
}

function portNumber(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new KeelError('bad_input', `--port must be a port number (0-65535), got "${v}"`);
  return n;
}

function positiveInt(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new KeelError('bad_input', `${flag} must be a positive integer, got "${v}"`);
  return n;
}

function reportError(err: unknown, io: Io): number {
  if (err instanceof CommanderError) {
    // Help and version print and exit 0; usage errors were already printed by commander.
    return err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? 0 : 2;
  }
  if (err instanceof KeelError || err instanceof ModelError) {
    // The library's message, then the command that helps (the library itself names none).
    const hint = err instanceof KeelError && err.cliHint ? ` (${err.cliHint})` : '';
    io.err(`keel: ${redact(err.message)}${hint}\n`);
    return 2;
  }
  const e = err as Error;
  io.err(`keel: unexpected error: ${redact(e?.stack ?? String(err))}\n`);
  return 1;
}

export type { LoopEvent };
