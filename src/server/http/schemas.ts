/**
 * The HTTP API's shapes, as zod schemas: request bodies and queries are validated with them, and the
 * OpenAPI document (`/v1/openapi.json`) is generated from the same schemas, so the two cannot drift.
 */
import { z } from 'zod';
import { MAX_BATCH } from '../../approvals/respond.js';
import { GROUP_NAME } from '../../util/groups.js';

const MAX_REQUEST = 100_000;

export const ModeSchema = z.enum(['agent', 'plan', 'goal']);
export const RoleSchema = z.enum(['viewer', 'approver', 'admin']);
const Id = z.string().min(1).max(200);

/** RFC 9457: what every error response carries; `errors` names the fields a body got wrong. */
export const ProblemSchema = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  instance: z.string().optional(),
  errors: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
});

export const StartRunBody = z.strictObject({
  request: z.string().trim().min(1, 'say what you want done').max(MAX_REQUEST),
  model: z.string().min(1).max(2000).optional(),
  mode: ModeSchema.optional(),
  session: Id.optional(),
  /** Plugin folders, each one of those the server was started with. */
  plugins: z.array(z.string().min(1).max(4096)).max(64).optional(),
});

export const AnswerBody = z.strictObject({
  text: z.string().max(MAX_REQUEST).default(''),
  /** For a confirmation of held writes: yes (true) or no (false). */
  confirm: z.boolean().optional(),
});

export const ApprovalBody = z.strictObject({
  decision: z.enum(['approve', 'reject']),
  reason: z.string().max(4000).optional(),
  /** A plan or goal card: also let its confirm-once writes run without asking. */
  consent_writes: z.boolean().optional(),
  /**
   * A7 (approve only): run the call with these arguments instead of the model's. A card with one
   * call: its arguments, e.g. `{"ids": ["m2"]}`. A card with several: `{"<call_id>": {...}}` for
   * the calls changed (the others keep theirs). Checked against the tool's JSON Schema and by its
   * plugin's validate (400 naming the field, the card stays pending); refused for a tool declared
   * `editable: false`.
   */
  arguments: z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      'approve only: the edited arguments — for a card with one call, its arguments object; for several, { "<call_id>": { ... } } for the calls changed',
    ),
});

/** A8: several cards answered in one action, each on its own and once. */
export const BatchApprovalBody = z.strictObject({
  ids: z.array(Id).max(MAX_BATCH).default([]).describe('the cards to answer (give ids, or run, or both)'),
  run: Id.optional().describe('also every pending card of this run'),
  decision: z.enum(['approve', 'reject']),
  reason: z.string().max(4000).optional(),
});

export const CancelBody = z.strictObject({ reason: z.string().max(4000).optional() });
export const ModeBody = z.strictObject({ mode: ModeSchema });
export const TokenBody = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9._@-]+$/, 'letters, digits, . _ @ and -'),
  role: RoleSchema,
  /** A9: the approver groups the token is in. */
  groups: z.array(z.string().regex(GROUP_NAME, '1 to 40 of a-z, 0-9, _ and -')).max(100).optional(),
});

export const RunsQuery = z.strictObject({
  status: z.enum(['running', 'paused', 'done', 'failed']).optional(),
  session: Id.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(400).optional(),
});
export const ApprovalsQuery = z.strictObject({
  status: z.enum(['pending', 'approved', 'rejected', 'expired']).optional(),
  run: Id.optional(),
});

const Json = z.record(z.string(), z.unknown());
const Outcome = z.enum([
  'ran',
  'held_for_confirmation',
  'awaiting_approval',
  'denied_by_mode',
  'denied_by_policy',
  'repeat',
  'unknown_tool',
  'invalid_arguments',
  'rejected',
  'error',
]);
/**
 * O2: an open-world call's values that did not come from the user (it sends its arguments out of
 * this deployment, and the run had read words from outside the user): where in the arguments
 * (`url`, `items[0].city`, `headers.X (key)`) and the value, cut at 80 characters.
 */
