/** The shape of bench/prompt's hand-described tools (rows in prompt-catalog-a.ts and -b.ts). */

/** r: read · w: write, confirmed once · wn: write, never confirmed · wp: write on an approval card · d: destructive. */
export type EffectCode = 'r' | 'w' | 'wn' | 'wp' | 'd';

/** One catalog row. A parameter is `name[!]:type:description`, `!` marking it required. */
export interface CatalogTool {
  name: string;
  effect: EffectCode;
  description: string;
  params: string[];
  guidance?: string;
}

export interface CatalogDomain {
  /** Becomes the tool's plugin name. */
  domain: string;
  tools: CatalogTool[];
}

/** A row, compactly: tool(name, effect, description, params, guidance?). */
export const tool = (name: string, effect: EffectCode, description: string, params: string[], guidance?: string): CatalogTool => ({
  name,
  effect,
  description,
  params,
  guidance,
});
