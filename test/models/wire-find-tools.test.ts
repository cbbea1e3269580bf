// P3/R31 on the wire: a find_tools search, then a call of the tool it found, through the real
// provider code (pi-ai) against a strict fake gateway, which refuses a reply calling a tool the
// request did not declare and a history naming one. Once per protocol.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bm25Shortlist } from '../../src/prompt/shortlist.js';
import { declaredTools, type ScriptedReply } from '../support/fake-gateway.js';
import { allIds, assertWirePairing, FIXTURE_PLUGINS, ROUTES, resultFor, WireWorld } from './wire-support.js';

for (const route of ROUTES) {
  describe(`wire (${route.protocol}): find_tools`, () => {
    test('R31 strict gateway: the search, then the found tool declared and called, then the answer — every request accepted', async () => {
      const find = route.id('find');
      const cal = route.id('cal');
      const replies: ScriptedReply[] = [
        { tool_calls: [{ id: find, name: 'find_tools', args: { query: 'events on a day' } }] },
        { tool_calls: [{ id: cal, name: 'calendar_lookup', args: { day: '2026-09-30' } }] },
        { text: 'Nothing on Sept 30.' },
      ];
      const w = await WireWorld.start(route, replies, { strict: true });
      try {
        // The fixture pool (15 tools in Agent mode) over a cap of 6: calendar_lookup is left off at first.
        const r = await w.keel({ shortlist: bm25Shortlist(6) }).run('hello', { model: route.spec, pluginDirs: [FIXTURE_PLUGINS] });
        assert.equal(r.status, 'done', r.answer ?? '');
        assert.equal(r.answer, 'Nothing on Sept 30.');
        assert.equal(w.gateway.requests.length, 3);
        for (const req of w.gateway.requests) assert.equal(req.status, 200, req.error);

        const first = declaredTools(w.gateway.requests[0]).map((t) => t.name);
        assert.ok(first.includes('find_tools'), `find_tools declared: ${first}`);
        assert.ok(!first.includes('calendar_lookup'), 'calendar_lookup not declared before the search');
        assert.match(resultFor(w.gateway, 1, find).content, /^- calendar_lookup: Events on a day \(reads only\)$/m);
        assert.ok(
          declaredTools(w.gateway.requests[1]).some((t) => t.name === 'calendar_lookup'),
          'declared in the request after the search, before it is called',
        );
        assert.match(resultFor(w.gateway, 2, cal).content, /No events on 2026-09-30/);
        assert.ok(
          declaredTools(w.gateway.requests[2]).some((t) => t.name === 'calendar_lookup'),
          'and it stays declared',
        );
        assert.ok(r.requests[1].found?.includes('calendar_lookup'), 'the run records what the search admitted');
        assert.equal(r.requests[0].found, undefined, 'nothing before the search');
        assertWirePairing(w.gateway, allIds(replies));
      } finally {
        await w.close();
      }
    });
  });
}
