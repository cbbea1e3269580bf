/**
 * R23 (issue 49): the shortlist's terms come from one regular-expression match with no look-behind;
 * its pieces are exactly what the look-behind split it replaced gives (without empty strings), on
 * generated texts of letters, digits, humps, separators and other scripts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pieces } from '../../src/prompt/shortlist.js';
import { referencePieces as reference } from '../support/terms-reference.js';

test('R23: pieces() splits as the regular expression did, on hand-picked texts', () => {
  for (const text of [
    '',
    'read_notes_0009',
    'getHTTPServer2Status',
    '401(k) and 401k',
    'Read one calendar record (source 12) by path.',
    '  leading and trailing  ',
    'camelCaseWords XMLHttpRequest a1b2c3',
    'café naïve 文件 ファイル',
    'x',
    'A',
    '9a',
  ])
    assert.deepEqual(pieces(text), reference(text), JSON.stringify(text));
});

test('R23: pieces() splits as the regular expression did, on 20,000 generated texts', () => {
  const alphabet = 'abcxyzABCXYZ0189 _-.(),/:éÉ文\t\n';
  let seed = 49;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  for (let k = 0; k < 20_000; k++) {
    let text = '';
    const len = Math.floor(rnd() * 24);
    for (let i = 0; i < len; i++) text += alphabet[Math.floor(rnd() * alphabet.length)];
    assert.deepEqual(pieces(text), reference(text), JSON.stringify(text));
  }
});
