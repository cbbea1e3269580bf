/**
 * `keel mcp serve`: Keel's governed pool offered as an MCP server. Every plugin tool is listed with
 * its input schema and annotations from its declaration; every call goes through the one call
 * pipeline (the gate, hooks, the handler, the effect record), inside a session of its own per MCP
 * connection, kept as a run in the store (its calls, effects and cards, seen in the console):
 *
 * - a confirm-once write asks the user once per session and tool through MCP elicitation; a client
 *   without elicitation gets one card per session and tool, whose approval consents the tool;
 * - a destructive call or a pinned write becomes an approval card; with elicitation the card is shown
 *   there; without, the call waits at most `waitMs` (inside a client's 60 s time-out, with progress
 *   notifications) and returns naming the card, where to answer it, and that calling again with the
 *   same arguments gets the outcome. Identical calls share one card and one execution (the side-effect
 *   ledger); the same call made after it ran gets its recorded outcome;
 * - once the session has read untrusted content (U2), a write the person was not shown waits on a
 *   card pinned to its arguments (U3), and so does an open-world call (O2: `openWorldHint` in the
 *   list is the declared `open_world`): the session holds none of its user's words, so every string
 *   and number of such a call is marked on its card as not from the user; a no is remembered (O3);
 * - a client that supports MCP tasks may make a call that can wait a task (a write, a destructive
 *   call, an open-world read): `input_required` while its card waits (however long), then
 *   `completed` or `failed`; `tasks/cancel` rejects the card;
 * - over HTTP the bearer token's name answers and audits, bodies are limited to KEEL_MAX_BODY_BYTES,
 *   and a session idle past the timeout has lost its client; a session whose client is gone closes
 *   its pending cards (`client_gone`), unless `keepCards` leaves them to the owner;
 * - in Plan or Goal mode every tool stays listed, and a restricted one is refused with the mode's
 *   denial before anything of it runs.
 *
 * This file is the entry the CLI and tests import; the parts live beside it: options.ts (what a
 * serve is given, who is at the other end), pool.ts (the listed tools), calls.ts (a call through
 * the gate), cards.ts (cards made, waited on and carried out), session.ts (one connection's session:
 * decisions, tasks, close), tasks.ts (MCP tasks), connect.ts (a connection; stdio) and
 * http-transport.ts (Streamable HTTP and its limits). It holds no logic of its own: never add any here.
 */
/** The reason a card is closed with when its session's client is gone (one word for every surface: respond.ts). */
export { CLIENT_GONE } from '../../approvals/respond.js';
export { connectMcp, serveMcpStdio } from './connect.js';
export { DEFAULT_IDLE_SECONDS, mcpHttpLimits, serveMcpHttp } from './http-transport.js';
export { DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS, type McpIdentity, type McpServeOptions } from './options.js';
export { PoolWatch, toMcpTool } from './pool.js';
export { ConnectionTasks, TASK_CANCELLED } from './tasks.js';
