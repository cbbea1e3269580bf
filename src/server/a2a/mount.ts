/**
 * Issue 48 (S10): where `keel serve` speaks A2A — the agent card at `/.well-known/agent-card.json` and
 * the JSON-RPC binding at `/a2a` — mounted on the server's Hono app. The SDK and everything that
 * uses it load on the first A2A request (server.ts), never at start: a server no agent calls does
 * not pay for it. Holds no state and no logic of its own beyond that.
 */
import type { Hono } from 'hono';
import { A2A_PATH } from './card.js';
import type { A2aServerDeps } from './server.js';

export { A2A_PATH } from './card.js';
export type { A2aServerDeps } from './server.js';

/** Mounts the A2A routes on `app`. */
export function mountA2a(app: Hono, d: A2aServerDeps): void {
  let loaded: ReturnType<typeof load> | undefined;
  const load = () => import('./server.js').then((m) => m.a2aServer(d));
  const server = () =>
    (loaded ??= load().catch((err: unknown) => {
      loaded = undefined;
      throw err;
    }));
  app.get('/.well-known/agent-card.json', async (c) => (await server()).card(c.req.raw));
  app.post(A2A_PATH, async (c) => (await server()).rpc(c.req.raw));
}
