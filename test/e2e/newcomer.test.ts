/**
 * What a newcomer met through the CLI beside an application (issue 40): the home an empty list
 * looked in, a failed command that left a home behind, and a library app's card approved from the
 * CLI.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Keel } from '../../src/keel/keel.js';
import type { ModelClient, ModelEvent, ModelRequest } from '../../src/models/types.js';
import { defineTool } from '../../src/tools/define.js';
import type { ToolCall } from '../../src/types/index.js';
import { keel, tempHome } from '../support/helpers.js';

test('S4: an empty list names the home it looked in; a command that fails before storing anything leaves no home behind', async () => {
  const base = tempHome('keel-newcomer-');
  const home = join(base, 'app', '.keel');
  mkdirSync(join(base, 'app'));

  const approvals = await keel(['approvals', 'list'], { KEEL_HOME: home });
  assert.equal(approvals.code, 0, approvals.stderr);
  assert.equal(approvals.stdout, `No approvals in ${home}.\n`);
  const runs = await keel(['runs', 'list'], { KEEL_HOME: home });
  assert.equal(runs.stdout, `No runs in ${home}.\n`);
  const inStore = await keel(['approvals', 'list'], { KEEL_HOME: home, KEEL_STORE: `sqlite:${join(base, 'other.db')}` });
  assert.equal(inStore.stdout, `No approvals in sqlite:${join(base, 'other.db')}.\n`, 'the store, when KEEL_STORE names one');

  // A run with no model fails before anything is stored: the home it made is gone again.
  const fresh = join(base, 'fresh');
  const failed = await keel(['run', 'hello'], { KEEL_HOME: fresh, KEEL_MODEL: '' });
  assert.equal(failed.code, 2, failed.stderr);
  assert.match(failed.stderr, /no model given/);
  assert.ok(!existsSync(fresh), 'no home left behind by a run that stored nothing');
  // A home that was there already is left as it was.
  mkdirSync(fresh);
  writeFileSync(join(fresh, 'mine.txt'), 'x');
  assert.equal((await keel(['run', 'hello'], { KEEL_HOME: fresh, KEEL_MODEL: '' })).code, 2);
  assert.equal(readFileSync(join(fresh, 'mine.txt'), 'utf8'), 'x');
});

/** The application's own model, written in code: it answers from a list. */
class ListModel implements ModelClient {
  readonly spec = 'list:v1';
  requests = 0;
  constructor(private readonly replies: ({ text: string } | { calls: ToolCall[] })[]) {}
  async *stream(_req: ModelRequest): AsyncIterable<ModelEvent> {
    const r = this.replies[this.requests++];
    if (!r) throw new Error('the list model ran out of replies');
    yield { type: 'done', reply: 'text' in r ? { text: r.text, tool_calls: [] } : { text: '', tool_calls: r.calls } };
  }
}

test("R18: a library app's card approved from the CLI: the answer is recorded, exit 0, and the run continues when the app resumes it", async () => {
  const home = tempHome('keel-newcomer-app-');
  const removed: string[] = [];
  const tools = [
    defineTool({
      name: 'remove_file',
      description: 'Remove a file',
      parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      effect: 'destructive',
      execute: ({ name }) => {
        removed.push(name);
        return `Removed ${name}.`;
      },
    }),
  ];
  let runId: string;
  let approvalId: string;
  {
    await using app = new Keel({ home, tools });
    const r = await app.run('remove b.txt', {
      model: new ListModel([{ calls: [{ id: 'c1', name: 'remove_file', args: { name: 'b.txt' } }] }]),
    });
    assert.equal(r.status, 'paused');
    assert.ok(r.status === 'paused' && r.reason === 'awaiting_approval');
    runId = r.run_id;
    approvalId = r.approval.id;
  }

  const cli = await keel(['approvals', 'approve', approvalId], { KEEL_HOME: home });
  assert.equal(cli.code, 0, cli.stdout + cli.stderr);
  assert.match(cli.stdout, new RegExp(`Approval ${approvalId}: approved\\. Run ${runId} belongs to an application`));
  assert.match(cli.stdout, /the run continues when that application resumes it/);
  assert.doesNotMatch(cli.stdout + cli.stderr, /--model SPEC/);
  assert.deepEqual(removed, [], 'nothing ran in the CLI');

  await using app = new Keel({ home, tools });
  const done = await app.resume(runId, { model: new ListModel([{ text: 'Removed b.txt.' }]) });
  assert.equal(done.status, 'done', JSON.stringify(done));
  assert.deepEqual(removed, ['b.txt'], 'the approved call ran once, in the app');
});

test('S1: keel demo | head leaves no temporary home behind', async () => {
  const tmp = tempHome('keel-newcomer-tmp-');
  const { spawn } = await import('node:child_process');
  const { readdirSync } = await import('node:fs');
  const { KEEL_BIN } = await import('../support/helpers.js');
  const child = spawn(process.execPath, [KEEL_BIN, 'demo'], { env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'] });
  // The first line names the temporary home; then the reader goes, as `head -1` does.
  await new Promise<void>((res) => child.stdout.once('data', () => res()));
  assert.deepEqual(readdirSync(tmp).filter((f) => f.startsWith('keel-demo-')).length, 1, 'the demo made its home');
  child.stdout.destroy();
  const code = await new Promise<number | null>((res) => child.on('close', (c) => res(c)));
  assert.equal(code, 0);
  assert.deepEqual(
    readdirSync(tmp).filter((f) => f.startsWith('keel-demo-')),
    [],
    'and removed it',
  );
});

test("S1: keel --help lists serve's --work under serve, and the everyday commands before worker and db", async () => {
  const help = await keel(['--help']);
  assert.equal(help.code, 0);
  const options = help.stdout.slice(help.stdout.indexOf('Options:'), help.stdout.indexOf('Commands:'));
  assert.doesNotMatch(options, /--work/, 'not a global option');
  const commands = [...help.stdout.slice(help.stdout.indexOf('Commands:')).matchAll(/^ {2}(\w+)/gm)].map((m) => m[1]);
  assert.ok(commands.indexOf('run') < commands.indexOf('worker') && commands.indexOf('run') < commands.indexOf('db'), commands.join(' '));
  assert.ok(commands.indexOf('worker') > commands.indexOf('data'), commands.join(' '));
  const serve = await keel(['serve', '--help']);
  assert.match(serve.stdout, /--work/);
});
