/**
 * Colour for the CLI's status words, on a terminal only. Never colours text that has not been
 * escaped for the terminal first.
 */
import { randomBytes } from 'node:crypto';

/**
 * Colour for the statuses the CLI prints (FAILED, DEGRADED, held, denied, …), on a terminal only.
 *
 * Everything printed passes through forTerminal, which shows escape characters as visible text so
 * that nothing a model, a tool or a plugin wrote can recolour the screen. Colour therefore cannot
 * be an escape sequence in the rendered text: `paint` wraps a word in markers that carry a secret
 * made fresh for each process, and `applyColour` turns only those markers into escape sequences
 * after the text was made safe. Text from a run cannot forge a marker, since it never sees the secret.
 */
const SECRET = randomBytes(6).toString('hex');
const OPEN = `\ufdd0${SECRET}`;
const CLOSE = '\ufdd1';

const STYLES = { red: '31', green: '32', yellow: '33', dim: '2', bold: '1' } as const;
export type Style = keyof typeof STYLES;

/** `text` shown in `style` where colour is on; as plain text elsewhere. */
export function paint(style: Style, text: string): string {
  return `${OPEN}${STYLES[style]}${CLOSE}${text}${OPEN}0${CLOSE}`;
}

const MARK = new RegExp(`${OPEN}(\\d+)${CLOSE}`, 'g');

/** Replaces the markers with escape sequences (colour on) or removes them (colour off). */
export function applyColour(text: string, on: boolean): string {
  if (!text.includes(OPEN)) return text;
  return text.replace(MARK, (_m, code: string) => (on ? `\u001b[${code}m` : ''));
}

/**
 * Whether a stream gets colour: a terminal, unless NO_COLOR is set (https://no-color.org) or TERM
 * is dumb; FORCE_COLOR (not 0) turns it on when piped, but never over NO_COLOR.
 */
export function colourOn(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false') return true;
  return Boolean(stream.isTTY) && env.TERM !== 'dumb';
}
