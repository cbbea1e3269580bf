/** A webhook receiver on 127.0.0.1 and a config.yaml that names it (for KEEL_CONFIG). */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { tempHome } from './helpers.js';

export interface Hook {
  type: string;
  run_id: string;
  data: Record<string, unknown>;
}

/**
 * Every delivery it gets, in order; `env` points a Keel process at it (KEEL_CONFIG, a signing secret)
 * for the events a card sets off and a run that fails.
 */
export async function webhookReceiver(t: TestContext): Promise<{ got: Hook[]; env: Record<string, string> }> {
  const got: Hook[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      got.push(JSON.parse(body));
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const config = join(tempHome('keel-hooks-'), 'config.yaml');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  writeFileSync(
    config,
    `notify:\n  - url: ${url}\n    events: [approval_created, run_paused, run_failed]\n    secret_env: KEEL_TEST_HOOK_SECRET\n`,
  );
  return { got, env: { KEEL_CONFIG: config, KEEL_TEST_HOOK_SECRET: 'a-secret' } };
}
