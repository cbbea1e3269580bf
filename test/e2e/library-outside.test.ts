/**
 * The library from where an application stands (#24): Keel packed and installed from its tarball into
 * a new project outside this repository; an app there, type-checked under `strict` against the
 * installed package's types, hands Keel tools declared in code (one of each effect) and a ModelClient
 * class of its own, runs to a card, approves it with the same model object and sees the approved call
 * run once — and the same through a structured-output run. Every example of the README's Library
 * section is type-checked there too.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';
import { appDir, installEnv, installedKeel } from '../support/installed.js';

const APP = `import { appendFileSync } from 'node:fs';
import { defineTool, Keel, type ModelClient, type ModelEvent, type ModelRequest, type RunResult, type ToolCall } from 'keel';
import { z } from 'zod';

const LOG = process.env.APP_LOG ?? 'calls.log';
const files = new Set(['a.txt', 'b.txt']);
const tools = [
  defineTool({
    name: 'list_files',
    description: 'List the files',
    parameters: z.object({}),
    effect: 'read',
    execute: () => [...files].join(' '),
  }),
  defineTool({
    name: 'write_file',
    description: 'Write a file',
    parameters: z.object({ name: z.string(), text: z.string() }),
    effect: 'write',
    execute: ({ name }) => {
      appendFileSync(LOG, \`write_file \${name}\\n\`);
      files.add(name);
      return \`Wrote \${name}.\`;
    },
  }),
  defineTool({
    name: 'remove_file',
    description: 'Remove a file',
    parameters: z.object({ name: z.string() }),
    effect: 'destructive',
    describe: ({ name }) => ({ title: \`Remove \${name}\`, lines: [\`\${name} is deleted for good\`] }),
    execute: ({ name }) => {
      appendFileSync(LOG, \`remove_file \${name}\\n\`);
      files.delete(name);
      return \`Removed \${name}.\`;
    },
  }),
];

type Reply = { text: string } | { calls: ToolCall[] };

/** The application's own model: it answers from a list, and counts the requests it was sent. */
class ListModel implements ModelClient {
  readonly spec = 'list:v1';
  requests = 0;
  constructor(private readonly replies: Reply[]) {}
  async *stream(_req: ModelRequest): AsyncIterable<ModelEvent> {
    const r = this.replies[this.requests++];
    if (!r) throw new Error('the list model ran out of replies');
    yield { type: 'done', reply: 'text' in r ? { text: r.text, tool_calls: [] } : { text: '', tool_calls: r.calls } };
  }
}

function card(r: RunResult<unknown>): { id: string; title: string } {
  if (r.status !== 'paused' || r.reason !== 'awaiting_approval') throw new Error(\`expected a card, got \${r.status} \${r.reason}\`);
  return { id: r.approval.id, title: r.approval.card.title };
}

await using keel = new Keel({ home: process.env.APP_HOME, tools });

const model = new ListModel([
  { calls: [{ id: 'c1', name: 'list_files', args: {} }] },
  { calls: [{ id: 'c2', name: 'remove_file', args: { name: 'b.txt' } }] },
  { text: 'Removed b.txt.' },
]);
const first = await keel.run('remove b.txt', { model });
const c = card(first);
const done = await keel.approve(c.id, { actor: 'tester', model });

const Report = z.object({ removed: z.array(z.string()) });
const reporter = new ListModel([
  { calls: [{ id: 'd1', name: 'remove_file', args: { name: 'a.txt' } }] },
  { text: 'I removed a.txt.' },
  { text: '{"removed": ["a.txt"]}' },
]);
const second = await keel.run('remove a.txt and report', { model: reporter, output: Report });
const c2 = card(second);
const reported = await keel.approve(c2.id, { actor: 'tester', model: reporter, output: Report });
const removed: string[] | undefined = reported.status === 'done' ? reported.output?.removed : undefined;

const listed = (await keel.tools()).filter((t) => ['list_files', 'write_file', 'remove_file'].includes(t.name));
console.log(
  JSON.stringify({
    card: c.title,
    done: done.status,
    answer: done.answer,
    requests: model.requests,
    removed,
    reported: reported.status,
    reporterRequests: reporter.requests,
    gates: Object.fromEntries(listed.map((t) => [t.name, t.gate])),
  }),
);
`;

/** The TypeScript compiler and Node's types, from this checkout (the app's own project needs neither installed). */
function tsc(dir: string, args: string[]): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: installEnv(),
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

function tsconfig(dir: string, files: string[], emit: boolean): void {
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: 'es2022',
        lib: ['es2022', 'esnext.disposable', 'esnext.asynciterable'],
        module: 'nodenext',
        moduleResolution: 'nodenext',
        types: ['node'],
        typeRoots: [join(ROOT, 'node_modules', '@types')],
        skipLibCheck: true,
        ...(emit ? { outDir: 'out' } : { noEmit: true }),
      },
      files,
    }),
  );
}

test('an app outside the repository: in-code tools and its own ModelClient, type-checked under strict, run to a card, approved with the same model; structured output', {
  timeout: 900_000,
}, async () => {
  await installedKeel();
  const dir = await appDir('lib-app-');
  writeFileSync(join(dir, 'app.ts'), APP);
  tsconfig(dir, ['app.ts'], true);
  const built = tsc(dir, ['-p', '.']);
  assert.equal(built.code, 0, built.out);

  const log = join(dir, 'calls.log');
  const run = spawnSync(process.execPath, [join(dir, 'out', 'app.js')], {
    cwd: dir,
    encoding: 'utf8',
    env: installEnv({ APP_HOME: join(dir, 'home'), APP_LOG: log }),
  });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const out = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}');
  assert.equal(out.card, 'Remove b.txt');
  assert.equal(out.done, 'done');
  assert.equal(out.answer, 'Removed b.txt.');
  assert.equal(out.requests, 3, 'the same model object carried the run on after the card');
  assert.deepEqual(out.removed, ['a.txt'], 'the structured answer, parsed after one retry');
  assert.equal(out.reported, 'done');
  assert.equal(out.reporterRequests, 3);
  assert.deepEqual(out.gates, { list_files: 'none', write_file: 'confirm_once', remove_file: 'approval' });
  assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), ['remove_file b.txt', 'remove_file a.txt'], 'each approved call ran once');

  // A mistake in a declaration is caught by the compiler where the tool is written.
  writeFileSync(
    join(dir, 'bad.ts'),
    `import { defineTool } from 'keel';\nexport const t = defineTool({ name: 'x', description: 'x', parameters: { type: 'object' }, effect: 'delete', execute: () => 'x' });\n`,
  );
  tsconfig(dir, ['bad.ts'], false);
  const bad = tsc(dir, ['-p', '.']);
  assert.notEqual(bad.code, 0, 'effect: delete does not type-check');
  assert.match(bad.out, /delete/);
});

test("every example in the README's Library section type-checks against the installed package", { timeout: 900_000 }, async () => {
  await installedKeel();
  const dir = await appDir('readme-');
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Library\n'), readme.indexOf('\n## ', readme.indexOf('\n## Library\n') + 5));
  const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.length >= 3, `the Library section has its examples (${blocks.length})`);
  const files = blocks.map((code, i) => {
    const f = `example${i + 1}.ts`;
    writeFileSync(join(dir, f), `${code}\nexport {};\n`);
    return f;
  });
  tsconfig(dir, files, false);
  const checked = tsc(dir, ['-p', '.']);
  assert.equal(checked.code, 0, checked.out);
});
