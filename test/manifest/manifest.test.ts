import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { formatIssue, loadManifestFile, type ManifestIssue, type ManifestResult, parseManifest } from '../../src/manifest/load.js';
import { type Declaration, effectiveGate, normalizeDeclaration } from '../../src/manifest/schema.js';
import { tempHome } from '../support/helpers.js';

/** Lines joined with newlines, so each test's YAML reads as the file would and line numbers are countable. */
const yaml = (...lines: string[]) => `${lines.join('\n')}\n`;

const HEAD = ['name: shop', 'version: 1.2.0', 'provides: [tool]', 'tools:'];

interface Expected {
  plugin?: string;
  tool?: string;
  field?: string;
  line: number;
  col: number;
  message: RegExp;
}

function issuesOf(r: ManifestResult): ManifestIssue[] {
  assert.equal(r.ok, false, 'the manifest should be refused');
  return r.ok ? [] : r.issues;
}

/**
 * The manifest is refused with exactly one issue, whose fields and formatted line name the plugin,
 * the tool and the field, and point at `plugin.yaml:LINE:COL`.
 */
function refusedWith(text: string, e: Expected): ManifestIssue {
  const issues = issuesOf(parseManifest(text, 'plugin.yaml', 'folder_name'));
  assert.equal(issues.length, 1, `expected one issue, got: ${issues.map(formatIssue).join(' | ')}`);
  const i = issues[0];
  const plugin = e.plugin ?? 'shop';
  assert.equal(i.plugin, plugin);
  assert.equal(i.tool, e.tool);
  assert.equal(i.field, e.field);
  assert.deepEqual({ line: i.line, col: i.col }, { line: e.line, col: e.col }, `position of: ${formatIssue(i)}`);
  assert.match(i.message, e.message);
  const line = formatIssue(i);
  assert.ok(line.startsWith(`plugin.yaml:${e.line}:${e.col}: `), line);
  assert.ok(line.includes(`plugin ${plugin}`), line);
  if (e.tool) assert.ok(line.includes(`tool ${e.tool}`), line);
  if (e.field) assert.ok(line.includes(`field ${e.field}`), line);
  return i;
}

function accepted(text: string): Map<string, Declaration> {
  const r = parseManifest(text, 'plugin.yaml', 'folder_name');
  assert.ok(r.ok, r.ok ? '' : r.issues.map(formatIssue).join('\n'));
  return r.value.declarations;
}

