/**
 * OpenTelemetry spans after the GenAI semantic conventions: `invoke_agent keel` for each leg of a
 * run, `chat {model}` for each model call, `execute_tool {name}` for each tool call. A child is given
 * its parent explicitly, so the tree holds without a context manager.
 *
 * Nothing is recorded unless an SDK is registered (`startTelemetryFromEnv`, or the embedding
 * application's own). Until something registers with the OpenTelemetry API (which keeps its
 * registrations on one global, whichever copy of the API made them), the API is not even loaded:
 * every span is NO_SPAN, and the children of a span that does not record cost one check each —
 * the engine calls these on every step, and a one-reply `keel run` should not pay for tracing.
 */
import { createRequire } from 'node:module';
import type { Attributes, Span } from '@opentelemetry/api';
import type { Effect, Mode, Outcome } from '../types/index.js';
import { KeelError } from './errors.js';
import { optionalImport } from './optional.js';
import { redact } from './redact.js';

export type { Span };

const AGENT = 'keel';

type Api = typeof import('@opentelemetry/api');
/** Where @opentelemetry/api 1.x keeps what is registered: set once anything registers. */
const REGISTRY = Symbol.for('opentelemetry.js.api.1');
let api: Api | undefined;

/** The OpenTelemetry API, loaded (synchronously) the first time something is registered with it. */
function otel(): Api | undefined {
  if (api) return api;
  if (!(globalThis as Record<symbol, unknown>)[REGISTRY]) return undefined;
  api = createRequire(import.meta.url)('@opentelemetry/api') as Api;
  return api;
}

/** Stands in for a span when nothing records: attributes and end() are no-ops. */
export const NO_SPAN: Span = {
  spanContext: () => ({ traceId: '00000000000000000000000000000000', spanId: '0000000000000000', traceFlags: 0 }),
  setAttribute: () => NO_SPAN,
  setAttributes: () => NO_SPAN,
  addEvent: () => NO_SPAN,
  addLink: () => NO_SPAN,
  addLinks: () => NO_SPAN,
  setStatus: () => NO_SPAN,
  updateName: () => NO_SPAN,
  end: () => {},
  isRecording: () => false,
  recordException: () => {},
};
const ERROR = 2; // ERROR
const INTERNAL = 0; // SpanKind.INTERNAL
const CLIENT = 2; // SpanKind.CLIENT

/** How a leg of a run began (RunLeg's entry points). */
export type LegKind = 'start' | 'answer' | 'approval' | 'interruption' | 'recover' | 'cancel' | 'reopen' | 'task';

/** Looked up per span, not kept: a provider registered (or disabled) later is the one used. */
const tracer = (a: Api) => a.trace.getTracer('keel');

const under = (a: Api, parent: Span) => a.trace.setSpan(a.context.active(), parent);

interface ModelParts {
  provider: string;
  model: string;
  server?: { address: string; port?: number };
}

let lastSpec: string | undefined;
let lastParts: ModelParts = { provider: '', model: '' };

/**
 * `provider:model` → its parts; an `openai-compatible:MODEL@URL` spec gives the URL's host and port
 * as the server, never its credentials. Kept for the last spec seen (a process uses one or two).
 */
export function modelParts(spec: string): ModelParts {
  if (spec === lastSpec) return lastParts;
  const colon = spec.indexOf(':');
  const provider = colon < 0 ? spec : spec.slice(0, colon);
  const rest = colon < 0 ? spec : spec.slice(colon + 1);
  // As the provider reads it: the URL starts at the first "@http(s)://" (model names may contain "@").
  const at = /@(https?:\/\/.+)$/i.exec(rest);
  const parts: ModelParts = { provider, model: redact(at ? rest.slice(0, at.index) : rest) };
  if (at) {
    try {
      const url = new URL(at[1]);
      parts.server = { address: url.hostname, ...(url.port ? { port: Number(url.port) } : {}) };
    } catch {
      // Not a URL: no server attributes.
    }
  }
  lastSpec = spec;
  lastParts = parts;
  return parts;
}

/** One leg of a run: kind INTERNAL, a child of whatever span is active where the leg is driven. */
export function startLegSpan(leg: LegKind, run: { id: string; session_id: string; mode: Mode }, modelSpec: string): Span {
  const a = otel();
  if (!a) return NO_SPAN;
  const m = modelParts(modelSpec);
  return tracer(a).startSpan(`invoke_agent ${AGENT}`, {
    kind: INTERNAL,
    attributes: {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': AGENT,
      'gen_ai.conversation.id': run.session_id,
      'gen_ai.provider.name': m.provider,
      'gen_ai.request.model': m.model,
      'keel.run.id': run.id,
      'keel.run.mode': run.mode,
      'keel.leg': leg,
    },
  });
}

/** Ends a leg's span with where the run stands: an error when it failed. */
export function endLegSpan(span: Span, run: { status: string; reason: string | null }): void {
  if (span.isRecording()) {
    span.setAttribute('keel.run.status', run.status);
    if (run.reason) span.setAttribute('keel.run.reason', run.reason);
    if (run.status === 'failed') {
      span.setAttribute('error.type', run.reason ?? 'failed');
      span.setStatus({ code: ERROR, message: run.reason ?? undefined });
    }
  }
  span.end();
}

