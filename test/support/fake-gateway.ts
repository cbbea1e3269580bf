/**
 * A local model gateway for wire-level tests (P3). It speaks two protocols on 127.0.0.1:
 *   - OpenAI chat completions: POST /v1/chat/completions (SSE with chunked tool-call deltas and
 *     [DONE] when `stream: true`, one JSON object otherwise);
 *   - Anthropic messages: POST /v1/messages (SSE message_start … message_stop, or one JSON object).
 * It answers with a scripted list of replies, in order, whichever protocol asks, and records every
 * request body. Like the real APIs it always rejects (400) a transcript whose tool calls and tool
 * results do not pair up by id. In **strict** mode it also rejects (400), as strict gateways do, a
 * request whose history names a tool missing from that request's `tools`, or a scripted reply that
 * would call a tool missing from them.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Protocol = 'openai' | 'anthropic';

export interface ScriptedCall {
  id: string;
  name: string;
  args?: Record<string, unknown>;
  /** Raw argument text sent instead of JSON.stringify(args) (malformed-JSON tests). */
  arguments?: string;
}

export interface ScriptedReply {
  text?: string;
  tool_calls?: ScriptedCall[];
  /** Token counts the gateway reports. Default: input 100, output 20. */
  usage?: { input: number; output: number };
  /** Answer with this HTTP error instead of a completion. */
  error?: { status: number; message: string };
  /** Wait this long before answering (a slow or hung server). */
  delayMs?: number;
  /** When streaming: wait this long between frames (a slow model, its text arriving bit by bit). */
  frameDelayMs?: number;
  /**
   * The reply stopped at the output token limit (OpenAI `finish_reason: length`, Anthropic
   * `stop_reason: max_tokens`): the text, or the last call's arguments, as given, are what was cut.
   */
  stop?: 'length';
}

export interface RecordedRequest {
  protocol: Protocol;
  path: string;
  headers: IncomingMessage['headers'];
  // biome-ignore lint/suspicious/noExplicitAny: a provider's request body, inspected field by field in tests
  body: any;
  stream: boolean;
  /** The HTTP status the gateway answered with. */
  status: number;
  /** The error message when status is not 200. */
  error?: string;
}

export interface GatewayOptions {
  strict?: boolean;
  /** The model name echoed in responses. */
  model?: string;
}

/** A call or result found in a request's history, in either protocol. */
export interface WireCall {
  id: string;
  name: string;
  args: string;
}
export interface WireResult {
  id: string;
  content: string;
  is_error?: boolean;
}

export class FakeGateway {
  readonly requests: RecordedRequest[] = [];
  readonly strict: boolean;
  private readonly replies: ScriptedReply[] = [];
  private readonly server: Server;
  private readonly model: string;
  private served = 0;
  url = '';

