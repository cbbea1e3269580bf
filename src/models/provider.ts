/**
 * Real models through pi-ai: where a spec points, requests and streamed replies mapped to the
 * loop's shapes. Never sends a key to a host the spec did not name, nor shows one in an error.
 */
import type * as PiAi from '@mariozechner/pi-ai';
import type { Message, ToolCall, ToolDeclaration } from '../types/index.js';
import { optionalImport } from '../util/optional.js';
import { type AssistantReply, type ModelClient, ModelError, type ModelEvent, type ModelRequest, type Usage } from './types.js';

type Pi = typeof PiAi;
type PiApi = 'openai-completions' | 'anthropic-messages' | 'google-generative-ai';

/** Where a model spec points: resolved from the spec and the environment before pi-ai loads. */
export interface ProviderTarget {
  kind: string;
  /** The model id the server knows. */
  model: string;
  api: PiApi;
  /** pi-ai's provider name (its model registry and cross-provider rules key on it). */
  provider: string;
  baseUrl: string;
  apiKey: string;
  /** The environment variable the key came from (named in 401 errors), when one is needed. */
  keyEnv?: string;
  /** Who is talking, in error messages: "Ollama", "OpenAI", "the server". */
  label: string;
  /** What to do when the server cannot be reached. */
  unreachable: string;
}

const OLLAMA_DEFAULT = 'http://127.0.0.1:11434/v1';

