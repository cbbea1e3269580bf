/**
 * The server's own routes: liveness, readiness, who the caller is, and the plugins the server runs
 * with (drift, refused registrations). They read; none of them changes anything.
 */
import * as S from '../http/schemas.js';
import type { Api } from './context.js';
import { json } from './route.js';

/** Health, readiness and whoami: what a load balancer and a client check first. */
export function statusRoutes(api: Api): void {
  const { d, route } = api;
  const { store, runner } = d;

  route(
    {
      method: 'get',
      path: '/v1/health',
      summary: 'Liveness: the process answers',
      role: null,
      ok: { status: 200, description: 'alive', schema: S.HealthSchema },
      errors: [],
    },
    (c) => json(c, 200, { status: d.state(), version: d.version }),
  );

  route(
    {
      method: 'get',
      path: '/v1/ready',
      summary: 'Readiness: the store answers and the server takes work',
      role: null,
      ok: { status: 200, description: 'ready', schema: S.ReadySchema },
      errors: [503],
    },
    async (c) => {
      let storeOk = true;
      try {
        await store.listRuns({ limit: 1 });
      } catch {
        storeOk = false;
      }
      const ready = storeOk && d.state() === 'ok';
      return json(c, ready ? 200 : 503, {
        ready,
        store: storeOk ? store.kind : `${store.kind} (not answering)`,
        running: runner.running,
        queued: runner.queued,
        limit: runner.limit,
      });
    },
  );

  route(
    {
      method: 'get',
      path: '/v1/whoami',
      summary: "The calling token's name and role",
      role: 'viewer',
      ok: { status: 200, description: 'the token', schema: S.WhoAmISchema },
      errors: [401],
    },
    (c, { who }) => json(c, 200, who),
  );
}

/** The server's plugins (after the session routes, in the API's order). */
export function pluginRoutes(api: Api): void {
  const { d, route } = api;
  const { keel } = d;

  route(
    {
      method: 'get',
      path: '/v1/plugins',
      summary: "The server's plugins: status, tools with effect and gate, drift, refused registrations with reasons",
      role: 'viewer',
      ok: { status: 200, description: 'the plugins', schema: S.PluginsSchema },
      errors: [401],
    },
    async (c) => {
      const reg = await keel.registry(d.pluginDirs);
      return json(c, 200, {
        plugins: reg.plugins,
        builtins: reg.pool.filter((t) => t.plugin === 'core').map((t) => ({ name: t.name, effect: t.declaration.effect, gate: t.gate })),
        policy_unmatched: reg.policy?.unmatched ?? [],
      });
    },
  );
}
