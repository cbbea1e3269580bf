/**
 * config.yaml: its schema (limits, delegates, webhooks, Web Push, the policy file) and how it is
 * read. Never starts Keel on a config it could not read: a mistake is named with its place.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import type { z as Zod } from 'zod';
import type { Env } from '../types/env.js';
import { KeelError } from '../util/errors.js';
import { GROUP_NAME } from '../util/groups.js';
import { nearestName } from '../util/text.js';
import { offsetOf, type YamlPath, yamlProblem, yamlWithPositions } from '../util/yaml-where.js';

// The schemas are built on first use: most runs have no config file, and loading zod and yaml
// costs tens of milliseconds on every `keel run`.
const load = createRequire(import.meta.url);

function delegateSchema(z: typeof Zod) {
  return z.strictObject({
    name: z.string().regex(/^[a-z0-9_-]+$/, 'lowercase letters, digits, - and _'),
    description: z.string().optional(),
    instructions: z.string().min(1),
    tools: z.array(z.string()).min(1),
    model: z.string().optional(),
    max_steps: z.number().int().positive().optional(),
  });
}

/** What `keel serve` can tell a webhook about (src/server/alerts/notify.ts sends them). */
export const NOTIFY_EVENTS = ['approval_created', 'run_paused', 'run_failed'] as const;

/** The longest a webhook retry waits: the backoff doubles up to this. */
export const NOTIFY_MAX_BACKOFF_MS = 60_000;

const isHttpUrl = (s: string): boolean => {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
};

/**
 * One webhook receiver. Every delivery is signed, so a target must name its secret: `secret_env`
 * (the name of an environment variable holding it; preferred, so the secret stays out of the file)
 * or `secret` (the secret itself), not both. The variable is read when a delivery is sent, not here:
 * a config that names an unset variable still loads (so `keel run` and the rest are not broken by a
 * webhook setting), and each delivery to that target then fails unsent — never unsigned — audited as
 * `webhook_failed`, with one warning on stderr.
 */
function notifyTargetSchema(z: typeof Zod) {
  return z
    .strictObject({
      url: z.string().refine(isHttpUrl, 'must be an http:// or https:// URL'),
      events: z
        .array(z.enum(NOTIFY_EVENTS))
        .min(1, `list at least one event (${NOTIFY_EVENTS.join(', ')}), or leave events out for all of them`)
        .default([...NOTIFY_EVENTS]),
      secret_env: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'the name of an environment variable (letters, digits and _), not the secret itself')
        .optional(),
      secret: z.string().min(1, 'must not be empty').optional(),
      /** Attempts after the first. */
      retries: z.number().int().min(0).max(20).default(5),
      /** The first retry's delay; it doubles each time, up to NOTIFY_MAX_BACKOFF_MS. */
      backoff_ms: z.number().int().min(0).max(NOTIFY_MAX_BACKOFF_MS).default(500),
      /** Per attempt, until the response's headers arrive. */
      timeout_ms: z.number().int().positive().max(120_000).default(5000),
      /**
       * A10: the approver groups this receiver serves: it gets the cards routed to one of them and
       * every card routed to none. Left out, it gets every card (its receiver is the operator's own).
       */
      groups: z
        .array(z.string().regex(GROUP_NAME, 'a group name: 1 to 40 of a-z, 0-9, _ and -'))
        .min(1, 'list at least one group, or leave groups out for every card')
        .optional(),
    })
    .superRefine((t, ctx) => {
      if (t.secret === undefined && t.secret_env === undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['secret_env'],
          message:
            'a webhook target needs a signing secret: set secret_env to the name of an environment variable holding it (preferred), or secret',
        });
      else if (t.secret !== undefined && t.secret_env !== undefined)
        ctx.addIssue({ code: 'custom', path: ['secret'], message: 'give secret_env or secret, not both' });
    });
}

function configSchema(z: typeof Zod) {
  return z.strictObject({
    /** Operator rules per tool: checked, with positions, by src/policy/operator.ts. */
    policy: z.unknown().optional(),
    subagents: z
      .strictObject({
        /** D5: delegates' runs not over, per parent run. */
        max_concurrent: z.number().int().positive().default(2),
        delegates: z.array(delegateSchema(z)).default([]),
        /** D5: delegates' runs not over, in the whole store. */
        max_total: z.number().int().positive().default(8),
        /** D5: how deep delegates nest: 1, a run's delegates start none of their own. */
        max_depth: z.number().int().positive().default(1),
        /** D5: each delegate's step budget (model calls) unless its own max_steps says otherwise. */
        max_steps: z.number().int().positive().optional(),
      })
      .optional(),
    /** Webhooks `keel serve` calls when an approval waits, a run pauses or a run fails. */
    notify: z.array(notifyTargetSchema(z)).optional(),
    /** The operator's Cedar policy file (issue 37), relative to the config file: see policyFileOf. */
    policy_file: z.string().min(1, 'name a file of Cedar policies').optional(),
  });
}