  private constructor(replies: ScriptedReply[], opts: GatewayOptions) {
    this.replies.push(...replies);
    this.strict = opts.strict ?? false;
    this.model = opts.model ?? 'fake-model';
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `fake gateway crashed: ${(err as Error).message}` } }));
      });
    });
  }

  static async start(replies: ScriptedReply[] = [], opts: GatewayOptions = {}): Promise<FakeGateway> {
    const g = new FakeGateway(replies, opts);
    await new Promise<void>((res) => g.server.listen(0, '127.0.0.1', res));
    g.url = `http://127.0.0.1:${(g.server.address() as AddressInfo).port}`;
    return g;
  }

  /** Base URL for OpenAI clients (they append /chat/completions). */
  get openaiBaseUrl(): string {
    return `${this.url}/v1`;
  }

  /** Base URL for Anthropic clients (they append /v1/messages). */
  get anthropicBaseUrl(): string {
    return this.url;
  }

  /** Scripted replies not served yet. */
  get remaining(): number {
    return this.replies.length - this.served;
  }

  push(...replies: ScriptedReply[]): void {
    this.replies.push(...replies);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((res) => this.server.close(() => res()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    const protocol: Protocol | undefined =
      req.method === 'POST' && path === '/v1/chat/completions'
        ? 'openai'
        : req.method === 'POST' && path === '/v1/messages'
          ? 'anthropic'
          : undefined;
    const text = await readBody(req);
    if (!protocol) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `fake gateway: no route ${req.method} ${path}` } }));
      return;
    }
    let body: RecordedRequest['body'];
    try {
      body = JSON.parse(text);
    } catch {
      return this.fail(
        res,
        { protocol, path, headers: req.headers, body: text, stream: false, status: 0 },
        400,
        'request body is not JSON',
      );
    }
    const rec: RecordedRequest = { protocol, path, headers: req.headers, body, stream: body?.stream === true, status: 0 };
    this.requests.push(rec);

    const problem = protocol === 'openai' ? checkOpenAI(body, this.strict) : checkAnthropic(body, this.strict);
    if (problem) return this.fail(res, rec, 400, problem);
    const reply = this.replies[this.served];
    if (!reply) return this.fail(res, rec, 500, `fake gateway: no scripted reply left for request ${this.requests.length}`);
    if (this.strict) {
      const declared = declaredNames(protocol, body);
      const stray = (reply.tool_calls ?? []).find((c) => !declared.has(c.name));
      if (stray) {
        // The scripted model "answered", but a strict gateway refuses a response calling an undeclared tool.
        this.served++;
        return this.fail(
          res,
          rec,
          400,
          `tool call validation failed: attempted to call tool '${stray.name}' which was not in request.tools`,
        );
      }
    }
    this.served++;
    if (reply.delayMs) {
      await new Promise<void>((r) => setTimeout(r, reply.delayMs).unref());
      if (res.destroyed) return;
    }
    if (reply.error) return this.fail(res, rec, reply.error.status, reply.error.message);
    rec.status = 200;
    if (protocol === 'openai') {
      if (rec.stream)
        return sendSse(res, openaiChunks(reply, this.model, body?.stream_options?.include_usage === true), reply.frameDelayMs);
      return sendJson(res, openaiCompletion(reply, this.model));
    }
    if (rec.stream) return sendSse(res, anthropicEvents(reply, this.model), reply.frameDelayMs);
    return sendJson(res, anthropicMessage(reply, this.model));
  }

  private fail(res: ServerResponse, rec: RecordedRequest, status: number, message: string): void {
    rec.status = status;
    rec.error = message;
    const type = status >= 500 ? 'api_error' : 'invalid_request_error';
    const body =
      rec.protocol === 'anthropic'
        ? { type: 'error', error: { type, message } }
        : { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null } };
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((res, rej) => {
    let s = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (s += d));
    req.on('end', () => res(s));
    req.on('error', rej);
  });
}

function sendJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Each frame is written separately (chunked transfer), as a real server streams. */
async function sendSse(res: ServerResponse, frames: string[], frameDelayMs = 0): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const f of frames) {
    if (res.destroyed) return;
    res.write(f);
    await new Promise((r) => (frameDelayMs ? setTimeout(r, frameDelayMs).unref() : setImmediate(r)));
  }
  res.end();
}

