/**
 * M5: writes schema/plugin.schema.json from the manifest's zod schema, so editors validate
 * plugin.yaml as it is typed. Run `npm run schema` after changing src/manifest/schema.ts;
 * test/manifest/schema-file.test.ts fails while the committed file is stale.
 *
 *   node --import tsx scripts/write-schema.ts [--check]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { manifestJsonSchema } from '../src/manifest/schema.js';

export const SCHEMA_FILE = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'schema', 'plugin.schema.json');

/** The file's exact text: pretty JSON with a trailing newline. */
export function schemaText(): string {
  return `${JSON.stringify(manifestJsonSchema(), null, 2)}\n`;
}

function run(): number {
  const text = schemaText();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(SCHEMA_FILE, 'utf8');
    } catch {}
    if (current === text) return 0;
    process.stderr.write(`${SCHEMA_FILE} is stale: run 'npm run schema' and commit it\n`);
    return 1;
  }
  mkdirSync(dirname(SCHEMA_FILE), { recursive: true });
  writeFileSync(SCHEMA_FILE, text);
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = run();
