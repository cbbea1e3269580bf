/**
 * `keel serve`: Keel as a service. Runs execute in this process on the one engine and store, at
 * most KEEL_MAX_CONCURRENT_RUNS at a time (the rest wait in order). On start, runs a server that
 * died left mid-leg are taken over (calls in flight are reported, never run again), and runs this
 * server paused when it was stopped go on. On SIGTERM/SIGINT it stops taking work, lets running legs
 * reach a safe point (bounded), leaves paused runs paused, and exits.
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { isMcpSession, Keel, limitsFromEnv } from '../keel/keel.js';
import { journaledOf, keepJournaled } from '../loop/journal.js';
import type { Leg } from '../loop/legs.js';
import { ownerAlive } from '../loop/run.js';
import { PostgresStore } from '../store/postgres.js';
import type { LoopEvent, RunStatus, Store } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { Tokens, WebSessions } from './access/tokens.js';
import { Alerts } from './alerts/alerts.js';
import { createApp } from './api/app.js';
import { dropRest } from './http/bodies.js';
import { Hub, LegRunner } from './workers/runner.js';
import { handToQueue, startWorker } from './workers/worker.js';

/**
 * S3: a request answered before its body was read whole — a 413 past KEEL_MAX_BODY_BYTES first,
 * `POST /login` included, or any answer that needed none of it — has the rest of its body read and
 * dropped (never kept), so a client that goes on sending, as curl, browsers and fetch do, reads
 * the answer instead of a connection reset mid-upload (issue 40); one still sending after
 * LINGER_MS is cut off. `keel mcp serve` does the same (http/bodies.ts). @hono/node-server's own clean-up
 * (autoCleanupIncoming, off here) cut such a client off after 500 ms, which a 60 MB upload outlasts.
 */
function dropUnreadBodies(listener: RequestListener): RequestListener {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      res.once('finish', () => {
        if (!req.readableEnded && !req.destroyed) dropRest(req);
      });
    return listener(req, res);
  };
}

/** Why this server paused a run when it was stopped: the next start carries such runs on. */
export const SHUTDOWN = 'the server was stopped';

export interface ServeOptions {
  host?: string;
  port?: number;
  pluginDirs?: string[];
  model?: string;
  /** Model spec prefixes a request may choose besides the default. */
  allowedModels?: string[];
  corsOrigins?: string[];
  env?: NodeJS.ProcessEnv;
  /** Plugin folders when none are given and KEEL_PLUGINS is unset (the CLI passes the bundled ones). */
  defaultPluginDirs?: string[];
  version?: string;
  log?: (line: string) => void;
}

export interface RunningServer {
  url: string;
  port: number;
  keel: Keel;
  /** The admin token made on this home's first start (shown once), if this was it. */
  adminToken?: string;
  /** Runs taken over or carried on at start. */
  recovered: string[];
  /** Stops taking work, lets running legs reach a safe point (bounded), closes everything. */
  close(): Promise<void>;
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new KeelError('config', `${name}=${v} is not a positive whole number`);
  return n;
}

/** Issue 48: KEEL_PUBLIC_URL, the origin clients reach the server at (behind a proxy), as the A2A agent card names it. */
function publicUrlOf(env: NodeJS.ProcessEnv): string | undefined {
  const v = env.KEEL_PUBLIC_URL;
  if (v === undefined || v === '') return undefined;
  let u: URL | undefined;
  try {
    u = new URL(v);
  } catch {
    u = undefined;
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password || u.search || u.hash)
    throw new KeelError('config', `KEEL_PUBLIC_URL=${v} is not an http(s) URL without credentials, query or fragment`);
  return u.href.replace(/\/+$/, '');
}

