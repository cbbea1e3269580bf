import { KeelError } from '../errors.js';
import type { ModelClient } from './types.js';

/** Real providers through pi-ai (SPEC P1). */
export async function createProviderModel(kind: string, _model: string, spec: string, _env: NodeJS.ProcessEnv): Promise<ModelClient> {
  throw new KeelError('config', `model spec "${spec}": the ${kind} provider is not wired yet`);
}