function missingKey(spec: string, vars: string[]): ModelError {
  return new ModelError(`model "${spec}" needs an API key: set ${vars.join(' or ')} (or use ollama:MODEL for a local model without a key)`);
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/**
 * OLLAMA_HOST as Ollama itself reads it: `host`, `host:port` or a URL. Without a scheme the port
 * defaults to 11434; the OpenAI-compatible API lives under `/v1`.
 */
export function ollamaBaseUrl(host: string | undefined): string {
  const h = host?.trim();
  if (!h) return OLLAMA_DEFAULT;
  const schemed = /^[a-z][a-z0-9+.-]*:\/\//i.test(h);
  let url: string;
  try {
    const u = new URL(schemed ? h : `http://${h}`);
    if (!schemed && !u.port) u.port = '11434';
    url = trimSlash(u.href);
  } catch {
    return h;
  }
  if (!/\/v1$/.test(url)) url += '/v1';
  return url;
}

/** P1: a provider spec (without `script:`) and the environment → where and how to call. */
export function resolveTarget(kind: string, rest: string, spec: string, env: NodeJS.ProcessEnv): ProviderTarget {
  const checkUrl = (url: string, from: string) => {
    try {
      const u = new URL(url);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      throw new ModelError(`model "${spec}": ${from} "${url}" is not an http(s) URL`);
    }
    return trimSlash(url);
  };
  switch (kind) {
    case 'openai': {
      const apiKey = env.OPENAI_API_KEY?.trim();
      if (!apiKey) throw missingKey(spec, ['OPENAI_API_KEY']);
      const baseUrl = env.OPENAI_BASE_URL?.trim() ? checkUrl(env.OPENAI_BASE_URL.trim(), 'OPENAI_BASE_URL') : 'https://api.openai.com/v1';
      return {
        kind,
        model: rest,
        api: 'openai-completions',
        provider: 'openai',
        baseUrl,
        apiKey,
        keyEnv: 'OPENAI_API_KEY',
        label: 'OpenAI',
        unreachable: `check your network${env.OPENAI_BASE_URL ? ' and OPENAI_BASE_URL' : ''}, or pick another model with --model`,
      };
    }
    case 'ollama': {
      const baseUrl = checkUrl(ollamaBaseUrl(env.OLLAMA_HOST), 'OLLAMA_HOST');
      return {
        kind,
        model: rest,
        api: 'openai-completions',
        provider: 'ollama',
        baseUrl,
        // Ollama needs no key; the OpenAI client insists on one.
        apiKey: 'ollama',
        label: 'Ollama',
        unreachable: `start Ollama with \`ollama serve\` (and \`ollama pull ${rest}\`) or pick another model with --model${env.OLLAMA_HOST ? '' : ' (OLLAMA_HOST sets where Ollama listens)'}`,
      };
    }
    case 'anthropic': {
      const apiKey = env.ANTHROPIC_API_KEY?.trim();
      if (!apiKey) throw missingKey(spec, ['ANTHROPIC_API_KEY']);
      const baseUrl = env.ANTHROPIC_BASE_URL?.trim()
        ? checkUrl(env.ANTHROPIC_BASE_URL.trim(), 'ANTHROPIC_BASE_URL')
        : 'https://api.anthropic.com';
      return {
        kind,
        model: rest,
        api: 'anthropic-messages',
        provider: 'anthropic',
        baseUrl,
        apiKey,
        keyEnv: 'ANTHROPIC_API_KEY',
        label: 'Anthropic',
        unreachable: `check your network${env.ANTHROPIC_BASE_URL ? ' and ANTHROPIC_BASE_URL' : ''}, or pick another model with --model`,
      };
    }
    case 'google': {
      const keyEnv = env.GEMINI_API_KEY?.trim() ? 'GEMINI_API_KEY' : env.GOOGLE_API_KEY?.trim() ? 'GOOGLE_API_KEY' : undefined;
      const apiKey = keyEnv ? env[keyEnv]?.trim() : undefined;
      if (!keyEnv || !apiKey) throw missingKey(spec, ['GEMINI_API_KEY', 'GOOGLE_API_KEY']);
      return {
        kind,
        model: rest,
        api: 'google-generative-ai',
        provider: 'google',
        baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
        apiKey,
        keyEnv,
        label: 'Google',
        unreachable: 'check your network, or pick another model with --model',
      };
    }
    case 'openai-compatible': {
      // MODEL@URL: the URL starts at the first "@http(s)://" (model names may contain "@").
      const m = /^(.+?)@(https?:\/\/.+)$/i.exec(rest);
      if (!m) {
        throw new ModelError(`model "${spec}": write openai-compatible:MODEL@URL, e.g. openai-compatible:qwen2.5@http://127.0.0.1:8000/v1`);
      }
      const keyEnv = env.KEEL_API_KEY?.trim() ? 'KEEL_API_KEY' : env.OPENAI_API_KEY?.trim() ? 'OPENAI_API_KEY' : undefined;
      const baseUrl = checkUrl(m[2], 'the URL');
      return {
        kind,
        model: m[1],
        api: 'openai-completions',
        provider: 'openai-compatible',
        baseUrl,
        // Local servers (vLLM, llama.cpp) take no key; the OpenAI client insists on one.
        apiKey: (keyEnv && env[keyEnv]?.trim()) || 'none',
        keyEnv: keyEnv ?? 'KEEL_API_KEY',
        label: `the server at ${baseUrl}`,
        unreachable: 'check that the server is running and the URL in the model spec is right, or pick another model with --model',
      };
    }
    default:
      throw new ModelError(`model "${spec}": unknown provider "${kind}"`);
  }
}

/** A pi-ai Model for the target: the registry's entry (prices, limits) when it knows the id, else a plain one. */
function piModel(pi: PiParts, t: ProviderTarget): PiAi.Model<PiApi> {
  const known = ['openai', 'anthropic', 'google'].includes(t.provider)
    ? pi.getModels(t.provider as PiAi.KnownProvider).find((m) => m.id === t.model)
    : undefined;
  const local = t.api === 'openai-completions' && t.provider !== 'openai';
  return {
    id: t.model,
    name: known?.name ?? t.model,
    api: t.api,
    provider: t.provider,
    baseUrl: t.baseUrl,
    reasoning: known?.reasoning ?? false,
    ...(known?.thinkingLevelMap ? { thinkingLevelMap: known.thinkingLevelMap } : {}),
    input: ['text'],
    cost: known?.cost ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: known?.contextWindow ?? 128_000,
    maxTokens: known?.maxTokens ?? 16_384,
    // Local and third-party OpenAI-compatible servers: no `store`, no `developer` role, no `strict` field.
    ...(local
      ? { compat: { supportsStore: false, supportsDeveloperRole: false, supportsReasoningEffort: false, supportsStrictMode: false } }
      : {}),
  } as PiAi.Model<PiApi>;
}

/**
 * What Keel uses of pi-ai: one API's stream function, the model registry (prices, limits) and the
 * JSON repair it applies to tool arguments. The whole package (`import * as PiAi`) is one of these
 * too (bench/loop hands it over with its stream replaced).
 */
export interface PiParts {
  stream: Pi['stream'];
  getModels: Pi['getModels'];
  parseJsonWithRepair: Pi['parseJsonWithRepair'];
}

const PI_AI = '@mariozechner/pi-ai';

/**
 * One API's stream function, from pi-ai's own subpath export for it (its package.json `exports`):
 * that module and the one SDK it needs, not pi-ai's index, which also loads TypeBox and its compiler
 * for tool validation Keel does itself (~0.5 s on 2 cores: bench/startup, issue 26).
 */
async function apiStream(api: PiApi, what: string): Promise<Pi['stream']> {
  switch (api) {
    case 'openai-completions':
      return (await optionalImport(PI_AI, what, () => import('@mariozechner/pi-ai/openai-completions')))
        .streamOpenAICompletions as Pi['stream'];
    case 'anthropic-messages':
      return (await optionalImport(PI_AI, what, () => import('@mariozechner/pi-ai/anthropic'))).streamAnthropic as Pi['stream'];
    case 'google-generative-ai':
      return (await optionalImport(PI_AI, what, () => import('@mariozechner/pi-ai/google'))).streamGoogle as Pi['stream'];
  }
}

/**
 * The registry and the JSON repair: pi-ai exports them only from its index, so they are taken from
 * the index's own files (dist/models.js, dist/utils/json-parse.js, which the provider modules import
 * themselves: the same module instances). Should a pi-ai release move them, the index is loaded instead.
 */
async function piHelpers(what: string): Promise<Omit<PiParts, 'stream'>> {
  try {
    const index = import.meta.resolve(PI_AI);
    const [models, json] = await Promise.all([
      import(new URL('./models.js', index).href) as Promise<Partial<Pi>>,
      import(new URL('./utils/json-parse.js', index).href) as Promise<Partial<Pi>>,
    ]);
    if (typeof models.getModels === 'function' && typeof json.parseJsonWithRepair === 'function') {
      return { getModels: models.getModels, parseJsonWithRepair: json.parseJsonWithRepair };
    }
  } catch {
    // moved or renamed: the index has them
  }
  const pi = await optionalImport(PI_AI, what, () => import('@mariozechner/pi-ai'));
  return { getModels: pi.getModels, parseJsonWithRepair: pi.parseJsonWithRepair };
}

const loaded = new Map<PiApi, Promise<PiParts>>();

/**
 * P1: what a provider run loads of pi-ai — its API's module, on first use, once per process. pi-ai is
 * an optional package (util/optional.ts): a missing one is the error that says how to install it.
 */
export function loadPi(api: PiApi, what: string): Promise<PiParts> {
  let parts = loaded.get(api);
  if (!parts) {
    parts = optionalImport(PI_AI, what, async () => {
      const [stream, helpers] = await Promise.all([apiStream(api, what), piHelpers(what)]);
      return { stream, ...helpers };
    });
    // A failed load (pi-ai not installed yet) is tried again next time.
    parts.catch(() => loaded.delete(api));
    loaded.set(api, parts);
  }
  return parts;
}

/**
 * Real providers through pi-ai (P1). pi-ai loads here, on first use, not with the CLI, and only the
 * part of it the target's API needs (loadPi): a scripted or local-only application loads none of it.
 */
export async function createProviderModel(kind: string, rest: string, spec: string, env: NodeJS.ProcessEnv): Promise<ModelClient> {
  const target = resolveTarget(kind, rest, spec, env);
  return new ProviderModel(spec, target, await loadPi(target.api, `the model ${spec}`));
}

const ZERO_USAGE: PiAi.Usage = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

export class ProviderModel implements ModelClient {
  readonly spec: string;
  readonly target: ProviderTarget;
  private readonly pi: PiParts;
  private readonly model: PiAi.Model<PiApi>;
  private readonly priced: boolean;
  /** Gemini's thought signatures by call id: Keel's transcript has no field for them (in-process only). */
  private readonly signatures = new Map<string, string>();
  /**
   * Each transcript message as pi-ai takes it, converted once: a transcript only grows and its
   * messages are never changed, so a step converts only what is new (pi-agent-core keeps its context
   * in pi-ai's form; converting the whole transcript at every step made a run's cost grow with its square).
   */
  private readonly converted = new WeakMap<Message, PiAi.Message>();

  /**
   * `model`: a pi-ai Model to use as it is instead of one built from the target (a provider pi-ai
   * already knows, e.g. its faux provider in bench/loop).
   */
  constructor(spec: string, target: ProviderTarget, pi: PiParts, model?: PiAi.Model<PiAi.Api>) {
    this.spec = spec;
    this.target = target;
    this.pi = pi;
    this.model = (model as PiAi.Model<PiApi> | undefined) ?? piModel(pi, target);
    const c = this.model.cost;
    this.priced = target.kind === 'ollama' || c.input > 0 || c.output > 0;
  }

  async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    const tools = piToolsOf(req.tools);
    const context: PiAi.Context = {
      systemPrompt: req.system,
      messages: this.toPiMessages(req.messages),
      tools: tools.tools,
    };
    let events: PiAi.AssistantMessageEventStream;
    try {
      events = this.pi.stream(this.model, context, {
        apiKey: this.target.apiKey,
        signal: req.signal,
        // Fail fast: the loop reports a model error; a retry loop here would hide a dead server for seconds.
        maxRetries: 0,
        ...(this.model.api === 'anthropic-messages' ? { onPayload: (payload: unknown) => fullAnthropicSchemas(payload, tools) } : {}),
      });
    } catch (err) {
      throw this.failure(err instanceof Error ? err.message : String(err));
    }
    // The argument text exactly as the provider sent it, per content block: pi-ai repairs or
    // silently empties JSON it cannot parse, and Keel must see unparseable arguments (R21).
    const rawArgs = new Map<number, string>();
    const calls = new Map<number, ToolCall>();
    let final: PiAi.AssistantMessage | undefined;
    for await (const ev of events) {
      switch (ev.type) {
        case 'text_delta':
          if (ev.delta) yield { type: 'text_delta', text: ev.delta };
          break;
        case 'toolcall_delta':
          rawArgs.set(ev.contentIndex, (rawArgs.get(ev.contentIndex) ?? '') + ev.delta);
          break;
        case 'toolcall_end': {
          const call = this.toKeelCall(ev.toolCall, rawArgs.get(ev.contentIndex));
          calls.set(ev.contentIndex, call);
          yield { type: 'tool_call', call };
          break;
        }
        case 'done':
          final = ev.message;
          break;
        case 'error':
          if (ev.reason === 'aborted') throw new ModelError(`the request to ${this.target.label} was cancelled`);
          throw this.failure(ev.error.errorMessage ?? 'unknown error');
      }
    }
    if (!final) throw new ModelError(`${this.target.label} ended the response without finishing it`);
    const tool_calls: ToolCall[] = [];
    let text = '';
    final.content.forEach((block, i) => {
      if (block.type === 'text') text += block.text;
      else if (block.type === 'toolCall') tool_calls.push(calls.get(i) ?? this.toKeelCall(block, rawArgs.get(i)));
    });
    const reply: AssistantReply = { text, tool_calls, usage: this.usage(final.usage) };
    // Issue 26: the server stopped at its output token limit (OpenAI finish_reason "length",
    // Anthropic stop_reason "max_tokens"; pi-ai says "length" for both): the reply is cut off.
    if (final.stopReason === 'length') reply.truncated = final.usage.output > 0 ? { tokens: final.usage.output } : {};
    yield { type: 'done', reply };
  }

  private usage(u: PiAi.Usage): Usage {
    // pi-ai counts cached prompt tokens apart; Keel's `input` is every prompt token sent.
    const out: Usage = { input: u.input + u.cacheRead + u.cacheWrite, output: u.output };
    if (this.priced) out.cost = u.cost.total;
    return out;
  }

  /** The id is the provider's, unchanged (R19). Arguments that are not JSON keep their raw text (R21). */
  private toKeelCall(c: PiAi.ToolCall, raw: string | undefined): ToolCall {
    if (c.thoughtSignature) this.signatures.set(c.id, c.thoughtSignature);
    if (raw === undefined || raw.trim() === '') return { id: c.id, name: c.name, args: c.arguments ?? {} };
    try {
      return { id: c.id, name: c.name, args: this.pi.parseJsonWithRepair(raw) };
    } catch {
      return { id: c.id, name: c.name, raw_args: raw };
    }
  }

  /**
   * Keel's transcript → pi-ai messages. Assistant turns are stamped as this very model's, so pi-ai's
   * cross-provider rules never rename a call id (it normalises ids of "foreign" turns).
   */
  private toPiMessages(messages: readonly Message[]): PiAi.Message[] {
    const out: PiAi.Message[] = new Array(messages.length);
    for (let i = 0; i < messages.length; i++) {
      const msg = messages[i];
      let pi = this.converted.get(msg);
      if (!pi) this.converted.set(msg, (pi = this.toPiMessage(msg)));
      out[i] = pi;
    }
    return out;
  }

  private toPiMessage(msg: Message): PiAi.Message {
    const m = this.model;
    if (msg.role === 'user') return { role: 'user', content: msg.content, timestamp: 0 };
    if (msg.role === 'tool') {
      return {
        role: 'toolResult',
        toolCallId: msg.call_id,
        toolName: msg.name,
        content: [{ type: 'text', text: msg.content }],
        isError: msg.is_error,
        timestamp: 0,
      };
    }
    const content: PiAi.AssistantMessage['content'] = [];
    if (msg.content) content.push({ type: 'text', text: msg.content });
    for (const c of msg.tool_calls) {
      const sig = this.signatures.get(c.id);
      content.push({
        type: 'toolCall',
        id: c.id,
        name: c.name,
        // A call whose arguments did not parse goes back as {}: the wire needs an object, and the
        // error result the model got quotes the raw text.
        arguments: isPlainObject(c.args) ? c.args : {},
        ...(sig ? { thoughtSignature: sig } : {}),
      });
    }
    return {
      role: 'assistant',
      content,
      api: m.api,
      provider: m.provider,
      model: m.id,
      usage: ZERO_USAGE,
      stopReason: msg.tool_calls.length ? 'toolUse' : 'stop',
      timestamp: 0,
    };
  }

  /** A provider failure → a ModelError that says what happened and what to do. */
  failure(raw: string): ModelError {
    const t = this.target;
    const msg = raw.trim();
    if (CONNECTION_FAILURE.test(msg)) {
      // The URL once: a label such as "the server at URL" already names it (issue 26).
      const where = t.label.includes(t.baseUrl) ? t.label : `${t.label} at ${t.baseUrl}`;
      return new ModelError(`cannot reach ${where} (${msg.replace(/\.$/, '')}): ${t.unreachable}`);
    }
    const http = /^(\d{3})\s+([\s\S]*)$/.exec(msg);
    if (http) {
      const status = Number(http[1]);
      const detail = providerText(http[2]);
      let hint = '';
      if (status === 401 || status === 403) hint = t.keyEnv ? ` (check ${t.keyEnv})` : '';
      else if (status === 404 && t.kind === 'ollama') hint = ` (is the model pulled? \`ollama pull ${t.model}\`)`;
      else if (status === 404) hint = ` (check the model name "${t.model}" and the base URL ${t.baseUrl})`;
      return new ModelError(`${t.label} returned HTTP ${status} for model ${t.model}: ${detail}${hint}`);
    }
    return new ModelError(`${t.label} failed for model ${t.model}: ${msg}`);
  }
}

