/**
 * What `keel mcp serve` is given (its options and wait limits) and who is at the other end of a
 * connection (its identity, and who that is when a card is answered), with the small helpers every
 * part of the MCP server shares. Never decides a call or answers a card itself: that is the session's.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Answerer } from '../../approvals/who.js';
import { type Keel, limitsFromEnv } from '../../keel/keel.js';
import { DEFAULT_LIMITS } from '../../loop/deps.js';
import type { Mode, Principal } from '../../types/index.js';
import type { Alerts } from '../alerts/alerts.js';

export interface McpServeOptions {
  keel: Keel;
  /** The webhooks and Web Push its cards set off (config.yaml's notify, KEEL_PUSH_SUBJECT). */
  alerts?: Alerts;
  pluginDirs: string[];
  mode: Mode;
  /**
   * How long a call waits for its card to be answered before it returns, naming the card: at most
   * MAX_WAIT_MS, inside the 60 s an MCP client waits for a result by default.
   */
  waitMs: number;
  /** How often a waiting call looks at its card in the store. */
  pollMs?: number;
  /** How often a waiting call sends a progress notification (when the client gave a progress token). */
  progressMs?: number;
  /** A card's expiry; default KEEL_APPROVAL_TTL_MINUTES, else 60 minutes. */
  approvalTtlMs?: number;
  /**
   * When a client goes, leave its pending cards for the owner instead of closing them: the same call
   * made again, from any session, waits on that card or gets its outcome (clients that connect for
   * each call, such as the Inspector's CLI).
   */
  keepCards?: boolean;
  /** The web console where cards are answered (a configured `keel serve`), named in a waiting call's result. */
  consoleUrl?: string;
  version: string;
}

/** The longest a call waits for its card: an MCP client times a request out after 60 s by default. */
export const MAX_WAIT_SECONDS = 50;
/** How long a call waits for its card by default before it returns naming it. */
export const DEFAULT_WAIT_SECONDS = 5;

/** A call's MCP result: its text, marked an error when it is one. */
export const text = (t: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(isError ? { isError: true } : {}),
});

/** Who is at the other end: the actor of every answer and audit row, and the client's own name (a label only). */
export interface McpIdentity {
  /** Over HTTP the bearer token's name; over stdio `mcp:CLIENT`. */
  actor: string;
  client: string;
  /** PC9: who the session's calls are made for, as the operator's policy sees it: the token's name, role and groups (stdio: `mcp:CLIENT`). */
  principal: Principal;
  /** A9: over HTTP the token's groups (a card routed elsewhere is not its client's to answer); over stdio none: the machine's user. */
  groups?: readonly string[];
}

/** A9: who answers a card on an MCP connection: over HTTP its token (its groups apply), over stdio the machine's user. */
export function answererOf(who: McpIdentity): Answerer {
  return who.groups === undefined ? { name: who.actor, groups: [], kind: 'user' } : { name: who.actor, groups: who.groups, kind: 'mcp' };
}

/** A card's expiry: the option, else KEEL_APPROVAL_TTL_MINUTES, else the core's default (60 minutes). */
export const approvalTtlMs = (o: McpServeOptions) =>
  o.approvalTtlMs ?? limitsFromEnv(process.env).approvalTtlMs ?? DEFAULT_LIMITS.approvalTtlMs;