export async function startServer(o: ServeOptions = {}): Promise<RunningServer> {
  const env = o.env ?? process.env;
  const log = o.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const limit = positive(env, 'KEEL_MAX_CONCURRENT_RUNS', 16);
  const shutdownMs = positive(env, 'KEEL_SHUTDOWN_TIMEOUT_MS', 10_000);
  const maxBodyBytes = positive(env, 'KEEL_MAX_BODY_BYTES', 1_000_000);
  limitsFromEnv(env); // a bad limit is refused before the server listens
  const publicUrl = publicUrlOf(env);
  const keel = new Keel({ env, defaultPluginDirs: o.defaultPluginDirs });
  const store = keel.store;
  if (!store) throw new KeelError('config', 'keel serve needs a store');
  const tokens = Tokens.at(keel.home);
  // The config and the operator's policy are read now: a mistake in either stops the server before it listens.
  const config = keel.getConfig();
  keel.policy();
  const pluginDirs = keel.pluginDirs(o.pluginDirs);
  // PC7: an operator's Cedar policy file that does not check against the pool stops the server here (file:line:col).
  await keel.operatorPolicy((await keel.registry(pluginDirs)).byName.values());
  // Webhooks (config.yaml's notify) and Web Push (S7: a missing web-push stops the server here, exit 2)
  // for the legs this server drives; a keel worker sends those of the legs it drives.
  const alerts = await Alerts.start({ config, store, tokens, env, log });
  const hub = new Hub();
  // #15: on a PostgreSQL store the server queues each leg for the workers (keel worker) instead of
  // driving it; with KEEL_SERVE_WORK=1 (keel serve --work) it also works legs itself, as a worker.
  const queue = store instanceof PostgresStore ? store : undefined;
  // SQLite: this process's run writers say what they journal each event as, for the live streams (runnerEvent).
  if (!queue) keepJournaled();
  const work = queue !== undefined && env.KEEL_SERVE_WORK === '1';
  // S5: on a shared PostgreSQL store, runs other processes work wake this server's live streams too.
  const unlisten = store instanceof PostgresStore ? await store.listen((runId) => hub.wake(runId)) : undefined;
  let state: 'starting' | 'ok' | 'stopping' = 'starting';
  const runnerEvent = (runId: string, e: LoopEvent) => {
    if (e.type === 'text_delta') hub.delta(runId, e.text);
    else {
      // On SQLite the live streams may send the event as journaled (the store gives back the same
      // JSON text); PostgreSQL keeps it as jsonb (its keys in its own order): there they read it back.
      hub.wake(runId, queue ? undefined : journaledOf(e));
      alerts.event(runId, e);
    }
  };
  const runner = new LegRunner({
    limit,
    onEvent: (runId, e) => runnerEvent(runId, e),
    // The events a leg journals are kept while it works, for the streams opened meanwhile (SQLite: see runnerEvent).
    onLeg: queue ? undefined : (runId, phase) => (phase === 'start' ? hub.legBegins(runId) : hub.legEnds(runId)),
    onError: (runId, err) => log(`keel serve: run ${runId} stopped on an error: ${err instanceof Error ? err.message : String(err)}`),
    dispatch: queue
      ? async (leg) => {
          if (!(await handToQueue(queue, leg))) log(`keel serve: run ${leg.run_id} was taken by another process before it was queued`);
        }
      : undefined,
  });
  // D1/D2: a delegate's run, and a parent its delegate's end woke, go through the runner (to the queue on PostgreSQL).
  keel.legSink = (leg) => {
    try {
      runner.submit(leg);
    } catch (err) {
      log(`keel serve: run ${leg.run_id} was not taken: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  const adminToken = tokens.firstAdmin()?.token;
  // Mount the plugins before listening: a broken plugin shows in the log and /v1/plugins, not mid-request.
  await keel.registry(pluginDirs);

  const app = createApp({
    keel,
    store,
    tokens,
    web: new WebSessions(tokens),
    hub,
    runner,
    pluginDirs,
    model: o.model ?? env.KEEL_MODEL,
    allowedModels: o.allowedModels ?? [],
    corsOrigins: o.corsOrigins ?? [],
    maxBodyBytes,
    version: o.version ?? '0.0.0',
    state: () => state,
    pollMs: positive(env, 'KEEL_SERVE_POLL_MS', 1000),
    push: alerts.push,
    publicUrl,
  });

  const hostname = o.host ?? '127.0.0.1';
  const server = await new Promise<Server>((resolveListen, reject) => {
    // S3: bodies left unread are dropped here (dropUnreadBodies), not by @hono/node-server's clean-up.
    const s = createServer(dropUnreadBodies(getRequestListener(app.fetch, { hostname, autoCleanupIncoming: false })));
    s.once('error', reject);
    s.listen(o.port ?? 7373, hostname, () => resolveListen(s));
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host}:${addr.port}`;

  const recovered = await recover(keel, store, runner, log, queue !== undefined);
  const worker = work && queue ? await startWorker({ keel, store: queue, concurrency: limit, log, onEvent: runnerEvent }) : undefined;
  state = 'ok';

  // Cards past their expiry are marked expired as time passes, not only when someone looks: the
  // journal then tells every open inbox, and the run ends with nothing run.
  const sweepMs = positive(env, 'KEEL_SERVE_SWEEP_MS', 30_000);
  const sweep = setInterval(() => {
    // A4: expiring a card and ending its run are one step (Keel.expireApprovals), whoever notices;
    // the sweep also ends runs left paused on a card that expired before (a process stopped between).
    keel
      .expireApprovals({
        stranded: true,
        drive: (leg) => {
          runner.submit(leg);
          hub.wake(leg.run_id);
        },
      })
      .then((expired) => {
        for (const a of expired) hub.wake(a.run_id);
      })
      .catch((err) => log(`keel serve: could not sweep expired cards: ${err instanceof Error ? err.message : String(err)}`));
  }, sweepMs);
  sweep.unref();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      state = 'stopping';
      clearInterval(sweep);
      server.close();
      const n = keel.interrupt(SHUTDOWN);
      if (n) log(`keel serve: stopping: ${n} running leg(s) pause at their next safe point`);
      await worker?.stop(shutdownMs);
      const settled = await runner.stop(shutdownMs);
      if (!settled) log(`keel serve: legs still running after ${shutdownMs} ms: the next start takes their runs over`);
      if ('closeAllConnections' in server) server.closeAllConnections();
      await alerts.drain(2000);
      await unlisten?.();
      await keel.close();
    })());
  return { url, port: addr.port, keel, adminToken, recovered, close };
}

