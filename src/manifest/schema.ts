/**
 * The manifest's schema: a tool's declaration (effect, confirm, approval, output …) and its
 * normalised form. Never accepts a field it does not know (M4).
 */
import { createRequire } from 'node:module';
import type { z as Zod } from 'zod';
import { type Declaration, type DeclarationFields, EFFECTS, type Effect, type Gate } from '../types/index.js';

export type { Declaration, Effect, Gate };
export { EFFECTS };

export const TOOL_NAME = /^[a-z0-9_]+$/;
export const PLUGIN_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** The manifest's zod schemas (see manifestSchemas). */
function build(z: typeof Zod) {
  const ToolDeclarationSchema = z
    .strictObject({
      effect: z.enum(EFFECTS).describe('What a call changes: read, write or destructive.'),
      confirm: z
        .enum(['once', 'never'])
        .optional()
        .describe('write only: ask the user once per run before the first write (default once).'),
      approval: z.literal('pinned').optional().describe('write only: every call waits for an approval card, like a destructive call.'),
      guidance: z.string().optional().describe('Prose the core adds to the prompt while the tool is on the menu.'),
      pinned: z.boolean().optional().describe('The shortlist never drops this tool.'),
      answers_directly: z.boolean().optional().describe("The tool's output is already the user's answer."),
      undo: z.string().optional().describe('destructive only: the write tool (confirm: never) that reverses this one.'),
      idempotent: z.boolean().optional().describe('Calling it again with the same arguments changes nothing more (told to MCP clients).'),
      editable: z.boolean().optional().describe("false: the owner may not change a call's arguments on its approval card (default true)."),
      contract_modes: z
        .enum(['declare', 'hide'])
        .optional()
        .describe('non-read only: in Plan/Goal stay declared (labelled unavailable) or leave the menu.'),
      output: z
        .enum(['trusted', 'untrusted'])
        .optional()
        .describe(
          "untrusted: results carry words written by someone other than the user (email, web pages, others' files); after one, a yes covers only the exact calls shown (default trusted).",
        ),
      open_world: z
        .boolean()
        .optional()
        .describe(
          "true: the call's arguments reach a party other than the user and this deployment (web fetch, search, weather, maps, translation); after an untrusted read such a call runs unseen only with the user's own values (default false).",
        ),
    })
    .describe('One tool the plugin registers, and what it does to the world.');

  const McpSectionSchema = z
    .strictObject({
      command: z.string().min(1),
      args: z.array(z.string()).optional(),
      env: z.record(z.string(), z.string()).optional(),
    })
    .describe('A stdio MCP server whose tools this plugin mounts.');

  const ManifestSchema = z
    .strictObject({
      name: z.string().regex(PLUGIN_NAME, 'the plugin name must be lowercase letters, digits, - and _'),
      version: z.string().min(1),
      description: z.string().optional(),
      entry: z.string().optional().describe('Entry module, relative to the plugin folder (default index.ts/js/mjs).'),
      provides: z.array(z.string()).optional().describe('Kinds this plugin provides, e.g. [tool].'),
      tools: z.record(z.string(), ToolDeclarationSchema).optional(),
      mcp: McpSectionSchema.optional(),
    })
    .describe('Keel plugin manifest (plugin.yaml).');
  return { ToolDeclarationSchema, McpSectionSchema, ManifestSchema, z };
}

type Schemas = ReturnType<typeof build>;
let built: Schemas | undefined;

/**
 * The manifest's zod schemas, built on first use: the full check (a manifest outside the plain
 * subset, or one with a mistake) and the published JSON Schema need them; a mount of plain
 * manifests, read by the fast path, never loads zod (tens of milliseconds on every `keel run`).
 */
export function manifestSchemas(): Schemas {
  built ??= build((createRequire(import.meta.url)('zod') as typeof import('zod')).z);
  return built;
}

