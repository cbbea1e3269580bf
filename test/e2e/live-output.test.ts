import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeGateway } from '../support/fake-gateway.js';
import { ensureBuilt, KEEL_BIN, keel, ROOT, tempHome } from '../support/helpers.js';
import { tmuxServer } from '../support/tmux.js';

// Issue 26, live output: on a terminal `keel run` shows the model's text as it streams and a
// spinner with the elapsed time while it waits; piped, nothing of it.

const ANSWER = 'Streaming the first words, then the middle part, and at last the end.';

/** A slow model: two seconds before it answers, then its text in three pieces, 1.5 s apart. */
const slowReply = () => ({ text: ANSWER, delayMs: 2000, frameDelayMs: 1500 });

const tmux = tmuxServer('keel-live', 'the live-output test drives keel run');

async function waitFor(session: string, pattern: RegExp, ms = 60_000): Promise<string> {
  const until = Date.now() + ms;
  let screen = '';
  while (Date.now() < until) {
    screen = tmux('capture-pane', '-p', '-J', '-t', session, '-S', '-200');
    if (pattern.test(screen)) return screen;
    if (/EXIT=\d+/.test(screen)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${pattern} never showed on the screen:\n${screen}`);
}

test('keel run on a terminal: a spinner with the elapsed time, then the text as it streams, before the run ends', async (t) => {
  ensureBuilt();
  const home = tempHome();
  const g = await FakeGateway.start([slowReply()]);
  const session = `keel-live-${process.pid}`;
  t.after(async () => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
    await g.close();
  });
  const model = `openai-compatible:fake-model@${g.openaiBaseUrl}`;
  tmux(
    'new-session',
    '-d',
    '-s',
    session,
    '-x',
    '200',
    '-y',
    '50',
    '-c',
    ROOT,
    `KEEL_HOME=${home} ${process.execPath} ${KEEL_BIN} run --model ${model} "say something slowly"; echo "EXIT=$?"; sleep 600`,
  );
  // While the model thinks: the spinner and the seconds it has waited.
  await waitFor(session, /waiting for the model \d+\.\ds/);
  // The first piece of text is on the screen while the run is still going.
  const early = await waitFor(session, /Streaming the first/);
  assert.doesNotMatch(early, /EXIT=/, 'the text shows before the run ends');
  assert.doesNotMatch(early, /the end\./, 'the text arrives in pieces, not whole at the end');
  const done = await waitFor(session, /EXIT=\d+/);
  assert.match(done, /EXIT=0/);
  assert.match(done, /\(done: final_answer; 1 model call; run run_/);
  // Streamed once: the end does not print the answer a second time.
  assert.equal(done.split(ANSWER).length - 1, 1, done);
  assert.doesNotMatch(done, /waiting for the model/, 'the spinner is gone once the text came');
});

test('keel run piped: the same slow model, and the output holds no spinner and no control character', async (t) => {
  const home = tempHome();
  const g = await FakeGateway.start([{ ...slowReply(), delayMs: 300, frameDelayMs: 300 }]);
  t.after(() => g.close());
  const r = await keel(['run', '--model', `openai-compatible:fake-model@${g.openaiBaseUrl}`, 'say something slowly'], { KEEL_HOME: home });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `${ANSWER}\n`);
  for (const [name, s] of [
    ['stdout', r.stdout],
    ['stderr', r.stderr],
  ] as const) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is looked for
    assert.doesNotMatch(s, /[\u0000-\u0009\u000b-\u001f\u007f]/, `${name} holds a control character: ${JSON.stringify(s)}`);
    assert.doesNotMatch(s, /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]|waiting for the model/, `${name} holds the spinner`);
  }
});
