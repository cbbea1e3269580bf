// Compiled by test/tools/define.test.ts under `strict`: typed handlers with no casts; the lines
// marked @ts-expect-error must fail to compile (the test also checks they do without the mark).
import { z } from 'zod';
import { defineTool } from '../../../src/tools/define.js';

export const fromZod = defineTool({
  name: 'add_todo',
  description: 'Add a to-do',
  parameters: z.object({ title: z.string(), due: z.string().optional(), priority: z.enum(['low', 'high']).default('low') }),
  execute: (args) => {
    const title: string = args.title;
    const due: string | undefined = args.due;
    const priority: 'low' | 'high' = args.priority;
    // @ts-expect-error: no such property
    args.titel;
    return `${title} ${due ?? ''} ${priority}`;
  },
});

export const fromJsonSchema = defineTool({
  name: 'list_todos',
  description: 'List to-dos',
  parameters: {
    type: 'object',
    properties: {
      done: { type: 'boolean' },
      limit: { type: 'integer' },
      tags: { type: 'array', items: { type: 'string' } },
      sort: { enum: ['due', 'title'] },
    },
    required: ['done'],
  },
  execute: (args) => {
    const done: boolean = args.done;
    const limit: number | undefined = args.limit;
    const tags: string[] | undefined = args.tags;
    const sort: 'due' | 'title' | undefined = args.sort;
    // @ts-expect-error: no such property
    args.dnoe;
    return `${done} ${limit} ${tags?.join(',')} ${sort}`;
  },
});
