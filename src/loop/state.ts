import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Mode } from '../tools/types.js';
import type { Contract, Message, RunState } from './types.js';

const OWNER = `${hostname()}:${process.pid}`;
/** This process, as recorded in a run it drives. */
export function processOwner(): string {
  return OWNER;
}

/**
 * Whether the process that owns a run may still be driving it. On this host we can ask the OS;
 * a run owned elsewhere is assumed alive until it has been silent for `staleMs`.
 */
export function ownerAlive(owner: string | null, updatedAt: string, staleMs = 10 * 60_000): boolean {
  if (!owner) return false;
  const [host, pid] = owner.split(':');
  if (owner === OWNER) return false;
  if (host === hostname()) {
    try {
      process.kill(Number(pid), 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  return Date.now() - Date.parse(updatedAt) < staleMs;
}

export function newRunState(input: {
  request: string;
  mode: Mode;
  model: string;
  plugin_dirs: string[];
  now: string;
  session?: { seq_base: number };
  session_id?: string;
  history?: readonly Message[];
  contract?: Contract | null;
}): RunState {
  const id = `run_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  return {
    id,
    session_id: input.session_id ?? `ses_${id.slice(4)}`,
    seq_base: input.session?.seq_base ?? 0,
    contract: input.contract ?? null,
    status: 'running',
    reason: null,
    request: input.request,
    mode: input.mode,
    model: input.model,
    plugin_dirs: input.plugin_dirs,
    answer: null,
    pause: null,
    pause_seq: 0,
    model_calls: 0,
    effects: [],
    messages: [...(input.history ?? []), { role: 'user', content: input.request } satisfies Message],
    steps: [],
    requests: [],
    notes: [],
    owner: processOwner(),
    created_at: input.now,
    updated_at: input.now,
  };
}