/**
 * Runs that need this server on start: ones a dead process left mid-leg (taken over), ones whose
 * card was answered while no one carried them on, and ones this server paused when it stopped.
 */
async function recover(keel: Keel, store: Store, runner: LegRunner, log: (line: string) => void, leased: boolean): Promise<string[]> {
  const out: string[] = [];
  for (const status of ['running', 'paused'] as RunStatus[]) {
    let before: { created_at: string; id: string } | undefined;
    while (true) {
      const page = await store.listRuns({ status, limit: 200, before });
      if (!page.length) break;
      before = { created_at: page[page.length - 1].created_at, id: page[page.length - 1].id };
      for (const summary of page) {
        const run = await store.loadRun(summary.id);
        // An MCP session's run is carried by its own MCP server, never taken over here.
        if (!run || isMcpSession(run)) continue;
        // On a store with leases, a run left mid-leg is taken over when its lease runs out (by a worker), not here.
        const stale = !leased && run.status === 'running' && !ownerAlive(run.owner, run.updated_at);
        const stopped = run.status === 'paused' && run.pause?.kind === 'interrupted' && run.pause.why === SHUTDOWN;
        const answered =
          run.status === 'paused' &&
          run.pause?.kind === 'approval' &&
          (await store.getApproval(run.pause.approval_id))?.status !== 'pending';
        // D2 (issue 38): a parent whose delegate ended while no process carried the parent on.
        const child = run.status === 'paused' && run.pause?.kind === 'task' ? await store.loadRun(run.pause.child_run) : undefined;
        const woken = child?.status === 'done' || child?.status === 'failed';
        if (!stale && !stopped && !answered && !woken) continue;
        let leg: Leg;
        try {
          leg = await keel.continueLeg(run.id);
        } catch (err) {
          log(`keel serve: run ${run.id} could not be carried on: ${err instanceof Error ? err.message : String(err)}`);
          continue;
        }
        runner.submit(leg);
        out.push(run.id);
      }
    }
  }
  if (out.length) log(`keel serve: carrying on ${out.length} run(s) left by an earlier server: ${out.join(', ')}`);
  return out;
}
