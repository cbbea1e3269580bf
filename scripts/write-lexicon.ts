/**
 * Writes src/prompt/lexicon-data.ts: the shortlist lexicon's table (src/prompt/lexicon.ts) parsed,
 * as JSON, so a process reads it instead of parsing the table (issue 49). Run after editing the
 * table: `npm run lexicon`. test/prompt/lexicon.test.ts fails while the two disagree.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lexiconJson, parseLexicon, TABLE } from '../src/prompt/lexicon.js';

const file = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'prompt', 'lexicon-data.ts');
writeFileSync(
  file,
  `/**\n * The shortlist lexicon's table (lexicon.ts) parsed, as JSON: written by \`npm run lexicon\`\n * (scripts/write-lexicon.ts), never by hand. test/prompt/lexicon.test.ts checks it is the table's.\n */\nexport const LEXICON_JSON = ${JSON.stringify(lexiconJson(parseLexicon(TABLE)))};\n`,
);
console.log(`wrote ${file}`);
