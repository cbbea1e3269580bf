// code_exec's runner: runs in its own node process started with the permission model (it may read
// only this file; no child processes, no workers), a 64 MB heap and an empty environment. The
// user's code runs inside a vm context whose global object has a null prototype and holds only a
// console written inside that context: no outer-realm object is ever handed in, so there is no
// require, process, import() or fetch to reach. Only strings come back out.
//
// Protocol: one JSON object on stdin { code, timeoutMs, maxOutput, maxBytes }, one JSON object on
// stdout { output, truncated, value, error, timedOut }.
import dgram from 'node:dgram';
import dns from 'node:dns';
import net from 'node:net';
import vm from 'node:vm';

// Defence in depth: even this outer realm cannot open sockets or resolve names (node 20's permission
// model does not cover the network).
const denied = () => {
  throw new Error('network access is disabled in code_exec');
};
net.Socket.prototype.connect = denied;
net.connect = denied;
net.createConnection = denied;
net.createServer = denied;
dgram.createSocket = denied;
dns.lookup = denied;
dns.resolve = denied;
dns.promises.lookup = denied;
for (const name of ['fetch', 'WebSocket', 'EventSource', 'XMLHttpRequest']) delete globalThis[name];

// Evaluated inside the context. It defines console, the formatter and __keel.run / __keel.result,
// removes what could allocate outside the heap cap, and never sees an outer object.
const PRELUDE = String.raw`(() => {
  'use strict';
  const G = globalThis;
  const MAX_OUT = __MAX_OUT__;
  const MAX_BYTES = __MAX_BYTES__;
  const indirectEval = G.eval;
  const stringify = JSON.stringify;
  const keys = Object.keys;
  const isArray = Array.isArray;
  const lines = [];
  let used = 0;
  let truncated = false;

  function fmt(v, depth, seen, top) {
    const t = typeof v;
    if (t === 'string') return top ? v : stringify(v);
    if (t === 'number' || t === 'boolean' || t === 'undefined' || v === null) return String(v);
    if (t === 'bigint') return String(v) + 'n';
    if (t === 'symbol') return v.toString();
    if (t === 'function') return '[Function: ' + (v.name || 'anonymous') + ']';
    if (seen.indexOf(v) >= 0) return '[Circular]';
    if (v instanceof Error) return fmtError(v);
    if (depth > 2) return isArray(v) ? '[Array]' : '[Object]';
    const next = seen.concat([v]);
    if (v instanceof Date) return isNaN(v) ? 'Invalid Date' : v.toISOString();
    if (v instanceof RegExp) return String(v);
    if (v instanceof Map) {
      const parts = [];
      for (const [k, x] of v) { if (parts.length >= 50) { parts.push('…'); break; } parts.push(fmt(k, depth + 1, next) + ' => ' + fmt(x, depth + 1, next)); }
      return 'Map(' + v.size + ') {' + (parts.length ? ' ' + parts.join(', ') + ' ' : '') + '}';
    }
    if (v instanceof Set) {
      const parts = [];
      for (const x of v) { if (parts.length >= 50) { parts.push('…'); break; } parts.push(fmt(x, depth + 1, next)); }
      return 'Set(' + v.size + ') {' + (parts.length ? ' ' + parts.join(', ') + ' ' : '') + '}';
    }
    if (typeof v.then === 'function') return 'Promise';
    if (isArray(v)) {
      const parts = [];
      for (let i = 0; i < v.length && i < 100; i++) parts.push(fmt(v[i], depth + 1, next));
      if (v.length > 100) parts.push('… ' + (v.length - 100) + ' more');
      return '[' + (parts.length ? ' ' + parts.join(', ') + ' ' : '') + ']';
    }
    const ks = keys(v);
    const parts = [];
    for (let i = 0; i < ks.length && i < 50; i++) {
      let x;
      try { x = fmt(v[ks[i]], depth + 1, next); } catch (e) { x = '[Getter threw]'; }
      parts.push((/^[A-Za-z_$][\w$]*$/.test(ks[i]) ? ks[i] : stringify(ks[i])) + ': ' + x);
    }
    if (ks.length > 50) parts.push('… ' + (ks.length - 50) + ' more');
    return '{' + (parts.length ? ' ' + parts.join(', ') + ' ' : '') + '}';
  }

  function fmtError(e) {
    try {
      if (e instanceof Error) return String(e.name) + ': ' + String(e.message);
      return 'Uncaught ' + fmt(e, 0, [], false);
    } catch (x) {
      return 'Uncaught exception (it could not be printed)';
    }
  }

  function write(args) {
    if (truncated) return;
    let s = '';
    for (let i = 0; i < args.length; i++) {
      let part;
      try { part = fmt(args[i], 0, [], true); } catch (e) { part = '[unprintable]'; }
      s += (i ? ' ' : '') + part;
    }
    if (used + s.length + 1 > MAX_OUT) { lines[lines.length] = s.slice(0, Math.max(0, MAX_OUT - used)); truncated = true; return; }
    lines[lines.length] = s;
    used += s.length + 1;
  }

  const log = (...a) => write(a);
  const console = { log, info: log, debug: log, warn: log, error: log, trace: log, dir: (v) => write([v]) };

  // Off-heap memory is not bounded by --max-old-space-size: cap each buffer, drop shared memory and wasm.
  for (const name of ['WebAssembly', 'SharedArrayBuffer', 'Atomics']) delete G[name];
  const tooBig = (n) => typeof n === 'number' && n > MAX_BYTES;
  const refuse = () => { throw new RangeError('code_exec: buffers are limited to ' + MAX_BYTES + ' bytes'); };
  const AB = G.ArrayBuffer;
  G.ArrayBuffer = new Proxy(AB, {
    construct(target, args, nt) {
      if (tooBig(args[0]) || (args[1] && tooBig(args[1].maxByteLength))) refuse();
      return Reflect.construct(target, args, nt);
    },
  });
  // The capped constructor is also the one reached through an instance or a prototype
  // (x.constructor, species in slice/map/subarray): no un-proxied way round the cap.
  Object.defineProperty(AB.prototype, 'constructor', { value: G.ArrayBuffer, writable: true, configurable: true });
  for (const m of ['transfer', 'transferToFixedLength', 'resize']) {
    const orig = AB.prototype[m];
    if (typeof orig === 'function') AB.prototype[m] = function (n) { if (tooBig(n)) refuse(); return orig.call(this, n); };
  }
  for (const name of ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
    const T = G[name];
    G[name] = new Proxy(T, {
      construct(target, args, nt) {
        if (typeof args[0] === 'number' && args[0] * target.BYTES_PER_ELEMENT > MAX_BYTES) refuse();
        return Reflect.construct(target, args, nt);
      },
    });
    Object.defineProperty(T.prototype, 'constructor', { value: G[name], writable: true, configurable: true });
  }

  const state = { value: undefined, error: undefined, pending: false };
  function run(src) {
    try {
      const v = indirectEval(src);
      if (v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function') {
        state.pending = true;
        v.then(
          (x) => { state.pending = false; state.value = fmt(x, 0, [], false); },
          (e) => { state.pending = false; state.error = fmtError(e); },
        );
      } else {
        state.value = fmt(v, 0, [], false);
      }
    } catch (e) {
      state.error = fmtError(e);
    }
  }
  // The last expression's value and an error are cut like the output, so the reply stays small.
  const cut = (s) => (typeof s === 'string' && s.length > MAX_OUT ? s.slice(0, MAX_OUT) + '… (cut at ' + MAX_OUT + ' characters)' : s);
  function result() {
    return stringify({
      output: lines.join('\n'),
      truncated: truncated,
      value: state.pending ? 'Promise { <pending> }' : cut(state.value),
      error: cut(state.error),
    });
  }
  Object.defineProperty(G, '__keel', { value: Object.freeze({ run: run, result: result, pending: () => state.pending }), writable: false, configurable: false, enumerable: false });
  Object.defineProperty(G, 'console', { value: console, writable: true, configurable: true, enumerable: false });
})();`;

