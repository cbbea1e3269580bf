// Builds the example page with esbuild: examples/chat-ui/dist/{index.html,app.js}.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'dist');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, 'page.jsx')],
  bundle: true,
  format: 'esm',
  minify: true,
  jsx: 'automatic',
  // The repository's tsconfig sets Hono's JSX for the console: this page is React.
  jsxImportSource: 'react',
  tsconfigRaw: '{}',
  outfile: join(out, 'app.js'),
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
});
writeFileSync(
  join(out, 'index.html'),
  `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Keel chat</title><link rel="icon" href="data:,">
<style>body{font:16px system-ui;max-width:40rem;margin:2rem auto;padding:0 1rem}.message{margin:.5rem 0}.user{text-align:right;color:#225}
.card{border:1px solid #c90;border-radius:6px;padding:.6rem;margin:.4rem 0;background:#fff8e6}.card code{display:block;font-size:.8em;margin:.3rem 0}
.notice{color:#a50}.result{color:#060}.denied,.error{color:#a00}input{width:75%}.text{white-space:pre-wrap;overflow-wrap:anywhere}
.host{color:#555}.outside-address{background:#fff1c2;border-radius:3px}.outside{list-style:none;padding:.3rem .5rem;margin:.3rem 0;border-left:3px solid #c90}.card .outside code{display:inline;margin:0}
mark{background:#ffe08a}</style></head>
<body><div id="root"></div><script type="module" src="/app.js"></script></body></html>
`,
);
console.log(`built ${out}`);