describe('M4: manifest validation, one message per rule with plugin, tool, field and plugin.yaml:LINE:COL', () => {
  test('M4: an unknown field at the top level is refused at its key', () => {
    refusedWith(
      yaml('name: shop', 'version: 1.2.0', 'provides: [tool]', 'homepage: https://x', 'tools:', '  browse:', '    effect: read'),
      {
        field: 'homepage',
        line: 4,
        col: 1,
        message: /unknown field 'homepage'/,
      },
    );
  });

  test('M4: an unknown field in a tool is refused at its key, naming the tool', () => {
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '    guidence: typo of guidance'), {
      tool: 'browse',
      field: 'guidence',
      line: 7,
      col: 5,
      message: /unknown field 'guidence' \(did you mean 'guidance'\?\)/,
    });
  });

  test('M4: a misspelled field suggests the nearest one ("confrim" → "confirm"); a field far from any suggests none', () => {
    refusedWith(yaml(...HEAD, '  browse:', '    effect: write', '    confrim: never'), {
      tool: 'browse',
      field: 'confrim',
      line: 7,
      col: 5,
      message: /unknown field 'confrim' \(did you mean 'confirm'\?\)/,
    });
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '    colour: blue'), {
      tool: 'browse',
      field: 'colour',
      line: 7,
      col: 5,
      message: /^unknown field 'colour'$|unknown field 'colour'(?! \(did)/,
    });
  });

  test('M4: an unknown effect is refused at its value, quoting it and listing the effects', () => {
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '  wipe:', '    pinned: true', '    effect: delete'), {
      tool: 'wipe',
      field: 'effect',
      line: 9,
      col: 13,
      message: /unknown effect "delete" \(expected read, write, destructive\)/,
    });
  });

  test('M4: a missing effect is refused as missing (not as an unknown effect), at the tool name', () => {
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '  wipe:', '    guidance: wipes things'), {
      tool: 'wipe',
      field: 'effect',
      line: 7,
      col: 3,
      message: /missing required field 'effect'/,
    });
  });

  test('M4: a missing top-level required field names that field', () => {
    refusedWith(yaml('name: shop', 'provides: [tool]'), { field: 'version', line: 1, col: 1, message: /missing required field 'version'/ });
  });

  test('M4: a field of the wrong type says what it got, not that it is missing', () => {
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '    pinned: "yes"'), {
      tool: 'browse',
      field: 'pinned',
      line: 7,
      col: 13,
      message: /expected boolean.*"yes"/,
    });
    refusedWith(yaml('name: shop', 'version: 1', 'provides: [tool]'), { field: 'version', line: 2, col: 10, message: /expected string/ });
  });

  test('M4: confirm on a read tool is refused', () => {
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '    confirm: once'), {
      tool: 'browse',
      field: 'confirm',
      line: 7,
      col: 5,
      message: /'confirm' applies only to write tools; this tool is read/,
    });
  });

  test('M4: confirm on a destructive tool is refused', () => {
    refusedWith(yaml(...HEAD, '  wipe:', '    effect: destructive', '    confirm: never'), {
      tool: 'wipe',
      field: 'confirm',
      line: 7,
      col: 5,
      message: /'confirm' applies only to write tools; this tool is destructive/,
    });
  });

  test('M4: approval on a read tool is refused', () => {
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '    approval: pinned'), {
      tool: 'browse',
      field: 'approval',
      line: 7,
      col: 5,
      message: /'approval' applies only to write tools/,
    });
  });

  test('M4: approval on a destructive tool is refused (it is always approved per call)', () => {
    refusedWith(yaml(...HEAD, '  wipe:', '    effect: destructive', '    approval: pinned'), {
      tool: 'wipe',
      field: 'approval',
      line: 7,
      col: 5,
      message: /'approval' applies only to write tools; a destructive tool is always approved per call/,
    });
  });

  test('M4: approval together with confirm is refused', () => {
    refusedWith(yaml(...HEAD, '  send:', '    effect: write', '    confirm: once', '    approval: pinned'), {
      tool: 'send',
      field: 'approval',
      line: 8,
      col: 5,
      message: /'approval: pinned' cannot be combined with 'confirm'/,
    });
  });

  test('M4: undo on a non-destructive tool is refused', () => {
    refusedWith(yaml(...HEAD, '  send:', '    effect: write', '    undo: unsend', '  unsend:', '    effect: write', '    confirm: never'), {
      tool: 'send',
      field: 'undo',
      line: 7,
      col: 5,
      message: /'undo' applies only to destructive tools; this tool is write/,
    });
  });

  test('M4: undo naming an undeclared tool is refused at the name it gives', () => {
    refusedWith(yaml(...HEAD, '  wipe:', '    effect: destructive', '    undo: unwipe'), {
      tool: 'wipe',
      field: 'undo',
      line: 7,
      col: 11,
      message: /undo tool 'unwipe' is not declared in this manifest/,
    });
  });

  test('M4: undo naming a confirm-once write is refused', () => {
    refusedWith(yaml(...HEAD, '  wipe:', '    effect: destructive', '    undo: unwipe', '  unwipe:', '    effect: write'), {
      tool: 'wipe',
      field: 'undo',
      line: 7,
      col: 11,
      message: /undo tool 'unwipe' must be a write with 'confirm: never'/,
    });
  });

  test('M4: undo naming a read or a pinned write is refused; a confirm: never write is accepted', () => {
    refusedWith(yaml(...HEAD, '  wipe:', '    effect: destructive', '    undo: look', '  look:', '    effect: read'), {
      tool: 'wipe',
      field: 'undo',
      line: 7,
      col: 11,
      message: /undo tool 'look' must be a write with 'confirm: never'/,
    });
    refusedWith(
      yaml(...HEAD, '  wipe:', '    effect: destructive', '    undo: unwipe', '  unwipe:', '    effect: write', '    approval: pinned'),
      {
        tool: 'wipe',
        field: 'undo',
        line: 7,
        col: 11,
        message: /undo tool 'unwipe' must be a write with 'confirm: never'/,
      },
    );
    const d = accepted(
      yaml(...HEAD, '  wipe:', '    effect: destructive', '    undo: unwipe', '  unwipe:', '    effect: write', '    confirm: never'),
    );
    assert.equal(d.get('wipe')?.undo, 'unwipe');
  });

  test('M4: answers_directly on a destructive tool is refused', () => {
    refusedWith(yaml(...HEAD, '  wipe:', '    effect: destructive', '    answers_directly: true'), {
      tool: 'wipe',
      field: 'answers_directly',
      line: 7,
      col: 5,
      message: /'answers_directly' needs a read tool or a write with 'confirm: never'/,
    });
  });

  test('M4: answers_directly on a confirm-once write (explicit or by default) is refused', () => {
    for (const extra of [[], ['    confirm: once']]) {
      refusedWith(yaml(...HEAD, '  send:', '    effect: write', ...extra, '    answers_directly: true'), {
        tool: 'send',
        field: 'answers_directly',
        line: 7 + extra.length,
        col: 5,
        message: /'answers_directly' needs a read tool or a write with 'confirm: never'/,
      });
    }
  });

  test('M4: answers_directly on a pinned write (gate approval) is refused', () => {
    refusedWith(yaml(...HEAD, '  send:', '    effect: write', '    approval: pinned', '    answers_directly: true'), {
      tool: 'send',
      field: 'answers_directly',
      line: 8,
      col: 5,
      message: /'answers_directly'/,
    });
  });

  test('M4 (amendment 2026-09-22): answers_directly is accepted on a read and on a write with confirm: never', () => {
    const d = accepted(
      yaml(
        ...HEAD,
        '  digest:',
        '    effect: read',
        '    answers_directly: true',
        '  note:',
        '    effect: write',
        '    confirm: never',
        '    answers_directly: true',
      ),
    );
    assert.equal(d.get('digest')?.answers_directly, true);
    assert.equal(d.get('note')?.answers_directly, true);
    assert.equal(effectiveGate(d.get('note')!), 'none');
  });

  test('M4: contract_modes on a read tool is refused; on a write it is accepted', () => {
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '    contract_modes: declare'), {
      tool: 'browse',
      field: 'contract_modes',
      line: 7,
      col: 5,
      message: /'contract_modes' applies only to non-read tools/,
    });
    const d = accepted(yaml(...HEAD, '  send:', '    effect: write', '    contract_modes: declare'));
    assert.equal(d.get('send')?.contract_modes, 'declare');
  });

  test('M4: tools: present while provides lacks tool is refused (provides missing or without tool)', () => {
    refusedWith(yaml('name: shop', 'version: 1.2.0', 'provides: [hook]', 'tools:', '  browse:', '    effect: read'), {
      field: 'tools',
      line: 4,
      col: 1,
      message: /'tools:' is present but 'provides' does not list 'tool'/,
    });
    refusedWith(yaml('name: shop', 'version: 1.2.0', 'tools:', '  browse:', '    effect: read'), {
      field: 'tools',
      line: 3,
      col: 1,
      message: /'provides' does not list 'tool'/,
    });
  });

  test('M4: a tool name with uppercase or a dash is refused at the name', () => {
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '  sendMail:', '    effect: read'), {
      tool: 'sendMail',
      line: 7,
      col: 3,
      message: /tool name 'sendMail' must be lowercase letters, digits and _/,
    });
    refusedWith(yaml(...HEAD, '  send-mail:', '    effect: read'), {
      tool: 'send-mail',
      line: 5,
      col: 3,
      message: /tool name 'send-mail' must be lowercase letters, digits and _/,
    });
    assert.ok(accepted(yaml(...HEAD, '  send_mail_2:', '    effect: read')).has('send_mail_2'));
  });

  test('M4: a tool with no declaration under its name is refused at the name', () => {
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '  wipe:'), {
      tool: 'wipe',
      line: 7,
      col: 3,
      message: /declaration must be a mapping with at least 'effect/,
    });
  });

  test('M4: YAML that does not parse is refused at the position of the error', () => {
    // A value that is itself a mapping in a compact key: the parser stops at `read`.
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read: write'), {
      line: 6,
      col: 13,
      message: /^YAML does not parse: Nested mappings are not allowed/,
    });
    refusedWith(yaml(...HEAD, '  browse:', '\teffect: read'), { line: 6, col: 1, message: /^YAML does not parse: Tabs/ });
    // A duplicate key is a parse error too, at the second key.
    refusedWith(yaml(...HEAD, '  browse:', '    effect: read', '  browse:', '    effect: write'), {
      line: 7,
      col: 3,
      message: /^YAML does not parse: Map keys must be unique/,
    });
  });

  test('M4: YAML that is not a mapping is refused, naming the plugin by its folder', () => {
    refusedWith(yaml('- name: shop', '- version: 1.2.0'), {
      plugin: 'folder_name',
      line: 1,
      col: 1,
      message: /must be a YAML mapping/,
    });
    refusedWith(yaml('', '', 'just some words'), { plugin: 'folder_name', line: 3, col: 1, message: /must be a YAML mapping/ });
    refusedWith('', { plugin: 'folder_name', line: 1, col: 1, message: /must be a YAML mapping/ });
  });

  test('M4: a plugin name that is not lowercase is refused at its value', () => {
    refusedWith(yaml('name: My Shop', 'version: 1.2.0'), {
      plugin: 'My Shop',
      field: 'name',
      line: 1,
      col: 7,
      message: /plugin name must be lowercase/,
    });
  });

  test('M4: every broken rule gets its own message (two tools, two rules, two issues)', () => {
    const issues = issuesOf(
      parseManifest(
        yaml(
          ...HEAD,
          '  browse:',
          '    effect: read',
          '    confirm: once',
          '  wipe:',
          '    effect: destructive',
          '    contract_modes: declare',
          '    undo: nope',
        ),
        'plugin.yaml',
        'x',
      ),
    );
    assert.deepEqual(
      issues.map((i) => `${i.tool}.${i.field}@${i.line}:${i.col}`),
      ['browse.confirm@7:5', 'wipe.undo@11:11'],
      issues.map(formatIssue).join('\n'),
    );
  });

  test('M4: two unknown fields in one tool are two messages', () => {
    const issues = issuesOf(
      parseManifest(yaml(...HEAD, '  browse:', '    effect: read', '    colour: red', '    size: 3'), 'plugin.yaml', 'x'),
    );
    assert.deepEqual(
      issues.map((i) => [i.field, i.line, i.col]),
      [
        ['colour', 7, 5],
        ['size', 8, 5],
      ],
    );
  });

  test('M4: flow-style declarations are located too', () => {
    refusedWith(yaml(...HEAD, '  browse: {effect: read, confirm: once}'), {
      tool: 'browse',
      field: 'confirm',
      line: 5,
      col: 26,
      message: /'confirm'/,
    });
  });

  test('M1/M2: a valid manifest yields one normalized declaration per tool', () => {
    const d = accepted(
      yaml(
        ...HEAD,
        '  search:',
        '    effect: read',
        '    pinned: true',
        '    guidance: Search before you answer.',
        '  send:',
        '    effect: write',
        '    approval: pinned',
        '  trash:',
        '    effect: destructive',
        '    undo: restore',
        '  restore:',
        '    effect: write',
        '    confirm: never',
      ),
    );
    assert.deepEqual([...d.keys()], ['search', 'send', 'trash', 'restore']);
    assert.deepEqual(d.get('search'), {
      effect: 'read',
      confirm: undefined,
      approval: undefined,
      guidance: 'Search before you answer.',
      pinned: true,
      answers_directly: false,
      undo: undefined,
      contract_modes: 'hide',
    });
    assert.equal(effectiveGate(d.get('send')!), 'approval');
    assert.equal(effectiveGate(d.get('trash')!), 'approval');
    assert.equal(effectiveGate(d.get('restore')!), 'none');
  });

  test('M1: a manifest without tools (provides other kinds) is accepted with no declarations', () => {
    assert.equal(accepted(yaml('name: shop', 'version: 1.2.0', 'provides: [hook]')).size, 0);
  });
});

