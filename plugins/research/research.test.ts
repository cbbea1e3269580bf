import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { cleanup, type FakeHost, mount } from '../_test/fake-api.js';
import setup, { DOCS_DIR, dbPath, reset, tokens } from './index.js';

const DIR = dirname(fileURLToPath(import.meta.url));

describe('research plugin', () => {
  let host: FakeHost;
  before(async () => {
    host = await mount(DIR, setup);
  });
  after(async () => {
    await host.close();
    cleanup(host.home);
  });

  it('registers research: read, pinned, with guidance', () => {
    assert.deepEqual([...host.tools.keys()], ['research']);
    const d = host.manifest.tools.research;
    assert.deepEqual([d.effect, d.pinned], ['read', true]);
    assert.match(d.guidance ?? '', /name the document/);
  });

  it('ships about fifteen notes and indexes them on first use', async () => {
    const docs = readdirSync(DOCS_DIR).filter((f) => f.endsWith('.md'));
    assert.ok(docs.length >= 15, `${docs.length} docs`);
    assert.equal(existsSync(dbPath(host.home)), false);
    await host.call('research', { query: 'sleep' });
    const db = new Database(dbPath(host.home), { readonly: true });
    const n = db.prepare('SELECT count(*) AS n FROM docs').get() as { n: number };
    db.close();
    assert.equal(n.n, docs.length);
  });

  it('ranks the note about the subject first and quotes the passage that matches', async () => {
    const r = await host.call('research', { query: 'credit card utilization score' });
    assert.match(
      r.content,
      /^3 documents for 'credit card utilization score':\n1\. Credit utilization and your credit score \(credit-utilization\.md, score \d+\.\d\d\)\n {3}“Credit utilization is the share/,
    );
    const s = await host.call('research', { query: 'Sintra palaces', limit: 1 });
    assert.match(
      s.content,
      /^1 document for 'Sintra palaces':\n1\. Lisbon in three days › Day three: Sintra or the city centre \(lisbon-guide\.md/,
    );
    assert.match(s.content, /“Sintra's palaces are a 40-minute train ride from Rossio station/);
    const jet = await host.call('research', { query: 'jet lag after flying east', limit: 5 });
    const details = jet.details as { hits: { file: string; score: number }[] };
    assert.equal(details.hits[0].file, 'jet-lag.md');
    for (let i = 1; i < details.hits.length; i++) assert.ok(details.hits[i - 1].score >= details.hits[i].score, 'sorted by score');
  });

  it('folds case, accents and plurals', () => {
    assert.deepEqual(tokens('São Jorge CASTLES and the Cities'), ['sao', 'jorge', 'castle', 'city']);
    assert.deepEqual(tokens('class glass'), ['class', 'glass']);
  });

  it('says what the library holds when nothing matches', async () => {
    const r = await host.call('research', { query: 'quantum chromodynamics' });
    assert.equal(r.is_error, false);
    assert.match(
      r.content,
      /^No document matches 'quantum chromodynamics'\. The library holds: Beating jet lag; Building an emergency fund;/,
    );
    const stop = await host.call('research', { query: 'what is the' });
    assert.match(stop.content, /^No document matches/);
  });

  it('refuses bad arguments', async () => {
    assert.equal((await host.call('research', {})).is_error, true);
    assert.equal((await host.call('research', { query: 'sleep', limit: 11 })).is_error, true);
    assert.match((await host.raw('research', { query: '  ' })).content, /query must be some words/);
    assert.match((await host.raw('research', { query: 'sleep', limit: 0 })).content, /limit must be a whole number from 1 to 10/);
  });

  it('reset rebuilds the index with the same results', async () => {
    const before = (await host.call('research', { query: 'backup ransomware restore' })).content;
    await reset(host.home);
    assert.equal((await host.call('research', { query: 'backup ransomware restore' })).content, before);
  });
});
