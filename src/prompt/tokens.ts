import type { DeclaredTool } from '../types/index.js';
import { isInstalled, missingPackage, optionalImport } from '../util/optional.js';

export type Encoding = 'o200k_base' | 'claude';

interface Counter {
  count(text: string): number;
}

const counters = new Map<Encoding, Promise<Counter>>();

/** What needs ai-tokenizer, an optional package (util/optional.ts). */
export const TOKEN_COUNTS = 'counting tokens into the trace (KEEL_COUNT_TOKENS=1)';

/**
 * Whether runs count tokens: KEEL_COUNT_TOKENS=1 always (an error naming the package when
 * ai-tokenizer is not installed), 0 never; unset, real models are counted when ai-tokenizer is
 * installed and the scripted model (tests, demos) is not.
 */
export function countsTokens(env: NodeJS.ProcessEnv, modelSpec: string): boolean {
  const asked = env.KEEL_COUNT_TOKENS;
  if (asked === '1') {
    if (!isInstalled('ai-tokenizer')) throw missingPackage('ai-tokenizer', TOKEN_COUNTS);
    return true;
  }
  return asked !== '0' && !modelSpec.startsWith('script:') && isInstalled('ai-tokenizer');
}

/** Loaded on first use: the encodings are large (~1 s to load), and only counting needs them. */
function counter(enc: Encoding): Promise<Counter> {
  let c = counters.get(enc);
  if (!c) {
    c = (async () => {
      const { default: Tokenizer } = await optionalImport('ai-tokenizer', TOKEN_COUNTS, () => import('ai-tokenizer'));
      const encoding = enc === 'claude' ? await import('ai-tokenizer/encoding/claude') : await import('ai-tokenizer/encoding/o200k_base');
      return new Tokenizer(encoding as ConstructorParameters<typeof Tokenizer>[0]);
    })();
    counters.set(enc, c);
  }
  return c;
}

/** The encoding that best matches a model spec (Anthropic has its own; the rest are close to o200k). */
export function encodingFor(modelSpec: string): Encoding {
  return modelSpec.startsWith('anthropic:') ? 'claude' : 'o200k_base';
}

/** The declarations as a provider receives them: name, description and schema of each tool. */
export function declarationsText(tools: readonly DeclaredTool[]): string {
  return JSON.stringify(tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })));
}

/** Tokens of a request's fixed part: the system prompt plus the tool declarations. */
export async function countRequestTokens(system: string, tools: readonly DeclaredTool[], enc: Encoding): Promise<number> {
  const c = await counter(enc);
  return c.count(system) + c.count(declarationsText(tools));
}
