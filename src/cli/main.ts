/**
 * The `keel` CLI's entry: builds the program, registers each command (their files are
 * `*-command.ts`), and runs one invocation — its io, its Keel, its exit code, signals and a closed
 * pipe. Never prints a model's, a tool's or a plugin's text without escaping it for the terminal:
 * everything a command prints passes through the io made here.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError, Help, Option } from 'commander';
import { BUNDLED_PLUGINS, keelHome } from '../config/paths.js';
import type { Keel } from '../keel/keel.js';
import { ModelError } from '../models/types.js';
import type { LoopEvent, Mode, RunResult } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { redact } from '../util/redact.js';
import { forTerminal } from '../util/terminal.js';
import { registerApprovals } from './approvals-command.js';
import { applyColour, colourOn } from './colour.js';
import { type CommandContext, collectList, EXIT, type Io, type Shown, type Tty, VERSION } from './context.js';
import { registerData } from './data-command.js';
import { registerDb } from './db-command.js';
import { EXAMPLES, examples } from './help.js';
import type { LiveView } from './live.js';
import { registerMcp } from './mcp-command.js';
import { registerPlugins } from './plugins-command.js';
import { registerPolicy } from './policy-command.js';
import { registerRun } from './run-command.js';
import { registerRuns } from './runs-command.js';
import { registerServe } from './serve-command.js';
import { registerTokens } from './tokens-command.js';

/**
 * What a command's action shows runs with (their rendering, the live view, a server's client):
 * loaded before any action runs (a preAction hook), never for `keel --help` or `--version`, which
 * load only the commands' registrations (test/cli/startup-imports.test.ts holds that).
 */
async function loadViews() {
  const [render, live, remote] = await Promise.all([import('./render.js'), import('./live.js'), import('./remote.js')]);
  return { ...render, ...live, ...remote };
}

export type { Io, Tty };
export { EXIT };

const processTty: Tty = { stdout: process.stdout, stderr: process.stderr };

const defaultIo: Io = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  env: process.env,
};

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
  let views: Awaited<ReturnType<typeof loadViews>> | undefined;
  const view = () => {
    if (!views) throw new Error('a command printed a run before its action started');
    return views;
  };
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
      const end = view().renderEnd(r);
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
    const { eventPrinter, LiveView, withLive } = view();
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
    // Help is at most 80 columns wide (narrower on a narrower terminal): the same text on every wide
    // terminal and in a pipe, so `keel --help` can print the text the build wrote (bin/keel.js).
    .configureOutput({
      writeOut: io.out,
      writeErr: io.err,
      getOutHelpWidth: () => helpWidth(tty.stdout),
      getErrHelpWidth: () => helpWidth(tty.stderr),
    })
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
  const remote = () => view().Remote.from(program.opts<{ server?: string }>().server, io.env);
  program.hook('preAction', async () => {
    views ??= await loadViews();
  });
  const ctx: CommandContext = {
    io,
    getKeel,
    telemetry,
    remote,
    finish,
    printer,
    stopLive: () => live?.stop(),
    setCode: (c) => {
      code = c;
    },
    onStop: (stop) => {
      stopServer = stop;
    },
  };

  registerRun(program, ctx);
  registerRuns(program, ctx);
  registerPlugins(program, ctx);
  registerApprovals(program, ctx);

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

  registerServe(program, ctx);
  registerMcp(program, ctx);
  registerTokens(program, ctx);
  registerData(program, ctx);

  // keel worker and keel db migrate|status, and --store (S4): listed after the everyday commands.
  registerDb(program, io);
  // keel policy init|schema|check|explain: the operator's Cedar policy file (issue 37).
  registerPolicy(program, io, getKeel, (c) => {
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

/** The width help wraps at: 80 columns, or a narrower terminal's width. */
export function helpWidth(stream: { isTTY?: boolean; columns?: number }): number {
  return stream.isTTY && stream.columns && stream.columns < 80 ? stream.columns : 80;
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
