// R23: the shortlist's query expansion (src/prompt/lexicon.ts). A request that says what it needs in
// words no tool uses — informal English, or another language — still gets the tool on the menu;
// the expansion only adds words the pool's index has, below the request's own words.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeDeclaration } from '../../src/manifest/schema.js';
import { expansions, lexicon, packLexicon, parseLexicon, TABLE } from '../../src/prompt/lexicon.js';
import { LEXICON } from '../../src/prompt/lexicon-data.js';
import { buildMenu } from '../../src/prompt/menu.js';
import { bm25Shortlist, isStopWord, searchTools } from '../../src/prompt/shortlist.js';
import { makeToolSpec } from '../../src/tools/spec.js';
import type { ToolSpec } from '../../src/types/index.js';

const tool = (name: string, description: string): ToolSpec =>
  makeToolSpec(
    { name, description, parameters: { type: 'object', properties: { q: { type: 'string' } } }, execute: () => 'ok' },
    'p',
    normalizeDeclaration({ effect: 'read' }),
  );

// Distractors first: a shortlist that ranks nothing fills the room in pool order and never reaches the tools after them.
const DOMAINS = ['invoice', 'spreadsheet', 'warehouse', 'firewall', 'playlist', 'recipe', 'garden', 'payroll', 'survey', 'ticket'];
const distractors = Array.from({ length: 40 }, (_, i) =>
  tool(`${DOMAINS[i % DOMAINS.length]}_${i}`, `Manage the ${DOMAINS[i % DOMAINS.length]} records of team ${i}.`),
);
const targets = {
  phone_call: tool('phone_call', 'Place a phone call to a contact.'),
  text_translate: tool('text_translate', 'Translate text into another language.'),
  parcel_track: tool('parcel_track', 'Track a shipment by its tracking number and show where it is.'),
  create_reminder: tool('create_reminder', 'Create a reminder that fires at a given time.'),
};
const pool = [...distractors, ...Object.values(targets)];

const menu = (request: string, expand?: boolean) =>
  buildMenu(
    { pool, mode: 'agent', called: new Set(), admitted: new Set(), request },
    bm25Shortlist(6, expand === undefined ? {} : { expand }),
  ).tools.map((t) => t.name);

const CASES: [string, keyof typeof targets][] = [
  // A paraphrase: no word of the tool's text.
  ['Ring the landlord about the heater', 'phone_call'],
  // Chinese, Korean and Indonesian requests for English-described tools.
  ['帮我把这段话翻译成西班牙语', 'text_translate'],
  ['택배 언제 도착해?', 'parcel_track'],
  ['Ingatkan saya minum obat jam 8', 'create_reminder'],
];

for (const [request, needed] of CASES) {
  test(`R23: "${request}" puts ${needed} on the menu, where plain BM25F leaves it off`, () => {
    assert.ok(menu(request).includes(needed), `shortlisted: ${menu(request)}`);
    assert.ok(!menu(request, false).includes(needed), 'without the expansion the ranking cannot see it');
  });
}

test("R23: an expanded word counts only where the pool's index has it, and below the request's own words", () => {
  // Two tools alike but for one word: "fax" is the request's own word, "ring" adds phone (and call) through the lexicon.
  // phone_dial first in the pool: were the two weighted alike, the tie would go to it.
  const alike = [...distractors, tool('phone_dial', 'Phone dial.'), tool('fax_dial', 'Fax dial.')];
  assert.deepEqual(
    searchTools(alike, alike, 'fax or ring', 5).map((t) => t.name),
    ['fax_dial', 'phone_dial'],
  );
  assert.deepEqual(
    searchTools(alike, alike, 'fax or ring', 5, new Set(), { expand: false }).map((t) => t.name),
    ['fax_dial'],
  );
  // The lexicon knows "snooze" (sleep), but no tool here says sleep: nothing is ranked for it.
  assert.deepEqual(searchTools(pool, pool, 'snooze', 5), []);
});

test('R23: the lexicon matches words, their stems, word beginnings, phrases and forms in other scripts', () => {
  const lex = parseLexicon(`
    message send = ping, kirim, 메시지
    note create = jot down
    reserve book = reservar
  `);
  assert.deepEqual(expansions('stop pinging me', lex), ['message', 'send'], 'by stem');
  assert.deepEqual(expansions('a pingback', lex), [], 'a word shorter than five letters is not a beginning');
  assert.deepEqual(expansions('Kirimkan ini', lex), ['message', 'send'], 'kirim, five letters, is');
  assert.deepEqual(expansions('quiero reservarla', lex), ['reserve', 'book'], 'a beginning of five letters or more');
  assert.deepEqual(expansions('please Jot Down this', lex), ['note', 'create'], 'a phrase, in any case');
  assert.deepEqual(expansions('jot it down', lex), [], 'a phrase is its words in a row');
  assert.deepEqual(expansions('김 팀장에게메시지를 보내', lex), ['message', 'send'], 'inside a word of another script');
  assert.deepEqual(expansions('hello there', lex), []);
  // A story problem: a question over two numbers or more is arithmetic; one number is not.
  assert.deepEqual(expansions('We split a $90 bill three ways with a 15% tip. How much each?', lex), [
    'calculate',
    'arithmetic',
    'evaluate',
  ]);
  assert.deepEqual(expansions('What is on at 9?', lex), []);
});

test('R23: the expansion is bounded however long the request', () => {
  const long = 'ping kirim reservar jot down 메시지 '.repeat(50_000);
  const lex = parseLexicon('a b c d e f g h i j = ping\nk l m n o p q r s t = kirim\nu v w x y z = reservar');
  assert.ok(expansions(long, lex, 12).length <= 12);
  assert.ok(expansions(long).length <= 48);
  // The shortlist still ranks it.
  assert.ok(menu(long).length > 0);
});

test('R23: no single word of the table is one of the ranking\'s stop words ("show me …" is no concert)', () => {
  assert.deepEqual(
    [...lexicon().words.keys()].filter((w) => isStopWord(w)),
    [],
  );
  assert.deepEqual(expansions('Show me the social notifications from this week'), []);
});

test('R23 (issue 49): the lexicon a process reads (lexicon-data.ts) is the table parsed — run `npm run lexicon` after editing the table', () => {
  const parsed = parseLexicon(TABLE);
  assert.deepEqual(LEXICON, packLexicon(parsed), 'every table, scriptStarts included');
  // And every look-up of the packed tables answers what the parsed Maps answer.
  const kept = lexicon();
  for (const table of ['words', 'stemmed', 'phrases', 'scripts', 'scriptStarts'] as const) {
    assert.deepEqual([...kept[table].keys()], [...parsed[table].keys()], table);
    for (const [key, value] of parsed[table]) assert.deepEqual(kept[table].get(key), value, `${table}: ${key}`);
    assert.equal(kept[table].size, parsed[table].size);
  }
  assert.deepEqual([...kept.phraseStarts.keys()], [...parsed.phraseStarts]);
  assert.equal(kept.phraseWords, parsed.phraseWords);
  assert.ok(kept.words.size > 300 && kept.scripts.size > 300);
  // A key that is no entry, or only part of one, finds nothing.
  for (const miss of ['', 'whispe', 'hisper', 'message', 'message\u0003send', '\u0001whisper', 'whisper\u0002message', 'shoot a'])
    assert.equal(kept.words.get(miss) ?? kept.phrases.get(miss), undefined, JSON.stringify(miss));
  assert.equal(kept.phraseStarts.has('shoot'), true);
  assert.equal(kept.phraseStarts.has('shoo'), false);
});