function readStdin() {
  return new Promise((resolve, reject) => {
    let data = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d) => {
      data += d;
    });
    process.stdin.on('end', () => resolve(data));
    process.stdin.on('error', reject);
  });
}

const input = JSON.parse(await readStdin());
const context = vm.createContext(Object.create(null), {
  name: 'code_exec',
  codeGeneration: { strings: true, wasm: false },
  microtaskMode: 'afterEvaluate',
});
// import() would otherwise reject with an error from this outer realm, and that object's
// constructor chain leads out of the sandbox. With --experimental-vm-modules this callback is used
// instead, for the scripts below and for code they eval; its error is made inside the context.
const importModuleDynamically = () => {
  throw vm.runInContext('new Error("import() is not available in code_exec: there are no modules or packages here")', context);
};
const inContext = (source, timeout) =>
  new vm.Script(source, { filename: 'code.js', importModuleDynamically }).runInContext(context, { timeout });

inContext(PRELUDE.replace('__MAX_OUT__', String(input.maxOutput)).replace('__MAX_BYTES__', String(input.maxBytes)));

// Nothing thrown out of the context is inspected: run() catches what the code throws, so what gets
// here is the vm's timeout, recognised by the clock (the error object itself comes from the context).
const started = Date.now();
const deadline = started + input.timeoutMs;
let timedOut = false;
let failed = false;
const attempt = (fn) => {
  try {
    fn();
  } catch {
    if (Date.now() >= deadline - 5) timedOut = true;
    else failed = true;
  }
};
attempt(() => inContext(`__keel.run(${JSON.stringify(String(input.code))})`, input.timeoutMs));
// A rejected import() settles on a later turn of this loop; the context's microtasks run when a
// script next runs in it. Give pending promises a few turns, within the time limit.
for (let turn = 0; turn < 5 && !timedOut && !failed && Date.now() < deadline; turn++) {
  let pending = false;
  attempt(() => {
    pending = inContext('__keel.pending()', Math.max(1, deadline - Date.now())) === true;
  });
  if (!pending) break;
  await new Promise((r) => setImmediate(r));
}

let report;
try {
  const raw = inContext('__keel.result()', 1000);
  report = typeof raw === 'string' ? JSON.parse(raw) : { error: 'the sandbox returned no readable result' };
} catch {
  report = { error: 'the sandbox returned no readable result' };
}
if (failed) report = { ...report, error: 'the sandbox failed unexpectedly' };
const str = (v) => (typeof v === 'string' ? v : undefined);
process.stdout.write(
  JSON.stringify({
    output: str(report.output) ?? '',
    truncated: report.truncated === true,
    value: str(report.value),
    error: str(report.error),
    timedOut,
  }),
  () => process.exit(0),
);
