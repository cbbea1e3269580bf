/**
 * The OpenAPI 3.1 document of the HTTP API (`GET /v1/openapi.json`), written from the same route
 * declarations and zod schemas the routes validate with. Never describes a route from anything
 * else: a route not declared through `route` is not in it.
 */
import { z } from 'zod';
import { PROBLEM_TITLES } from '../http/problems.js';
import * as S from '../http/schemas.js';
import type { AnyRoute, Schema } from './route.js';

/** OpenAPI 3.1, from the same declarations and schemas the routes validate with. */
export function openApi(routes: readonly AnyRoute[], version: string): Record<string, unknown> {
  const toSchema = (s: Schema, io: 'input' | 'output') =>
    z.toJSONSchema(s, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  const problemRef = { $ref: '#/components/schemas/Problem' };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:(\w+)/g, '{$1}');
    const params = [...r.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    if (r.query) {
      const qs = toSchema(r.query, 'input') as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, schema] of Object.entries(qs.properties ?? {})) {
        params.push({ name, in: 'query', required: qs.required?.includes(name) ?? false, schema: schema as { type: string } });
      }
    }
    const responses: Record<string, unknown> = {
      [r.ok.status]: {
        description: r.ok.description,
        content: r.ok.sse
          ? { 'text/event-stream': { schema: { type: 'string' } } }
          : r.ok.schema
            ? { 'application/json': { schema: toSchema(r.ok.schema, 'output') } }
            : undefined,
      },
    };
    // Issue 27: a route that reads the store may find it out of reach (503); one with input may refuse text no store can hold (400).
    const withInput = r.path.includes(':') || r.body || r.query;
    for (const e of new Set([...r.errors, ...(withInput ? [400] : []), ...(r.role ? [503] : [])])) {
      responses[e] = { description: PROBLEM_TITLES[e] ?? 'Error', content: { 'application/problem+json': { schema: problemRef } } };
    }
    (paths[path] ??= {})[r.method] = {
      summary: r.summary,
      operationId: `${r.method}${path.replace(/[{}]/g, '').replace(/\/(\w)/g, (_m, ch: string) => ch.toUpperCase())}`,
      ...(r.role ? { security: [{ bearer: [] }], 'x-keel-role': r.role } : { security: [] }),
      ...(params.length ? { parameters: params } : {}),
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: toSchema(r.body, 'input') } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Keel', version, description: 'The HTTP API of keel serve.' },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a token from keel tokens create' } },
      schemas: { Problem: toSchema(S.ProblemSchema, 'output') },
    },
    paths,
  };
}
