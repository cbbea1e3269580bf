/**
 * What the Keel's actions take and give: the options of a Keel, of a run and of its continuations,
 * a batch's answers, the responder of answerPauses, and the limits read from the environment.
 * Types and small pure helpers only: never holds state or drives a run (the Keel does).
 */
import type { ApprovalDecision } from '../approvals/respond.js';
import type { Answerer } from '../approvals/who.js';
import type { Limits } from '../loop/engine.js';
import type { Leg } from '../loop/legs.js';
import type { OutputSchema } from '../loop/output.js';
import type { ModelClient } from '../models/types.js';
import type { Shortlist } from '../prompt/menu.js';
import type { Env } from '../types/env.js';
import type {
  Answer,
  ApprovalCard,
  ApprovalRecord,
  AppTool,
  Confirmation,
  LoopEvent,
  Mode,
  Principal,
  Store,
  ToolSpec,
} from '../types/index.js';
import { KeelError } from '../util/errors.js';

export interface KeelOptions {
  /** Keel's home: the store and plugin data live here. Default KEEL_HOME, else ~/.keel. */
  home?: string;
  /** A store to use instead of the SQLite file under home; null for a run with nowhere to pause. */
  store?: Store | null;
  limits?: Partial<Limits>;
  shortlist?: Shortlist;
  env?: Env;
  /** Extra built-in tools (tests, embedders). */
  extraTools?: ToolSpec[];
  /**
   * The application's own tools, declared in code: each a tool definition with the fields of a
   * manifest row beside it (`effect`, `confirm`, `approval`, `guidance`, `pinned`,
   * `answers_directly`, `undo`, `contract_modes`), checked by the manifest's schema and governed by
   * the same gate and policy as a plugin's tools. `defineTool({ …, effect })` types them.
   */
  tools?: readonly AppTool[];
  /**
   * What a mistake in the application's own tools (`tools`, here or a run's) does. Default
   * `'throw'`: a tool that would be refused — its declaration or definition, a name given twice,
   * a core name, a name a plugin registers — is a KeelError (`config`) naming the tool and the field
   * (`tools[0] (pay).confirm: …`), thrown by the constructor for the Keel's own list where it can
   * tell (the names are checked against the pool when a run mounts them) and by the run for the
   * rest. `'warn'`: degraded mounting — the refused tools never reach the pool and each run says so
   * in `result.warnings`, as a plugin folder degrades.
   */
  degradedTools?: 'throw' | 'warn';
  /**
   * Plugin folders for a run that names none and no KEEL_PLUGINS is set. Default none: a library
   * user gets exactly the plugins they ask for. The CLI passes the bundled reference plugins.
   */
  defaultPluginDirs?: string[];
  /**
   * Told when the operator's policy file changed on disk: read again, or (a bad edit) kept as it
   * was, saying why. Default: a line on stderr.
   */
  onPolicyReload?: (message: string) => void;
}

/**
 * What a run is given: the same options start a run and carry it on (answer, confirm, approve,
 * reject, resume), so a continuation can be given what the start was given — above all a model
 * object of the application's own, which no stored spec can rebuild. Within one Keel, a run's
 * continuations reuse the options it started with (not `signal` or `onEvent`) unless given others.
 */
export interface RunOptions<T = unknown> {
  /** A model spec (`ollama:MODEL`, `script:FILE`, …) or a `ModelClient` of the application's own. */
  model?: string | ModelClient;
  pluginDirs?: string[];
  /** Tools declared in code for this run, beside the Keel's own `tools` (give them again to a continuation in another process). */
  tools?: readonly AppTool[];
  /** The session's mode; default: the session's current mode, else agent. Start only. */
  mode?: Mode;
  /** Continue this session: the new run sees its transcript, mode and contract. Start only. */
  session?: string;
  /** With `session`: start a session of that id when none exists yet (a chat page names its conversation itself). Start only. */
  createSession?: boolean;
  /** Extra instructions, placed first in the system prompt. */
  instructions?: string;
  /** Aborting it stops the leg at its next safe point: the run pauses (`interrupted`), resumable. */
  signal?: AbortSignal;
  /** The step cap: model calls per run (default 20, KEEL_MAX_STEPS). */
  maxSteps?: number;
  /** The time limit of one leg, in ms (default 10 minutes, KEEL_TIMEOUT_MS). */
  timeoutMs?: number;
  /** How many tools the menu declares at most (default 12, KEEL_TOOL_CAP). */
  menuSize?: number;
  /**
   * The final answer must be JSON matching this zod or JSON Schema: it is checked, sent back to the
   * model once on a mismatch (then the run fails, `invalid_output`), and a done result carries it
   * parsed as `output`.
   */
  output?: OutputSchema<T>;
  /** Every event of the leg as it happens (the streaming API gives them as a generator). */
  onEvent?: (e: LoopEvent) => void;
  /**
   * Who starts the run, as the operator's Cedar policy sees it (`principal`): default the local
   * user (the OS user's name, no groups). `keel serve` gives the token's; an app gives its own user's. Start only.
   */
  principal?: Principal;
}

