/**
 * Reading and checking a plugin's plugin.yaml (M1–M6): every problem named with its place. Never
 * mounts a tool whose declaration did not validate.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Document, Node } from 'yaml';
import type { z } from 'zod';
import { nearestName } from '../util/text.js';
import { keyName, offsetOf, yamlPackage as Y, type YamlPath, yamlProblem, yamlWithPositions } from '../util/yaml-where.js';
import type { ManifestCache } from './cache.js';
import { parsePlainYaml } from './plain-yaml.js';
import {
  type Declaration,
  EFFECTS,
  effectiveGate,
  type Manifest,
  type ManifestField,
  type McpSectionField,
  manifestSchemas,
  normalizeDeclaration,
  PLUGIN_NAME,
  TOOL_NAME,
  type ToolDeclarationField,
  type ToolDeclarationInput,
} from './schema.js';

/** One reason a manifest does not mount, with where it is (M4). */
export interface ManifestIssue {
  plugin: string;
  tool?: string;
  field?: string;
  message: string;
  file: string;
  line: number;
  col: number;
}

export function formatIssue(i: ManifestIssue): string {
  const where = [`plugin ${i.plugin}`];
  if (i.tool) where.push(`tool ${i.tool}`);
  if (i.field) where.push(`field ${i.field}`);
  return `${i.file}:${i.line}:${i.col}: ${where.join(', ')}: ${i.message}`;
}

export interface LoadedManifest {
  manifest: Manifest;
  declarations: Map<string, Declaration>;
}

export type ManifestResult = { ok: true; value: LoadedManifest } | { ok: false; issues: ManifestIssue[] };

export async function loadManifestFile(file: string, fallbackName: string, cache?: ManifestCache): Promise<ManifestResult> {
  let text: string;
  try {
    // Synchronous on purpose: plugins mount one after another, and for a 2 KB file the thread-pool
    // round trips of fs/promises cost more than the read (bench/mount.ts).
    const st = statSync(file);
    // A FIFO or a device would block the read, or never end.
    if (!st.isFile()) throw Object.assign(new Error('not a regular file'), { code: st.isDirectory() ? 'EISDIR' : 'not a regular file' });
    if (st.size > MAX_MANIFEST_CHARS * 4) {
      return {
        ok: false,
        issues: [
          {
            plugin: fallbackName,
            message: `the manifest is ${st.size} bytes, over the limit of ${MAX_MANIFEST_CHARS} characters`,
            file,
            line: 1,
            col: 1,
          },
        ],
      };
    }
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return {
      ok: false,
      issues: [{ plugin: fallbackName, message: `cannot read the manifest (${code})`, file, line: 1, col: 1 }],
    };
  }
  const key = cache?.key(text);
  const hit = key ? cache?.get(key) : undefined;
  if (hit) return { ok: true, value: { manifest: hit, declarations: declarationsOf(hit) } };
  const result = parseManifest(text, file, fallbackName);
  if (result.ok && key) cache?.set(key, result.value.manifest);
  return result;
}

function declarationsOf(manifest: Manifest): Map<string, Declaration> {
  const declarations = new Map<string, Declaration>();
  for (const [name, d] of Object.entries(manifest.tools ?? {})) declarations.set(name, normalizeDeclaration(d));
  return declarations;
}

type Path = YamlPath;

// The `yaml` package is loaded on first need (M6), by src/util/yaml-where.ts: a process whose
// manifests are all plain never loads it.

/** A manifest longer than this is refused unread (a plugin declares tools, not data). */
export const MAX_MANIFEST_CHARS = 1_000_000;
/** At most this many tools in one manifest. */
export const MAX_MANIFEST_TOOLS = 2_000;
/** Aliases a manifest may expand (an alias bomb is refused, not expanded). */
const MAX_ALIAS_COUNT = 100;

/**
 * Parses and validates manifest text. `file` is only used in messages. Never throws: anything wrong
 * with the text is an issue of this manifest, with its position, and other plugins still mount.
 */
