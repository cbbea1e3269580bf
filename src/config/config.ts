import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { KeelError } from '../util/errors.js';

const DelegateSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9_-]+$/, 'lowercase letters, digits, - and _'),
  description: z.string().optional(),
  instructions: z.string().min(1),
  tools: z.array(z.string()).min(1),
  model: z.string().optional(),
  max_steps: z.number().int().positive().optional(),
});

export const ConfigSchema = z.strictObject({
  /** Operator rules per tool: checked, with positions, by src/policy/operator.ts. */
  policy: z.unknown().optional(),
  subagents: z
    .strictObject({
      max_concurrent: z.number().int().positive().default(2),
      delegates: z.array(DelegateSchema).default([]),
    })
    .optional(),
});

export type KeelConfig = z.infer<typeof ConfigSchema>;
export type DelegateConfig = z.infer<typeof DelegateSchema>;

/** Keel's config file: KEEL_CONFIG, else KEEL_HOME/config.yaml; absent means defaults. */
export function loadConfig(home: string, env: NodeJS.ProcessEnv): { file: string | null; config: KeelConfig } {
  const file = env.KEEL_CONFIG || join(home, 'config.yaml');
  if (!existsSync(file)) {
    if (env.KEEL_CONFIG) throw new KeelError('config', `KEEL_CONFIG names ${file}, which does not exist`);
    return { file: null, config: {} };
  }
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, 'utf8')) ?? {};
  } catch (err) {
    throw new KeelError('config', `${file}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new KeelError('config', `${file}: ${i.path.join('.') || '(top)'}: ${i.message}`);
  }
  const names = new Set<string>();
  for (const d of parsed.data.subagents?.delegates ?? []) {
    if (names.has(d.name)) throw new KeelError('config', `${file}: subagents.delegates: the name ${d.name} is used twice`);
    names.add(d.name);
  }
  return { file, config: parsed.data };
}