/** What carries a run on: the options of `run`, less those that only a start can take. */
export type ContinueOptions<T = unknown> = Omit<RunOptions<T>, 'mode' | 'session' | 'principal' | 'createSession'>;

/** Answering a card: who answers (audited; default the OS user), why, and the options of the leg that goes on. */
export interface ApprovalOptions<T = unknown> extends ContinueOptions<T> {
  actor?: string;
  reason?: string | null;
  /** For a plan or goal card (`card.offers_write_consent`): its confirm-once writes may also run without asking. */
  consentWrites?: boolean;
  /**
   * Approve the call with these arguments instead of the model's: for a card with one call, its
   * arguments; for several, `{ "<call_id>": {...} }`. Checked against the tool's JSON Schema and by
   * its `validate` (refused: bad_input naming the field, the card stays pending); exactly the edited
   * call runs, once.
   */
  arguments?: Record<string, unknown>;
  /**
   * Who answers, when not the application itself: a server's token, an MCP client's, the
   * machine's user. A card routed to groups it is not in is refused (forbidden), the card left
   * pending. Left out, the application is the authority and `actor` its name.
   */
  who?: Answerer;
}

/**
 * What a run needs that only its application can give, and the process that answered lacks: the spec of its model object (one no provider builds), its tools declared in code.
 * The answer is recorded; the run continues when the application carries it on with them.
 */
export interface AppNeeds {
  model?: string;
  tools?: string[];
}

/** One card of a batch answer: answered (or found expired), or why not — the others went on. */
export interface BatchAnswer {
  id: string;
  /** `error`: the answer is recorded but the run could not go on (the message says how to carry it on). */
  outcome: 'answered' | 'expired' | 'conflict' | 'not_found' | 'refused' | 'error';
  approval?: ApprovalRecord;
  /** The run's continuation, to drive or queue. */
  leg?: Leg;
  /** No continuation here: the run waits for its application, which has what it needs (its model, its tools in code). */
  app?: AppNeeds;
  error?: string;
}

/** A PauseResponder's answer to a card. */
export interface ApprovalAnswer {
  decision: ApprovalDecision;
  actor: string;
  reason?: string | null;
  consentWrites?: boolean;
  /** Approve the call with these arguments instead (see ApprovalOptions.arguments). */
  arguments?: Record<string, unknown>;
}

/** The options a run's continuations reuse within one Keel (see RunOptions). */
export type Kept = Omit<ContinueOptions, 'signal' | 'onEvent'>;

/** Who answers a run's pauses for `answerPauses`: undefined leaves the run paused. */
export interface PauseResponder {
  /**
   * A question; with `confirm`, a confirmation of held writes whose answer must say yes or no.
   * `from`: a delegate asks it, for the run that started it (whose result waits for the answer).
   */
  answer(
    question: string,
    confirm?: Confirmation,
    from?: { delegate: string; run_id: string; parent_run: string },
  ): Promise<Answer | undefined>;
  /**
   * A card; for a plan or goal (`card.offers_write_consent`) the approver may also let its writes run.
   * Asked again with `refused` when the approver's edit of the arguments was refused: the card is still pending.
   */
  decide(approval: { id: string; card: ApprovalCard; refused?: string }): Promise<ApprovalAnswer | undefined>;
}

/**
 * A run whose model is `mcp:CLIENT` is a `keel mcp serve` session: its cards are carried out by the
 * MCP server that holds the waiting call, not by a leg of the run.
 */
export const MCP_MODEL_PREFIX = 'mcp:';

/** Whether a run is a `keel mcp serve` session (see MCP_MODEL_PREFIX). */
export function isMcpSession(run: { model: string } | undefined): boolean {
  return Boolean(run?.model.startsWith(MCP_MODEL_PREFIX));
}

export function positive(name: string, n: number): number {
  if (!Number.isFinite(n) || n <= 0) throw new KeelError('bad_input', `the ${name} option must be a positive number (got ${n})`);
  return n;
}

/** The options given, without those set to undefined (so they do not hide the ones a run started with). */
export function definedOnly<O extends object>(o: O): O {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as O;
}

export function limitsFromEnv(env: Env): Partial<Limits> {
  const n = (k: string) => {
    const v = env[k];
    if (v === undefined || v === '') return undefined;
    const x = Number(v);
    if (!Number.isFinite(x) || x <= 0) throw new KeelError('config', `${k}=${v} is not a positive number`);
    return x;
  };
  const out: Partial<Limits> = {};
  const steps = n('KEEL_MAX_STEPS');
  const timeout = n('KEEL_TIMEOUT_MS');
  const ttl = n('KEEL_APPROVAL_TTL_MINUTES');
  const maxResult = n('KEEL_MAX_RESULT_CHARS');
  if (maxResult) out.maxResultChars = maxResult;
  if (steps) out.maxSteps = steps;
  if (timeout) out.timeoutMs = timeout;
  if (ttl) out.approvalTtlMs = ttl * 60_000;
  return out;
}