const Outside = z.array(z.object({ path: z.string(), value: z.string() }));
const CardItem = z.object({
  tool: z.string(),
  title: z.string(),
  lines: z.array(z.string()),
  undo: z.string(),
  call: z.string(),
  /** A7: the owner edited the call: the card words the edited call; these are the model's words and call. */
  original: z.object({ title: z.string(), lines: z.array(z.string()), call: z.string() }).optional(),
  /** A7: who edited it. */
  edited_by: z.string().optional(),
  /** O2: the values of this open-world call that did not come from the user: what the card marks. */
  outside: Outside.optional(),
});
/** U2: one result of a tool declared `output: untrusted` the run read: the call and a short label (others' words). */
const UntrustedSource = z.object({ tool: z.string(), call_id: z.string(), label: z.string() });
const Card = z.object({
  title: z.string(),
  request: z.string(),
  items: z.array(CardItem),
  offers_write_consent: z.literal(true).optional(),
  /** U6: what the run had read from outside the user when the card was made. */
  untrusted: z.array(UntrustedSource).optional(),
  /** A9: only tokens in one of these groups may answer the card. */
  approvers: z.array(z.string()).optional(),
  /** A9: the operator policies that asked for the card. */
  policy: z.array(z.string()).optional(),
  /** D3: a delegate's card: which delegate, the run that started it, and that run's request. */
  chain: z.object({ delegate: z.string(), parent_run: z.string(), request: z.string() }).optional(),
});
/** A run's card (issue 40): each item also has its call's id and structured arguments, as the stored pause has them. */
const ResultCard = Card.extend({
  items: z.array(
    CardItem.extend({
      call_id: z.string(),
      /** The call's arguments (`call` is the same, rendered). */
      args: Json,
      /** A7: the owner changed the arguments: the model's. */
      original_args: Json.optional(),
      edited_by: z.string().optional(),
    }),
  ),
});
const Confirmation = z.object({
  tools: z.array(z.string()),
  /** Each held call, and (U3) as the tool's describe words it: a yes covers exactly these once the run has read untrusted content. */
  items: z.array(
    z.object({
      call_id: z.string(),
      tool: z.string(),
      args: Json.nullable(),
      title: z.string().optional(),
      lines: z.array(z.string()).optional(),
    }),
  ),
  untrusted: z.array(UntrustedSource).optional(),
});

export const RunSummarySchema = z.object({
  run_id: z.string(),
  session_id: z.string(),
  status: z.enum(['running', 'paused', 'done', 'failed']),
  reason: z.string().nullable(),
  request: z.string(),
  mode: ModeSchema,
  model: z.string(),
  model_calls: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
  /** Waiting for a free slot on this server (KEEL_MAX_CONCURRENT_RUNS). */
  queued: z.boolean(),
  /** A delegate's run: the run that started it (null for a run the user started). */
  parent_run: z.string().nullable(),
});
export const RunListSchema = z.object({ runs: z.array(RunSummarySchema), next_cursor: z.string().nullable() });

