/**
 * Structured output (the `output` option of a run): the final answer must be JSON matching a
 * schema — a zod schema (parsed by it, so defaults and transforms apply) or a plain JSON Schema
 * (checked with ajv). The model is told the schema in its system prompt; an answer that does not
 * match is sent back once with the problem (the engine's retry), then the run fails.
 */

import { schemaCheck } from '../tools/spec.js';
import type { JsonSchema } from '../types/index.js';

/** What a zod (v4) schema offers, structurally: any copy of zod the application uses will do. */
export interface ZodLike<T> {
  safeParse(
    value: unknown,
  ): { success: true; data: T } | { success: false; error: { issues?: readonly { path?: readonly PropertyKey[]; message: string }[] } };
  readonly _zod: unknown;
}

/** A run's `output` option: a zod schema (the result's `output` gets its type) or a JSON Schema. */
export type OutputSchema<T = unknown> = ZodLike<T> | JsonSchema;

export type OutputVerdict<T> = { ok: true; value: T } | { ok: false; problem: string };

export interface OutputCheck<T = unknown> {
  /** Added to the system prompt: what the final answer must be. */
  instruction: string;
  /** The answer's text, parsed and checked. */
  parse(text: string): OutputVerdict<T>;
}

function isZod<T>(s: OutputSchema<T>): s is ZodLike<T> {
  return typeof (s as ZodLike<T>).safeParse === 'function' && '_zod' in s;
}

/** The JSON inside an answer: the whole text, or the one fenced block it holds. */
function jsonOf(text: string): OutputVerdict<unknown> {
  const t = text.trim();
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/i.exec(t);
  try {
    return { ok: true, value: JSON.parse(fenced ? fenced[1] : t) };
  } catch (err) {
    return { ok: false, problem: `the answer is not JSON (${(err as Error).message})` };
  }
}

const checks = new WeakMap<object, Promise<OutputCheck>>();

/** The check of a schema, made once per schema object (a run's legs and its result share it). */
export function outputCheck<T>(schema: OutputSchema<T>): Promise<OutputCheck<T>> {
  let check = checks.get(schema);
  if (!check) checks.set(schema, (check = makeCheck(schema)));
  return check as Promise<OutputCheck<T>>;
}

async function makeCheck<T>(schema: OutputSchema<T>): Promise<OutputCheck<T>> {
  let json: unknown;
  let check: (value: unknown) => OutputVerdict<T>;
  if (isZod(schema)) {
    // Loaded only for a run that asks for zod output (zod costs start-up time: decision 0008).
    const { z } = await import('zod');
    json = z.toJSONSchema(schema as unknown as Parameters<typeof z.toJSONSchema>[0], { unrepresentable: 'any' });
    check = (value) => {
      const r = schema.safeParse(value);
      if (r.success) return { ok: true, value: r.data };
      const first = r.error.issues?.[0];
      const where = first?.path?.length ? first.path.map(String).join('.') : 'the answer';
      return { ok: false, problem: first ? `${where}: ${first.message}` : 'the answer does not match the schema' };
    };
  } else {
    json = schema;
    const matches = schemaCheck(schema);
    check = (value) => {
      const problem = matches(value);
      return problem === undefined
        ? { ok: true, value: value as T }
        : { ok: false, problem: problem.replace(/\bargument(s?)\b/g, 'field$1') };
    };
  }
  return {
    instruction: `Your final answer must be only a JSON value (no prose around it) that matches this JSON Schema:\n${JSON.stringify(json)}`,
    parse(text) {
      const parsed = jsonOf(text);
      return parsed.ok ? check(parsed.value) : parsed;
    },
  };
}