/** Splits text into a few pieces, so clients must reassemble deltas. */
export function pieces(s: string, n = 3): string[] {
  if (s.length <= 1) return [s];
  const size = Math.max(1, Math.ceil(s.length / n));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

function argText(c: ScriptedCall): string {
  return c.arguments ?? JSON.stringify(c.args ?? {});
}

function usageOf(r: ScriptedReply): { input: number; output: number } {
  return r.usage ?? { input: 100, output: 20 };
}

const openaiFinish = (r: ScriptedReply) => (r.stop === 'length' ? 'length' : r.tool_calls?.length ? 'tool_calls' : 'stop');
const anthropicStop = (r: ScriptedReply) => (r.stop === 'length' ? 'max_tokens' : r.tool_calls?.length ? 'tool_use' : 'end_turn');

// ---------------------------------------------------------------- OpenAI chat completions

function openaiChunks(r: ScriptedReply, model: string, includeUsage: boolean): string[] {
  const id = `chatcmpl-${Math.random().toString(36).slice(2, 10)}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`;
  const delta = (d: Record<string, unknown>, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  const frames = [delta({ role: 'assistant', content: '' })];
  if (r.text) for (const p of pieces(r.text)) frames.push(delta({ content: p }));
  (r.tool_calls ?? []).forEach((c, index) => {
    frames.push(delta({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }));
    for (const p of pieces(argText(c))) frames.push(delta({ tool_calls: [{ index, function: { arguments: p } }] }));
  });
  frames.push(delta({}, openaiFinish(r)));
  if (includeUsage) {
    const u = usageOf(r);
    frames.push(chunk([], { usage: { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output } }));
  }
  frames.push('data: [DONE]\n\n');
  return frames;
}

function openaiCompletion(r: ScriptedReply, model: string): unknown {
  const u = usageOf(r);
  const calls = r.tool_calls ?? [];
  return {
    id: `chatcmpl-${Math.random().toString(36).slice(2, 10)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: r.text ?? null,
          ...(calls.length
            ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: argText(c) } })) }
            : {}),
        },
        logprobs: null,
        finish_reason: openaiFinish(r),
      },
    ],
    usage: { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: request bodies are untyped JSON
type Json = any;

function openaiHistory(body: Json): { calls: WireCall[]; results: WireResult[] } {
  const calls: WireCall[] = [];
  const results: WireResult[] = [];
  for (const m of body?.messages ?? []) {
    if (m.role === 'assistant')
      for (const c of m.tool_calls ?? []) calls.push({ id: c.id, name: c.function?.name, args: c.function?.arguments });
    if (m.role === 'tool')
      results.push({ id: m.tool_call_id, content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content) });
  }
  return { calls, results };
}

/** Real OpenAI rules: every tool_calls message is answered by one tool message per id, right after it. */
function checkOpenAI(body: Json, strict: boolean): string | undefined {
  if (!Array.isArray(body?.messages)) return "'messages' is required";
  const msgs: Json[] = body.messages;
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (m.role === 'tool') {
      return `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (tool_call_id ${m.tool_call_id}).`;
    }
    if (m.role !== 'assistant' || !m.tool_calls?.length) continue;
    const ids: string[] = m.tool_calls.map((c: Json) => c.id);
    const answered: string[] = [];
    let j = i + 1;
    for (; j < msgs.length && msgs[j].role === 'tool'; j++) answered.push(msgs[j].tool_call_id);
    for (const id of answered)
      if (!ids.includes(id))
        return `Invalid parameter: tool_call_id ${id} does not answer any tool call of the preceding assistant message.`;
    const missing = ids.filter((id) => !answered.includes(id));
    if (missing.length) {
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`;
    }
    i = j - 1;
  }
  if (strict) {
    const declared = declaredNames('openai', body);
    for (const c of openaiHistory(body).calls) {
      if (!declared.has(c.name)) return `tool '${c.name}' is referenced in messages (call ${c.id}) but is not declared in request.tools`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------- Anthropic messages

function anthropicContent(r: ScriptedReply): Json[] {
  const out: Json[] = [];
  if (r.text) out.push({ type: 'text', text: r.text });
  for (const c of r.tool_calls ?? []) {
    let input: unknown = {};
    try {
      input = JSON.parse(argText(c));
    } catch {
      input = {};
    }
    out.push({ type: 'tool_use', id: c.id, name: c.name, input });
  }
  return out;
}

function anthropicEvents(r: ScriptedReply, model: string): string[] {
  const u = usageOf(r);
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const frames = [
    ev('message_start', {
      message: {
        id: `msg_${Math.random().toString(36).slice(2, 10)}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: u.input, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
    }),
    ev('ping', {}),
  ];
  let index = 0;
  if (r.text) {
    frames.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    for (const p of pieces(r.text)) frames.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: p } }));
    frames.push(ev('content_block_stop', { index }));
    index++;
  }
  for (const c of r.tool_calls ?? []) {
    frames.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } }));
    for (const p of pieces(argText(c)))
      frames.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } }));
    frames.push(ev('content_block_stop', { index }));
    index++;
  }
  frames.push(
    ev('message_delta', {
      delta: { stop_reason: anthropicStop(r), stop_sequence: null },
      usage: { output_tokens: u.output },
    }),
    ev('message_stop', {}),
  );
  return frames;
}

function anthropicMessage(r: ScriptedReply, model: string): unknown {
  const u = usageOf(r);
  return {
    id: `msg_${Math.random().toString(36).slice(2, 10)}`,
    type: 'message',
    role: 'assistant',
    model,
    content: anthropicContent(r),
    stop_reason: anthropicStop(r),
    stop_sequence: null,
    usage: { input_tokens: u.input, output_tokens: u.output },
  };
}

function blocks(m: Json): Json[] {
  return Array.isArray(m?.content) ? m.content : [];
}

function anthropicHistory(body: Json): { calls: WireCall[]; results: WireResult[] } {
  const calls: WireCall[] = [];
  const results: WireResult[] = [];
  for (const m of body?.messages ?? []) {
    for (const b of blocks(m)) {
      if (m.role === 'assistant' && b.type === 'tool_use') calls.push({ id: b.id, name: b.name, args: JSON.stringify(b.input) });
      if (m.role === 'user' && b.type === 'tool_result') {
        const content =
          typeof b.content === 'string'
            ? b.content
            : blocks(b)
                .map((x: Json) => x.text ?? '')
                .join('');
        results.push({ id: b.tool_use_id, content, is_error: b.is_error === true });
      }
    }
  }
  return { calls, results };
}

/** Real Anthropic rules: each tool_use is answered by a tool_result in the very next user message. */
function checkAnthropic(body: Json, strict: boolean): string | undefined {
  if (!Array.isArray(body?.messages)) return 'messages: Field required';
  if (typeof body.max_tokens !== 'number') return 'max_tokens: Field required';
  const msgs: Json[] = body.messages;
  const uses = (m: Json): Json[] => (m?.role === 'assistant' ? blocks(m).filter((b) => b.type === 'tool_use') : []);
  for (let i = 0; i < msgs.length; i++) {
    if (msgs[i].role !== 'user') continue;
    for (const b of blocks(msgs[i])) {
      if (b.type === 'tool_result' && !uses(msgs[i - 1]).some((u) => u.id === b.tool_use_id)) {
        return `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
    }
  }
  for (let i = 0; i < msgs.length; i++) {
    const next = msgs[i + 1];
    const answered = new Set(
      next?.role === 'user'
        ? blocks(next)
            .filter((b) => b.type === 'tool_result')
            .map((b) => b.tool_use_id)
        : [],
    );
    const missing = uses(msgs[i])
      .filter((u) => !answered.has(u.id))
      .map((u) => u.id);
    if (missing.length) {
      return `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
  }
  if (strict) {
    const declared = declaredNames('anthropic', body);
    for (const c of anthropicHistory(body).calls) {
      if (!declared.has(c.name)) return `tool '${c.name}' is referenced in messages (tool_use ${c.id}) but is not declared in tools`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------- inspection helpers for tests

export function declaredNames(protocol: Protocol, body: Json): Set<string> {
  const tools: Json[] = Array.isArray(body?.tools) ? body.tools : [];
  return new Set(tools.map((t) => (protocol === 'openai' ? t.function?.name : t.name)));
}

/** The declared tools of a request as {name, description, parameters}, in either protocol. */
export function declaredTools(r: RecordedRequest): { name: string; description: string; parameters: unknown }[] {
  const tools: Json[] = Array.isArray(r.body?.tools) ? r.body.tools : [];
  return tools.map((t) =>
    r.protocol === 'openai'
      ? { name: t.function.name, description: t.function.description, parameters: t.function.parameters }
      : { name: t.name, description: t.description, parameters: t.input_schema },
  );
}

/** Tool calls and tool results in a request's history, in order, in either protocol. */
export function history(r: RecordedRequest): { calls: WireCall[]; results: WireResult[] } {
  return r.protocol === 'openai' ? openaiHistory(r.body) : anthropicHistory(r.body);
}

/** The system prompt a request carried. */
export function systemOf(r: RecordedRequest): string {
  if (r.protocol === 'anthropic') {
    const s = r.body?.system;
    return typeof s === 'string' ? s : Array.isArray(s) ? s.map((b: Json) => b.text ?? '').join('\n') : '';
  }
  const m = (r.body?.messages ?? []).find((x: Json) => x.role === 'system' || x.role === 'developer');
  return typeof m?.content === 'string' ? m.content : '';
}
