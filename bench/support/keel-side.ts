/**
 * Keel's side of the loop bench: a registry of N read tools, a zero-latency scripted model, Keel's
 * pi-ai adapter on the bench's faux stream, one run — over Keel's code as the bench loads it: its
 * compiled JavaScript (what a user of the package runs, as pi-agent-core runs from its dist/) or its
 * TypeScript source through tsx (whose transform adds a `__name` call to every named closure).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as PiAi from '@mariozechner/pi-ai';
import type { EngineDeps } from '../../src/loop/engine.js';
import type * as Legs from '../../src/loop/legs.js';
import type * as Provider from '../../src/models/provider.js';
import type { ModelClient, ModelEvent, ModelRequest } from '../../src/models/types.js';
import { type Registry, registryOf } from '../../src/plugin-host/host.js';
import type * as Sqlite from '../../src/store/sqlite.js';
import type * as Builtins from '../../src/tools/builtins.js';
import type * as Spec from '../../src/tools/spec.js';
import type { ToolCall, ToolSpec } from '../../src/types/index.js';
import { benchTools, REQUEST, type ScriptedReply, toolOutput } from './conversation.js';
import type { FauxStream } from './pi-side.js';
import { type Meter, now } from './timing.js';

/** What the bench runs of Keel: the engine's driver, the tools it builds, its pi-ai adapter, its store. */
export interface KeelCode {
  /** Where it was loaded from. */
  from: string;
  streamRun: typeof Legs.streamRun;
  collect: typeof Legs.collect;
  askUser: typeof Builtins.askUser;
  makeToolSpec: typeof Spec.makeToolSpec;
  ProviderModel: typeof Provider.ProviderModel;
  SqliteStore: typeof Sqlite.SqliteStore;
}

/** Keel's code under `srcDir` (a checkout's src/ through tsx, or the compiled src/ of `compileKeel`). */
export async function loadKeelCode(srcDir: string): Promise<KeelCode> {
  const from = (p: string) => import(pathToFileURL(join(srcDir, p)).href);
  const [legs, builtins, spec, provider, sqlite] = await Promise.all([
    from('loop/legs.js'),
    from('tools/builtins.js'),
    from('tools/spec.js'),
    from('models/provider.js'),
    from('store/sqlite.js'),
  ]);
  return {
    from: srcDir,
    streamRun: legs.streamRun,
    collect: legs.collect,
    askUser: builtins.askUser,
    makeToolSpec: spec.makeToolSpec,
    ProviderModel: provider.ProviderModel,
    SqliteStore: sqlite.SqliteStore,
  };
}

/**
 * Compiles the checkout at `repo` — its src/ as `npm run build` does, and its bench/support/ — into
 * node_modules/.cache/keel-bench-loop-HASH (so its imports resolve to the checkout's node_modules), and
 * returns the compiled src/ (its bench support is beside it, in bench/support/). A tsconfig of the
 * cache's own extends the checkout's tsconfig.json (which covers bench/ in every checkout) with just
 * those two folders. Type errors are reported and the emitted JavaScript used all the same.
 */
export function compileKeel(repo: string): string {
  // One folder per checkout: a baseline whose node_modules is this one's (a symlink) gets its own.
  const root = realpathSync(repo);
  const out = join(repo, 'node_modules', '.cache', `keel-bench-loop-${createHash('sha256').update(root).digest('hex').slice(0, 8)}-bench`);
  mkdirSync(out, { recursive: true });
  const project = join(out, 'tsconfig.json');
  const config = {
    extends: join(root, 'tsconfig.json'),
    compilerOptions: { noEmit: false, rootDir: root },
    include: [join(root, 'src'), join(root, 'bench', 'support')],
  };
  writeFileSync(project, JSON.stringify(config));
  const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', project, '--outDir', out, '--declaration', 'false'], {
      cwd: repo,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    const text = String((err as { stdout?: Buffer }).stdout ?? err);
    console.error(
      `bench/loop: tsc reported errors compiling ${repo} (its emitted JavaScript is used):\n${text.split('\n').slice(0, 5).join('\n')}`,
    );
  }
  const src = join(out, 'src');
  if (!existsSync(join(out, 'bench', 'support', 'keel-side.js')))
    throw new Error(`bench/loop: compiling ${repo} produced no ${out}/bench/support/keel-side.js`);
  return src;
}

/** The registry shape host.ts builds, without plugin folders: ask_user plus the N bench tools. */
export function benchRegistry(code: KeelCode, count: number, tools: Meter): Registry {
  const specs: ToolSpec[] = benchTools(count).map((t) =>
    code.makeToolSpec(
      {
        ...t,
        execute: (args) => tools.time(() => toolOutput(t.name, args)),
      },
      'bench',
    ),
  );
  // KEEL_BENCH_UNTRUSTED=1: every bench tool is declared output: untrusted, so each step reads words
  // from outside (issue 36): the cost of keeping what a run has read, measured against a plain run.
  const untrusted = process.env.KEEL_BENCH_UNTRUSTED === '1';
  const pool = [
    code.askUser,
    ...(untrusted ? specs.map((s) => ({ ...s, declaration: { ...s.declaration, output: 'untrusted' as const } })) : specs),
  ];
  return registryOf(pool);
}

