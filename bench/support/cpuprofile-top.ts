/**
 * Prints the functions with the most self time (and inclusive time) in a V8 .cpuprofile.
 *   node --import tsx bench/support/cpuprofile-top.ts PROFILE.cpuprofile [N] [filter]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const [file, nArg, filter] = process.argv.slice(2);
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const selfUs = new Map<number, number>();
for (let i = 0; i < p.samples.length; i++) selfUs.set(p.samples[i], (selfUs.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
const label = (n: Node) => {
  const url = n.callFrame.url.replace(/^.*\/(node_modules\/|src\/|bench\/)/, '$1');
  return `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
};
const self = new Map<string, number>();
const incl = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  self.set(label(n), (self.get(label(n)) ?? 0) + us);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (seen.has(l)) continue;
    seen.add(l);
    incl.set(l, (incl.get(l) ?? 0) + us);
  }
}
const total = p.endTime - p.startTime;
const top = (m: Map<string, number>, title: string) => {
  console.log(`\n${title} (of ${(total / 1000).toFixed(0)} ms sampled)`);
  [...m]
    .filter(([l]) => !filter || l.includes(filter))
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(nArg ?? 25))
    .forEach(([l, us]) => {
      console.log(`${(us / 1000).toFixed(1).padStart(9)} ms ${((us / total) * 100).toFixed(1).padStart(5)}%  ${l}`);
    });
};
top(self, 'self time');
top(incl, 'inclusive time');
