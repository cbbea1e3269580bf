/**
 * Request bodies `keel serve` and `keel mcp serve` refuse or leave unread (S3): the rest is read and
 * dropped, never kept, so a client that goes on sending — as curl, browsers and fetch do — reads the
 * answer (a 413 past KEEL_MAX_BODY_BYTES) instead of a connection reset mid-upload; one still
 * sending after LINGER_MS is cut off.
 */
import type { IncomingMessage } from 'node:http';

/** How long a client whose body was left unread may go on sending (its bytes dropped) before its connection is cut. */
export const LINGER_MS = 5_000;

/** Reads and drops what is left of `req`'s body; whatever was reading it is given no more of it. */
export function dropRest(req: IncomingMessage): void {
  req.removeAllListeners('data');
  req.on('data', () => {});
  req.resume();
  const cut = setTimeout(() => req.socket?.destroy(), LINGER_MS);
  cut.unref();
  req.once('end', () => clearTimeout(cut));
  req.once('close', () => clearTimeout(cut));
}