/** One model call: kind CLIENT. */
export function startChatSpan(parent: Span, modelSpec: string): Span {
  if (!parent.isRecording()) return NO_SPAN;
  const m = modelParts(modelSpec);
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': m.provider,
    'gen_ai.request.model': m.model,
  };
  if (m.server) {
    attributes['server.address'] = m.server.address;
    if (m.server.port) attributes['server.port'] = m.server.port;
  }
  const a = otel() as Api; // a recording parent means the API is loaded
  return tracer(a).startSpan(`chat ${m.model}`, { kind: CLIENT, attributes }, under(a, parent));
}

/** Ends a model call's span with the tokens the provider reported (record an error first with recordError). */
export function endChatSpan(span: Span, usage: { input: number; output: number } | undefined): void {
  if (usage && span.isRecording()) {
    span.setAttribute('gen_ai.usage.input_tokens', usage.input);
    span.setAttribute('gen_ai.usage.output_tokens', usage.output);
  }
  span.end();
}

/** One tool call, whatever becomes of it: kind INTERNAL. */
export function startToolSpan(parent: Span, name: string, callId: string): Span {
  if (!parent.isRecording()) return NO_SPAN;
  const a = otel() as Api;
  return tracer(a).startSpan(
    `execute_tool ${name}`,
    {
      kind: INTERNAL,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': name,
        'gen_ai.tool.call.id': callId,
        'gen_ai.tool.type': 'function',
      },
    },
    under(a, parent),
  );
}

/** Ends a tool call's span with its outcome (the CallRecord's) and effect; an error result is an error. */
export function endToolSpan(span: Span, outcome: Outcome, isError: boolean, effect: Effect | undefined): void {
  if (span.isRecording()) {
    span.setAttribute('keel.tool.outcome', outcome);
    if (effect) span.setAttribute('keel.tool.effect', effect);
    if (isError) {
      span.setAttribute('error.type', outcome);
      span.setStatus({ code: ERROR });
    }
  }
  span.end();
}

/** A call answered without the pipeline (a crash's calls in flight, a cancel): its span starts and ends at once. */
export function toolSpan(parent: Span, r: { tool: string; call_id: string; outcome: Outcome; is_error: boolean; effect?: Effect }): void {
  if (parent.isRecording()) endToolSpan(startToolSpan(parent, r.tool, r.call_id), r.outcome, r.is_error, r.effect);
}

/** Marks a span failed by an exception (its message redacted: a provider's error may echo a key). Does not end it. */
export function recordError(span: Span, err: unknown): void {
  if (!span.isRecording()) return;
  const name = err instanceof Error ? err.name : 'Error';
  const message = redact(err instanceof Error ? err.message : String(err));
  span.recordException({ name, message });
  span.setAttribute('error.type', name);
  span.setStatus({ code: ERROR, message });
}

/** Where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
function tracesUrl(env: NodeJS.ProcessEnv): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const url = traces || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (!url) return undefined;
  try {
    new URL(url);
  } catch {
    const name = traces ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
    throw new KeelError('config', `${name} is not a URL: ${redact(traces || base || '')} (e.g. http://127.0.0.1:4318)`);
  }
  return url;
}

/**
 * When an OTLP endpoint is set (and OTEL_SDK_DISABLED is not `true`), registers a tracer provider
 * that batches spans to it over OTLP/HTTP (JSON); the SDK is loaded only then. Returns the
 * function that flushes and shuts it down (it never throws: an unreachable collector loses the
 * spans, not the run), or undefined when nothing was registered.
 * The service is named by OTEL_SERVICE_NAME (default `keel`).
 */
export async function startTelemetryFromEnv(env: NodeJS.ProcessEnv): Promise<(() => Promise<void>) | undefined> {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const url = tracesUrl(env);
  if (!url) return undefined;
  // The SDK and the exporter are optional packages (util/optional.ts); the API is a dependency of Keel's.
  const what = 'OpenTelemetry export (OTEL_EXPORTER_OTLP_ENDPOINT)';
  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    optionalImport('@opentelemetry/sdk-trace-base', what, () => import('@opentelemetry/sdk-trace-base')),
    optionalImport('@opentelemetry/exporter-trace-otlp-http', what, () => import('@opentelemetry/exporter-trace-otlp-http')),
    optionalImport('@opentelemetry/resources', what, () => import('@opentelemetry/resources')),
  ]);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || 'keel' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }))],
  });
  const { trace } = await import('@opentelemetry/api');
  if (!trace.setGlobalTracerProvider(provider)) {
    // Another provider is registered already (the embedding application's): it keeps the spans.
    await provider.shutdown().catch(() => {});
    return undefined;
  }
  return async () => {
    try {
      await provider.forceFlush();
      await provider.shutdown();
    } catch {
      // The collector is gone: the spans are lost, nothing else is.
    } finally {
      trace.disable();
    }
  };
}