const CONNECTION_FAILURE = /^(Connection error|Request timed out)|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|fetch failed|socket hang up/i;

/** The SDKs prefix the status and inline the JSON body; keep the provider's own sentence. */
function providerText(body: string): string {
  const s = body.trim();
  if (!s.startsWith('{')) return s;
  try {
    const j = JSON.parse(s);
    const m = j?.error?.message ?? j?.message ?? j?.error;
    return typeof m === 'string' && m ? m : s;
  } catch {
    return s;
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One declarations array as pi-ai takes it: its tools, and (for Anthropic) each one's schema by name. */
interface PiTools {
  tools: PiAi.Tool[];
  byName?: Map<string, Record<string, unknown>>;
}

/**
 * P4: converted once per declarations array. The loop declares a menu's array (src/loop/menu-cache.ts
 * keeps one per menu and shares it across steps and runs), never changed once built, so a step
 * reuses its conversion and does no work per declared tool here. A declaration shared by several
 * arrays is converted once too.
 */
const PI_TOOLS = new WeakMap<readonly ToolDeclaration[], PiTools>();
const PI_TOOL = new WeakMap<ToolDeclaration, PiAi.Tool>();

/** How many declarations have been converted to pi-ai tools (in this process): what P4's test counts. */
export const piToolConversions = { count: 0 };

export function piToolsOf(decls: readonly ToolDeclaration[]): PiTools {
  let hit = PI_TOOLS.get(decls);
  // An array that changed length was changed in place (no Keel caller does that): converted afresh.
  if (!hit || hit.tools.length !== decls.length) {
    hit = { tools: decls.map(toPiTool) };
    PI_TOOLS.set(decls, hit);
  }
  return hit;
}

function toPiTool(t: ToolDeclaration): PiAi.Tool {
  let tool = PI_TOOL.get(t);
  if (!tool) {
    piToolConversions.count++;
    // TypeBox schemas are plain JSON Schema at runtime: the declared schema goes through as it is.
    tool = { name: t.name, description: t.description, parameters: t.parameters as unknown as PiAi.TSchema };
    PI_TOOL.set(t, tool);
  }
  return tool;
}

/**
 * pi-ai's Anthropic adapter keeps only `properties` and `required` of a tool schema. Put the
 * declared schema back whole, so every provider is shown the same parameters Keel declares.
 */
function fullAnthropicSchemas(payload: unknown, declared: PiTools): unknown {
  const tools = (payload as { tools?: { name: string; input_schema?: unknown }[] }).tools;
  if (!Array.isArray(tools)) return undefined;
  declared.byName ??= new Map(declared.tools.map((t) => [t.name, t.parameters as unknown as Record<string, unknown>]));
  for (const tool of tools) {
    const schema = declared.byName.get(tool.name);
    if (schema) tool.input_schema = 'type' in schema ? schema : { type: 'object', ...schema };
  }
  return payload;
}
