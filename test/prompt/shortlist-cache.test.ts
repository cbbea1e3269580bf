// R23: the shortlist's index terms are kept between processes (KEEL_HOME/cache/index): a cold
// process stems every word of every tool, most of a small CLI run's ranking cost. What is read back
// must rank exactly as terms made afresh; a bad entry is made again; a changed tool is a new entry.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { normalizeDeclaration } from '../../src/manifest/schema.js';
import { bm25Shortlist, searchTools } from '../../src/prompt/shortlist.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { ToolSpec } from '../../src/types/index.js';
import { fileCache } from '../../src/util/file-cache.js';
import { tempHome } from '../support/helpers.js';

const TOPICS = [
  'calendar events',
  'unpaid bills',
  'inbox messages',
  'weather forecast',
  'notes folder',
  'bank transfers',
  'photos album',
  'flight bookings',
];

/**
 * A fresh pool array each call (the index is kept per array within a process). 120 tools: a pool
 * under 100 makes its terms afresh (cheaper than the cache's hash and file; issue 49).
 */
function pool(change = '', size = 120): ToolSpec[] {
  return Array.from({ length: size }, (_, i) =>
    makeToolSpec(
      {
        name: `tool_${i}`,
        description: `Looks up ${TOPICS[i % TOPICS.length]} for the user, variant ${i}${i === 7 ? change : ''}`,
        parameters: {
          type: 'object',
          properties: { period: { type: 'string', description: 'Which days to cover', enum: ['today', 'weekOf2026'] } },
        },
        execute: () => 'ok',
      },
      `plugin_${i % 5}`,
      normalizeDeclaration({ effect: 'read', ...(i % 6 === 0 ? { guidance: `For totals call tool_${i + 1} first.` } : {}) }),
    ),
  );
}

const REQUESTS = ['what bills are unpaid this week', 'show my calendar events today', 'hello', 'forecast for my flight', 'photos'];

/** The terms a request made are written after it (setImmediate): what the next process finds. */
const written = () => new Promise((resolve) => setImmediate(resolve));

function rank(p: ToolSpec[], cacheDir?: string): string[][] {
  const s = bm25Shortlist(8, cacheDir ? fileCache(cacheDir) : undefined);
  return REQUESTS.map((r) => [...s(p, new Set(), r, p)]);
}

test('R23: index terms read back from the cache rank exactly as terms made afresh', async () => {
  const dir = tempHome('keel-index-cache-');
  const fresh = rank(pool());
  assert.deepEqual(rank(pool(), dir), fresh, 'made and kept');
  assert.equal(readdirSync(dir).length, 0, 'written after the request, not during it');
  await written();
  assert.equal(readdirSync(dir).filter((f) => f.startsWith('terms-')).length, 1);
  assert.deepEqual(rank(pool(), dir), fresh, 'read back');
});

test('R23 (issue 49): a pool of fewer than 100 tools makes its terms afresh and keeps no file', async () => {
  const dir = tempHome('keel-index-cache-');
  const small = () => pool('', 99);
  assert.deepEqual(rank(small(), dir), rank(small()));
  await written();
  assert.deepEqual(readdirSync(dir), []);
});

test('R23: what the cache holds is what the index uses; a malformed entry is made again; a changed tool is a new entry', async () => {
  const dir = tempHome('keel-index-cache-');
  rank(pool(), dir);
  await written();
  const [file] = readdirSync(dir);
  const kept = JSON.parse(readFileSync(join(dir, file), 'utf8')) as string[][][];
  assert.equal(kept.length, 120);
  // Read back, not remade: a term only the cache holds finds its tool.
  kept[3][0] = ['zzzunique'];
  writeFileSync(join(dir, file), JSON.stringify(kept));
  const p = pool();
  assert.deepEqual([...bm25Shortlist(1, fileCache(dir))(p, new Set(), 'zzzunique', p)], ['tool_3']);
  // A malformed entry (wrong shape) is ignored and written again whole.
  writeFileSync(join(dir, file), JSON.stringify([['not', 'terms']]));
  assert.deepEqual(rank(pool(), dir), rank(pool()));
  await written();
  assert.equal((JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown[]).length, 120);
  // Another description: another key, the first entry untouched.
  rank(pool(' with a new sentence'), dir);
  await written();
  assert.equal(readdirSync(dir).length, 2);
});

test("R23 (issue 49): the index's first term ranks like any other (postings are numbered from 0)", () => {
  // "alpha" is the first term of the first tool: the term numbered 0 in the pool's index.
  const p = pool().map((t, i) => (i === 0 ? { ...t, name: 'alpha_lookup', description: 'Looks up alpha records.' } : t));
  // searchTools ranks only (the shortlist would fill its room with the pool's first tool anyway).
  assert.deepEqual(
    searchTools(p, p, 'alpha', 1).map((t) => t.name),
    ['alpha_lookup'],
  );
});