describe('M3: effective gate', () => {
  const rows: [Parameters<typeof effectiveGate>[0], string][] = [
    [{ effect: 'read' }, 'none'],
    [{ effect: 'write', confirm: 'never' }, 'none'],
    [{ effect: 'write', confirm: 'once' }, 'confirm_once'],
    [{ effect: 'write' }, 'confirm_once'],
    [{ effect: 'write', approval: 'pinned' }, 'approval'],
    [{ effect: 'destructive' }, 'approval'],
  ];
  for (const [d, gate] of rows) {
    test(`M3: ${JSON.stringify(d)} → ${gate}`, () => {
      assert.equal(effectiveGate(d), gate);
      // The same through the manifest defaults (a write declared with no confirm is confirm-once).
      assert.equal(effectiveGate(normalizeDeclaration(d)), gate);
    });
  }
});

describe('M2: normalizeDeclaration defaults', () => {
  test('M2: a bare write defaults to confirm: once; the other fields to their defaults', () => {
    assert.deepEqual(normalizeDeclaration({ effect: 'write' }), {
      effect: 'write',
      confirm: 'once',
      approval: undefined,
      guidance: undefined,
      pinned: false,
      answers_directly: false,
      undo: undefined,
      contract_modes: 'hide',
    });
  });

  test('M2: a pinned write gets no confirm default (approval is its gate)', () => {
    const d = normalizeDeclaration({ effect: 'write', approval: 'pinned' });
    assert.equal(d.confirm, undefined);
    assert.equal(d.approval, 'pinned');
  });

  test('M2: read and destructive carry no confirm; explicit values are kept', () => {
    assert.equal(normalizeDeclaration({ effect: 'read' }).confirm, undefined);
    assert.equal(normalizeDeclaration({ effect: 'destructive' }).confirm, undefined);
    const d = normalizeDeclaration({
      effect: 'write',
      confirm: 'never',
      pinned: true,
      answers_directly: true,
      contract_modes: 'declare',
      guidance: 'g',
    });
    assert.deepEqual([d.confirm, d.pinned, d.answers_directly, d.contract_modes, d.guidance], ['never', true, true, 'declare', 'g']);
  });
});

