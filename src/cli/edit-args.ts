/**
 * The owner's edited arguments for a card's call, as the CLI and chat take them. Never accepts
 * anything but a JSON object.
 */
import { KeelError } from '../util/errors.js';

/**
 * A7: the owner's arguments for a card's call, as `keel approvals approve --args JSON` and chat's
 * `/approve ID --args JSON` take them: a JSON object (a card of several calls: one per call id).
 */
export function editArguments(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new KeelError('bad_input', `--args: not valid JSON (${(err as Error).message})`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new KeelError('bad_input', '--args: must be a JSON object of arguments');
  return v as Record<string, unknown>;
}
