import { createInterface, type Interface } from 'node:readline';
import { renderCard } from '../approvals/card.js';
import type { Keel, PauseResponder } from '../keel/keel.js';
import { ModelError } from '../models/types.js';
import type { LoopEvent, Mode } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { osUser } from '../util/user.js';
import { eventPrinter, renderRunList, runRow } from './render.js';

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
  /** A TTY gets a spinner while the model works. */
  tty: boolean;
}

const HELP = `Commands: /mode agent|plan|goal  /approvals  /runs  /help  /quit
Anything else is a request. Questions and approval cards are answered inline.
`;

/** A spinner on the current line while the model works (TTY only). */
function spinner(out: (s: string) => void, tty: boolean) {
  const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
  let timer: NodeJS.Timeout | undefined;
  let i = 0;
  return {
    start() {
      if (!tty || timer) return;
      timer = setInterval(() => out(`\r${frames[i++ % frames.length]} working…`), 80);
    },
    stop() {
      if (!timer) return;
      clearInterval(timer);
      timer = undefined;
      out('\r\x1b[K');
    },
  };
}

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

/**
 * `keel chat`: one session, many requests. The session carries its transcript and mode from one
 * request to the next; questions and approval cards are answered inline.
 */
export async function chat(keel: Keel, o: ChatOptions): Promise<number> {
  const rl = createInterface({ input: o.input, terminal: false });
  const next = lineReader(rl);
  const spin = spinner(o.spinnerOut ?? o.out, o.tty);
  const print = eventPrinter(o.out);
  const onEvent = (e: LoopEvent) => {
    if (e.type === 'model_request') spin.start();
    else {
      spin.stop();
      print(e);
    }
  };
  let session: string | undefined;
  let mode: Mode = o.mode;
  const prompt = () => o.out(`${mode === 'agent' ? '' : `[${mode}] `}you> `);
  o.out(`Keel chat — ${mode} mode. ${HELP}`);

  /** Questions and cards are answered inline, from the same input (undefined at its end leaves the run paused). */
  const responder: PauseResponder = {
    answer: async (question, confirm) => {
      if (!confirm) {
        o.out(`? ${question}\nanswer> `);
        const text = await next();
        return text === undefined ? undefined : { text };
      }
      // R16: a confirmation is a decision: y or n, and anything after it is passed on as text.
      o.out(`? ${question}\n  (nothing is written until you confirm: ${confirm.tools.join(', ')})\nconfirm? [y/n] `);
      for (let line = await next(); line !== undefined; line = await next()) {
        const m = /^\s*(y|yes|n|no)\b[\s,.:;!-]*(.*)$/i.exec(line);
        if (m) return { confirm: m[1][0].toLowerCase() === 'y', text: m[2] };
        o.out('please answer y or n: ');
      }
      return undefined;
    },
    decide: async (approval) => {
      const writes = approval.card.offers_write_consent;
      o.out(
        `${renderCard(approval.card, approval.id)}\n${writes ? 'approve? [y = approve, w = approve and let its writes run, N = reject] ' : 'approve? [y/N] '}`,
      );
      const line = await next();
      if (line === undefined) return undefined;
      const consentWrites = Boolean(writes) && /^\s*w/i.test(line);
      return { decision: consentWrites || /^\s*y/i.test(line) ? 'approve' : 'reject', actor: osUser(), consentWrites };
    },
  };

  try {
    prompt();
    for (let line = await next(); line !== undefined; line = await next()) {
      const text = line.trim();
      try {
        if (!text) {
          // nothing
        } else if (text === '/quit' || text === '/exit') {
          break;
        } else if (text === '/help') {
          o.out(HELP);
        } else if (text.startsWith('/mode')) {
          const m = text.split(/\s+/)[1];
          if (m !== 'agent' && m !== 'plan' && m !== 'goal') {
            o.out('usage: /mode agent|plan|goal\n');
          } else {
            mode = m;
            if (session) await keel.setMode(session, mode);
            o.out(`mode: ${mode}\n`);
          }
        } else if (text === '/approvals') {
          const pending = await keel.listApprovals({ status: 'pending' });
          o.out(pending.length ? `${pending.map((a) => renderCard(a.card, a.id)).join('\n')}\n` : 'No pending approvals.\n');
        } else if (text === '/runs') {
          o.out(renderRunList((await keel.listRuns({ limit: 10 })).map(runRow)));
        } else {
          const first = await keel.run(text, { model: o.model, pluginDirs: o.pluginDirs, mode, session }, onEvent);
          const { result: r } = await keel.answerPauses(first, responder, onEvent);
          spin.stop();
          for (const w of r.warnings) o.err(`warning: ${w}\n`);
          session = (await keel.getRun(r.run_id)).session_id;
          mode = r.mode;
          if (r.status === 'paused') o.out(`(run ${r.run_id} is still paused: keel resume or keel approvals)\n`);
          else o.out(`${r.answer ?? ''}\n(${r.status}: ${r.reason}, ${r.model_calls} model calls)\n`);
        }
      } catch (err) {
        spin.stop();
        if (err instanceof KeelError || err instanceof ModelError) o.out(`error: ${err.message}\n`);
        else throw err;
      }
      prompt();
    }
  } finally {
    spin.stop();
    rl.close();
  }
  o.out('\n');
  return 0;
}