let schema: ReturnType<typeof configSchema> | undefined;
/** The config file's schema (zod), made the first time a config is read. */
export function ConfigSchema(): ReturnType<typeof configSchema> {
  schema ??= configSchema((load('zod') as typeof import('zod')).z);
  return schema;
}

export type KeelConfig = Zod.infer<ReturnType<typeof configSchema>>;
export type DelegateConfig = Zod.infer<ReturnType<typeof delegateSchema>>;
/** One parsed webhook target (defaults filled in). */
export type NotifyTarget = Zod.infer<ReturnType<typeof notifyTargetSchema>>;

/**
 * Keel's config file: KEEL_CONFIG, else KEEL_HOME/config.yaml; absent means defaults. A mistake is
 * a KeelError (`config`) that starts FILE:LINE:COL and says what to change: the YAML problem in one
 * line, an unknown key with the nearest known one, a value the schema refuses with its key's path.
 */
export function loadConfig(home: string, env: Env): { file: string | null; config: KeelConfig } {
  const file = env.KEEL_CONFIG || join(home, 'config.yaml');
  if (!existsSync(file)) {
    if (env.KEEL_CONFIG) throw new KeelError('config', `KEEL_CONFIG names ${file}, which does not exist`);
    return { file: null, config: {} };
  }
  const { doc, pos } = yamlWithPositions(readFileSync(file, 'utf8'));
  const at = (path: YamlPath, key = false) => {
    const p = pos(offsetOf(doc, path, key));
    return `${file}:${p.line}:${p.col}`;
  };
  const [bad] = doc.errors;
  if (bad) {
    const p = pos(bad.pos[0]);
    throw new KeelError('config', `${file}:${p.line}:${p.col}: not valid YAML: ${yamlProblem(bad)}`);
  }
  let raw: unknown;
  try {
    raw = doc.toJS() ?? {};
  } catch (err) {
    throw new KeelError('config', `${at([])}: not valid YAML: ${yamlProblem(err as Error)}`);
  }
  const parsed = ConfigSchema().safeParse(raw);
  if (!parsed.success) {
    // A misspelt key also leaves the key it meant missing: the misspelling is the one to fix.
    const { issues } = parsed.error;
    throw new KeelError('config', configIssue(issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0], raw, at));
  }
  const names = new Set<string>();
  for (const [i, d] of (parsed.data.subagents?.delegates ?? []).entries()) {
    if (names.has(d.name))
      throw new KeelError('config', `${at(['subagents', 'delegates', i, 'name'])}: subagents.delegates: the name ${d.name} is used twice`);
    names.add(d.name);
  }
  return { file, config: parsed.data };
}

/** One schema issue as FILE:LINE:COL, the key's path and what to change. */
function configIssue(i: Zod.core.$ZodIssue, raw: unknown, at: (path: YamlPath, key?: boolean) => string): string {
  const path = i.path.filter((p): p is string | number => typeof p !== 'symbol');
  const named = (p: YamlPath) => p.join('.') || '(top)';
  if (i.code === 'unrecognized_keys') {
    const [k] = i.keys;
    const meant = nearestName(k, fieldsAt(path));
    return `${at([...path, k], true)}: unknown key '${named([...path, k])}'${meant ? ` (did you mean '${named([...path, meant])}'?)` : ''}`;
  }
  // zod keeps no input on an issue: look the value up, so that "missing" means missing.
  let node: unknown = raw;
  for (const k of path.slice(0, -1)) node = (node as Record<string | number, unknown> | null)?.[k];
  const last = path.at(-1);
  if (i.code === 'invalid_type' && last !== undefined && node !== null && typeof node === 'object' && !Object.hasOwn(node, last))
    return `${at(path.slice(0, -1), true)}: ${named(path.slice(0, -1))}: missing required key '${last}'`;
  return `${at(path)}: ${named(path)}: ${i.message}`;
}

/** The keys the mapping at `path` may have, from the schema (none when it is not a mapping). */
function fieldsAt(path: YamlPath): string[] {
  const { z } = load('zod') as typeof import('zod');
  let s: unknown = ConfigSchema();
  for (const k of [...path, undefined]) {
    while (s instanceof z.ZodOptional || s instanceof z.ZodDefault) s = s.unwrap();
    if (k === undefined) break;
    if (s instanceof z.ZodObject) s = (s.shape as Record<string, unknown>)[String(k)];
    else if (s instanceof z.ZodArray) s = s.element;
    else return [];
  }
  return s instanceof z.ZodObject ? Object.keys(s.shape) : [];
}

/** The config's `policy_file:` as a path: relative to the config file's folder; null when none is named. */
export function policyFileOf(loaded: { file: string | null; config: KeelConfig }): string | null {
  const named = loaded.config.policy_file;
  if (!named || !loaded.file) return null;
  return resolve(dirname(loaded.file), named);
}
