/**
 * Where something is in a YAML text: the document with every node's position, the line and column
 * of a path's value or key, and a parser's complaint in one clean line. Shared by every file Keel
 * reads that a person writes (plugin.yaml, config.yaml), so each names a mistake as FILE:LINE:COL
 * the same way. The `yaml` package is loaded on first use: a plain manifest never needs it (M6).
 */
import { createRequire } from 'node:module';
import type { Document, Node, YAMLError } from 'yaml';

let yamlModule: typeof import('yaml') | undefined;
/** The `yaml` package, loaded the first time it is needed. */
export const yamlPackage = (): typeof import('yaml') => (yamlModule ??= createRequire(import.meta.url)('yaml') as typeof import('yaml'));

/** A path into parsed YAML: mapping keys and sequence indexes. */
export type YamlPath = readonly (string | number)[];

/** A line and a column, both from 1. */
export interface Where {
  line: number;
  col: number;
}

/** A YAML text as a document whose nodes know their offsets, and how to turn an offset into a line and column. */
export function yamlWithPositions(
  text: string,
  options: Omit<NonNullable<Parameters<typeof import('yaml').parseDocument>[1]>, 'lineCounter' | 'prettyErrors'> = {},
): { doc: Document; pos: (offset: number) => Where } {
  const { LineCounter, parseDocument } = yamlPackage();
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { logLevel: 'error', ...options, lineCounter, prettyErrors: false });
  return {
    doc,
    pos: (offset) => {
      const p = lineCounter.linePos(offset);
      return { line: p.line, col: p.col };
    },
  };
}

/**
 * A parser's complaint in one line, without the place it names itself ("at line 4, column 1:" and
 * the quoted source after it): the caller puts the place first, as FILE:LINE:COL.
 */
export function yamlProblem(e: Pick<YAMLError, 'message'>): string {
  return e.message
    .split('\n')[0]
    .replace(/\s*at line \d+, column \d+:?\s*$/, '')
    .trim();
}

/** A key as the parsed data names it (a null key, `~`, becomes ''). */
export const keyName = (value: unknown): string => (value === null || value === undefined ? '' : String(value));

/**
 * Source offset of the node at `path` (or of its key, with `key`), falling back to the nearest
 * ancestor that is there: a missing field is reported where the mapping that lacks it is.
 */
export function offsetOf(doc: Document, path: YamlPath, key = false): number {
  const { isMap, isPair, isScalar, isSeq } = yamlPackage();
  let node: unknown = doc.contents;
  let best = 0;
  for (let i = 0; i < path.length; i++) {
    const isLast = i === path.length - 1;
    if (isSeq(node) && typeof path[i] === 'number') {
      const item = node.items[path[i] as number] as Node | undefined;
      if (!item) break;
      if (item.range) best = item.range[0];
      node = item;
      continue;
    }
    if (!isMap(node)) break;
    const pair = node.items.find((it) => isPair(it) && isScalar(it.key) && keyName(it.key.value) === String(path[i]));
    if (!pair) break;
    const k = pair.key as Node | null;
    const v = pair.value as Node | null;
    if (isLast && key && k?.range) return k.range[0];
    if (v?.range) best = v.range[0];
    else if (k?.range) best = k.range[0];
    node = v;
  }
  return best;
}
