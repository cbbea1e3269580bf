import type { Declaration, Gate } from '../manifest/schema.js';

export type JsonSchema = Record<string, unknown>;

/** What a tool's execute returns: plain text, or text with structured details. */
export type ToolOutput = string | { content: string; details?: unknown; is_error?: boolean };

export type Mode = 'agent' | 'plan' | 'goal';

/** What a handler receives besides its arguments. */
export interface ToolContext {
  runId: string;
  callId: string;
  /** The session's mode at call time (read fresh, never cached; SPEC C5). */
  mode: Mode;
  /** The user's request that started the run. */
  request: string;
  signal: AbortSignal;
}

/** An approval card in the plugin's own words (SPEC A1). */
export interface CardText {
  title: string;
  lines: string[];
}

/** The plugin entry contract: `api.registerTool(def)`. Stable: plugins outside this repo use it. */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonSchema;
  execute: (args: Record<string, unknown>, ctx: ToolContext) => ToolOutput | Promise<ToolOutput>;
  describe?: (args: Record<string, unknown>) => CardText;
  validate?: (args: Record<string, unknown>) => string | undefined | Promise<string | undefined>;
}

/** A tool as the core holds it: the definition plus its declaration and derived gate. */
export interface ToolSpec extends ToolDefinition {
  /** Owning plugin, or 'core' for built-ins. */
  plugin: string;
  declaration: Declaration;
  gate: Gate;
  /** Returns a message when `args` do not match `parameters`. */
  checkArgs: (args: unknown) => string | undefined;
  /** Built-ins that exist only in some modes (submit_plan in plan mode). */
  onlyInModes?: readonly Mode[];
  /** Built-ins that exist only while the run works under an approved contract of this kind (report_goal). */
  onlyWithContract?: 'plan' | 'goal';
}

/** The part of a tool the model is shown. */
export interface ToolDeclaration {
  name: string;
  description: string;
  parameters: JsonSchema;
}
