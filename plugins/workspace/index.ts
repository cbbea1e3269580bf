// workspace: read, list, search, write and edit files in one folder: KEEL_WORKSPACE if set, else
// KEEL_HOME/workspace (created, with a few sample files, on first use). Every path goes through
// confine(): '..', absolute paths and symbolic links that lead outside the folder are refused.
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { PluginAPI } from '../../src/plugin-host/types.js';
import { confine, inside, Refused } from './confine.js';
import { matchLines, REGEX_DEADLINE_MS } from './regex.js';

const MAX_READ_BYTES = 1024 * 1024;
const MAX_LINE = 300;
const SKIP_DIRS = new Set(['.git', 'node_modules']);

const SAMPLES: Record<string, string> = {
  'README.md': '# Workspace\n\nJamie’s working folder: meeting notes, a to-do list, the September budget and a loan calculator.\n',
  'notes/todo.md':
    '# To do\n\n- [ ] Draft the Q4 hiring plan (for the 1:1 with Dana, Mon Sep 21)\n- [ ] Check the activation numbers on page 4 of the Q4 themes doc\n- [ ] Questions for the Fabrikam renewal call (Tue Sep 22)\n- [x] Book the car service\n',
  'notes/q4-workshop.md':
    '# Q4 planning workshop (Mon Sep 21, 2:00 PM, Room 4B)\n\nTop three bets:\n1. Onboarding: cut time-to-first-value in half\n2. Self-serve billing\n3. Usage-based alerts\n\nOpen question: are the activation numbers on page 4 too high?\n',
  'budget/september.csv':
    'category,budget,spent\ngroceries,700,512.40\ndining,350,469.36\ntransport,450,398.10\nshopping,300,612.25\nutilities,300,261.31\n',
  'scripts/loan.js':
    '// Monthly payment on a loan: principal, annual rate (e.g. 0.059), months.\nfunction payment(principal, rate, months) {\n  const r = rate / 12;\n  return (principal * r) / (1 - (1 + r) ** -months);\n}\n\nconsole.log(payment(11480, 0.059, 28).toFixed(2));\n',
};

function defaultRoot(home: string): string {
  return join(home, 'workspace');
}

async function seed(dir: string): Promise<void> {
  for (const [name, text] of Object.entries(SAMPLES)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), text);
  }
}

/** Deletes KEEL_HOME/workspace and writes the sample files again. Never touches KEEL_WORKSPACE. */
export async function reset(home: string): Promise<void> {
  const dir = defaultRoot(home);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  await seed(dir);
}

type Out = { content: string; is_error?: boolean; details?: unknown };
const err = (content: string): Out => ({ content, is_error: true });

function size(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

function looksBinary(buf: Buffer): boolean {
  return buf.subarray(0, 8000).includes(0);
}

function intArg(v: unknown, name: string, lo: number, hi: number, dflt: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi)
    throw new Refused(`${name} must be a whole number from ${lo} to ${hi}`);
  return v;
}

