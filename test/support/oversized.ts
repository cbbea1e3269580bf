/**
 * S3's probe for KEEL_MAX_BODY_BYTES (`keel serve` and `keel mcp serve --http`): POSTs a body of
 * `declared` bytes (or chunked, with no length, when `declared` is 'chunked'), but writes at most
 * `upTo` bytes and then holds the request open, waiting for the answer — a server that read the
 * whole body first would never answer.
 */
import { request } from 'node:http';

const CHUNK = Buffer.alloc(16 * 1024, 'a');

export interface Sent {
  status: number;
  body: string;
  /** Bytes of the body written before the answer came. */
  sent: number;
}

export function oversized(
  url: string,
  o: { declared: number | 'chunked'; upTo: number; headers?: Record<string, string>; method?: string },
): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { 'content-type': 'application/x-www-form-urlencoded', ...(o.headers ?? {}) };
    if (o.declared !== 'chunked') headers['content-length'] = o.declared;
    const req = request(url, { method: o.method ?? 'POST', headers });
    let sent = 0;
    let answered = false;
    const t = setTimeout(() => {
      req.destroy();
      reject(new Error(`${url}: no answer after ${sent} bytes of a body over the limit: the server waits for the whole body`));
    }, 10_000);
    req.on('response', (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        clearTimeout(t);
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body, sent });
      });
    });
    req.on('error', (err) => {
      if (!answered) {
        clearTimeout(t);
        reject(err);
      }
    });
    const pump = () => {
      const end = o.declared === 'chunked' ? o.upTo : Math.min(o.upTo, o.declared);
      while (!answered && sent < end) {
        const chunk = CHUNK.subarray(0, Math.min(CHUNK.length, end - sent));
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
    };
    req.flushHeaders();
    pump();
  });
}
