/**
 * The vocabulary of tools: what a tool does to the world, what the core does before it runs, and
 * the shapes plugins and the core exchange. This folder is the bottom layer: it imports nothing of
 * Keel's, and every other layer may use it.
 */

/** What a call changes in the world. */
export const EFFECTS = ['read', 'write', 'destructive'] as const;
export type Effect = (typeof EFFECTS)[number];

/** What the core does before a call runs: nothing, ask once per run, or a card per call. */
export type Gate = 'none' | 'confirm_once' | 'approval';

/** A session's mode. Plan and Goal are the contract modes. */
export type Mode = 'agent' | 'plan' | 'goal';
export const MODES: readonly Mode[] = ['agent', 'plan', 'goal'];

/** A tool declaration with every default filled in: what the core reads. */
export interface Declaration {
  effect: Effect;
  confirm?: 'once' | 'never';
  approval?: 'pinned';
  guidance?: string;
  pinned: boolean;
  answers_directly: boolean;
  undo?: string;
  contract_modes: 'declare' | 'hide';
  /** Calling it again with the same arguments changes nothing more (an MCP client is told so). */
  idempotent?: boolean;
  /** False forbids the owner to change a call's arguments on its card (default: editable). */
  editable?: boolean;
  /**
   * `untrusted`: the tool's results carry words written by someone other than the user (an email
   * body, a web page, a shared document): once one enters a run, a yes covers only the exact calls
   * the person was shown (see UntrustedSource).
   */
  output?: 'trusted' | 'untrusted';
  /** O1: the call's arguments reach a party other than the user and this deployment (absent: not declared, false). */
  open_world?: boolean;
}

/**
 * Words from outside the user that entered a run's context: which call's result, and a short label
 * (the sender, the URL) in the tool's own words or the core's. Kept in the run's trace (the call
 * record's `untrusted`), so a run resumed anywhere knows what it has read.
 */
export interface UntrustedSource {
  tool: string;
  call_id: string;
  label: string;
}

export type JsonSchema = Record<string, unknown>;

/**
 * What a tool's execute returns: plain text, or text with structured details. `source` labels where
 * the words come from (the sender, the URL: shown to the person when the run later asks for consent);
 * `untrusted: true` marks this result as carrying others' words even when the tool's declaration does
 * not (a memory a tainted run wrote). Neither can make a tool declared `output: untrusted` trusted.
 */
export type ToolOutput = string | { content: string; details?: unknown; is_error?: boolean; source?: string; untrusted?: boolean };

/** What a handler receives besides its arguments. */
export interface ToolContext {
  run_id: string;
  call_id: string;
  /** The session's mode at call time (read fresh, never cached). */
  mode: Mode;
  /** The user's request that started the run. */
  request: string;
  signal: AbortSignal;
  /** What the run has read from outside the user so far (empty when nothing): a tool that stores what it is given marks it untrusted. */
  untrusted?: readonly UntrustedSource[];
}

/** O2: one value of an open-world call that did not come from the user: where it is in the arguments, and (cut short) what it is. */
export interface OutsideValue {
  /** `url`, `items[0].city`, `headers.X-Code (key)`. */
  path: string;
  value: string;
}

/** An approval card in the plugin's own words. */
export interface CardText {
  title: string;
  lines: string[];
}

/**
 * What a tool's `describe` returns: the call in the tool's own words — a title, and the lines under
 * it (none when left out). The core makes the card's CardText from it.
 */
export interface CallDescription {
  title: string;
  lines?: readonly string[];
}

/** The plugin entry contract: `api.registerTool(def)`. Stable: plugins outside this repo use it. */
export interface ToolDefinition<Args extends Record<string, unknown> = Record<string, unknown>> {
  name: string;
  description: string;
  parameters: JsonSchema;
  execute: (args: Args, ctx: ToolContext) => ToolOutput | Promise<ToolOutput>;
  /** The card's words for a call that needs approval: `{ title, lines? }`. */
  describe?: (args: Args) => CallDescription;
  validate?: (args: Args) => string | undefined | Promise<string | undefined>;
}

/**
 * A tool's declaration as written: the fields of one entry under a plugin manifest's `tools:`, with
 * the same names and values. Only `effect` is required; the rest default as in the manifest.
 */
export interface DeclarationFields {
  /** What a call changes in the world. */
  effect: Effect;
  /** Writes only: `once` (the default) asks the user once per run before the first write; `never` does not ask. */
  confirm?: 'once' | 'never';
  /** Writes only: every call waits for an approval card, as a destructive call does. */
  approval?: 'pinned';
  /** Prose added to the system prompt while the tool is offered to the model. */
  guidance?: string;
  /** The shortlist never drops this tool from what the model is offered. */
  pinned?: boolean;
  /** The tool's output already is the user's answer: the run can end on it. */
  answers_directly?: boolean;
  /** Destructive only: the name of the write (with `confirm: 'never'`) that reverses it. */
  undo?: string;
  /** Calling it again with the same arguments changes nothing more (told to MCP clients). */
  idempotent?: boolean;
  /** False forbids the owner to change a call's arguments on its approval card (default true). */
  editable?: boolean;
  /** Not for reads: in Plan and Goal modes, stay offered but labelled unavailable (`declare`) or be left out (`hide`, the default). */
  contract_modes?: 'declare' | 'hide';
  /** `untrusted`: the results carry words written by someone other than the user (email, web pages, others' documents). Default `trusted`. */
  output?: 'trusted' | 'untrusted';
  /**
   * `true`: the call's arguments reach a party other than the user and this deployment (a web fetch, a
   * search engine, a weather, maps or translation API, a URL it opens): reads and writes alike. After
   * the run has read untrusted content, such a call runs unseen only with the user's own values (O2).
   */
  open_world?: boolean;
}

/**
 * A tool an application declares in code and hands to Keel itself: the definition a plugin would
 * register, with its declaration beside it, flat on the same object. It is checked as a manifest
 * entry is, refused with a reason when it is not valid, and governed by the same approval gate and
 * operator policy as a plugin's tools. `defineTool({ ..., effect: 'write' })` makes one.
 */
export type AppTool<Args extends Record<string, unknown> = Record<string, unknown>> = ToolDefinition<Args> & DeclarationFields;

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
  /**
   * A core tool that carries provenance instead of being narrowed: after an untrusted read it
   * still runs, and what it writes or starts is marked untrusted (a memory, a delegate's run).
   */
  carriesProvenance?: true;
  /** What an operator rule or KEEL_CONFIRM_ONCE_TOOLS did to this tool (set where tools are mounted). */
  policy?: {
    rule?: string;
    deny?: true;
    modes?: Mode[];
    gate_source?: string;
    declared_gate: Gate;
    /** An operator rule lets this write run as before after the run read untrusted content (audited in the trace). */
    after_untrusted?: 'allow';
  };
}

/** The part of a tool the model is shown. */
export interface ToolDeclaration {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** Remembered meta-schema verdicts (the manifest cache): a schema checked valid once is not checked again. */
export interface SchemaVerdicts {
  valid(schema: Record<string, unknown>, check: () => boolean): boolean;
}
