/**
 * Issue 27, items 3 and 10 (R18, S4): who may take a running run over.
 * - 10: a run's owner is `HOST:PID:START`; on the same host it is alive only while that PID exists,
 *   is not a zombie (killed, not yet reaped) and started when the owner did (a reused PID is not it).
 * - 3: on PostgreSQL a valid lease always wins: a run on another host whose last save is old but
 *   whose lease is renewed is not taken over; once the lease runs out, it is.
 * Real processes (a zombie made by a parent that never reaps) and real stores.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { ownerAlive, ownerOf, processOwner, RunWriter } from '../../src/loop/run.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/types/index.js';
import { sampleRun } from '../store/conformance.js';
import { tempHome } from '../support/helpers.js';
import { dropSchemas, freshSchema, testPgUrl, withSchema } from '../support/pg.js';

const children: ChildProcess[] = [];
after(async () => {
  for (const c of children) c.kill('SIGKILL');
  await dropSchemas();
});

function stat(pid: number): { state: string; start: string } | undefined {
  try {
    const rest = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = rest.slice(rest.lastIndexOf(')') + 2).split(' ');
    return { state: f[0], start: f[19] };
  } catch {
    return undefined;
  }
}

async function until<T>(what: string, f: () => T | undefined, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A live process of our own (sleep), with its owner string as a run would record it. */
async function liveProcess(): Promise<{ pid: number; owner: string }> {
  const c = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(c);
  const pid = c.pid!;
  await until('sleep to start', () => (stat(pid)?.state ? true : undefined));
  return { pid, owner: ownerOf(pid) };
}

/**
 * A zombie: `sh` starts a short sleep in the background and then becomes `sleep 60` (exec), which
 * never waits for its child — the child exits and stays a zombie, its PID still taken.
 */
async function zombie(): Promise<{ pid: number; owner: string }> {
  const c = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
  children.push(c);
  const pid = await new Promise<number>((res) => c.stdout!.once('data', (d) => res(Number(String(d).trim()))));
  // Its owner string is taken while it lives, as its run recorded it.
  const owner = await until('the child to start', () => (stat(pid) ? ownerOf(pid) : undefined));
  await until('the child to become a zombie', () => (stat(pid)?.state === 'Z' ? true : undefined));
  return { pid, owner };
}

test('R18: a run owner records its process start time on Linux (HOST:PID:START)', () => {
  const st = stat(process.pid);
  assert.ok(st, 'this test runs where /proc is');
  assert.equal(processOwner(), `${hostname()}:${process.pid}:${st.start}`);
});

test('R18 (issue 27.10): a zombie owner is dead; a live one is alive; a reused PID (another start time) is not the owner', async () => {
  const z = await zombie();
  assert.doesNotThrow(() => process.kill(z.pid, 0), 'the zombie still answers kill(0): the PID alone says alive');
  assert.equal(ownerAlive(z.owner, new Date().toISOString()), false, 'a zombie recorded with its start time');
  assert.equal(ownerAlive(`${hostname()}:${z.pid}`, new Date().toISOString()), false, 'a zombie recorded by PID alone (an older run)');

  const live = await liveProcess();
  assert.equal(ownerAlive(live.owner, new Date().toISOString()), true);
  assert.equal(ownerAlive(`${hostname()}:${live.pid}`, new Date().toISOString()), true, 'an older owner string: PID only');
  const start = Number(live.owner.split(':')[2]);
  const reused = `${hostname()}:${live.pid}:${start - 1}`;
  assert.equal(ownerAlive(reused, new Date().toISOString()), false, 'the PID now belongs to a process started later');
});

type Opener = () => Promise<{ store: Store; close: () => Promise<void> }>;
const STORES: [string, Opener][] = [
  [
    'sqlite',
    async () => {
      const store = new SqliteStore(join(tempHome(), 'keel.db'));
      return { store, close: () => store.close() };
    },
  ],
  [
    'postgres',
    async () => {
      const store = new PostgresStore(withSchema(await testPgUrl(), freshSchema()));
      return { store, close: () => store.close() };
    },
  ],
];

const running = (id: string, owner: string) =>
  sampleRun(id, { status: 'running', reason: null, pause: null, pause_seq: 1, owner, updated_at: new Date().toISOString() });

for (const [name, open] of STORES) {
  test(`${name}: R18 (issue 27.10) a run whose process is a zombie, or whose PID was reused, is taken over; a live owner's is refused`, async (t) => {
    const { store, close } = await open();
    t.after(close);
    const z = await zombie();
    const live = await liveProcess();
    const reused = `${hostname()}:${live.pid}:${Number(live.owner.split(':')[2]) - 1}`;
    // On PostgreSQL each run is created with a valid lease (as its owner held it): a verified-dead
    // owner on this host renews nothing, so its lease does not stop the takeover.
    await store.createRun(running('run-zombie', z.owner));
    await store.createRun(running('run-reused', reused));
    await store.createRun(running('run-live', live.owner));

    const fromZombie = await RunWriter.claimStalled(store, 'run-zombie');
    assert.equal(fromZombie.state.owner, processOwner());
    assert.equal((await store.loadRun('run-zombie'))?.owner, processOwner());
    await RunWriter.claimStalled(store, 'run-reused');
    assert.equal((await store.loadRun('run-reused'))?.owner, processOwner());
    await assert.rejects(RunWriter.claimStalled(store, 'run-live'), (err: Error) =>
      err.message.includes(`run run-live is running in process ${live.owner}`),
    );
    assert.equal((await store.loadRun('run-live'))?.owner, live.owner, 'refused: nothing changed');
  });
}

test('postgres: S4/R18 (issue 27.3) a valid lease always wins: a run on another host, silent for 10 minutes but leased, is not taken over', async (t) => {
  const url = withSchema(await testPgUrl(), freshSchema());
  const holder = new PostgresStore(url, { leaseMs: 600 });
  const other = new PostgresStore(url);
  t.after(() => Promise.all([holder.close(), other.close()]));
  const tenMinutesAgo = new Date(Date.now() - 10 * 60_000 - 1000).toISOString();
  const owner = 'worker-on-another-host:4242:777';
  // The holder created the run and renews its lease (every 200 ms), while the run's last save is old.
  await holder.createRun({ ...running('run-1', owner), updated_at: tenMinutesAgo });
  await new Promise((r) => setTimeout(r, 700)); // longer than one lease: only renewals keep it
  assert.equal(ownerAlive(owner, tenMinutesAgo), false, 'by its last save alone the owner looks dead');

  await assert.rejects(
    RunWriter.claimStalled(other, 'run-1'),
    /run run-1 is running in process worker-on-another-host:4242:777, which still holds its lease/,
  );
  assert.equal(await other.takeOver('run-1', 1, owner, 'thief:1'), false, 'the store refuses too');
  assert.equal((await other.loadRun('run-1'))?.owner, owner, 'nothing changed');

  // The holder stops renewing (it died, or lost the database): once the lease runs out, the run is taken.
  holder.release('run-1');
  const client = new pg.Client({ connectionString: await testPgUrl() });
  await client.connect();
  t.after(() => client.end());
  const schema = new URL(url).searchParams.get('schema');
  const leased = async () =>
    (await client.query(`SELECT lease_until > now() AS valid FROM ${schema}.runs WHERE id = 'run-1'`)).rows[0].valid;
  for (let i = 0; i < 100 && (await leased()); i++) await new Promise((r) => setTimeout(r, 50));
  const taken = await RunWriter.claimStalled(other, 'run-1');
  assert.equal(taken.state.owner, processOwner());
  assert.equal((await other.loadRun('run-1'))?.owner, processOwner());
});
