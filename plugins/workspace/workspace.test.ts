import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cleanup, type FakeHost, mount } from '../_test/fake-api.js';
import setup, { reset } from './index.js';

const DIR = dirname(fileURLToPath(import.meta.url));

describe('workspace plugin', () => {
  let host: FakeHost;
  let ws: string;
  let outside: string;
  before(async () => {
    host = await mount(DIR, setup);
    ws = join(host.home, 'workspace');
    outside = mkdtempSync(join(tmpdir(), 'keel-outside-'));
    writeFileSync(join(outside, 'secret.txt'), 'TOP-SECRET outside the workspace\n');
  });
  after(async () => {
    await host.close();
    cleanup(host.home);
    rmSync(outside, { recursive: true, force: true });
  });

  it('declares reads as read and writes as write with contract_modes: declare and the default confirm', () => {
    const t = host.manifest.tools;
    for (const n of ['read_file', 'list_files', 'search_files']) assert.equal(t[n].effect, 'read');
    for (const n of ['write_file', 'edit_file']) {
      assert.equal(t[n].effect, 'write');
      assert.equal(t[n].contract_modes, 'declare');
      assert.equal(t[n].confirm, undefined, 'confirm once by default');
    }
    assert.deepEqual([...host.tools.keys()].sort(), ['edit_file', 'list_files', 'read_file', 'search_files', 'write_file']);
  });

  it('creates KEEL_HOME/workspace with sample files on first use, and lists it', async () => {
    assert.equal(existsSync(ws), false);
    const r = await host.call('list_files', { recursive: true });
    assert.equal(r.is_error, false);
    assert.match(r.content, /^The workspace holds:\nREADME\.md {2}\d+ B\nbudget\/\nbudget\/september\.csv/);
    assert.match(r.content, /notes\/todo\.md/);
  });

  it('reads with line numbers, in parts; refuses folders, binaries and missing files', async () => {
    const r = await host.call('read_file', { path: 'notes/todo.md' });
    assert.match(r.content, /^notes\/todo\.md \(6 lines, \d+ B\):\n1 {2}# To do\n2 {2}\n3 {2}- \[ \] Draft the Q4 hiring plan/);
    const part = await host.call('read_file', { path: 'notes/todo.md', offset: 3, limit: 2 });
    assert.match(part.content, /\n3 {2}- \[ \] Draft.*\n4 {2}- \[ \] Check.*\n… lines 5–6 not shown \(use offset\)\.$/);
    assert.match((await host.call('read_file', { path: 'notes' })).content, /'notes' is a folder/);
    assert.match((await host.call('read_file', { path: 'nope.md' })).content, /No file 'nope\.md'/);
    writeFileSync(join(ws, 'blob.bin'), Buffer.from([1, 0, 2, 0]));
    assert.match((await host.call('read_file', { path: 'blob.bin' })).content, /is a binary file/);
    assert.match((await host.call('read_file', { path: 'notes/todo.md', offset: 99 })).content, /offset 99 is past the end/);
    assert.equal((await host.call('read_file', {})).is_error, true);
  });

  it('a catastrophic regex is stopped at its deadline without blocking the event loop', async () => {
    writeFileSync(join(ws, 'evil.txt'), `${'a'.repeat(40)}!\n`);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 50);
    const started = Date.now();
    const r = await host.call('search_files', { query: '(a+)+$', regex: true, path: 'evil.txt' });
    clearInterval(timer);
    assert.equal(r.is_error, true);
    assert.match(r.content, /took longer than 2 s and was stopped/);
    assert.ok(Date.now() - started < 6_000, `stopped near its deadline (${Date.now() - started} ms)`);
    assert.ok(ticks >= 10, `the event loop kept running (${ticks} ticks)`);
    const ok = await host.call('search_files', { query: 'Q4 hiring', regex: true });
    assert.match(ok.content, /notes\/todo\.md:3:/);
  });

  it('refuses to read a FIFO (it would block forever)', async () => {
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [join(ws, 'pipe')]);
    const r = await host.call('read_file', { path: 'pipe' });
    assert.equal(r.is_error, true);
    assert.match(r.content, /not a regular file/);
    const found = await host.call('search_files', { query: 'x', path: 'pipe' });
    assert.match(found.content, /No matches/);
  });

  it('refuses traversal with .., absolute paths outside, and odd paths; accepts absolute paths inside', async () => {
    for (const path of [
      '../secret.txt',
      'notes/../../x',
      '..',
      `${outside}/secret.txt`,
      '/etc/passwd',
      `notes/${'../'.repeat(12)}etc/passwd`,
    ]) {
      const r = await host.call('read_file', { path });
      assert.equal(r.is_error, true, path);
      assert.match(r.content, /is outside the workspace/, path);
    }
    assert.match((await host.call('read_file', { path: 'a\0b' })).content, /NUL/);
    assert.match((await host.call('read_file', { path: ' ' })).content, /non-empty/);
    assert.match((await host.call('read_file', { path: 'notes/../README.md' })).content, /^README\.md \(/);
    assert.match((await host.call('read_file', { path: join(ws, 'README.md') })).content, /^README\.md \(/);
    const w = await host.call('write_file', { path: `${outside}/new.txt`, content: 'x' });
    assert.equal(w.is_error, true);
    assert.equal(existsSync(join(outside, 'new.txt')), false);
    assert.equal((await host.call('write_file', { path: '../escaped.txt', content: 'x' })).is_error, true);
    assert.equal(existsSync(join(host.home, 'escaped.txt')), false);
    assert.equal((await host.call('list_files', { path: '..' })).is_error, true);
    assert.equal((await host.call('search_files', { query: 'SECRET', path: outside })).is_error, true);
  });

  it('refuses a symlink inside the workspace that points outside: read, write, edit, list, search', async () => {
    symlinkSync(join(outside, 'secret.txt'), join(ws, 'leak.txt'));
    const r = await host.call('read_file', { path: 'leak.txt' });
    assert.equal(r.is_error, true);
    assert.match(r.content, /'leak\.txt' leads outside the workspace through a symbolic link; refused/);
    assert.doesNotMatch(r.content, /TOP-SECRET/);
    assert.equal((await host.call('write_file', { path: 'leak.txt', content: 'overwritten' })).is_error, true);
    assert.equal((await host.call('edit_file', { path: 'leak.txt', old_string: 'TOP', new_string: 'NOT' })).is_error, true);
    assert.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'TOP-SECRET outside the workspace\n');
    const list = await host.call('list_files', {});
    assert.match(list.content, /leak\.txt {2}\(link outside the workspace, not followed\)/);
    const s = await host.call('search_files', { query: 'TOP-SECRET' });
    assert.match(s.content, /^No matches for 'TOP-SECRET'/);
  });

  it('refuses writing (and reading) through a symlinked directory that points outside', async () => {
    symlinkSync(outside, join(ws, 'outdir'));
    const w = await host.call('write_file', { path: 'outdir/planted.txt', content: 'x' });
    assert.equal(w.is_error, true);
    assert.match(w.content, /leads outside the workspace through a symbolic link/);
    assert.equal(existsSync(join(outside, 'planted.txt')), false);
    const deep = await host.call('write_file', { path: 'outdir/new/dir/planted.txt', content: 'x' });
    assert.equal(deep.is_error, true);
    assert.equal(existsSync(join(outside, 'new')), false, 'no folders created outside either');
    assert.equal((await host.call('read_file', { path: 'outdir/secret.txt' })).is_error, true);
    assert.equal((await host.call('list_files', { path: 'outdir' })).is_error, true);
    assert.equal((await host.call('search_files', { query: 'SECRET', path: 'outdir' })).is_error, true);
    const recursive = await host.call('list_files', { recursive: true });
    assert.doesNotMatch(recursive.content, /secret\.txt/);
  });

  it('refuses a dangling symlink whose target would be created outside', async () => {
    symlinkSync(join(outside, 'would-be-created.txt'), join(ws, 'dangle.txt'));
    const w = await host.call('write_file', { path: 'dangle.txt', content: 'x' });
    assert.equal(w.is_error, true);
    assert.match(w.content, /symbolic link that leads nowhere/);
    assert.equal(existsSync(join(outside, 'would-be-created.txt')), false);
  });

  it('follows symlinks that stay inside the workspace', async () => {
    symlinkSync(join(ws, 'notes'), join(ws, 'notes-link'));
    const r = await host.call('read_file', { path: 'notes-link/todo.md' });
    assert.match(r.content, /^notes\/todo\.md \(/, 'reported by its real path');
    const w = await host.call('write_file', { path: 'notes-link/via-link.md', content: 'hello\n' });
    assert.match(w.content, /^Wrote notes\/via-link\.md/);
    assert.equal(readFileSync(join(ws, 'notes', 'via-link.md'), 'utf8'), 'hello\n');
  });

  it('write_file creates folders, overwrites unless told not to, and reports sizes', async () => {
    const w = await host.call('write_file', { path: 'plans/2026/q4.md', content: '# Q4\n' });
    assert.equal(w.content, 'Wrote plans/2026/q4.md (5 B, new file).');
    const o = await host.call('write_file', { path: 'plans/2026/q4.md', content: '# Q4 plan\n' });
    assert.equal(o.content, 'Wrote plans/2026/q4.md (10 B, replacing 5 B).');
    const keep = await host.call('write_file', { path: 'plans/2026/q4.md', content: 'x', overwrite: false });
    assert.match(keep.content, /already exists and overwrite is false/);
    assert.equal(readFileSync(join(ws, 'plans/2026/q4.md'), 'utf8'), '# Q4 plan\n');
    assert.match((await host.call('write_file', { path: 'notes', content: 'x' })).content, /is a folder/);
    assert.match((await host.call('write_file', { path: '.', content: 'x' })).content, /must name a file/);
    assert.equal((await host.call('write_file', { path: 'x.md' })).is_error, true, 'content is required');
  });

  it('edit_file replaces exactly one occurrence; refuses missing, repeated and no-op edits', async () => {
    const e = await host.call('edit_file', {
      path: 'notes/todo.md',
      old_string: '- [ ] Draft the Q4 hiring plan',
      new_string: '- [x] Draft the Q4 hiring plan',
    });
    assert.equal(e.content, 'Edited notes/todo.md: replaced 1 occurrence at line 3.');
    assert.match(readFileSync(join(ws, 'notes/todo.md'), 'utf8'), /- \[x\] Draft the Q4 hiring plan/);
    const missing = await host.call('edit_file', { path: 'notes/todo.md', old_string: 'Buy a boat', new_string: 'x' });
    assert.match(missing.content, /old_string was not found in notes\/todo\.md/);
    const many = await host.call('edit_file', { path: 'notes/todo.md', old_string: '- [ ]', new_string: '- [x]' });
    assert.match(many.content, /old_string occurs 2 times in notes\/todo\.md/);
    assert.match((await host.call('edit_file', { path: 'notes/todo.md', old_string: 'Q4', new_string: 'Q4' })).content, /the same/);
    assert.equal((await host.call('edit_file', { path: 'notes/todo.md', old_string: '', new_string: 'x' })).is_error, true);
    assert.match((await host.call('edit_file', { path: 'ghost.md', old_string: 'a', new_string: 'b' })).content, /No file 'ghost\.md'/);
  });

  it('search_files finds text and regular expressions, filters by extension, and rejects bad patterns', async () => {
    const s = await host.call('search_files', { query: 'activation numbers' });
    assert.match(
      s.content,
      /^2 matches for 'activation numbers':\nnotes\/q4-workshop\.md:8: Open question: are the activation numbers on page 4 too high\?\nnotes\/todo\.md:4: /,
    );
    const re = await host.call('search_files', { query: '^\\w+,\\d+,', regex: true, extension: 'csv' });
    assert.match(re.content, /^5 matches .*\nbudget\/september\.csv:2: groceries,700,512\.40/);
    assert.match((await host.call('search_files', { query: 'zeppelin' })).content, /^No matches for 'zeppelin' in \d+ files\./);
    assert.match((await host.call('search_files', { query: '(', regex: true })).content, /not a valid regular expression/);
    assert.match((await host.call('search_files', { query: 'Q4', path: 'notes/q4-workshop.md' })).content, /^1 match for 'Q4'/);
  });

  it('uses KEEL_WORKSPACE when set (even a symlinked one), creating it empty', async () => {
    const base = mkdtempSync(join(tmpdir(), 'keel-ws-'));
    const real = join(base, 'real');
    mkdirSync(real);
    symlinkSync(real, join(base, 'alias'));
    const before = process.env.KEEL_WORKSPACE;
    try {
      process.env.KEEL_WORKSPACE = join(base, 'alias');
      const h = await mount(DIR, setup);
      assert.match((await h.call('list_files', {})).content, /is empty/);
      assert.equal((await h.call('write_file', { path: 'a.txt', content: 'A' })).content, 'Wrote a.txt (1 B, new file).');
      assert.equal(readFileSync(join(real, 'a.txt'), 'utf8'), 'A');
      assert.match((await h.call('read_file', { path: join(base, 'alias', 'a.txt') })).content, /^a\.txt \(1 lines/);
      assert.equal((await h.call('read_file', { path: join(base, 'real', '..', 'other') })).is_error, true);
      process.env.KEEL_WORKSPACE = join(base, 'fresh');
      const h2 = await mount(DIR, setup);
      assert.match((await h2.call('list_files', {})).content, /is empty/, 'a configured workspace is not seeded');
      await h.close();
      await h2.close();
      cleanup(h.home);
      cleanup(h2.home);
    } finally {
      if (before === undefined) delete process.env.KEEL_WORKSPACE;
      else process.env.KEEL_WORKSPACE = before;
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('reset restores the sample workspace under KEEL_HOME', async () => {
    await reset(host.home);
    assert.equal(existsSync(join(ws, 'plans')), false);
    assert.match(readFileSync(join(ws, 'notes/todo.md'), 'utf8'), /- \[ \] Draft the Q4 hiring plan/);
  });
});
