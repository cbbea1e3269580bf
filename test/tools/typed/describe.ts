// Compiled by test/tools/define.test.ts under `strict`, with TypeScript 7 and with 5.9: a tool's
// `describe` may give a title alone (issue 47); the card then has the title and no lines.
import { z } from 'zod';
import { defineTool } from '../../../src/tools/define.js';

export const removeFile = defineTool({
  name: 'remove_file',
  description: 'Remove a file',
  parameters: z.object({ name: z.string() }),
  effect: 'destructive',
  describe: ({ name }) => ({ title: `Remove ${name}` }),
  execute: ({ name }) => `Removed ${name}.`,
});

export const sendNote = defineTool({
  name: 'send_note',
  description: 'Send a note',
  parameters: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
  effect: 'write',
  describe: ({ to }) => ({ title: `Send a note to ${to}` }),
  execute: ({ to }) => `Sent to ${to}.`,
});