/** `keel run --json`'s shape, with what a client also wants to know of a run still going. */
export const RunSchema = z.object({
  run_id: z.string(),
  session_id: z.string(),
  status: z.enum(['running', 'paused', 'done', 'failed']),
  queued: z.boolean(),
  reason: z.string().nullable(),
  request: z.string(),
  answer: z.string().nullable(),
  question: z.string().optional(),
  confirm: Confirmation.optional(),
  approval: z.object({ id: z.string(), card: ResultCard }).optional(),
  mode: ModeSchema,
  model: z.string(),
  model_calls: z.number().int(),
  effects: z.array(z.object({ call_id: z.string(), tool: z.string(), effect: z.string(), args: Json })),
  requests: z.array(
    z.object({
      system: z.string(),
      tools: z.array(z.object({ name: z.string(), description: z.string(), available: z.boolean() })),
      input_tokens: z.number().optional(),
      dropped: z.array(z.string()),
      /** Declared because a find_tools search of this run found them. */
      found: z.array(z.string()).optional(),
    }),
  ),
  steps: z.array(
    z.object({
      call_id: z.string(),
      tool: z.string(),
      args: Json.nullable(),
      outcome: Outcome,
      result: z.string(),
      is_error: z.boolean(),
      decision: z.enum(['yes', 'no']).optional(),
      consent_writes: z.literal(true).optional(),
      /** A7: the owner edited the call on its card: the model's arguments (`args` is what ran). */
      edited_from: Json.optional(),
      edited_by: z.string().optional(),
      /** U1: the result carried words from outside the user: where from. */
      untrusted: z.string().optional(),
      /** U4: the operator rule that let this write run unasked after untrusted content. */
      allowed_after_untrusted: z.string().optional(),
      /** PC11: the operator's Cedar policies that decided the call ([]: no policy permitted it). */
      policy: z.array(z.string()).optional(),
    }),
  ),
  /** U2: what the run has read from outside the user, in order. */
  untrusted: z.array(UntrustedSource),
  notes: z.array(z.string()),
  warnings: z.array(z.string()),
  contract: Json.nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  /** D2: the run waits for its delegate (reason awaiting_task): which task and run. */
  task: z.object({ id: z.string(), run_id: z.string(), delegate: z.string() }).optional(),
  /** D6: a delegate's run: the run that started it (null for a run the user started). */
  parent_run: z.string().nullable(),
  /** D6: the delegates' runs this run started, oldest first. */
  children: z.array(
    z.object({ run_id: z.string(), task_id: z.string(), delegate: z.string(), status: z.string(), reason: z.string().nullable() }),
  ),
});

export const LegAcceptedSchema = z.object({
  run_id: z.string(),
  session_id: z.string(),
  /** queued: waiting for a free slot; running: being worked now. */
  status: z.enum(['queued', 'running']),
  events: z.string(),
});

export const ApprovalSchema = z.object({
  id: z.string(),
  run_id: z.string(),
  status: z.enum(['pending', 'approved', 'rejected', 'expired']),
  /** The pause of its run this card answers. */
  pause_seq: z.number().int(),
  card: Card,
  items: z.array(
    z.object({
      call_id: z.string(),
      tool: z.string(),
      /** What runs (or ran): the model's arguments, or the owner's edit (A7). */
      args: Json,
      card: z.object({ title: z.string(), lines: z.array(z.string()) }),
      /** A7: the owner changed the arguments: the model's. */
      original_args: Json.optional(),
      /** A7: the card's words for the model's call (`card` words the edited one). */
      original_card: z.object({ title: z.string(), lines: z.array(z.string()) }).optional(),
      /** A7: who changed them. */
      edited_by: z.string().optional(),
      /** O2: the values of the model's call that did not come from the user (the card's item marks them). */
      outside: Outside.optional(),
    }),
  ),
  requested_at: z.string(),
  expires_at: z.string(),
  answered_at: z.string().nullable(),
  answered_by: z.string().nullable(),
  reason: z.string().nullable(),
  consent_writes: z.boolean(),
});
export const ApprovalListSchema = z.object({ approvals: z.array(ApprovalSchema) });
/**
 * R18 (issue 47): the run belongs to an application with what this server lacks (its model object's
 * spec, its tools declared in code): the answer is recorded, and the run continues when that application resumes it.
 */
export const WaitsForAppSchema = z.object({ model: z.string().optional(), tools: z.array(z.string()).optional() });
export const ApprovalAnsweredSchema = z.object({
  approval: ApprovalSchema,
  run: LegAcceptedSchema.nullable(),
  waits_for_app: WaitsForAppSchema.optional(),
});
/** A8: each card of a batch: answered (its run goes on), or why not (the others went on). */
export const BatchAnsweredSchema = z.object({
  results: z.array(
    z.object({
      id: z.string(),
      outcome: z.enum(['answered', 'expired', 'conflict', 'not_found', 'refused', 'error']),
      approval: ApprovalSchema.optional(),
      run: LegAcceptedSchema.nullable().optional(),
      waits_for_app: WaitsForAppSchema.optional(),
      error: z.string().optional(),
    }),
  ),
});