export function parseManifest(text: string, file: string, fallbackName: string): ManifestResult {
  const fail = (message: string, line = 1, col = 1): ManifestResult => ({
    ok: false,
    issues: [{ plugin: fallbackName, message, file, line, col }],
  });
  if (text.length > MAX_MANIFEST_CHARS) {
    return fail(`the manifest is ${text.length} characters long, over the limit of ${MAX_MANIFEST_CHARS}`);
  }
  return plainManifest(text) ?? parseManifestFull(text, file, fallbackName);
}

/**
 * The full check alone (what parseManifest does for a manifest the plain path does not accept): the
 * `yaml` package with every node's position, so each issue says where it is. Exported so tests can
 * compare the two paths' verdicts.
 */
export function parseManifestFull(text: string, file: string, fallbackName: string): ManifestResult {
  try {
    return parseManifestText(text, file, fallbackName);
  } catch (err) {
    const message = `the manifest cannot be read as YAML: ${(err as Error)?.message?.split('\n')[0] ?? String(err)}`;
    return { ok: false, issues: [{ plugin: fallbackName, message, file, line: 1, col: 1 }] };
  }
}

/** A placeholder position: the plain path only ever accepts, so its issues are only counted. */
const noWhere: IssueAt = (path, message) => ({ plugin: '', message, file: '', line: 0, col: 0, field: path.join('.') });

/**
 * M6: a manifest in plain YAML (src/manifest/plain-yaml.ts) that passes the same schema and rules
 * is accepted without the `yaml` package; anything else — text outside the subset, or any mistake —
 * is undefined, and the full check reads it again and says where each mistake is.
 */
function plainManifest(text: string): ManifestResult | undefined {
  const raw = parsePlainYaml(text);
  if (!raw || !plainShape(raw)) return undefined;
  if (raw.tools && Object.keys(raw.tools).length > MAX_MANIFEST_TOOLS) return undefined;
  if (checkRules(raw, noWhere).length > 0) return undefined;
  return { ok: true, value: { manifest: raw, declarations: declarationsOf(raw) } };
}

type Check = (v: unknown) => boolean;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isString: Check = (v) => typeof v === 'string';
const isBoolean: Check = (v) => typeof v === 'boolean';
const filled: Check = (v) => typeof v === 'string' && v.length > 0;
const strings: Check = (v) => Array.isArray(v) && v.every(isString);
const oneOf =
  (...xs: readonly unknown[]): Check =>
  (v) =>
    xs.includes(v);
/** Every key is a field of `fields` whose check passes, and the `required` ones are there. */
const shaped =
  (fields: Record<string, Check>, required: readonly string[] = []): Check =>
  (v) =>
    isRecord(v) && Object.keys(v).every((k) => Object.hasOwn(fields, k) && fields[k](v[k])) && required.every((k) => Object.hasOwn(v, k));

/**
 * M6: the manifest schema (schema.ts) restated as plain checks: zod builds and runs its own parser
 * the first time, ~0.5 ms a manifest in a cold process. True only where ManifestSchema accepts the
 * value as it is; test/manifest/plain.test.ts holds the two together (the fields, and the verdicts
 * on mutated manifests).
 */
export const PLAIN_FIELDS = {
  tool: {
    effect: oneOf(...EFFECTS),
    confirm: oneOf('once', 'never'),
    approval: oneOf('pinned'),
    guidance: isString,
    pinned: isBoolean,
    answers_directly: isBoolean,
    undo: isString,
    idempotent: isBoolean,
    editable: isBoolean,
    contract_modes: oneOf('declare', 'hide'),
    output: oneOf('trusted', 'untrusted'),
    open_world: isBoolean,
  } satisfies Record<ToolDeclarationField, Check>,
  mcp: {
    command: filled,
    args: strings,
    env: (v: unknown) => isRecord(v) && Object.values(v).every(isString),
  } satisfies Record<McpSectionField, Check>,
  manifest: {
    name: (v: unknown) => typeof v === 'string' && PLUGIN_NAME.test(v),
    version: filled,
    description: isString,
    entry: isString,
    provides: strings,
    tools: (v: unknown) => isRecord(v) && Object.values(v).every(plainTool),
    mcp: (v: unknown) => plainMcp(v),
  } satisfies Record<ManifestField, Check>,
};
const plainTool = shaped(PLAIN_FIELDS.tool, ['effect']);
const plainMcp = shaped(PLAIN_FIELDS.mcp, ['command']);
const plainShape = shaped(PLAIN_FIELDS.manifest, ['name', 'version']) as (v: unknown) => v is Manifest;

