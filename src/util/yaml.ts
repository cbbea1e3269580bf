import { createRequire } from 'node:module';

let parse: ((text: string) => unknown) | undefined;

/**
 * YAML text → a value, with the `yaml` package loaded on first use: loading it costs tens of
 * milliseconds, which a run that reads no YAML (no script, no skill, no config) should not pay.
 */
export function yamlParse(text: string): unknown {
  parse ??= (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse;
  return parse(text);
}
