/** bench/queries.yaml: the requests bench/prompt measures, each with the tools a good answer needs. */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export interface LabelledRequest {
  request: string;
  needs: string[];
}

/** Reads and checks the file: every request non-empty, every needed tool in the pool. */
export function loadQueries(file: string, poolNames: ReadonlySet<string>): LabelledRequest[] {
  const raw = parse(readFileSync(file, 'utf8')) as unknown;
  if (!Array.isArray(raw)) throw new Error(`${file}: expected a list of { request, needs }`);
  return raw.map((row, i) => {
    const r = row as Partial<LabelledRequest>;
    if (typeof r.request !== 'string' || !r.request.trim()) throw new Error(`${file}: entry ${i + 1} has no request`);
    if (!Array.isArray(r.needs) || r.needs.length === 0) throw new Error(`${file}: "${r.request}" needs no tool`);
    for (const n of r.needs) if (!poolNames.has(n)) throw new Error(`${file}: "${r.request}" needs ${n}, which is in no pool`);
    return { request: r.request.trim(), needs: r.needs };
  });
}