/**
 * KEEL_BENCH_POLICY=N (issue 37): an operator's Cedar policy file of N policies over the bench tools —
 * a permit for every call, forbids and `@ask` permits with conditions on the arguments, the principal,
 * the mode and what the run has read, none of which match the bench's calls (every call still runs) —
 * opened with this checkout's src/policy/cedar: what a run pays per call for the operator's policy.
 */
export async function benchPolicy(code: KeelCode, registry: Registry, count: number): Promise<EngineDeps['policy']> {
  const cedar = await import(pathToFileURL(join(code.from, 'policy', 'cedar.js')).href);
  const names = [...registry.byName.keys()].filter((n) => n !== 'ask_user');
  const rules = ['@id("all")\npermit (principal, action == Keel::Action::"call", resource);'];
  for (let i = 1; i < count; i++) {
    const tool = names[(i * 31) % names.length];
    const when = [
      'context.args has limit && context.args.limit > 100000',
      'principal.groups.contains("interns")',
      'context.mode == "goal"',
      'context.untrusted',
      'context.args.path like "*/secret/*"',
    ][i % 5];
    rules.push(
      i % 2
        ? `@id("p${i}")\nforbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"${tool}") when { ${when} };`
        : `@id("p${i}")\n@ask\npermit (principal, action == Keel::Action::"call", resource == Keel::Tool::"${tool}") when { ${when} };`,
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-policy-'));
  const file = join(dir, 'policy.cedar');
  writeFileSync(file, `${rules.join('\n\n')}\n`);
  const opened = await cedar.PolicyFile.open(file, [...registry.byName.values()]);
  return () => opened.current();
}

/**
 * Replays the scripted replies with no latency at all: each reply's events are built before the run,
 * and the iterator hands them out one `next()` at a time. The time inside `next()` is the model's.
 */
export class ReplayModel implements ModelClient {
  readonly spec = 'bench:replay';
  private readonly events: ModelEvent[][];

  constructor(
    replies: readonly ScriptedReply[],
    private readonly meter: Meter,
  ) {
    this.events = replies.map((r) => {
      if (r.kind === 'text') {
        return [
          { type: 'text_delta', text: r.text },
          { type: 'done', reply: { text: r.text, tool_calls: [], usage: { input: 0, output: 0 } } },
        ];
      }
      const call: ToolCall = { id: r.call.id, name: r.call.name, args: { ...r.call.args } };
      return [
        { type: 'tool_call', call },
        { type: 'done', reply: { text: '', tool_calls: [call], usage: { input: 0, output: 0 } } },
      ];
    });
  }

  stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    const meter = this.meter;
    const t0 = now();
    const evs = this.events[req.seq];
    if (!evs) throw new Error(`replay ran out at model call ${req.seq + 1}`);
    let i = 0;
    meter.ms += now() - t0;
    return {
      [Symbol.asyncIterator]: () => ({
        next: () => {
          const t = now();
          const r: IteratorResult<ModelEvent> = i < evs.length ? { value: evs[i++], done: false } : { value: undefined, done: true };
          const p = Promise.resolve(r);
          meter.ms += now() - t;
          return p;
        },
      }),
    };
  }
}

/**
 * Keel's real-model path: its pi-ai adapter (src/models/provider.ts, the class every provider spec
 * builds), given pi-ai itself with `stream` replaced by the bench's faux stream (live or recorded)
 * and the faux provider's model. Everything between the engine and pi-ai's stream is Keel's own
 * code: the context it builds (transcript and declared tools), the event handling, the reply.
 */
export function providerModel(code: KeelCode, model: PiAi.Model<PiAi.Api>, stream: FauxStream): Provider.ProviderModel {
  const target: Provider.ProviderTarget = {
    kind: 'faux',
    model: model.id,
    api: 'openai-completions',
    provider: model.provider,
    baseUrl: model.baseUrl,
    apiKey: 'none',
    label: "pi-ai's faux provider",
    unreachable: 'the bench registers it in-process',
  };
  const pi = { ...PiAi, stream: stream as typeof PiAi.stream };
  return new code.ProviderModel('bench:pi-ai-faux', target, pi, model);
}

/** One run, start to final answer. Throws when the run did not end the way the script says. */
export async function runKeelOnce(code: KeelCode, deps: EngineDeps, steps: number): Promise<void> {
  const result = await code.collect(code.streamRun(deps, { message: REQUEST }));
  if (result.status !== 'done' || result.reason !== 'final_answer' || result.model_calls !== steps) {
    throw new Error(`keel run ended ${result.status}/${result.reason} after ${result.model_calls} model calls: ${result.answer}`);
  }
  if (result.steps.some((s) => s.outcome !== 'ran')) throw new Error(`keel: a call did not run: ${JSON.stringify(result.steps)}`);
}
