/**
 * The manifest campaign: every plugin.yaml in the repository, mutated (lines dropped, doubled,
 * re-indented, cut short; YAML specials — anchors, aliases, tags, nulls, __proto__ — spliced in),
 * through the real parser. Invariants: nothing throws out of the parser; every issue names the file
 * and a position (line and column from 1); a broken manifest next to a good plugin leaves the good
 * one mounted.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { parseManifest } from '../../src/manifest/load.js';
import { mountPlugins } from '../../src/plugin-host/host.js';

/** Every plugin.yaml under these folders (skipping node_modules). */
export function manifestsIn(root: string, dirs: readonly string[]): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      if (name === 'node_modules') continue;
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name === 'plugin.yaml') out.push({ file: relative(root, p), text: readFileSync(p, 'utf8') });
    }
  };
  for (const d of dirs) walk(join(root, d));
  return out;
}

const SPECIALS = [
  '&a ',
  '*a',
  '*nope',
  '!!binary ',
  '!!js/function ',
  '~',
  'null',
  '__proto__:',
  '? ',
  '- ',
  '{',
  '[',
  '"',
  "'",
  '\t',
  '%YAML 1.1\n',
  '---\n',
  ': ',
  '#',
];

type Mutation =
  | { kind: 'drop' | 'double' | 'indent' | 'dedent'; line: number }
  | { kind: 'cut'; at: number }
  | { kind: 'splice'; at: number; text: string };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constantFrom('drop' as const, 'double' as const, 'indent' as const, 'dedent' as const), line: fc.nat() }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('splice' as const),
    at: fc.nat(),
    text: fc.oneof(fc.constantFrom(...SPECIALS), fc.string({ maxLength: 6 })),
  }),
);

export function mutate(text: string, ms: readonly Mutation[]): string {
  let t = text;
  for (const m of ms) {
    const lines = t.split('\n');
    if (m.kind === 'cut') t = t.slice(0, m.at % (t.length + 1));
    else if (m.kind === 'splice') {
      const at = m.at % (t.length + 1);
      t = t.slice(0, at) + m.text + t.slice(at);
    } else {
      const i = m.line % Math.max(1, lines.length);
      if (m.kind === 'drop') lines.splice(i, 1);
      else if (m.kind === 'double') lines.splice(i, 0, lines[i] ?? '');
      else if (m.kind === 'indent') lines[i] = `  ${lines[i] ?? ''}`;
      else lines[i] = (lines[i] ?? '').replace(/^ {1,2}/, '');
      t = lines.join('\n');
    }
  }
  return t;
}

export interface ManifestCampaign {
  manifests: number;
  cases: number;
  refused: number;
  mounts: number;
  violations: { case: string; problem: string }[];
  ms: number;
}

export async function manifestCampaign(root: string, numRuns: number, mountRuns: number, seed = 7): Promise<ManifestCampaign> {
  const all = manifestsIn(root, ['plugins', 'test/fixtures', 'examples']);
  const totals: ManifestCampaign = { manifests: all.length, cases: 0, refused: 0, mounts: 0, violations: [], ms: 0 };
  const started = performance.now();
  const caseArb = fc.record({ which: fc.nat({ max: all.length - 1 }), ms: fc.array(mutationArb, { minLength: 1, maxLength: 4 }) });
  await fc.assert(
    fc.property(caseArb, ({ which, ms }) => {
      totals.cases++;
      const text = mutate(all[which].text, ms);
      const note = (problem: string) => {
        if (totals.violations.length < 20) totals.violations.push({ case: `${all[which].file} ${JSON.stringify(ms)}`, problem });
      };
      try {
        const r = parseManifest(text, all[which].file, 'mutated');
        if (r.ok) return true;
        totals.refused++;
        for (const i of r.issues) {
          if (!(i.line >= 1 && i.col >= 1) || i.file !== all[which].file || !i.message)
            note(`an issue without a position: ${JSON.stringify(i)}`);
        }
      } catch (err) {
        note(`the parser threw: ${(err as Error).message}`);
      }
      return true;
    }),
    { numRuns, seed },
  );
  // A mutated manifest beside a good plugin: the good one mounts whatever the other is.
  const good = join(root, 'test', 'fixtures', 'plugins', 'calendar');
  await fc.assert(
    fc.asyncProperty(caseArb, async ({ which, ms }) => {
      const dir = join(tmpdir(), `keel-manifest-mount-${process.pid}-${totals.mounts++}`);
      mkdirSync(join(dir, 'a_mutated'), { recursive: true });
      writeFileSync(join(dir, 'a_mutated', 'plugin.yaml'), mutate(all[which].text, ms));
      writeFileSync(join(dir, 'a_mutated', 'index.mjs'), 'export default () => {};\n');
      cpSync(good, join(dir, 'z_good'), { recursive: true });
      try {
        const reg = await mountPlugins([dir], { home: dir });
        const z = reg.plugins.find((p) => p.dir.endsWith('z_good'));
        if (z?.status !== 'loaded')
          totals.violations.push({ case: `${all[which].file} ${JSON.stringify(ms)}`, problem: `the good plugin is ${z?.status}` });
        await reg.close();
      } catch (err) {
        totals.violations.push({ case: `${all[which].file} ${JSON.stringify(ms)}`, problem: `mounting threw: ${(err as Error).message}` });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      return true;
    }),
    { numRuns: mountRuns, seed },
  );
  totals.ms = Math.round(performance.now() - started);
  return totals;
}
