/**
 * Text for a terminal: control characters (escape sequences, carriage returns, backspaces) and
 * bidirectional overrides are shown as visible escapes, so nothing a model, a tool or a plugin
 * wrote can move the cursor, recolour or rewrite what the user reads — an approval card shows
 * exactly the call that will run. Newlines and tabs are kept.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters being escaped.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

export function forTerminal(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
