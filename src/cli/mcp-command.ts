/**
 * `keel mcp serve`: the plugins' tools offered over MCP (stdio, or Streamable HTTP), every call
 * governed by Keel, until its client or a signal stops it. Never writes to stdout over stdio but
 * the protocol, and never waits longer for a card than an MCP client waits for a call.
 */
import { type Command, Option } from 'commander';
import type { Mode } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { type CommandContext, collectList, portNumber, positiveNumber, VERSION } from './context.js';

export function registerMcp(program: Command, { io, getKeel, onStop, setCode }: CommandContext): void {
  const mcp = program.command('mcp').description("Keel as an MCP server: any MCP client gets Keel's governed tools");
  mcp
    .command('serve')
    .description("offer the plugins' tools over MCP (stdio, or Streamable HTTP with --http), every call governed by Keel")
    .option('-p, --plugins <dir>', 'plugin folder (repeatable); default KEEL_PLUGINS or the bundled plugins', collectList, [])
    .addOption(
      new Option('--mode <mode>', 'the session mode: plan and goal refuse writes (the tools stay listed)')
        .choices(['agent', 'plan', 'goal'])
        .default('agent'),
    )
    .option(
      '--http <port>',
      'serve Streamable HTTP on 127.0.0.1 at this port (0: any) instead of stdio; calls need an approver token',
      (v) => portNumber(v),
    )
    .option(
      '--wait <seconds>',
      'how long a call waits for its approval card before it returns, naming the card (default 5, at most 50: clients give up after 60)',
      (v) => positiveNumber(v, '--wait'),
    )
    .option(
      '--keep-cards',
      "when a client goes, leave its pending cards for the owner: the same call made again, from any session, gets the card's outcome (for clients that connect for each call)",
    )
    .option(
      '--idle-timeout <seconds>',
      'with --http: a session with no request for this long counts its client as gone, closing its cards as for a goodbye (default KEEL_MCP_IDLE_TIMEOUT_SECONDS, else 1800)',
      (v) => positiveNumber(v, '--idle-timeout'),
    )
    .action(async (o: { plugins: string[]; mode: Mode; http?: number; wait?: number; keepCards?: boolean; idleTimeout?: number }) => {
      const { DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS, mcpHttpLimits, serveMcpHttp, serveMcpStdio } = await import('../server/mcp/mcp.js');
      const wait = o.wait ?? DEFAULT_WAIT_SECONDS;
      if (wait > MAX_WAIT_SECONDS) {
        throw new KeelError(
          'bad_input',
          `--wait ${wait} is too long: at most ${MAX_WAIT_SECONDS} seconds, since MCP clients give up on a call after 60 seconds by default (a call returns naming its card, and calling again gets the outcome)`,
        );
      }
      const k = await getKeel();
      const { limitsFromEnv } = await import('../keel/keel.js');
      const server = io.env.KEEL_SERVER?.replace(/\/+$/, '');
      const ttl = limitsFromEnv(io.env).approvalTtlMs;
      const opts = {
        keel: k,
        pluginDirs: k.pluginDirs(o.plugins),
        mode: o.mode,
        waitMs: wait * 1000,
        keepCards: Boolean(o.keepCards),
        version: VERSION,
        ...(server ? { consoleUrl: `${server}/` } : {}),
        ...(ttl ? { approvalTtlMs: ttl } : {}),
      };
      await k.registry(opts.pluginDirs); // a broken plugin shows now, on stderr, not at the first call
      const { Tokens } = await import('../server/access/tokens.js');
      const tokens = Tokens.at(k.home);
      // The webhooks and Web Push of this server's cards, as keel serve and keel worker send their own.
      const store = k.store;
      const alerts = store
        ? await (await import('../server/alerts/alerts.js')).Alerts.start({
            config: k.getConfig(),
            store,
            tokens,
            env: io.env,
            log: (line) => io.err(`${line}\n`),
          })
        : undefined;
      let srv: { close(): Promise<void> };
      if (o.http !== undefined) {
        // S3: KEEL_MAX_BODY_BYTES as keel serve; a session idle past the timeout has lost its client.
        const limits = mcpHttpLimits(io.env);
        const idleMs = o.idleTimeout !== undefined ? o.idleTimeout * 1000 : limits.idleMs;
        const http = await serveMcpHttp({
          ...opts,
          alerts,
          tokens,
          port: o.http,
          maxBodyBytes: limits.maxBodyBytes,
          idleMs,
        });
        io.out(`keel mcp serve: listening on ${http.url}\n`);
        srv = http;
      } else {
        // stdout is the protocol's: nothing else is written there.
        srv = await serveMcpStdio({ ...opts, alerts });
      }
      await new Promise<void>((resolveStop) => {
        onStop(() => resolveStop());
        if (o.http === undefined) process.stdin.once('end', () => resolveStop());
      });
      await srv.close();
      await alerts?.drain(2000);
      setCode(0);
    });
}