export const SessionSchema = z.object({
  id: z.string(),
  mode: ModeSchema,
  contract: Json.nullable(),
  last_run_id: z.string().nullable(),
  updated_at: z.string(),
  runs: z.array(RunSummarySchema),
});

const Row = z.object({
  kind: z.string(),
  tool: z.string().optional(),
  message: z.string(),
  /** A manifest error's place. */
  file: z.string().optional(),
  line: z.number().int().optional(),
  column: z.number().int().optional(),
  field: z.string().optional(),
});
export const PluginsSchema = z.object({
  plugins: z.array(
    z.object({
      name: z.string(),
      version: z.string(),
      dir: z.string(),
      status: z.enum(['loaded', 'degraded', 'failed']),
      tools: z.array(
        z.object({
          name: z.string(),
          effect: z.string(),
          gate: z.string(),
          declared_gate: z.string(),
          pinned: z.boolean(),
          answers_directly: z.boolean(),
          guidance: z.boolean(),
          contract_modes: z.string(),
          output: z.enum(['trusted', 'untrusted']),
          /** O1: the call's arguments reach a party other than the user and this deployment. */
          open_world: z.boolean(),
          after_untrusted: z.literal('allow').optional(),
          via: z.string(),
          undo: z.string().optional(),
          gate_source: z.string().optional(),
          rule: z.string().optional(),
          denied: z.literal(true).optional(),
          modes: z.array(ModeSchema).optional(),
        }),
      ),
      failures: z.array(Row),
      degraded: z.array(Row),
      drift: z.array(Row),
      runtime_failures: z.number().int(),
    }),
  ),
  /** Tools in the pool that no plugin owns: the core's own (ask_user, memory, contracts). */
  builtins: z.array(z.object({ name: z.string(), effect: z.string(), gate: z.string() })),
  policy_unmatched: z.array(z.string()),
});

export const HealthSchema = z.object({ status: z.enum(['ok', 'starting', 'stopping']), version: z.string() });
export const ReadySchema = z.object({
  ready: z.boolean(),
  store: z.string(),
  running: z.number().int(),
  queued: z.number().int(),
  limit: z.number().int(),
});
export const TokenSchema = z.object({
  id: z.string(),
  name: z.string(),
  role: RoleSchema,
  created_at: z.string(),
  revoked_at: z.string().nullable(),
  /** A9: the approver groups the token is in. */
  groups: z.array(z.string()),
});
export const TokenListSchema = z.object({ tokens: z.array(TokenSchema) });
export const TokenCreatedSchema = TokenSchema.extend({ token: z.string() });
export const WhoAmISchema = z.object({ name: z.string(), role: RoleSchema, groups: z.array(z.string()) });

/** Issue 41: a message as the AI SDK's chat client sends it (UIMessage): its parts are read for text and approval responses. */
const UiMessageIn = z.looseObject({
  id: z.string().max(200),
  role: z.enum(['system', 'user', 'assistant']),
  parts: z.array(z.looseObject({ type: z.string().max(200) })).max(2000),
});

/** Issue 41: the AI SDK chat request (DefaultChatTransport's body): `id` is the Keel session; `model` and `mode` as POST /v1/runs takes them. */
export const UiChatBody = z.looseObject({
  id: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[A-Za-z0-9_.:-]+$/, 'a chat id is letters, digits and _ . : -'),
  messages: z.array(UiMessageIn).max(2000),
  trigger: z.enum(['submit-message', 'regenerate-message']).default('submit-message'),
  messageId: z.string().max(200).optional(),
  model: z.string().min(1).max(2000).optional(),
  mode: ModeSchema.optional(),
});

/** Issue 41: a session as the AI SDK's UI messages (pending cards still `approval-requested`). */
export const UiMessagesSchema = z.object({
  id: z.string(),
  messages: z.array(z.object({ id: z.string(), role: z.enum(['user', 'assistant']), parts: z.array(z.looseObject({ type: z.string() })) })),
});