function parseManifestText(text: string, file: string, fallbackName: string): ManifestResult {
  const { isMap } = Y();
  // Duplicate keys are found below in one pass: the YAML library's own check is quadratic.
  const { doc, pos } = yamlWithPositions(text, { uniqueKeys: false });
  const plugin = isMap(doc.contents) && typeof doc.get('name') === 'string' ? (doc.get('name') as string) : fallbackName;
  if (doc.errors.length > 0) {
    return {
      ok: false,
      issues: doc.errors.map((e) => ({
        plugin,
        message: `YAML does not parse: ${yamlProblem(e)}`,
        file,
        ...pos(e.pos[0]),
      })),
    };
  }
  if (!isMap(doc.contents)) {
    const at = doc.contents?.range ? pos(doc.contents.range[0]) : { line: 1, col: 1 };
    return {
      ok: false,
      issues: [{ plugin, message: 'the manifest must be a YAML mapping (name, version, provides, tools)', file, ...at }],
    };
  }
  const locate = (path: Path, key = false) => pos(offsetOf(doc, path, key));
  const issue: IssueAt = (path, message, key = false, at = path) => {
    const tool = path[0] === 'tools' && typeof path[1] === 'string' ? path[1] : undefined;
    const fieldPath = tool ? path.slice(2) : path;
    return {
      plugin,
      tool,
      field: fieldPath.length > 0 ? fieldPath.join('.') : undefined,
      message,
      file,
      ...locate(at, key),
    };
  };

  const keyIssues = checkKeys(doc, pos, plugin, file);
  if (keyIssues.length) return { ok: false, issues: keyIssues };
  const tools = doc.get('tools', true);
  if (isMap(tools) && tools.items.length > MAX_MANIFEST_TOOLS) {
    return {
      ok: false,
      issues: [issue(['tools'], `${tools.items.length} tools in one manifest, over the limit of ${MAX_MANIFEST_TOOLS}`, true)],
    };
  }
  let raw: Record<string, unknown>;
  try {
    raw = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as Record<string, unknown>;
  } catch (err) {
    const message = (err as Error).message.split('\n')[0];
    const at = /resource exhaustion/.test(message) ? 'too many aliases (an alias bomb?)' : message;
    return { ok: false, issues: [{ plugin, message: `YAML aliases cannot be expanded: ${at}`, file, ...firstAlias(doc, pos) }] };
  }
  const parsed = manifestSchemas().ManifestSchema.safeParse(raw);
  if (!parsed.success) {
    return { ok: false, issues: parsed.error.issues.flatMap((i) => shapeIssues(i, issue, raw)) };
  }
  const manifest = parsed.data;
  const issues = checkRules(manifest, issue);
  if (issues.length > 0) return { ok: false, issues };
  return { ok: true, value: { manifest, declarations: declarationsOf(manifest) } };
}

/** An issue about `path`, reported at the position of `at` (its key when `key`). */
type IssueAt = (path: Path, message: string, key?: boolean, at?: Path) => ManifestIssue;

/** What sits at `path` in the parsed YAML, and whether the key is there at all. */
function lookup(raw: unknown, path: Path): { present: boolean; value?: unknown } {
  let node: unknown = raw;
  for (const k of path) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, k)) return { present: false };
    node = (node as Record<string | number, unknown>)[k];
  }
  return { present: true, value: node };
}

/** The fields a mapping at this path may have: the file's, a tool's, the mcp section's. */
function knownFields(path: readonly (string | number)[]): string[] {
  const { ManifestSchema, ToolDeclarationSchema, McpSectionSchema } = manifestSchemas();
  if (path.length === 0) return Object.keys(ManifestSchema.shape);
  if (path.length === 2 && path[0] === 'tools') return Object.keys(ToolDeclarationSchema.shape);
  if (path.length === 1 && path[0] === 'mcp') return Object.keys(McpSectionSchema.shape);
  return [];
}

