/**
 * Colour for the CLI's status words, on a terminal only. Never colours text that has not been
 * escaped for the terminal first.
 */
import { createRequire } from 'node:module';

/**
 * Colour for the statuses the CLI prints (FAILED, DEGRADED, held, denied, …), on a terminal only.
 *
 * Everything printed passes through forTerminal, which shows escape characters as visible text so
 * that nothing a model, a tool or a plugin wrote can recolour the screen. Colour therefore cannot
 * be an escape sequence in the rendered text: `paint` wraps a word in markers that carry a secret
 * made fresh for each process, and `applyColour` turns only those markers into escape sequences
 * after the text was made safe. Text from a run cannot forge a marker, since it never sees the secret.
 */
// Made on the first paint: node:crypto costs ~6 ms to load, which `keel --help` (that paints nothing) should not pay.
let marker: { open: string; mark: RegExp } | undefined;
const CLOSE = '\ufdd1';

function opener(): { open: string; mark: RegExp } {
  if (!marker) {
    const { randomBytes } = createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
    const open = `\ufdd0${randomBytes(6).toString('hex')}`;
    marker = { open, mark: new RegExp(`${open}(\\d+)${CLOSE}`, 'g') };
  }
  return marker;
}

const STYLES = { red: '31', green: '32', yellow: '33', dim: '2', bold: '1' } as const;
export type Style = keyof typeof STYLES;

/** `text` shown in `style` where colour is on; as plain text elsewhere. */
export function paint(style: Style, text: string): string {
  const { open } = opener();
  return `${open}${STYLES[style]}${CLOSE}${text}${open}0${CLOSE}`;
}

/** Replaces the markers with escape sequences (colour on) or removes them (colour off). */
export function applyColour(text: string, on: boolean): string {
  // Before the first paint there is no marker, so no text can hold one.
  if (!marker || !text.includes(marker.open)) return text;
  return text.replace(marker.mark, (_m, code: string) => (on ? `\u001b[${code}m` : ''));
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
