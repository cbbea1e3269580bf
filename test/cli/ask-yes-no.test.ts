/**
 * S6 / untrusted input: the yes/no question `keel resume` asks on a terminal holds the run's own
 * question (a model's words) and the held calls. readline writes it straight to the terminal, past
 * the io the CLI escapes, so askYesNo escapes it itself: a model's escape sequence (clear the
 * screen, move the cursor, retitle the window) shows as text and changes nothing.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { askYesNo } from '../../src/cli/context.js';

async function ask(question: string, answers: string[]): Promise<{ yes: boolean; shown: string }> {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  const left = [...answers];
  // Each answer is typed once the question is shown, as a person would.
  output.on('data', (d) => {
    shown += String(d);
    const next = left.shift();
    if (next !== undefined) setImmediate(() => input.write(`${next}\n`));
  });
  return { yes: await askYesNo(question, { input, output }), shown };
}

test('askYesNo: a model’s control characters in the question are shown escaped, never sent to the terminal', async () => {
  const { yes, shown } = await ask('Pay \x1b[2J\x1b]0;owned\x07 the bill?\nConfirm? [y/n] ', ['y']);
  assert.equal(yes, true);
  assert.ok(!shown.includes('\x1b') && !shown.includes('\x07'), JSON.stringify(shown));
  assert.match(shown, /Pay \\x1b\[2J\\x1b\]0;owned\\x07 the bill\?\nConfirm\? \[y\/n\] /);
});

test('askYesNo: asks again until the answer is yes or no', async () => {
  const { yes, shown } = await ask('Go? [y/n] ', ['maybe', 'NO']);
  assert.equal(yes, false);
  assert.equal(shown.split('Go? [y/n] ').length - 1, 2);
});
