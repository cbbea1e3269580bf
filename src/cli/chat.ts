/**
 * `keel chat`: a conversation in the terminal, its slash commands, and cards and questions answered
 * inline. A line from the model or a tool is never read as a command, and never approves.
 */
import { createInterface, type Interface } from 'node:readline';
import { renderCard, renderConfirmation } from '../approvals/card.js';
import type { Keel, PauseResponder } from '../keel/keel.js';
import { ModelError } from '../models/types.js';
import type { LoopEvent, Mode, RunResult } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { nearestName } from '../util/text.js';
import { osUser } from '../util/user.js';
import { answerLater, chatWarning, renderChatCall, type Waiting, waitingOf } from './chat-words.js';
import { editArguments } from './edit-args.js';
import { LiveView } from './live.js';
import { appRunAnswered, renderRunList, runRow } from './render.js';

export interface ChatOptions {
  model?: string;
  pluginDirs?: string[];
  mode: Mode;
  input: NodeJS.ReadableStream;
  out: (s: string) => void;
  /** Warnings (a plugin that failed to mount, a held write never asked about). */
  err: (s: string) => void;
  /** Where the spinner draws (it moves the cursor); default `out`. */
  spinnerOut?: (s: string) => void;
  /** A TTY gets the model's text as it streams and a spinner while the model or a tool works. */
  tty: boolean;
}

/** The chat's own commands: a line that starts with `/` is one of these, never a request (S6). */
const COMMANDS = ['/mode', '/approvals', '/approve', '/reject', '/runs', '/help', '/quit', '/exit'] as const;

const APPROVE_USAGE = '/approve ID [--allow-writes] [--args JSON]';

const HELP = `Commands:
  /mode                  show the mode; /mode agent|plan|goal changes it
  /approvals             approval cards waiting for an answer, from any run
  /approve ID [--allow-writes] [--args JSON]
                         approve a card and continue its run here (--args: run its call
                         with these arguments instead; the rest of the line is the JSON)
  /reject ID [REASON]    reject a card and continue its run here
  /runs                  the latest runs
  /help                  this list
  /quit                  leave (also /exit, or Ctrl-D)
Anything else is a request (start a line with // to send one that begins with /).
Questions and approval cards are answered inline.
`;

/** Lines from the input, one at a time; undefined at end of input (a closed stdin never hangs). */
function lineReader(rl: Interface) {
  const queue: string[] = [];
  const waiting: ((l: string | undefined) => void)[] = [];
  let closed = false;
  rl.on('line', (l) => {
    const w = waiting.shift();
    if (w) w(l);
    else queue.push(l);
  });
  rl.on('close', () => {
    closed = true;
    for (const w of waiting.splice(0)) w(undefined);
  });
  return (): Promise<string | undefined> => {
    if (queue.length) return Promise.resolve(queue.shift());
    if (closed) return Promise.resolve(undefined);
    return new Promise((res) => waiting.push(res));
  };
}

function oneLine(s: string, n = 160): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > n ? `${flat.slice(0, n)}…` : flat;
}

/**
 * `keel chat`: one session, many requests. The session carries its transcript and mode from one
 * request to the next; questions and approval cards are answered inline, and so are cards left
 * pending by earlier runs (`/approve`, `/reject`). What it prints is for a person (S6): each call's
 * outcome in chat's own words, never the sentences the core writes for the model.
 */