function shapeIssues(i: z.core.$ZodIssue, at: IssueAt, raw: unknown): ManifestIssue[] {
  const path = i.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
  if (i.code === 'unrecognized_keys') {
    const known = knownFields(path);
    return i.keys.map((k) => {
      const meant = nearestName(k, known);
      return at([...path, k], `unknown field '${k}'${meant ? ` (did you mean '${meant}'?)` : ''}`, true);
    });
  }
  const last = path[path.length - 1];
  const found = lookup(raw, path);
  // zod does not keep the input on issues: look the value up so "missing" means missing.
  if (!found.present) {
    // Reported at the key of the mapping that lacks the field (the tool's name, or the file's start).
    return [at(path, `missing required field '${String(last)}'`, path.length > 1, path.slice(0, -1))];
  }
  const got = JSON.stringify(found.value) ?? String(found.value);
  if (path.length === 3 && path[0] === 'tools' && last === 'effect') {
    return [at(path, `unknown effect ${got} (expected ${EFFECTS.join(', ')})`)];
  }
  if (path.length === 2 && path[0] === 'tools') {
    return [at(path, `the declaration must be a mapping with at least 'effect: ${EFFECTS.join(' | ')}', got ${got}`, true)];
  }
  return [at(path, `${i.message} (got ${got})`)];
}

/**
 * The cross-field rules of M4 that a schema cannot say. `scope` ends the message of an `undo` that
 * names no tool of the set: "in this manifest", or where else the set comes from.
 */
function checkRules(m: Manifest, at: IssueAt, scope = 'in this manifest'): ManifestIssue[] {
  const out: ManifestIssue[] = [];
  const tools = m.tools ?? {};
  if (m.tools && !(m.provides ?? []).includes('tool')) {
    out.push(at(['tools'], "'tools:' is present but 'provides' does not list 'tool'", true));
  }
  // Indexed, one key at a time (issue 49: a cold process's for-of over entries made a pair and an iterator result per tool).
  const names = Object.keys(tools);
  for (let k = 0; k < names.length; k++) {
    const name = names[k];
    const d = tools[name];
    if (!TOOL_NAME.test(name)) {
      out.push(at(['tools', name], `tool name '${name}' must be lowercase letters, digits and _`, true));
    }
    if (d.confirm !== undefined && d.effect !== 'write') {
      out.push(at(['tools', name, 'confirm'], `'confirm' applies only to write tools; this tool is ${d.effect}`, true));
    }
    if (d.approval !== undefined && d.effect !== 'write') {
      out.push(
        at(
          ['tools', name, 'approval'],
          `'approval' applies only to write tools; a ${d.effect} tool ${d.effect === 'destructive' ? 'is always approved per call' : 'needs none'}`,
          true,
        ),
      );
    }
    if (d.approval !== undefined && d.confirm !== undefined) {
      out.push(at(['tools', name, 'approval'], "'approval: pinned' cannot be combined with 'confirm': choose one gate", true));
    }
    if (d.undo !== undefined) {
      if (d.effect !== 'destructive') {
        out.push(at(['tools', name, 'undo'], `'undo' applies only to destructive tools; this tool is ${d.effect}`, true));
      } else {
        // Own names only: `undo: constructor` must not find Object.prototype.constructor.
        const target = Object.hasOwn(tools, d.undo) ? tools[d.undo] : undefined;
        if (!target) {
          out.push(at(['tools', name, 'undo'], `undo tool '${d.undo}' is not declared ${scope}`));
        } else if (!(target.effect === 'write' && target.confirm === 'never' && !target.approval)) {
          out.push(at(['tools', name, 'undo'], `undo tool '${d.undo}' must be a write with 'confirm: never'`));
        }
      }
    }
    if (d.answers_directly && !(d.effect === 'read' || (d.effect === 'write' && effectiveGate(d) === 'none'))) {
      out.push(
        at(['tools', name, 'answers_directly'], "'answers_directly' needs a read tool or a write with 'confirm: never' (gate none)", true),
      );
    }
    if (d.contract_modes !== undefined && d.effect === 'read') {
      out.push(
        at(['tools', name, 'contract_modes'], "'contract_modes' applies only to non-read tools; read tools always run in Plan/Goal", true),
      );
    }
  }
  return out;
}

/** One reason a tool declared outside any manifest is refused: its name, the field at fault, and why. */
export interface DeclarationIssue {
  tool: string;
  field?: string;
  message: string;
}

