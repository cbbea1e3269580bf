// `npm run bench`: every benchmark in turn, each in its own process; figures go to bench/results/*.json.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const benches = [
  'startup',
  'cold',
  'mount',
  'loop',
  'prompt',
  'reliability',
  'serve',
  'a2a',
  'scale',
  'install',
  'injection',
  'injection-egress',
  'injection-agentdojo',
].filter((b) => (only.length ? only.includes(b) : true));
let failed = 0;
for (const b of benches) {
  const file = join(here, `${b}.ts`);
  if (!existsSync(file)) {
    console.error(`bench/${b}.ts is missing`);
    failed++;
    continue;
  }
  console.log(`\n=== bench/${b} ===`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', file], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
