/**
 * The generated half of bench/prompt's pool: 207 hand-described tools from ordinary SaaS and
 * consumer domains (bench/support/prompt-catalog-{a,b,c,d,e}.ts), turned into ToolSpecs here, and for the
 * timing case as many more as asked for, as the same tools offered by other vendors (a pool of
 * 5,000 is what a workspace with a few dozen connected services looks like).
 *
 * Deterministic: the same call returns the same tools, names and schemas in the same order.
 */
import { normalizeDeclaration, type ToolDeclarationInput } from '../../src/manifest/schema.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { JsonSchema, ToolSpec } from '../../src/types/index.js';
import type { CatalogTool, EffectCode } from './prompt-catalog.js';
import { CATALOG_A } from './prompt-catalog-a.js';
import { CATALOG_B } from './prompt-catalog-b.js';
import { CATALOG_C } from './prompt-catalog-c.js';
import { CATALOG_D } from './prompt-catalog-d.js';
import { CATALOG_E } from './prompt-catalog-e.js';

const DECLARATIONS: Record<EffectCode, ToolDeclarationInput> = {
  r: { effect: 'read' },
  w: { effect: 'write', confirm: 'once' },
  wn: { effect: 'write', confirm: 'never' },
  wp: { effect: 'write', approval: 'pinned' },
  d: { effect: 'destructive' },
};

/**
 * Types: s (string), i (integer), n (number), b (boolean), date, time, datetime, s[] (list of
 * strings), e(a|b|c) (one of), e[](a|b|c) (any of).
 */
function property(type: string, description: string): JsonSchema {
  const en = /^e(\[\])?\((.+)\)$/.exec(type);
  if (en) {
    const values = en[2].split('|');
    return en[1] ? { type: 'array', items: { type: 'string', enum: values }, description } : { type: 'string', enum: values, description };
  }
  switch (type) {
    case 's':
      return { type: 'string', description };
    case 'i':
      return { type: 'integer', minimum: 0, description };
    case 'n':
      return { type: 'number', description };
    case 'b':
      return { type: 'boolean', description };
    case 'date':
      return { type: 'string', format: 'date', description };
    case 'time':
      return { type: 'string', pattern: '^\\d{2}:\\d{2}$', description };
    case 'datetime':
      return { type: 'string', format: 'date-time', description };
    case 's[]':
      return { type: 'array', items: { type: 'string' }, description };
    default:
      throw new Error(`unknown parameter type ${type}`);
  }
}

export function parameters(params: readonly string[]): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const p of params) {
    const m = /^([a-z0-9_]+)(!?):([^:]+):(.+)$/.exec(p);
    if (!m) throw new Error(`bad parameter spec: ${p}`);
    const [, name, req, type, description] = m;
    properties[name] = property(type, description);
    if (req) required.push(name);
  }
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
}

function spec(t: CatalogTool, plugin: string, name = t.name, description = t.description): ToolSpec {
  const decl = normalizeDeclaration({ ...DECLARATIONS[t.effect], ...(t.guidance ? { guidance: t.guidance } : {}) });
  return makeToolSpec({ name, description, parameters: parameters(t.params), execute: () => 'ok' }, plugin, decl);
}

/** The catalog tools (207), with the domain each belongs to. */
export function catalog(): { domain: string; tool: CatalogTool }[] {
  return [...CATALOG_A, ...CATALOG_B, ...CATALOG_C, ...CATALOG_D, ...CATALOG_E].flatMap((d) =>
    d.tools.map((tool) => ({ domain: d.domain, tool })),
  );
}

// Vendor names for the copies: two syllables each, deterministic.
const ONSETS = ['br', 'k', 'v', 'tr', 'l', 'm', 'z', 'p', 'qu', 'st', 'd', 'f', 'n', 'gr', 'h', 's'];
const NUCLEI = ['a', 'o', 'e', 'i', 'u', 'ai', 'ei'];
const CODAS = ['nix', 'lo', 'ra', 'ton', 'vik', 'sa', 'mo', 'da', 'ly', 'go'];
function vendor(k: number): string {
  return `${ONSETS[k % ONSETS.length]}${NUCLEI[Math.floor(k / ONSETS.length) % NUCLEI.length]}${CODAS[(k * 7) % CODAS.length]}`;
}
const capital = (s: string) => s[0].toUpperCase() + s.slice(1);

/**
 * `n` generated tools: the catalog's tools first, then (n larger) the catalog again as offered by
 * other vendors (`kevilo_crm_search_contacts`, "… (Kevilo.)"), until there are `n`.
 */
export function generatedTools(n = catalog().length): ToolSpec[] {
  const rows = catalog();
  const out: ToolSpec[] = [];
  for (let i = 0; i < n; i++) {
    const { domain, tool: t } = rows[i % rows.length];
    const round = Math.floor(i / rows.length);
    if (round === 0) out.push(spec(t, domain));
    else {
      const v = vendor(round - 1);
      out.push(spec(t, `${v}_${domain}`, `${v}_${t.name}`, `${t.description} (${capital(v)}.)`));
    }
  }
  return out;
}