export type ToolDeclarationInput = Zod.infer<Schemas['ToolDeclarationSchema']>;
export type Manifest = Zod.infer<Schemas['ManifestSchema']>;
/**
 * A declaration written in code (an application's tools, `defineTool`) has exactly the manifest
 * entry's fields and values: this fails to compile when the schema and `DeclarationFields` part.
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const declarationFieldsMatch: Same<ToolDeclarationInput, DeclarationFields> & Same<keyof ToolDeclarationInput, keyof DeclarationFields> =
  true;
void declarationFieldsMatch;
/** The fields of a tool's declaration, of the mcp section, and of the manifest. */
export type ToolDeclarationField = keyof Schemas['ToolDeclarationSchema']['shape'];
export type McpSectionField = keyof Schemas['McpSectionSchema']['shape'];
export type ManifestField = keyof Schemas['ManifestSchema']['shape'];

export function normalizeDeclaration(d: ToolDeclarationInput): Declaration {
  const out: Declaration = {
    effect: d.effect,
    confirm: d.effect === 'write' ? (d.confirm ?? (d.approval ? undefined : 'once')) : undefined,
    approval: d.approval,
    guidance: d.guidance,
    pinned: d.pinned ?? false,
    answers_directly: d.answers_directly ?? false,
    undo: d.undo,
    contract_modes: d.contract_modes ?? 'hide',
  };
  // The optional fields only when given, assigned rather than spread (issue 49: a cold start normalises every tool's).
  if (d.idempotent !== undefined) out.idempotent = d.idempotent;
  if (d.editable !== undefined) out.editable = d.editable;
  if (d.output === 'untrusted') out.output = 'untrusted';
  if (d.open_world !== undefined) out.open_world = d.open_world;
  return out;
}

/** M3: the effective gate of a declaration. */
export function effectiveGate(d: Pick<Declaration, 'effect' | 'confirm' | 'approval'>): Gate {
  if (d.effect === 'read') return 'none';
  if (d.effect === 'destructive' || d.approval === 'pinned') return 'approval';
  return d.confirm === 'never' ? 'none' : 'confirm_once';
}

type JsonObject = Record<string, unknown>;

/** A draft-07 `if`/`then` pair. */
function ifThen(condition: JsonObject, consequence: JsonObject): JsonObject {
  // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword here, not a thenable.
  return { if: condition, then: consequence };
}

const effectIs = (...effects: Effect[]): JsonObject => ({
  type: 'object',
  required: ['effect'],
  properties: { effect: { enum: effects } },
});

/**
 * The M4 cross-field rules that draft-07 can say (`if`/`then`), so an editor flags them as the
 * manifest is typed. `parseManifest` stays the authority (with positions and messages); the schema
 * cannot check that `undo` names a declared tool. test/manifest/schema-file.test.ts keeps the two in step.
 */
const DECLARATION_RULES: JsonObject[] = [
  ifThen(effectIs('read', 'destructive'), { properties: { confirm: false, approval: false } }),
  ifThen({ type: 'object', required: ['approval'] }, { properties: { confirm: false } }),
  ifThen(effectIs('read', 'write'), { properties: { undo: false } }),
  ifThen(effectIs('read'), { properties: { contract_modes: false } }),
  ifThen(
    { type: 'object', required: ['answers_directly'], properties: { answers_directly: { const: true } } },
    {
      anyOf: [
        { properties: { effect: { const: 'read' } } },
        { required: ['confirm'], properties: { effect: { const: 'write' }, confirm: { const: 'never' } } },
      ],
    },
  ),
];

const MANIFEST_RULES: JsonObject[] = [
  ifThen(
    { type: 'object', required: ['tools'] },
    { required: ['provides'], properties: { provides: { type: 'array', contains: { const: 'tool' } } } },
  ),
];

/** M5: the manifest as JSON Schema (draft-07), written to schema/plugin.schema.json by `npm run schema`. */
export function manifestJsonSchema(): JsonObject {
  const { z, ManifestSchema } = manifestSchemas();
  const schema = z.toJSONSchema(ManifestSchema, { target: 'draft-7' }) as JsonObject;
  const tools = (schema.properties as Record<string, JsonObject>).tools;
  tools.propertyNames = { type: 'string', pattern: TOOL_NAME.source };
  (tools.additionalProperties as JsonObject).allOf = DECLARATION_RULES;
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'Keel plugin manifest',
    ...schema,
    allOf: MANIFEST_RULES,
  };
}
