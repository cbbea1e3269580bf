import { Ajv, type ErrorObject } from 'ajv';
import { type Declaration, effectiveGate, type Gate, normalizeDeclaration } from '../manifest/schema.js';
import type { ToolDefinition, ToolSpec } from './types.js';

// One validator instance: compiled schemas are cached by it.
const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false });

/** A declaration for a tool nobody declared: read, gate none (SPEC R5, last sentence). */
export const DEFAULT_DECLARATION: Declaration = normalizeDeclaration({ effect: 'read' });

/** Why a definition cannot become a tool, or undefined when it can. */
export function definitionProblem(def: Partial<ToolDefinition> | undefined): string | undefined {
  if (!def || typeof def !== 'object') return 'the tool definition is not an object';
  if (typeof def.name !== 'string' || def.name === '') return "'name' must be a non-empty string";
  if (typeof def.description !== 'string') return `tool ${def.name}: 'description' must be a string`;
  if (typeof def.execute !== 'function') return `tool ${def.name}: 'execute' must be a function`;
  const p = def.parameters;
  if (!p || typeof p !== 'object' || Array.isArray(p)) {
    return `tool ${def.name}: 'parameters' must be a JSON Schema object`;
  }
  if (p.type !== undefined && p.type !== 'object') {
    return `tool ${def.name}: 'parameters' must describe an object (type: object), got type ${JSON.stringify(p.type)}`;
  }
  return undefined;
}

function formatAjvError(e: ErrorObject): string {
  const where = e.instancePath ? e.instancePath.slice(1).replaceAll('/', '.') : 'arguments';
  if (e.keyword === 'required') return `missing required argument '${(e.params as { missingProperty: string }).missingProperty}'`;
  if (e.keyword === 'additionalProperties') {
    return `unknown argument '${(e.params as { additionalProperty: string }).additionalProperty}'`;
  }
  return `${where} ${e.message ?? 'is invalid'}`;
}

/**
 * Builds the core's view of a tool. Throws when `parameters` does not compile as JSON Schema
 * (a registration error, never a run-time surprise).
 */
export function makeToolSpec(
  def: ToolDefinition,
  plugin: string,
  declaration: Declaration = DEFAULT_DECLARATION,
  confirmOnceOverride: ReadonlySet<string> = new Set(),
): ToolSpec {
  let validateFn: ReturnType<Ajv['compile']>;
  try {
    validateFn = ajv.compile({ type: 'object', ...def.parameters });
  } catch (err) {
    throw new Error(`tool ${def.name}: 'parameters' is not a valid JSON Schema: ${(err as Error).message}`);
  }
  let gate: Gate = effectiveGate(declaration);
  if (gate === 'none' && confirmOnceOverride.has(def.name)) gate = 'confirm_once';
  return {
    ...def,
    plugin,
    declaration,
    gate,
    checkArgs: (args) => (validateFn(args) ? undefined : formatAjvError(validateFn.errors![0])),
  };
}

/** SPEC R7: KEEL_CONFIRM_ONCE_TOOLS adds names to the confirm-once set; unset or `none` adds nothing. */
export function confirmOnceOverride(env: NodeJS.ProcessEnv = process.env): Set<string> {
  const raw = (env.KEEL_CONFIRM_ONCE_TOOLS ?? '').trim();
  if (raw === '' || raw.toLowerCase() === 'none') return new Set();
  return new Set(
    raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
}