export default function setup(api: PluginAPI): void {
  const configured = process.env.KEEL_WORKSPACE?.trim();
  const rootDir = configured ? configured : defaultRoot(api.home);
  let ready: Promise<string> | undefined;
  /** The root, created on first use (the default one with sample files). */
  const root = () => {
    ready ??= (async () => {
      const existed = await stat(rootDir).then(
        (s) => s.isDirectory(),
        () => false,
      );
      if (!existed) {
        await mkdir(rootDir, { recursive: true });
        if (!configured) await seed(rootDir);
      }
      return rootDir;
    })();
    ready.catch(() => {
      ready = undefined;
    });
    return ready;
  };
  const guard =
    (fn: (args: Record<string, unknown>, rootPath: string) => Promise<Out>) =>
    async (args: Record<string, unknown>): Promise<Out> => {
      try {
        return await fn(args, await root());
      } catch (e) {
        if (e instanceof Refused) return err(e.message);
        const code = (e as NodeJS.ErrnoException).code;
        return err(`${code ?? 'error'}: ${(e as Error).message.replace(rootDir, '<workspace>')}`);
      }
    };

  api.registerTool({
    name: 'read_file',
    description: 'Read a text file in the workspace, with line numbers. Long files can be read in parts with offset and limit.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: "Path relative to the workspace, e.g. 'notes/todo.md'." },
        offset: { type: 'integer', minimum: 1, description: 'First line to show (default 1).' },
        limit: { type: 'integer', minimum: 1, maximum: 5000, description: 'Most lines to show (default 400).' },
      },
      required: ['path'],
      additionalProperties: false,
    },
    execute: guard(async (args, r) => {
      const p = await confine(r, args.path);
      if (!p.exists) return err(`No file '${p.rel}' in the workspace.`);
      const st = await stat(p.real);
      if (st.isDirectory()) return err(`'${p.rel}' is a folder; use list_files.`);
      // A FIFO or a device would block the read (or never end): only regular files are read.
      if (!st.isFile()) return err(`'${p.rel}' is not a regular file; read_file reads files only.`);
      if (st.size > MAX_READ_BYTES) return err(`'${p.rel}' is ${size(st.size)}; read_file reads files up to ${size(MAX_READ_BYTES)}.`);
      const buf = await readFile(p.real);
      if (looksBinary(buf)) return err(`'${p.rel}' is a binary file (${size(st.size)}); read_file shows text only.`);
      const lines = buf.toString('utf8').split('\n');
      if (lines[lines.length - 1] === '') lines.pop();
      const offset = intArg(args.offset, 'offset', 1, Number.MAX_SAFE_INTEGER, 1);
      const limit = intArg(args.limit, 'limit', 1, 5000, 400);
      if (offset > Math.max(lines.length, 1)) return err(`'${p.rel}' has ${lines.length} lines; offset ${offset} is past the end.`);
      const shown = lines.slice(offset - 1, offset - 1 + limit);
      const width = String(offset + shown.length - 1).length;
      const body = shown.map((l, i) => `${String(offset + i).padStart(width)}  ${l}`).join('\n');
      const tail =
        offset - 1 + shown.length < lines.length ? `\n… lines ${offset + shown.length}–${lines.length} not shown (use offset).` : '';
      return {
        content: `${p.rel} (${lines.length} lines, ${size(st.size)}):\n${body}${tail}`,
        details: { path: p.rel, lines: lines.length },
      };
    }),
  });

  api.registerTool({
    name: 'list_files',
    description: 'List the files and folders in a workspace folder (the whole workspace by default), with sizes; recursive on request.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: "Folder relative to the workspace (default '.', the workspace itself)." },
        recursive: { type: 'boolean', description: 'Also list sub-folders (symbolic links are not followed).' },
        max_entries: { type: 'integer', minimum: 1, maximum: 2000, description: 'Most entries to list (default 200).' },
      },
      additionalProperties: false,
    },
    execute: guard(async (args, r) => {
      const p = await confine(r, args.path ?? '.');
      if (!p.exists) return err(`No folder '${p.rel}' in the workspace.`);
      if (!(await stat(p.real)).isDirectory()) return err(`'${p.rel}' is a file; use read_file.`);
      const max = intArg(args.max_entries, 'max_entries', 1, 2000, 200);
      const rootReal = await realpath(r);
      const out: string[] = [];
      let more = 0;
      const walk = async (dir: string) => {
        for (const d of (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
          const full = join(dir, d.name);
          const rel = relative(rootReal, full);
          if (out.length >= max) {
            more++;
            continue;
          }
          if (d.isSymbolicLink()) {
            const target = await realpath(full).catch(() => undefined);
            const where =
              target === undefined
                ? 'broken link'
                : inside(rootReal, target)
                  ? `link to ${relative(rootReal, target) || '.'}`
                  : 'link outside the workspace, not followed';
            out.push(`${rel}  (${where})`);
          } else if (d.isDirectory()) {
            out.push(`${rel}/`);
            if (args.recursive === true && !SKIP_DIRS.has(d.name)) await walk(full);
          } else {
            out.push(`${rel}  ${size((await lstat(full)).size)}`);
          }
        }
      };
      await walk(p.real);
      if (out.length === 0) return { content: `'${p.rel}' is empty.`, details: { entries: [] } };
      return {
        content: `${p.rel === '.' ? 'The workspace' : `'${p.rel}'`} holds:\n${out.join('\n')}${more ? `\n… ${more} more (raise max_entries).` : ''}`,
        details: { entries: out.length },
      };
    }),
  });

  api.registerTool({
    name: 'search_files',
    description:
      'Find which files or documents in the workspace mention a word or phrase, or match a regular expression; returns path:line: text for each match.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, description: 'Text to find (or a regular expression with regex: true).' },
        path: { type: 'string', description: "Folder or file to search in (default '.')." },
        regex: { type: 'boolean', description: 'Treat query as a JavaScript regular expression.' },
        case_sensitive: { type: 'boolean', description: 'Match case exactly (default false).' },
        extension: { type: 'string', description: "Only files with this extension, e.g. 'md' or '.csv'." },
        max_results: { type: 'integer', minimum: 1, maximum: 500, description: 'Most matching lines to return (default 50).' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    execute: guard(async (args, r) => {
      if (typeof args.query !== 'string' || args.query === '') return err('query must be some text to find');
      const max = intArg(args.max_results, 'max_results', 1, 500, 50);
      let re: RegExp;
      try {
        const flags = args.case_sensitive === true ? '' : 'i';
        re = args.regex === true ? new RegExp(args.query, flags) : new RegExp(args.query.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), flags);
      } catch (e) {
        return err(`query is not a valid regular expression: ${(e as Error).message}`);
      }
      const ext = typeof args.extension === 'string' && args.extension ? `.${args.extension.replace(/^\./, '')}` : undefined;
      const p = await confine(r, args.path ?? '.');
      if (!p.exists) return err(`No file or folder '${p.rel}' in the workspace.`);
      const rootReal = await realpath(r);
      // Every candidate line first; then one match over all of them (a regex runs off the event loop, with a deadline).
      const lines: { file: string; n: number; text: string }[] = [];
      let files = 0;
      const scan = async (file: string) => {
        if (ext && !file.endsWith(ext)) return;
        const st = await stat(file);
        if (!st.isFile() || st.size > MAX_READ_BYTES) return;
        const buf = await readFile(file);
        if (looksBinary(buf)) return;
        files++;
        for (const [i, line] of buf.toString('utf8').split('\n').entries()) lines.push({ file, n: i + 1, text: line });
      };
      const walk = async (dir: string) => {
        for (const d of (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
          // Links are never followed here: a link out of the workspace must not be searched.
          if (d.isSymbolicLink()) continue;
          if (d.isDirectory()) {
            if (!SKIP_DIRS.has(d.name)) await walk(join(dir, d.name));
          } else if (d.isFile()) await scan(join(dir, d.name));
        }
      };
      if ((await stat(p.real)).isDirectory()) await walk(p.real);
      else await scan(p.real);
      const texts = lines.map((l) => l.text.slice(0, 2000));
      let matched: number[];
      if (args.regex === true) {
        const found = await matchLines(re.source, re.flags, texts);
        if (found === 'timeout') {
          return err(
            `the regular expression took longer than ${REGEX_DEADLINE_MS / 1000} s and was stopped: simplify it (avoid nested repeats like (a+)+)`,
          );
        }
        matched = found;
      } else {
        matched = texts.flatMap((t, i) => (re.test(t) ? [i] : []));
      }
      const total = matched.length;
      const hits = matched
        .slice(0, max)
        .map((i) => `${relative(rootReal, lines[i].file)}:${lines[i].n}: ${lines[i].text.trim().slice(0, MAX_LINE)}`);
      if (total === 0)
        return { content: `No matches for '${args.query}' in ${files} file${files === 1 ? '' : 's'}.`, details: { matches: 0 } };
      const more = total > hits.length ? `\n… ${total - hits.length} more matches (raise max_results or narrow the search).` : '';
      return {
        content: `${total} match${total === 1 ? '' : 'es'} for '${args.query}':\n${hits.join('\n')}${more}`,
        details: { matches: total },
      };
    }),
  });

  /** Writes through the resolved real path; O_NOFOLLOW refuses a link swapped in since the check. */
  const put = async (real: string, text: string) => {
    const fh = await open(real, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
    try {
      await fh.writeFile(text, 'utf8');
    } finally {
      await fh.close();
    }
  };

  api.registerTool({
    name: 'write_file',
    description:
      'Save text to a file in the workspace: create a new file or overwrite one with the given content, creating its folders if needed.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: "Path relative to the workspace, e.g. 'notes/plan.md'." },
        content: { type: 'string', description: 'The complete new content of the file.' },
        overwrite: {
          type: 'boolean',
          description: 'Replace the file if it exists (default true). With false, an existing file is left alone.',
        },
      },
      required: ['path', 'content'],
      additionalProperties: false,
    },
    execute: guard(async (args, r) => {
      if (typeof args.content !== 'string') return err('content must be a string');
      const p = await confine(r, args.path);
      if (p.rel === '.') return err('path must name a file, not the workspace itself');
      let before: number | undefined;
      if (p.exists) {
        const st = await stat(p.real);
        if (st.isDirectory()) return err(`'${p.rel}' is a folder.`);
        if (args.overwrite === false) return err(`'${p.rel}' already exists and overwrite is false; nothing was written.`);
        before = st.size;
      }
      await mkdir(join(p.real, '..'), { recursive: true });
      await put(p.real, args.content);
      const bytes = Buffer.byteLength(args.content);
      return {
        content: `Wrote ${p.rel} (${size(bytes)}${before === undefined ? ', new file' : `, replacing ${size(before)}`}).`,
        details: { path: p.rel, bytes, created: before === undefined },
      };
    }),
  });

  api.registerTool({
    name: 'edit_file',
    description: 'Change, fix or update text in a workspace file by replacing one exact piece of text with another.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: "Path relative to the workspace, e.g. 'notes/plan.md'." },
        old_string: {
          type: 'string',
          minLength: 1,
          description:
            'The exact text to replace, whitespace included. It must occur exactly once in the file (include surrounding lines to make it unique).',
        },
        new_string: { type: 'string', description: 'The text to put in its place.' },
      },
      required: ['path', 'old_string', 'new_string'],
      additionalProperties: false,
    },
    execute: guard(async (args, r) => {
      if (typeof args.old_string !== 'string' || args.old_string === '')
        return err('old_string must be the exact, non-empty text to replace');
      if (typeof args.new_string !== 'string') return err('new_string must be a string');
      if (args.old_string === args.new_string) return err('old_string and new_string are the same; nothing to change');
      const p = await confine(r, args.path);
      if (!p.exists) return err(`No file '${p.rel}' in the workspace.`);
      const st = await stat(p.real);
      if (!st.isFile()) return err(`'${p.rel}' is not a file.`);
      if (st.size > MAX_READ_BYTES) return err(`'${p.rel}' is larger than ${size(MAX_READ_BYTES)}.`);
      const text = await readFile(p.real, 'utf8');
      const at = text.indexOf(args.old_string);
      if (at < 0) return err(`old_string was not found in ${p.rel}; read the file and copy the text exactly, whitespace included.`);
      let count = 0;
      for (let i = at; i >= 0; i = text.indexOf(args.old_string, i + 1)) count++;
      if (count > 1) return err(`old_string occurs ${count} times in ${p.rel}; include more surrounding text so that it occurs once.`);
      const next = text.slice(0, at) + args.new_string + text.slice(at + args.old_string.length);
      await put(p.real, next);
      const line = text.slice(0, at).split('\n').length;
      return { content: `Edited ${p.rel}: replaced 1 occurrence at line ${line}.`, details: { path: p.rel, line } };
    }),
  });
}