describe('M4: loadManifestFile', () => {
  const dir = tempHome('keel-manifest-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('M4: a manifest that cannot be read says why, with the file and the folder name', async () => {
    // Tests run as root, so chmod 000 would not stop the read: a directory in its place does (EISDIR).
    const plugin = join(dir, 'unreadable');
    mkdirSync(join(plugin, 'plugin.yaml'), { recursive: true });
    const r = await loadManifestFile(join(plugin, 'plugin.yaml'), 'unreadable');
    const [i] = issuesOf(r);
    assert.equal(i.plugin, 'unreadable');
    assert.match(formatIssue(i), /plugin\.yaml:1:1: plugin unreadable: cannot read the manifest \(EISDIR\)/);
    const missing = issuesOf(await loadManifestFile(join(dir, 'nowhere', 'plugin.yaml'), 'nowhere'));
    assert.match(missing[0].message, /ENOENT/);
  });

  test('M4: file positions carry the real file path', async () => {
    const file = join(dir, 'plugin.yaml');
    writeFileSync(file, yaml(...HEAD, '  browse:', '    effect: read', '    confirm: never'));
    const [i] = issuesOf(await loadManifestFile(file, 'x'));
    assert.ok(formatIssue(i).startsWith(`${file}:7:5: plugin shop, tool browse, field confirm: `), formatIssue(i));
  });
});
