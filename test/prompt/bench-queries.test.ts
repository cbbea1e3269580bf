/**
 * R23/R31 measured honestly (issue #18): bench/queries.yaml's hard kinds stay what they claim to be.
 * At least 30 of each; every paraphrase shares no content word with the text of the tools it needs
 * (so a tool description edited to contain the request's words shows up here, not as a better
 * figure); each hard request has the restatement bench/prompt searches with.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type LabelledRequest, loadQueries, paraphraseViolations, sameWord } from '../../bench/support/prompt-queries.js';
import { generatedTools } from '../../bench/support/prompt-tools.js';
import { mountPlugins } from '../../src/plugin-host/host.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { askUser, findTools, memoryTools } from '../../src/tools/builtins.js';
import type { ToolSpec } from '../../src/types/index.js';
import { tempHome } from '../support/helpers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

async function benchPool(): Promise<{ byName: Map<string, ToolSpec>; close: () => Promise<void> }> {
  const home = tempHome('keel-bench-queries-');
  const store = new SqliteStore(':memory:');
  const reg = await mountPlugins([join(ROOT, 'plugins')], { home, builtins: [askUser, ...memoryTools(store), findTools] });
  const pool = [...reg.pool, ...generatedTools()];
  return {
    byName: new Map(pool.map((t) => [t.name, t])),
    close: async () => {
      await reg.close();
      await store.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

test('R23/R31 (bench/prompt): at least 30 requests of each hard kind, each with a restatement; every paraphrase shares no content word with its tools', async (t) => {
  const { byName, close } = await benchPool();
  t.after(close);
  const queries = loadQueries(join(ROOT, 'bench', 'queries.yaml'), new Set(byName.keys()));
  const of = (kind: string) => queries.filter((q) => q.kind === kind);
  for (const kind of ['paraphrase', 'story', 'non_english']) {
    assert.ok(of(kind).length >= 30, `${of(kind).length} ${kind} requests`);
    for (const q of of(kind)) assert.ok(q.restatement && q.restatement.length > 0, `${q.request}: no restatement`);
  }
  const langs = new Set(of('non_english').map((q) => q.lang));
  for (const l of ['ko', 'zh', 'id']) assert.ok(langs.has(l), `no ${l} request`);
  assert.deepEqual(paraphraseViolations(queries, byName), [], 'paraphrases that share a word with the tool they need');
  assert.ok(of('plain').length >= 100, 'the plain requests are still there');
});

test('R23/R31 (bench/prompt): the paraphrase check finds a shared word, in any form', async (t) => {
  const { byName, close } = await benchPool();
  t.after(close);
  const q = (request: string, needs: string[]): LabelledRequest => ({ request, needs, kind: 'paraphrase', restatement: 'x' });
  const found = paraphraseViolations(
    [
      q('Turn the kitchen lights off', ['home_lights']), // "lights" is in the tool's name and description
      q('Remind me about the dentist', ['create_reminder']), // remind ~ reminder
      q('Jordan owes me for half the groceries, nudge him', ['pay_request_money']), // a parameter's description
      q('Shush the tunes for a minute', ['music_pause']),
    ],
    byName,
  );
  assert.deepEqual(
    found.map((v) => v.tool),
    ['home_lights', 'create_reminder', 'pay_request_money'],
  );
  assert.equal(sameWord('wash', 'washing'), true);
  assert.equal(sameWord('invoice', 'invoicing'), true);
  assert.equal(sameWord('stop', 'stock'), false);
});
