// Serves the built page and passes /v1/* through to keel serve, so the page and the API share an origin.
// node examples/chat-ui/serve.mjs [--port 5173] [--keel http://127.0.0.1:7373]   (keel serve's own default port)
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const keel = arg('keel', 'http://127.0.0.1:7373').replace(/\/$/, '');
const port = Number(arg('port', '5173'));
const files = { '/': ['index.html', 'text/html'], '/app.js': ['app.js', 'text/javascript'] };

const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname.startsWith('/v1/')) {
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Readable.toWeb(req);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== 'host' && k !== 'connection'));
    const up = await fetch(`${keel}${url.pathname}${url.search}`, { method: req.method, headers, body, duplex: 'half' }).catch(
      (err) => new Response(`keel serve at ${keel} did not answer: ${err.message}`, { status: 502 }),
    );
    res.writeHead(up.status, Object.fromEntries(up.headers));
    if (up.body) Readable.fromWeb(up.body).pipe(res);
    else res.end();
    return;
  }
  const f = files[url.pathname];
  if (!f) {
    res.writeHead(404).end('not found');
    return;
  }
  // O5 (issue 46), a second line behind the page's own rendering: nothing it shows may fetch from
  // another host (no remote image, frame or script), and a link followed by a click sends no referrer.
  res
    .writeHead(200, {
      'content-type': f[1],
      'content-security-policy':
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'",
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
    })
    .end(readFileSync(join(here, 'dist', f[0])));
});
server.listen(port, '127.0.0.1', () => console.log(`chat page on http://127.0.0.1:${server.address().port}/ (keel serve at ${keel})`));
