/**
 * A second process for the mode-switch campaign (modes.ts): switches a session's mode through a
 * Keel of its own over the store KEEL_STORE names, as a server or the console would, and exits.
 *
 *   node --import tsx test/reliability/switch-mode.ts SESSION MODE
 */
import { Keel } from '../../src/keel/keel.js';
import type { Mode } from '../../src/types/index.js';

const [session, mode] = process.argv.slice(2);
const keel = new Keel({ home: process.env.KEEL_HOME });
try {
  await keel.setMode(session, mode as Mode);
} finally {
  await keel.close();
}