/**
 * M4 for declarations that come from code rather than a plugin.yaml (an application's own tools):
 * each goes through the manifest's own checks — the plain ones first (M6), and for one that fails
 * them, the zod ToolDeclarationSchema for its messages — and then the same cross-field rules, so a
 * mistake is refused with the same message a manifest gets. `undo` must name another tool of this
 * set that is valid itself: a tool refused for its own mistake takes the tools whose undo it is with
 * it, each with its own issue. `declarations` are the valid tools' declarations, defaults filled in.
 * The caller screens names first: each key is one tool, none is `__proto__`.
 */
export function checkDeclarations(
  raw: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
  scope: string,
): { declarations: Map<string, Declaration>; issues: DeclarationIssue[] } {
  const found: ManifestIssue[] = [];
  const at: IssueAt = (path, message) => ({
    plugin: '',
    tool: String(path[1]),
    field: path.length > 2 ? path.slice(2).join('.') : undefined,
    message,
    file: '',
    line: 0,
    col: 0,
  });
  const valid: Record<string, ToolDeclarationInput> = {};
  const names = Object.keys(raw);
  for (let k = 0; k < names.length; k++) {
    const name = names[k];
    const d = raw[name];
    if (plainTool(d)) {
      valid[name] = d as ToolDeclarationInput;
      continue;
    }
    const parsed = manifestSchemas().ToolDeclarationSchema.safeParse(d);
    if (parsed.success) valid[name] = parsed.data;
    else found.push(...parsed.error.issues.flatMap((i) => shapeIssues({ ...i, path: ['tools', name, ...i.path] }, at, { tools: raw })));
  }
  // The rules again over what is left, until no tool is refused: each round refuses at least one.
  for (;;) {
    const round = checkRules({ name: 'code', version: '0', provides: ['tool'], tools: valid }, at, scope);
    if (round.length === 0) break;
    found.push(...round);
    for (const i of round) if (i.tool) delete valid[i.tool];
  }
  const declarations = new Map<string, Declaration>();
  const kept = Object.keys(valid);
  for (let k = 0; k < kept.length; k++) declarations.set(kept[k], normalizeDeclaration(valid[kept[k]]));
  return {
    declarations,
    issues: found.map((i) => ({ tool: i.tool ?? '', ...(i.field ? { field: i.field } : {}), message: i.message })),
  };
}

/**
 * Keys checked in one pass over every mapping: a key given twice, and `__proto__` (which a JavaScript
 * object would silently drop), are issues at their own position.
 */
function checkKeys(doc: Document, pos: (offset: number) => { line: number; col: number }, plugin: string, file: string): ManifestIssue[] {
  const { isMap, isScalar } = Y();
  const out: ManifestIssue[] = [];
  const stack: unknown[] = [doc.contents];
  while (stack.length) {
    const node = stack.pop();
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const it of node.items) {
        const k = isScalar(it.key) ? keyName(it.key.value) : undefined;
        const at = (it.key as Node | null)?.range ? pos((it.key as Node).range?.[0] ?? 0) : { line: 1, col: 1 };
        if (it.key !== null && !isScalar(it.key))
          out.push({ plugin, message: 'a key must be a plain name, not a list or a mapping', file, ...at });
        else if (k === '__proto__') out.push({ plugin, message: "'__proto__' cannot be used as a name", file, ...at });
        else if (k !== undefined && seen.has(k))
          out.push({ plugin, message: `YAML does not parse: Map keys must be unique ('${k}' appears twice in one mapping)`, file, ...at });
        if (k !== undefined) seen.add(k);
        stack.push(it.value);
      }
    } else if (node && typeof node === 'object' && 'items' in node && Array.isArray((node as { items: unknown[] }).items)) {
      stack.push(...(node as { items: unknown[] }).items);
    }
  }
  return out.sort((a, b) => a.line - b.line || a.col - b.col);
}

/** Where the first alias is, for an issue about aliases. */
function firstAlias(doc: Document, pos: (offset: number) => { line: number; col: number }): { line: number; col: number } {
  const { visit } = Y();
  let at: { line: number; col: number } = { line: 1, col: 1 };
  visit(doc, {
    Alias(_, node) {
      if (node.range) at = pos(node.range[0]);
      return visit.BREAK;
    },
  });
  return at;
}
