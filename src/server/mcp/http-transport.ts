/**
 * `keel mcp serve --http`: Streamable HTTP on loopback, each MCP session its own connection and Keel
 * session, every request with an approver's bearer token, and the endpoint's limits (S3): bodies up
 * to KEEL_MAX_BODY_BYTES, and a session idle past KEEL_MCP_IDLE_TIMEOUT_SECONDS has lost its client.
 * Never reads a body past the limit whole, and never serves a request without a valid token.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { KeelError } from '../../util/errors.js';
import { allows, type Tokens } from '../access/tokens.js';
import { dropRest } from '../http/bodies.js';
import { connectMcp } from './connect.js';
import type { McpServeOptions } from './options.js';
import { PoolWatch } from './pool.js';

/** How long an HTTP session may be idle — no request open, none arriving — before its client counts as gone: 30 minutes. */
export const DEFAULT_IDLE_SECONDS = 30 * 60;

/**
 * The HTTP endpoint's limits from the environment (S3): `KEEL_MAX_BODY_BYTES` (as `keel serve`,
 * default 1,000,000) and `KEEL_MCP_IDLE_TIMEOUT_SECONDS` (default 30 minutes; `--idle-timeout` wins).
 */
export function mcpHttpLimits(env: NodeJS.ProcessEnv): { maxBodyBytes: number; idleMs: number } {
  const positive = (name: string, fallback: number, whole: boolean): number => {
    const v = env[name];
    if (v === undefined || v === '') return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0 || (whole && !Number.isInteger(n)))
      throw new KeelError('config', `${name}=${v} is not a positive ${whole ? 'whole ' : ''}number`);
    return n;
  };
  return {
    maxBodyBytes: positive('KEEL_MAX_BODY_BYTES', 1_000_000, true),
    idleMs: positive('KEEL_MCP_IDLE_TIMEOUT_SECONDS', DEFAULT_IDLE_SECONDS, false) * 1000,
  };
}

/** A request's body, read up to `max` bytes: undefined past it (the rest is left unread). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      resolve(undefined);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * Streamable HTTP on loopback: each MCP session its own Keel session; every request needs a token
 * (an approver's: calls run tools) as `Authorization: Bearer`. S3: a body past `maxBodyBytes` is
 * refused with 413 before it is read whole; a session with no request open and none arriving for
 * `idleMs` — a client that vanished without a DELETE — is closed as if its client had said goodbye
 * (its pending cards closed as `client_gone`, or kept with `keepCards`).
 */
export async function serveMcpHttp(
  o: McpServeOptions & { tokens: Tokens; host?: string; port: number; maxBodyBytes?: number; idleMs?: number },
): Promise<{ url: string; close(): Promise<void> }> {
  const limits = mcpHttpLimits(process.env);
  const maxBody = o.maxBodyBytes ?? limits.maxBodyBytes;
  const idleMs = o.idleMs ?? limits.idleMs;
  const pool = await PoolWatch.start(o);
  interface HttpSession {
    transport: StreamableHTTPServerTransport;
    close(): Promise<void>;
    /** Requests of the session open now (a call being answered, a GET stream held). */
    open: number;
    /** When its last request ended. */
    idleSince: number;
  }
  const sessions = new Map<string, HttpSession>();
  const refuse = (res: ServerResponse, status: number, message: string, code = -32001, headers: Record<string, string> = {}) => {
    res
      .writeHead(status, { 'content-type': 'application/json', ...headers })
      .end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
  };
  /** A request of the session: it is busy while the request is open, and idle from when the last one ends. */
  const track = (s: HttpSession, res: ServerResponse) => {
    s.open++;
    res.once('close', () => {
      s.open--;
      s.idleSince = Date.now();
    });
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
    // S3: the body limit first, before any other check, as `keel serve` (app.ts): a declared length
    // past it is refused unread, a chunked body as soon as it passes it.
    let body: unknown;
    if (req.method === 'POST') {
      const raw = await readBody(req, maxBody);
      if (!raw) {
        // What the client still sends is read and dropped, so it reads the 413 instead of a reset.
        dropRest(req);
        return refuse(res, 413, `the request body is larger than ${maxBody} bytes (KEEL_MAX_BODY_BYTES)`, -32600);
      }
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return refuse(res, 400, 'the request body is not JSON', -32700);
      }
    }
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    const who = m ? o.tokens.verify(m[1]) : undefined;
    if (!who) return refuse(res, 401, 'send Authorization: Bearer TOKEN (keel tokens create makes one)');
    if (!allows(who.role, 'approver')) return refuse(res, 403, `token ${who.name} is a ${who.role}: calling tools needs an approver`);
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const existing = sessions.get(id);
      // Closed (a DELETE, or idle past the timeout): the client starts a new session.
      if (!existing) return refuse(res, 404, `no MCP session ${id} (closed, or idle too long): start one with an initialize request`);
      track(existing, res);
      return existing.transport.handleRequest(req, res, body);
    }
    if (req.method !== 'POST') return refuse(res, 400, 'no MCP session: start one with an initialize request');
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => {
        const s: HttpSession = { transport, close: c.close, open: 0, idleSince: Date.now() };
        sessions.set(sid, s);
        track(s, res);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    // The token's name is the actor of every answer and audit row; the client's own name is a label.
    const c = await connectMcp(o, pool, transport, who);
    await transport.handleRequest(req, res, body);
    // Not an initialize request: no session was made, and its connection is let go.
    if (!transport.sessionId) await Promise.all([c.close(), transport.close()]);
  };
  // S3: a client that vanished without a DELETE is gone once its session has been idle for idleMs.
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [sid, s] of sessions) {
        if (s.open > 0 || now - s.idleSince < idleMs) continue;
        sessions.delete(sid);
        process.stderr.write(`keel mcp serve: session ${sid} idle for ${Math.round((now - s.idleSince) / 1000)} s: its client is gone\n`);
        void Promise.all([s.close(), s.transport.close()]).catch((err) =>
          process.stderr.write(`keel mcp serve: closing a session failed: ${err instanceof Error ? err.message : String(err)}\n`),
        );
      }
    },
    Math.max(50, Math.min(idleMs / 4, 30_000)),
  );
  sweep.unref();
  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) refuse(res, 500, `keel mcp serve failed: ${err instanceof Error ? err.message : String(err)}`);
    });
  });
  // A connection whose peer vanished without closing it (a held GET stream) is found by TCP keep-alive.
  http.on('connection', (socket) => socket.setKeepAlive(true, 60_000));
  await new Promise<void>((r, j) => {
    http.once('error', j);
    http.listen(o.port, o.host ?? '127.0.0.1', () => r());
  });
  const addr = http.address() as AddressInfo;
  return {
    url: `http://${addr.address}:${addr.port}/mcp`,
    close: async () => {
      clearInterval(sweep);
      pool.close();
      for (const s of sessions.values()) await s.close();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