export async function chat(keel: Keel, o: ChatOptions): Promise<number> {
  const rl = createInterface({ input: o.input, terminal: false });
  const next = lineReader(rl);
  // On a terminal: the model's text as it streams, and a spinner with the elapsed time while the
  // model or a tool works (cli/live.ts).
  const live = o.tty ? new LiveView({ text: o.out, spin: o.spinnerOut ?? o.out }) : undefined;
  const spin = { stop: () => live?.stop() };
  /** The run whose events are being shown (what a question or card at a prompt belongs to). */
  let current: string | undefined;
  const onEvent = (e: LoopEvent) => {
    const shown = live ? live.onEvent(e) : true;
    if (shown) print(e);
    live?.after(e);
  };
  const print = (e: LoopEvent) => {
    if (e.type === 'run_started') {
      current = e.run_id;
      o.out(e.resumed ? `▶ resuming ${e.run_id}\n` : `▶ ${e.run_id}: ${e.request}\n`);
    } else if (e.type === 'assistant' && e.text.trim() && e.tool_calls.length) {
      o.out(`  model: ${oneLine(e.text)}\n`);
    } else if (e.type === 'tool_result') {
      o.out(`${renderChatCall(e.record)}\n`);
    }
  };
  let session: string | undefined;
  let mode: Mode = o.mode;
  /** What the chat waits for the user to answer, when it is a run's question or card (Ctrl-C says how to answer it later). */
  let asking: Waiting | undefined;
  /** A run's leg is being worked (Ctrl-C then stops it at a safe point: the CLI's signal handler does that). */
  let working = false;
  const prompt = () => o.out(`${mode === 'agent' ? '' : `[${mode}] `}you> `);
  o.out(`Keel chat — ${mode} mode. ${HELP}`);

  /**
   * Ctrl-C at a prompt: nothing is running, and whatever the chat was asking stays paused in the
   * store; say how to answer it later, and leave. (While a leg works, the CLI's own handler stops it
   * at its next safe point, and the chat reports the paused run.) Prepended: it speaks before the
   * CLI's handler exits.
   */
  const onSigint = () => {
    if (working) return;
    spin.stop();
    o.out(`\n${asking ? `${answerLater(asking)}\n` : ''}Bye.\n`);
    process.exit(130);
  };
  process.prependListener('SIGINT', onSigint);

  /** Waits for a line while `what` is being asked. */
  const ask = async (what: Waiting): Promise<string | undefined> => {
    asking = what;
    working = false;
    try {
      return await next();
    } finally {
      asking = undefined;
      working = true;
    }
  };

  /** Questions and cards are answered inline, from the same input (undefined at its end leaves the run paused). */
  const responder: PauseResponder = {
    answer: async (question, confirm, from) => {
      const run_id = from?.run_id ?? current ?? '';
      // D3: a delegate's question says who asks, for which run.
      if (from) o.out(`(delegate ${from.delegate}, started by run ${from.parent_run}, asks)\n`);
      if (!confirm) {
        o.out(`? ${question}\nanswer> `);
        const text = await ask({ kind: 'question', run_id });
        return text === undefined ? undefined : { text };
      }
      // R16: a confirmation is a decision: y or n, and anything after it is passed on as text.
      o.out(`? ${question}\n${renderConfirmation(confirm).join('\n')}\n  (nothing is written until you confirm)\nconfirm? [y/n] `);
      for (let line = await ask({ kind: 'confirm', run_id }); line !== undefined; line = await ask({ kind: 'confirm', run_id })) {
        const m = /^\s*(y|yes|n|no)\b[\s,.:;!-]*(.*)$/i.exec(line);
        if (m) return { confirm: m[1][0].toLowerCase() === 'y', text: m[2] };
        o.out('please answer y or n: ');
      }
      return undefined;
    },
    decide: async (approval) => {
      const writes = approval.card.offers_write_consent;
      const where = { kind: 'card' as const, run_id: current ?? '', approval_id: approval.id };
      if (approval.refused) o.out(`✗ edit refused: ${approval.refused}\n  (the card still waits)\n`);
      else o.out(`${renderCard(approval.card, approval.id)}\n`);
      o.out(
        writes ? 'approve? [y/N, w = approve and let its writes run, e = edit the arguments] ' : 'approve? [y/N, e = edit the arguments] ',
      );
      const line = await ask(where);
      if (line === undefined) return undefined;
      if (/^\s*e/i.test(line)) {
        // A7: the owner's own arguments, as JSON; Keel checks them as it checks the model's.
        const several = approval.card.items.length > 1;
        o.out(
          several
            ? 'arguments as JSON, {"CALL_ID": {...}} for each call you change (keel approvals list --json shows the ids): '
            : `arguments for ${approval.card.items[0]?.tool ?? 'the call'} as one JSON object (the exact call above shows the model's): `,
        );
        for (let text = await ask(where); text !== undefined; text = await ask(where)) {
          try {
            const args: unknown = JSON.parse(text);
            if (args && typeof args === 'object' && !Array.isArray(args)) {
              return { decision: 'approve', actor: osUser(), arguments: args as Record<string, unknown> };
            }
            o.out('the arguments must be one JSON object: ');
          } catch (err) {
            o.out(`not valid JSON (${(err as Error).message}); arguments: `);
          }
        }
        return undefined;
      }
      const consentWrites = Boolean(writes) && /^\s*w/i.test(line);
      return { decision: consentWrites || /^\s*y/i.test(line) ? 'approve' : 'reject', actor: osUser(), consentWrites };
    },
  };

  /** Answers the run's pauses inline until it ends (or the input does), then says how it ended. */
  const carryOn = async (first: RunResult): Promise<RunResult> => {
    const { result: r } = await keel.answerPauses(first, responder, onEvent);
    spin.stop();
    for (const w of r.warnings) o.err(`warning: ${chatWarning(w)}\n`);
    if (r.status === 'paused') o.out(`(still paused) ${answerLater(waitingOf(r))}\n`);
    else if (live?.answerShown(r)) o.out(`(${r.status}: ${r.reason}, ${r.model_calls} model calls)\n`);
    else o.out(`${r.answer ?? ''}\n(${r.status}: ${r.reason}, ${r.model_calls} model calls)\n`);
    return r;
  };

  /**
   * `/approve ID [--allow-writes] [--args JSON]` and `/reject ID [reason]`: the card is answered as
   * `keel approvals approve|reject` does, and its run goes on here. `--args` takes the rest of the
   * line as the call's arguments (A7), so its JSON may hold spaces.
   */
  const answerCard = async (decision: 'approve' | 'reject', line: string) => {
    const at = decision === 'approve' ? line.search(/(^|\s)--args(\s|$)/) : -1;
    const edit = at >= 0 ? editArguments(line.slice(at).replace(/^\s*--args\s*/, '')) : undefined;
    const [id, ...rest] = (at >= 0 ? line.slice(0, at) : line).split(/\s+/).filter(Boolean);
    if (!id) {
      o.out(`usage: ${decision === 'approve' ? APPROVE_USAGE : '/reject ID [REASON]'}  (/approvals lists the ids)\n`);
      return;
    }
    const unknown = decision === 'approve' ? rest.filter((w) => w !== '--allow-writes') : [];
    if (unknown.length) {
      o.out(`/approve does not take ${unknown.map((w) => JSON.stringify(w)).join(', ')}: ${APPROVE_USAGE}\n`);
      return;
    }
    const allowWrites = decision === 'approve' && rest.includes('--allow-writes');
    const reason = decision === 'reject' && rest.length ? rest.join(' ') : null;
    const { approval, result, app } = await keel.answerCard(id, decision, {
      actor: osUser(),
      reason,
      onEvent,
      consentWrites: allowWrites,
      arguments: edit,
      // A9: the machine's own user, holding the store file, answers any card (routed ones too).
      who: { name: osUser(), groups: [], kind: 'user' },
    });
    spin.stop();
    if (app) {
      o.out(`${appRunAnswered(approval, app)}\n`);
      return;
    }
    o.out(`Approval ${approval.id}: ${approval.status}.\n`);
    if (!result) {
      o.out(
        'The MCP session carries it out: its client gets the outcome on the waiting call, or by calling again with the same arguments.\n',
      );
      return;
    }
    const r = await carryOn(result);
    // A card of this chat's own session: its mode may have changed (an approved plan switches to agent).
    if (session && (await keel.getRun(r.run_id)).session_id === session) mode = r.mode;
  };

  const command = async (text: string): Promise<'quit' | undefined> => {
    const [name, ...args] = text.split(/\s+/);
    switch (name) {
      case '/quit':
      case '/exit':
        return 'quit';
      case '/help':
        o.out(HELP);
        return;
      case '/mode': {
        const m = args[0];
        if (m === undefined) o.out(`mode: ${mode}  (/mode agent|plan|goal changes it)\n`);
        else if (m !== 'agent' && m !== 'plan' && m !== 'goal') o.out(`unknown mode ${m}: /mode agent|plan|goal\n`);
        else {
          mode = m;
          if (session) await keel.setMode(session, mode);
          o.out(`mode: ${mode}\n`);
        }
        return;
      }
      case '/approvals': {
        const pending = await keel.listApprovals({ status: 'pending' });
        if (!pending.length) {
          o.out('No pending approvals.\n');
          return;
        }
        for (const a of pending) o.out(`${renderCard(a.card, a.id)}\n  run ${a.run_id}, expires ${a.expires_at}\n`);
        o.out(`Answer one with /approve ID or /reject ID [REASON]; its run continues here.\n`);
        return;
      }
      case '/approve':
      case '/reject':
        working = true;
        try {
          await answerCard(name === '/approve' ? 'approve' : 'reject', text.slice(name.length));
        } finally {
          working = false;
        }
        return;
      case '/runs':
        o.out(renderRunList((await keel.listRuns({ limit: 10 })).map(runRow)));
        return;
      default: {
        // Never sent to the model: a mistyped command is not a request.
        const near = nearestName(name, COMMANDS);
        o.out(
          `unknown command ${name}${near ? ` (did you mean ${near}?)` : ''}: nothing was sent. Commands: ${COMMANDS.join(' ')}\n` +
            '(start a line with // to send a request that begins with /)\n',
        );
        return;
      }
    }
  };

  try {
    prompt();
    for (let line = await next(); line !== undefined; line = await next()) {
      const text = line.trim();
      try {
        if (text.startsWith('/') && !text.startsWith('//')) {
          if ((await command(text)) === 'quit') break;
        } else if (text) {
          const request = text.startsWith('//') ? text.slice(1) : text;
          working = true;
          try {
            const first = await keel.run(request, { model: o.model, pluginDirs: o.pluginDirs, mode, session }, onEvent);
            const r = await carryOn(first);
            session = (await keel.getRun(r.run_id)).session_id;
            mode = r.mode;
          } finally {
            working = false;
          }
        }
      } catch (err) {
        spin.stop();
        if (err instanceof KeelError || err instanceof ModelError) {
          // The library's message, and the command that helps when the error names one (as the CLI prints it).
          const hint = err instanceof KeelError && 'cliHint' in err && typeof err.cliHint === 'string' ? ` (${err.cliHint})` : '';
          o.out(`error: ${err.message}${hint}\n`);
        } else throw err;
      }
      prompt();
    }
  } finally {
    spin.stop();
    rl.close();
    process.off('SIGINT', onSigint);
  }
  o.out('\n');
  return 0;
}
