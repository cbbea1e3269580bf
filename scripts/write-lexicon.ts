/**
 * Writes src/prompt/lexicon-data.ts: the shortlist lexicon's table (src/prompt/lexicon.ts) parsed,
 * packed (one string per table), so a process reads it instead of parsing the table (issue 49). Run after editing the
 * table: `npm run lexicon`. test/prompt/lexicon.test.ts fails while the two disagree.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packLexicon, parseLexicon, TABLE } from '../src/prompt/lexicon.js';

const file = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'prompt', 'lexicon-data.ts');
writeFileSync(
  file,
  `/**\n * The shortlist lexicon's table (lexicon.ts) parsed and packed (packLexicon): written by\n * \`npm run lexicon\` (scripts/write-lexicon.ts), never by hand. test/prompt/lexicon.test.ts checks it\n * is the table's.\n */\nimport type { PackedLexicon } from './lexicon.js';\n\nexport const LEXICON: PackedLexicon = ${JSON.stringify(packLexicon(parseLexicon(TABLE)), null, 2)};\n`,
);
console.log(`wrote ${file}`);
