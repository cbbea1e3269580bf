/**
 * What every route group of the HTTP API is given: the server's dependencies (ServerDeps) and the
 * helpers the groups share — declaring a route, telling a caller its leg was taken, auditing a
 * change. Holds no route and no state of its own; it never reaches above src/server/api.
 */
import type { z } from 'zod';
import type { Keel } from '../../keel/keel.js';
import type { Leg } from '../../loop/legs.js';
import type { RunSummary, Store } from '../../types/index.js';
import type { Tokens, WebSessions } from '../access/tokens.js';
import type { Push } from '../alerts/push.js';
import type * as S from '../http/schemas.js';
import type { Hub, LegRunner } from '../workers/runner.js';
import type { Route, Who } from './route.js';

export interface ServerDeps {
  keel: Keel;
  store: Store;
  tokens: Tokens;
  /** The console's logins (a cookie may read the API; only the console's forms write with it). */
  web: WebSessions;
  hub: Hub;
  runner: LegRunner;
  /** The plugin folders the server was started with: a run may name only these. */
  pluginDirs: string[];
  /** The model runs use unless they name one. */
  model?: string;
  /** Model specs a request may name besides the default: each a prefix (`script:`, `openai:gpt-4o`). */
  allowedModels: string[];
  /** Origins allowed to call the API from a browser on another origin; none by default. */
  corsOrigins: string[];
  maxBodyBytes: number;
  version: string;
  state(): 'starting' | 'ok' | 'stopping';
  /** How often a live stream looks at the journal without a wake-up (runs worked by another process). */
  pollMs: number;
  /** Web Push (S7); off when not given. */
  push?: Push;
  /** Issue 48: the origin clients reach the server at (KEEL_PUBLIC_URL), named by the A2A agent card; else a request's own. */
  publicUrl?: string;
}

/** The app's shared pieces, made once by createApp and handed to each route group. */
export interface Api {
  d: ServerDeps;
  /** Declares a route (route.ts): its role, schemas and responses, and its handler. */
  route: Route;
  /** Web Push as the server was started with it (off when not given). */
  push: Push;
  /** Hands a leg to the runner and says where its events are (createApp says how). */
  accepted(leg: Leg, fresh?: boolean): Promise<z.infer<typeof S.LegAcceptedSchema>>;
  /** Expires the cards past their expiry and ends their runs (A4). */
  expire(): ReturnType<Keel['expireApprovals']>;
  /** A run as a listing shows it. */
  summary(r: RunSummary): Omit<RunSummary, 'id'> & { run_id: string; queued: boolean };
  /** Writes the audit row of a change made through the API. */
  audit(who: Who, action: string, subject: string, detail: string): Promise<void>;
}
