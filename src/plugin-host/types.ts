/**
 * What mounting plugins reports: each plugin's status and the rows that say why. Data only.
 */
import type { Effect, Gate, Mode, ToolDefinition, ToolSpec } from '../types/index.js';

export type PluginStatus = 'loaded' | 'degraded' | 'failed';

export type RowKind =
  | 'manifest_error'
  | 'declaration_error'
  | 'entry_missing'
  | 'entry_failed'
  | 'setup_failed'
  | 'undeclared_tool'
  | 'invalid_tool'
  | 'duplicate_tool'
  | 'declared_not_registered'
  | 'provides_not_registered'
  | 'registered_not_provided'
  | 'tool_failed';

/** One line of a plugin's report: why it failed, why it is degraded, or where it drifts. */
export interface Row {
  kind: RowKind;
  tool?: string;
  message: string;
  /** A manifest error's place, as fields (the message carries them too, as FILE:LINE:COL). */
  file?: string;
  line?: number;
  column?: number;
  /** The manifest field at fault, when there is one. */
  field?: string;
}

export interface ToolRow {
  name: string;
  effect: Effect;
  gate: Gate;
  pinned: boolean;
  answers_directly: boolean;
  guidance: boolean;
  contract_modes: 'declare' | 'hide';
  undo?: string;
  /** Whether the tool's results carry words from outside the user (`untrusted`). */
  output: 'trusted' | 'untrusted';
  /** O1: whether the call's arguments reach a party other than the user and this deployment. */
  open_world: boolean;
  /** An operator rule lets this write run as before after the run read untrusted content. */
  after_untrusted?: 'allow';
  /**
   * Registered with registerTool (in the pool), built with declareTool (the plugin's own loop), or
   * handed to Keel by the application itself, declared in code.
   */
  via: 'registerTool' | 'declareTool' | 'code';
  /** The gate the manifest's declaration gives; `gate` above is the effective one. */
  declared_gate: Gate;
  /** What changed the gate: an operator rule or KEEL_CONFIRM_ONCE_TOOLS. */
  gate_source?: string;
  /** The operator rule that applies to this tool, as `pattern (file:line:col)`. */
  rule?: string;
  /** An operator rule forbids it: it never runs. */
  denied?: true;
  /** An operator rule lets it run only in these modes. */
  modes?: Mode[];
}

export interface PluginReport {
  name: string;
  version: string;
  /** The plugin's folder ('' for the application's tools declared in code). */
  dir: string;
  /**
   * Set on the one report of the tools the application declared in code (named `app`, with no
   * folder or version); absent on a plugin's report.
   */
  source?: 'code';
  status: PluginStatus;
  tools: ToolRow[];
  /** Why the plugin failed (status failed). */
  failures: Row[];
  /** Refused registrations (status degraded). */
  degraded: Row[];
  /** Manifest and code disagree in a way that refuses nothing. */
  drift: Row[];
  /** Tool failures charged to this plugin at run time. */
  runtime_failures: number;
}

/** What a `beforeToolCall` subscriber sees; returning `{ block: reason }` stops the call. */
export interface ToolCallEvent {
  run_id: string;
  call_id: string;
  tool: string;
  args: Record<string, unknown>;
  mode: Mode;
}
export type ToolCallHook = (e: ToolCallEvent) => void | { block: string } | Promise<void | { block: string }>;

export interface ToolResultEvent extends ToolCallEvent {
  content: string;
  is_error: boolean;
}
/** May rewrite the result the model sees. */
export type ToolResultHook = (
  e: ToolResultEvent,
) => void | { content: string; is_error?: boolean } | Promise<void | { content: string; is_error?: boolean }>;

/** What a plugin's `setup(api)` receives. Stable: plugins outside this repo use it. */
export interface PluginAPI {
  /** The plugin's own name, from its manifest. */
  readonly name: string;
  /** The plugin's folder. */
  readonly dir: string;
  /** Keel's home folder (KEEL_HOME): where a plugin keeps its data. */
  readonly home: string;
  registerTool(def: ToolDefinition): void;
  /** The same check for a tool the plugin runs in its own loop. Undefined when refused. */
  declareTool(def: ToolDefinition): ToolSpec | undefined;
  onToolCall(fn: ToolCallHook): void;
  onToolResult(fn: ToolResultHook): void;
  /** Every mounted plugin's report, live (for a health tool). */
  plugins(): readonly PluginReport[];
  /** Called when the host closes (release files, stop child processes). */
  onClose(fn: () => void | Promise<void>): void;
}

export type PluginSetup = (api: PluginAPI) => void | Promise<void>;
