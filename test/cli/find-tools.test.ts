/** R31 in the CLI: a run's trace shows what each find_tools search added to the menu. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { json, keel, script, tempHome } from '../support/helpers.js';

test('R31: keel runs show names the tools a find_tools search added to the next request', async () => {
  const home = tempHome();
  // The bundled plugins hold more tools than the shortlist's cap, so find_tools is on the menu.
  const model = script(home, [
    { tool_calls: [{ name: 'find_tools', args: { query: 'read or change files in my workspace' } }] },
    { text: 'Found it.' },
  ]);
  const run = json<{ run_id: string; requests: { found?: string[] }[] }>(
    await keel(['run', '--json', '--model', model, 'hello'], { KEEL_HOME: home }),
  );
  const found = run.requests[1]?.found ?? [];
  assert.ok(found.length > 0, JSON.stringify(run.requests.map((r) => r.found)));
  const shown = await keel(['runs', 'show', run.run_id], { KEEL_HOME: home });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`step 2: .*; found by find_tools: ${found.join(', ')}`));
});
