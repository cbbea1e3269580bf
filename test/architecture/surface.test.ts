/**
 * The library's surface: the main entry holds what an embedder needs, engine parts live in
 * `keel/internals`, and every doc comment an embedder reads through the main entry says what a thing
 * does in plain words — no rule ids they would have to look up. The compiler API (program, checker,
 * doc comments) is TypeScript 5.9's, the `typescript-api` devDependency: TypeScript 7, which builds
 * Keel, ships no such API in its npm package.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript-api';
import { ROOT } from '../support/helpers.js';

const RULE_ID = /\b(?:PC|[MRACPSUD])\d{1,2}\b/;

function program() {
  const entry = join(ROOT, 'src', 'index.ts');
  const p = ts.createProgram([entry, join(ROOT, 'src', 'internals.ts')], {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
    skipLibCheck: true,
  });
  return { p, checker: p.getTypeChecker() };
}

function exportsOf(p: ts.Program, checker: ts.TypeChecker, file: string): Map<string, ts.Symbol> {
  const sf = p.getSourceFile(join(ROOT, 'src', file));
  assert.ok(sf, file);
  const mod = checker.getSymbolAtLocation(sf);
  assert.ok(mod, file);
  const out = new Map<string, ts.Symbol>();
  for (const s of checker.getExportsOfModule(mod)) {
    out.set(s.getName(), s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  }
  return out;
}

test('S2: the main entry exports what an embedder needs; engine parts are in keel/internals only', () => {
  const { p, checker } = program();
  const main = exportsOf(p, checker, 'index.ts');
  const internals = exportsOf(p, checker, 'internals.ts');
  for (const name of [
    'Keel',
    'KeelError',
    'ModelError',
    'defineTool',
    'createModel',
    'SqliteStore',
    'renderCard',
    'loadConfig',
    'chatHandler',
  ])
    assert.ok(main.has(name), `main entry exports ${name}`);
  for (const type of [
    'RunResult',
    'LoopEvent',
    'ApprovalRecord',
    'Store',
    'PluginAPI',
    'ToolDefinition',
    'ModelClient',
    'Leg',
    'PauseResponder',
    'ChatHandlerOptions',
    'ApprovalDescriptor',
  ])
    assert.ok(main.has(type), `main entry exports the type ${type}`);
  for (const name of [
    'RunLeg',
    'RunWriter',
    'decide',
    'buildMenu',
    'bm25Shortlist',
    'streamRun',
    'SAY',
    'recordApprovalAnswer',
    'parseManifest',
  ]) {
    assert.ok(!main.has(name), `${name} is an engine part, not in the main entry`);
    assert.ok(internals.has(name), `keel/internals exports ${name}`);
  }
  // One function answers a card and continues its run: no free function of the same name.
  assert.ok(!main.has('respondToApproval') && !internals.has('respondToApproval'));
  const keel = main.get('Keel');
  assert.ok(keel?.members?.has('respondToApproval' as ts.__String));
});

test('doc comments an embedder reads through the main entry carry no rule ids', () => {
  const { p, checker } = program();
  const bad: string[] = [];
  const check = (where: string, s: ts.Symbol) => {
    const text = ts.displayPartsToString(s.getDocumentationComment(checker));
    const tags = s
      .getJsDocTags(checker)
      .map((t) => ts.displayPartsToString(t.text))
      .join(' ');
    if (RULE_ID.test(text) || RULE_ID.test(tags)) bad.push(`${where}: ${(text || tags).replace(/\s+/g, ' ').slice(0, 120)}`);
  };
  for (const [name, s] of exportsOf(p, checker, 'index.ts')) {
    check(name, s);
    for (const table of [s.members, s.exports])
      table?.forEach((m, key) => {
        check(`${name}.${String(key)}`, m);
      });
  }
  assert.deepEqual(bad, []);
});
