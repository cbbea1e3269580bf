/**
 * bench/reliability: the reliability campaign of test/reliability (generated replies, mutated
 * manifests, the crash matrix and its owner rows, races, hostile texts, mode switches and concurrent
 * approvals across processes, each through SQLite and PostgreSQL) with its figures written to
 * bench/results/reliability.json. PostgreSQL is KEEL_TEST_PG_URL's, else a throwaway
 * cluster (test/support/pg.ts).
 *
 *   node --import tsx bench/reliability.ts [--cases 10000] [--text-cases 120]
 *   node --import tsx bench/reliability.ts --only crashes   (the crash matrix alone, incl. its delegate rows)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PostgresStore } from '../src/store/postgres.js';
import { SqliteStore } from '../src/store/sqlite.js';
import { approvalRaces } from '../test/reliability/approvals.js';
import { crashMatrix, ownerMatrix, races } from '../test/reliability/crashes.js';
import { manifestCampaign } from '../test/reliability/manifests.js';
import { modeSwitches } from '../test/reliability/modes.js';
import { replyCampaign } from '../test/reliability/replies.js';
import { textCampaign } from '../test/reliability/texts.js';
import { tempHome } from '../test/support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../test/support/pg.js';
import { PROCESS_STORES } from '../test/support/stores.js';

const here = dirname(fileURLToPath(import.meta.url));
const i = process.argv.indexOf('--cases');
const cases = i >= 0 ? Number(process.argv[i + 1]) : 10_000;
const ti = process.argv.indexOf('--text-cases');
const textCases = ti >= 0 ? Number(process.argv[ti + 1]) : 120;

// `--only crashes`: the crash matrix alone (4 of its rows take minutes, the whole campaign an hour), its
// figures written over the `crashes` entry of the last full campaign's file (dated `crashes.date`).
if (process.argv.includes('--only') && process.argv[process.argv.indexOf('--only') + 1] === 'crashes') {
  const crashes = await crashMatrix();
  console.log(`crash matrix: ${crashes.trials} trials, ${crashes.kills} kills; ${crashes.violations.length} violations (${crashes.ms} ms)`);
  const file = join(here, 'results', 'reliability.json');
  const last = JSON.parse(readFileSync(file, 'utf8'));
  last.crashes = {
    date: new Date().toISOString(),
    ...crashes,
    violations: crashes.violations.length,
    examples: crashes.violations.slice(0, 3),
  };
  writeFileSync(file, `${JSON.stringify(last, null, 2)}\n`);
  console.log('wrote the crashes entry of bench/results/reliability.json');
  process.exit(crashes.violations.length ? 1 : 0);
}

const replies = await replyCampaign(cases);
console.log(
  `replies: ${replies.cases} cases, ${replies.calls} calls, ${replies.executions} executions, ${replies.pauses} pauses; ${replies.violations.length} violations (${replies.ms} ms)`,
);
const manifests = await manifestCampaign(join(here, '..'), 3_000, 20);
console.log(
  `manifests: ${manifests.manifests} files, ${manifests.cases} mutations, ${manifests.refused} refused, ${manifests.mounts} mounts; ${manifests.violations.length} violations (${manifests.ms} ms)`,
);
const crashes = await crashMatrix();
console.log(`crash matrix: ${crashes.trials} trials, ${crashes.kills} kills; ${crashes.violations.length} violations (${crashes.ms} ms)`);
const owners = await ownerMatrix(PROCESS_STORES);
await dropSchemas();
console.log(
  `owner rows (alive and leased on another host, alive here, killed, zombie, PID reused; SQLite and PostgreSQL): ${owners.trials} trials, ${owners.refused} refused, ${owners.taken_over} taken over${owners.unavailable.length ? `, ${owners.unavailable.length} not possible here` : ''}; ${owners.violations.length} violations (${owners.ms} ms)`,
);
const raced = await races();
console.log(`races: ${raced.rounds} rounds × ${raced.contenders} processes; ${raced.violations.length} violations (${raced.ms} ms)`);
const sqlite = new SqliteStore(join(tempHome('keel-bench-texts-'), 'keel.db'));
const postgres = new PostgresStore(withSchema(await testPgUrl(), freshSchema()));
const texts = await textCampaign(
  [
    { name: 'sqlite', store: sqlite },
    { name: 'postgres', store: postgres },
  ],
  textCases,
);
await sqlite.close();
await postgres.close();
await dropSchemas();
console.log(
  `texts: ${texts.cases} cases × ${texts.stores.join(' and ')}, ${texts.runs} runs, ${texts.replaced_runs} with text replaced, ${texts.save_failures} failures to save; ${texts.violations.length} violations (${texts.ms} ms)`,
);

const switched = await modeSwitches(
  [
    { name: 'sqlite', url: async () => undefined },
    { name: 'postgres', url: async () => withSchema(await testPgUrl(), freshSchema()) },
  ],
  5,
);
await dropSchemas();
console.log(
  `mode switches (2 processes, SQLite and PostgreSQL): ${switched.rounds} rounds (${switched.server_rounds} through keel serve), ${switched.writes} writes asked, ${switched.ran} ran, ${switched.denied} denied by mode; ${switched.violations.length} violations (${switched.ms} ms)`,
);

const approvals = await approvalRaces(PROCESS_STORES, 10);
await dropSchemas();
console.log(
  `concurrent approvals (2 servers and a CLI, SQLite and PostgreSQL): ${approvals.cards} cards, ${approvals.approved} approved, ${approvals.rejected} rejected, ${approvals.conflicts} conflicts, ${approvals.executions} executions; ${approvals.violations.length} violations (${approvals.ms} ms)`,
);

const out = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  load_average_1m: Math.round(loadavg()[0] * 100) / 100,
  replies: { ...replies, violations: replies.violations.length, examples: replies.violations.slice(0, 3) },
  manifests: { ...manifests, violations: manifests.violations.length, examples: manifests.violations.slice(0, 3) },
  crashes: { ...crashes, violations: crashes.violations.length, examples: crashes.violations.slice(0, 3) },
  crash_owner_rows: { ...owners, violations: owners.violations.length, examples: owners.violations.slice(0, 3) },
  races: { ...raced, violations: raced.violations.length, examples: raced.violations.slice(0, 3) },
  texts: { ...texts, violations: texts.violations.length, examples: texts.violations.slice(0, 3) },
  mode_switches: { ...switched, violations: switched.violations.length, examples: switched.violations.slice(0, 3) },
  concurrent_approvals: { ...approvals, violations: approvals.violations.length, examples: approvals.violations.slice(0, 3) },
};
writeFileSync(join(here, 'results', 'reliability.json'), `${JSON.stringify(out, null, 2)}\n`);
console.log('wrote bench/results/reliability.json');
const total =
  replies.violations.length +
  manifests.violations.length +
  crashes.violations.length +
  owners.violations.length +
  raced.violations.length +
  texts.violations.length +
  switched.violations.length +
  approvals.violations.length;
process.exitCode = total ? 1 : 0;
