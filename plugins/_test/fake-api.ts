// Test helper for the reference plugins: a tiny stand-in for the host's PluginAPI.
// It mirrors the two rules a plugin's tests depend on: a tool must be declared in the plugin's own
// manifest to be registered or declared (R1, R2, R4), and arguments are checked against the
// tool's JSON Schema before execute runs (the core does this with ajv too). No src/ import: the
// plugins are tested as the user plugins they are.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import type { PluginAPI, PluginReport } from '../../src/plugin-host/types.js';
import type { ToolDefinition, ToolOutput, ToolSpec } from '../../src/types/index.js';

export interface Declared {
  effect: 'read' | 'write' | 'destructive';
  confirm?: 'once' | 'never';
  approval?: 'pinned';
  guidance?: string;
  pinned?: boolean;
  answers_directly?: boolean;
  undo?: string;
  contract_modes?: 'declare' | 'hide';
}

export interface Result {
  content: string;
  is_error: boolean;
  details?: unknown;
}

export interface FakeHost {
  api: PluginAPI;
  home: string;
  manifest: { name: string; tools: Record<string, Declared> };
  tools: Map<string, ToolDefinition>;
  declared: Map<string, ToolSpec>;
  refused: string[];
  /** Checks args against the schema (as the core does), then runs execute. */
  call(name: string, args: Record<string, unknown>): Promise<Result>;
  /** Runs execute without the schema check: what a plugin must survive on its own. */
  raw(name: string, args: Record<string, unknown>): Promise<Result>;
  close(): Promise<void>;
}

const ajv = new Ajv({ strict: false });

export function tempHome(prefix = 'keel-plugin-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

function normalize(out: ToolOutput): Result {
  return typeof out === 'string' ? { content: out, is_error: false } : { is_error: false, ...out };
}

const ctx = {
  run_id: 'run_test',
  call_id: 'call_test',
  mode: 'agent' as const,
  request: 'test',
  signal: new AbortController().signal,
};

export async function mount(
  pluginDir: string,
  setup: (api: PluginAPI) => void | Promise<void>,
  opts: { home?: string; plugins?: PluginReport[] } = {},
): Promise<FakeHost> {
  const home = opts.home ?? tempHome();
  const manifest = parse(readFileSync(join(pluginDir, 'plugin.yaml'), 'utf8')) as FakeHost['manifest'];
  const tools = new Map<string, ToolDefinition>();
  const declared = new Map<string, ToolSpec>();
  const refused: string[] = [];
  const closers: (() => void | Promise<void>)[] = [];
  const spec = (def: ToolDefinition): ToolSpec | undefined => {
    const d = manifest.tools?.[def.name];
    if (!d) {
      refused.push(def.name);
      return undefined;
    }
    const check = ajv.compile({ type: 'object', ...def.parameters });
    return {
      ...def,
      plugin: manifest.name,
      declaration: {
        effect: d.effect,
        confirm: d.confirm,
        approval: d.approval,
        guidance: d.guidance,
        pinned: d.pinned ?? false,
        answers_directly: d.answers_directly ?? false,
        undo: d.undo,
        contract_modes: d.contract_modes ?? 'hide',
      },
      gate:
        d.effect === 'read'
          ? 'none'
          : d.effect === 'destructive' || d.approval
            ? 'approval'
            : d.confirm === 'never'
              ? 'none'
              : 'confirm_once',
      checkArgs: (args) => (check(args) ? undefined : ajv.errorsText(check.errors)),
    };
  };
  const api: PluginAPI = {
    name: manifest.name,
    dir: pluginDir,
    home,
    registerTool(def) {
      const s = spec(def);
      if (s) tools.set(def.name, def);
      // Compile now, as the core does: a schema that does not compile is a registration error.
      if (s) ajv.compile({ type: 'object', ...def.parameters });
    },
    declareTool(def) {
      const s = spec(def);
      if (s) declared.set(def.name, s);
      return s;
    },
    onToolCall() {},
    onToolResult() {},
    onClose: (fn) => void closers.push(fn),
    plugins: () => opts.plugins ?? [],
  };
  await setup(api);
  const raw = async (name: string, args: Record<string, unknown>) => {
    const t = tools.get(name);
    if (!t) throw new Error(`no tool ${name} registered`);
    return normalize(await t.execute(args, ctx));
  };
  return {
    api,
    home,
    manifest,
    tools,
    declared,
    refused,
    raw,
    async call(name, args) {
      const t = tools.get(name);
      if (!t) throw new Error(`no tool ${name} registered`);
      const check = ajv.compile({ type: 'object', ...t.parameters });
      if (!check(args)) return { content: `invalid arguments: ${ajv.errorsText(check.errors)}`, is_error: true };
      return raw(name, args);
    },
    async close() {
      for (const c of closers.reverse()) await c();
    },
  };
}

export function cleanup(home: string): void {
  rmSync(home, { recursive: true, force: true });
}
