/**
 * Stand-in GGUF models for bench/llama-server: the real tokenizer and chat template of a model
 * family (from its npm tokenizer package's tokenizer.json and tokenizer_config.json), with a tiny
 * random-weight transformer behind them. They only need to load and run in llama.cpp: the text
 * they write is random, and the trial judges Keel, not the model.
 *
 * The file format (GGUF v3): header, key/value metadata, tensor infos, then the tensor data,
 * each aligned to 32 bytes. Weights are F32, small enough that nothing needs quantizing.
 */
import { closeSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';

const T = { u32: 4, i32: 5, f32: 6, bool: 7, str: 8, arr: 9 } as const;
const ALIGN = 32;

type Value =
  | { t: 'u32' | 'i32' | 'f32'; v: number }
  | { t: 'bool'; v: boolean }
  | { t: 'str'; v: string }
  | { t: 'arr_str'; v: string[] }
  | { t: 'arr_i32'; v: number[] }
  | { t: 'arr_f32'; v: number[] };

class Buf {
  private parts: Buffer[] = [];
  size = 0;
  push(b: Buffer): void {
    this.parts.push(b);
    this.size += b.length;
  }
  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.push(b);
  }
  i32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    this.push(b);
  }
  f32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    this.push(b);
  }
  u64(n: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.push(b);
  }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  value(v: Value): void {
    switch (v.t) {
      case 'u32':
        this.u32(T.u32);
        this.u32(v.v);
        break;
      case 'i32':
        this.u32(T.i32);
        this.i32(v.v);
        break;
      case 'f32':
        this.u32(T.f32);
        this.f32(v.v);
        break;
      case 'bool':
        this.u32(T.bool);
        this.push(Buffer.from([v.v ? 1 : 0]));
        break;
      case 'str':
        this.u32(T.str);
        this.str(v.v);
        break;
      case 'arr_str':
        this.u32(T.arr);
        this.u32(T.str);
        this.u64(v.v.length);
        for (const s of v.v) this.str(s);
        break;
      case 'arr_i32': {
        this.u32(T.arr);
        this.u32(T.i32);
        this.u64(v.v.length);
        const b = Buffer.alloc(4 * v.v.length);
        v.v.forEach((n, i) => {
          b.writeInt32LE(n, 4 * i);
        });
        this.push(b);
        break;
      }
      case 'arr_f32': {
        this.u32(T.arr);
        this.u32(T.f32);
        this.u64(v.v.length);
        const b = Buffer.alloc(4 * v.v.length);
        v.v.forEach((n, i) => {
          b.writeFloatLE(n, 4 * i);
        });
        this.push(b);
        break;
      }
    }
  }
  concat(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** A tensor: its name, its shape innermost first (ggml's ne), and how to fill it. */
interface TensorSpec {
  name: string;
  shape: number[];
  fill: 'ones' | 'random';
}

/** A small deterministic generator: the same stand-in model every time. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function writeGguf(path: string, kv: Record<string, Value>, tensors: TensorSpec[], seed = 26): number {
  const head = new Buf();
  head.push(Buffer.from('GGUF', 'ascii'));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(Object.keys(kv).length);
  for (const [k, v] of Object.entries(kv)) {
    head.str(k);
    head.value(v);
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    head.str(t.name);
    head.u32(t.shape.length);
    for (const d of t.shape) head.u64(d);
    head.u32(0); // F32
    head.u64(offset);
    offsets.push(offset);
    const bytes = 4 * t.shape.reduce((a, b) => a * b, 1);
    offset += Math.ceil(bytes / ALIGN) * ALIGN;
  }
  const header = head.concat();
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, header);
    writeSync(fd, Buffer.alloc((ALIGN - (header.length % ALIGN)) % ALIGN));
    const rand = rng(seed);
    for (const t of tensors) {
      const n = t.shape.reduce((a, b) => a * b, 1);
      const fanIn = t.shape[0];
      const scale = 1 / Math.sqrt(fanIn);
      // Written in slices: the embedding of a 262k-token vocabulary is the largest tensor.
      const slice = 1 << 20;
      for (let i = 0; i < n; i += slice) {
        const m = Math.min(slice, n - i);
        const b = Buffer.alloc(4 * m);
        for (let j = 0; j < m; j++) b.writeFloatLE(t.fill === 'ones' ? 1 : (rand() * 2 - 1) * scale, 4 * j);
        writeSync(fd, b);
      }
      const bytes = 4 * n;
      writeSync(fd, Buffer.alloc(Math.ceil(bytes / ALIGN) * ALIGN - bytes));
    }
  } finally {
    closeSync(fd);
  }
  return offset + header.length;
}

interface HfTokenizer {
  model: { type: string; vocab: Record<string, number>; merges?: ([string, string] | string)[] };
  added_tokens: { id: number; content: string; special: boolean }[];
}
interface HfConfig {
  chat_template?: string;
  eos_token?: string | { content: string };
  bos_token?: string | { content: string } | null;
  pad_token?: string | { content: string } | null;
  add_bos_token?: boolean;
}

/** Token types as llama.cpp reads them. */
const TYPE = { normal: 1, unknown: 2, control: 3, user: 4, byte: 6 } as const;

function tokenText(t: HfConfig['bos_token']): string | undefined {
  return t == null ? undefined : typeof t === 'string' ? t : t.content;
}

/** The vocabulary by id, every id from 0 to the largest filled (gaps get placeholders). */
function vocabulary(tok: HfTokenizer, spm: boolean): { tokens: string[]; types: number[]; ids: Map<string, number> } {
  const added = new Map(tok.added_tokens.map((a) => [a.id, a]));
  const byId = new Map<number, string>();
  for (const [s, id] of Object.entries(tok.model.vocab)) byId.set(id, s);
  for (const a of tok.added_tokens) byId.set(a.id, a.content);
  let n = 0;
  for (const k of byId.keys()) n = Math.max(n, k + 1);
  const tokens: string[] = [];
  const types: number[] = [];
  const ids = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const s = byId.get(i) ?? `[PAD${i}]`;
    tokens.push(s);
    ids.set(s, i);
    const a = added.get(i);
    if (!byId.has(i)) types.push(TYPE.user);
    else if (a) types.push(s === '<unk>' ? TYPE.unknown : a.special ? TYPE.control : TYPE.user);
    else if (spm && /^<0x[0-9A-F]{2}>$/.test(s)) types.push(TYPE.byte);
    else types.push(TYPE.normal);
  }
  return { tokens, types, ids };
}

export interface StandIn {
  path: string;
  bytes: number;
  vocab: number;
  /** Token ids the bench biases to make a random model call tools and end its turns. */
  ids: Map<string, number>;
}

/** The transformer's shape: tiny, so it loads in a moment and writes a few hundred tokens a second. */
const DIMS = { embd: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 16, ff: 128, ctx: 32768 };

function layerTensors(extra: (i: number) => TensorSpec[]): TensorSpec[] {
  const out: TensorSpec[] = [];
  const { embd, heads, kvHeads, headDim, ff } = DIMS;
  for (let i = 0; i < DIMS.layers; i++) {
    out.push(
      { name: `blk.${i}.attn_norm.weight`, shape: [embd], fill: 'ones' },
      { name: `blk.${i}.attn_q.weight`, shape: [embd, heads * headDim], fill: 'random' },
      { name: `blk.${i}.attn_k.weight`, shape: [embd, kvHeads * headDim], fill: 'random' },
      { name: `blk.${i}.attn_v.weight`, shape: [embd, kvHeads * headDim], fill: 'random' },
      { name: `blk.${i}.attn_output.weight`, shape: [heads * headDim, embd], fill: 'random' },
      { name: `blk.${i}.attn_q_norm.weight`, shape: [headDim], fill: 'ones' },
      { name: `blk.${i}.attn_k_norm.weight`, shape: [headDim], fill: 'ones' },
      { name: `blk.${i}.ffn_norm.weight`, shape: [embd], fill: 'ones' },
      { name: `blk.${i}.ffn_gate.weight`, shape: [embd, ff], fill: 'random' },
      { name: `blk.${i}.ffn_up.weight`, shape: [embd, ff], fill: 'random' },
      { name: `blk.${i}.ffn_down.weight`, shape: [ff, embd], fill: 'random' },
      ...extra(i),
    );
  }
  return out;
}

function archKv(arch: string): Record<string, Value> {
  const { embd, layers, heads, kvHeads, headDim, ff, ctx } = DIMS;
  return {
    'general.architecture': { t: 'str', v: arch },
    'general.name': { t: 'str', v: `keel-bench ${arch} stand-in (random weights)` },
    'general.alignment': { t: 'u32', v: ALIGN },
    [`${arch}.context_length`]: { t: 'u32', v: ctx },
    [`${arch}.embedding_length`]: { t: 'u32', v: embd },
    [`${arch}.block_count`]: { t: 'u32', v: layers },
    [`${arch}.feed_forward_length`]: { t: 'u32', v: ff },
    [`${arch}.attention.head_count`]: { t: 'u32', v: heads },
    [`${arch}.attention.head_count_kv`]: { t: 'u32', v: kvHeads },
    [`${arch}.attention.key_length`]: { t: 'u32', v: headDim },
    [`${arch}.attention.value_length`]: { t: 'u32', v: headDim },
    [`${arch}.rope.freq_base`]: { t: 'f32', v: 1_000_000 },
    [`${arch}.attention.layer_norm_rms_epsilon`]: { t: 'f32', v: 1e-6 },
  };
}

function readPackage(dir: string): { tok: HfTokenizer; cfg: HfConfig } {
  return {
    tok: JSON.parse(readFileSync(`${dir}/tokenizer.json`, 'utf8')) as HfTokenizer,
    cfg: JSON.parse(readFileSync(`${dir}/tokenizer_config.json`, 'utf8')) as HfConfig,
  };
}

/** Qwen3: byte-level BPE ("gpt2" in llama.cpp, pre-tokenizer qwen2), a chat template that renders tools. */
export function writeQwen3(modelsDir: string, path: string, template?: string): StandIn {
  const { tok, cfg } = readPackage(modelsDir);
  const { tokens, types, ids } = vocabulary(tok, false);
  const merges = (tok.model.merges ?? []).map((m) => (Array.isArray(m) ? m.join(' ') : m));
  const id = (s: string | undefined) => (s === undefined ? undefined : ids.get(s));
  const eos = id(tokenText(cfg.eos_token)) ?? 151645;
  const pad = id(tokenText(cfg.pad_token)) ?? 151643;
  const kv: Record<string, Value> = {
    ...archKv('qwen3'),
    'tokenizer.ggml.model': { t: 'str', v: 'gpt2' },
    'tokenizer.ggml.pre': { t: 'str', v: 'qwen2' },
    'tokenizer.ggml.tokens': { t: 'arr_str', v: tokens },
    'tokenizer.ggml.token_type': { t: 'arr_i32', v: types },
    'tokenizer.ggml.merges': { t: 'arr_str', v: merges },
    'tokenizer.ggml.eos_token_id': { t: 'u32', v: eos },
    'tokenizer.ggml.padding_token_id': { t: 'u32', v: pad },
    'tokenizer.ggml.bos_token_id': { t: 'u32', v: pad },
    'tokenizer.ggml.add_bos_token': { t: 'bool', v: false },
    'tokenizer.chat_template': { t: 'str', v: template ?? cfg.chat_template ?? '' },
  };
  const tensors: TensorSpec[] = [
    { name: 'token_embd.weight', shape: [DIMS.embd, tokens.length], fill: 'random' },
    { name: 'output_norm.weight', shape: [DIMS.embd], fill: 'ones' },
    ...layerTensors(() => []),
  ];
  return { path, bytes: writeGguf(path, kv, tensors), vocab: tokens.length, ids };
}

/** Gemma 3: a SentencePiece-style vocabulary ("llama" in llama.cpp); its chat template renders no tools. */
export function writeGemma3(modelsDir: string, path: string): StandIn {
  const { tok, cfg } = readPackage(modelsDir);
  const { tokens, types, ids } = vocabulary(tok, true);
  const id = (s: string | undefined) => (s === undefined ? undefined : ids.get(s));
  // SentencePiece scores: earlier pieces (more frequent) score higher.
  const scores = tokens.map((_, i) => -i);
  const kv: Record<string, Value> = {
    ...archKv('gemma3'),
    'tokenizer.ggml.model': { t: 'str', v: 'llama' },
    'tokenizer.ggml.pre': { t: 'str', v: 'default' },
    'tokenizer.ggml.tokens': { t: 'arr_str', v: tokens },
    'tokenizer.ggml.scores': { t: 'arr_f32', v: scores },
    'tokenizer.ggml.token_type': { t: 'arr_i32', v: types },
    'tokenizer.ggml.bos_token_id': { t: 'u32', v: id(tokenText(cfg.bos_token)) ?? 2 },
    'tokenizer.ggml.eos_token_id': { t: 'u32', v: id('<end_of_turn>') ?? 106 },
    'tokenizer.ggml.padding_token_id': { t: 'u32', v: id(tokenText(cfg.pad_token)) ?? 0 },
    'tokenizer.ggml.unknown_token_id': { t: 'u32', v: id('<unk>') ?? 3 },
    'tokenizer.ggml.add_bos_token': { t: 'bool', v: true },
    'tokenizer.ggml.add_eos_token': { t: 'bool', v: false },
    'tokenizer.chat_template': { t: 'str', v: cfg.chat_template ?? '' },
  };
  const tensors: TensorSpec[] = [
    { name: 'token_embd.weight', shape: [DIMS.embd, tokens.length], fill: 'random' },
    { name: 'output_norm.weight', shape: [DIMS.embd], fill: 'ones' },
    ...layerTensors((i) => [
      { name: `blk.${i}.post_attention_norm.weight`, shape: [DIMS.embd], fill: 'ones' },
      { name: `blk.${i}.post_ffw_norm.weight`, shape: [DIMS.embd], fill: 'ones' },
    ]),
  ];
  return { path, bytes: writeGguf(path, kv, tensors), vocab: tokens.length, ids };
}

/** What `--model-file` needs to know of a GGUF file before a server loads it: its header's metadata. */
export interface GgufInfo {
  version: number;
  tensors: number;
  /** general.architecture, general.name. */
  architecture?: string;
  name?: string;
  /** tokenizer.chat_template, when the file carries one. */
  chatTemplate?: string;
}

/** Sizes of GGUF's fixed-width value types (u8 i8 u16 i16 u32 i32 f32 bool · · u64 i64 f64). */
const FIXED: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/**
 * Reads a GGUF file's header and metadata (not its tensors) through a small window, so a model of
 * many gigabytes is not read whole. Throws an Error saying what is wrong with a file that is not
 * GGUF (v2 or v3) or ends inside its metadata.
 */
export function readGgufInfo(path: string): GgufInfo {
  const fd = openSync(path, 'r');
  try {
    let buf = Buffer.alloc(0);
    let start = 0; // the file offset of buf[0]
    let pos = 0; // the file offset read next
    const need = (n: number) => {
      if (pos + n <= start + buf.length) return;
      const want = Math.max(n, 1 << 20);
      const more = Buffer.alloc(want);
      const got = readSync(fd, more, 0, want, start + buf.length);
      buf = Buffer.concat([buf.subarray(pos - start), more.subarray(0, got)]);
      start = pos;
      if (pos + n > start + buf.length) throw new Error(`${path}: the file ends inside its GGUF metadata (at byte ${pos})`);
    };
    const u32 = () => {
      need(4);
      const v = buf.readUInt32LE(pos - start);
      pos += 4;
      return v;
    };
    const u64 = () => {
      need(8);
      const v = buf.readBigUInt64LE(pos - start);
      pos += 8;
      if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`${path}: a GGUF length of ${v} at byte ${pos - 8} is not plausible`);
      return Number(v);
    };
    const str = () => {
      const n = u64();
      need(n);
      const v = buf.toString('utf8', pos - start, pos - start + n);
      pos += n;
      return v;
    };
    const skip = (type: number): void => {
      if (type === 8) {
        const n = u64();
        need(n);
        pos += n;
      } else if (type === 9) {
        const inner = u32();
        const n = u64();
        if (FIXED[inner]) {
          const bytes = n * FIXED[inner];
          // Skipped without reading: only the window moves.
          if (pos + bytes > start + buf.length) {
            buf = Buffer.alloc(0);
            start = pos + bytes;
          }
          pos += bytes;
        } else for (let i = 0; i < n; i++) skip(inner);
      } else if (FIXED[type]) {
        need(FIXED[type]);
        pos += FIXED[type];
      } else throw new Error(`${path}: unknown GGUF value type ${type} at byte ${pos}`);
    };
    need(4);
    if (buf.toString('ascii', 0, 4) !== 'GGUF') throw new Error(`${path} is not a GGUF file (it does not begin with "GGUF")`);
    pos = 4;
    const version = u32();
    if (version !== 2 && version !== 3) throw new Error(`${path}: GGUF version ${version}; llama.cpp reads versions 2 and 3`);
    const info: GgufInfo = { version, tensors: u64() };
    const kvs = u64();
    for (let i = 0; i < kvs; i++) {
      const key = str();
      const type = u32();
      const wanted = { 'general.architecture': 'architecture', 'general.name': 'name', 'tokenizer.chat_template': 'chatTemplate' } as const;
      const field = wanted[key as keyof typeof wanted];
      if (field && type === 8) info[field] = str();
      else skip(type);
    }
    return info;
  } finally {
    closeSync(fd);
  }
}
