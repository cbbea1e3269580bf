/**
 * PC9: who starts a run, as the operator's Cedar policy sees it (`principal`). What an application
 * hands Keel is checked here, bounded, before it is stored with the run; a policy never sees a
 * principal it could not have been written for.
 */
import type { Principal } from '../types/index.js';
import { KeelError } from '../util/errors.js';

const KINDS: readonly Principal['kind'][] = ['token', 'user', 'mcp', 'app'];
/** A group's name: what `keel tokens` accepts, and `@approvers("…")` names. */
export const GROUP_NAME = /^[a-z0-9_-]{1,40}$/;
const MAX_NAME = 200;
const MAX_GROUPS = 50;

/** An application's principal, checked: a KeelError (bad_input) naming the field otherwise. */
export function checkedPrincipal(p: Principal): Principal {
  const bad = (field: string, why: string) => new KeelError('bad_input', `principal.${field}: ${why}`);
  if (!p || typeof p !== 'object') throw new KeelError('bad_input', 'principal: must be an object { kind, name, groups }');
  if (!KINDS.includes(p.kind)) throw bad('kind', `must be one of ${KINDS.join(', ')}`);
  if (typeof p.name !== 'string' || p.name.length > MAX_NAME) throw bad('name', `must be a string of at most ${MAX_NAME} characters`);
  if (p.role !== undefined && (typeof p.role !== 'string' || p.role.length > 40)) throw bad('role', 'must be a short string');
  if (!Array.isArray(p.groups) || p.groups.length > MAX_GROUPS) throw bad('groups', `must be a list of at most ${MAX_GROUPS} group names`);
  for (const g of p.groups)
    if (typeof g !== 'string' || !GROUP_NAME.test(g))
      throw bad('groups', `${JSON.stringify(g)} is not a group name (a-z, 0-9, _ and -, at most 40)`);
  return { kind: p.kind, name: p.name, ...(p.role !== undefined ? { role: p.role } : {}), groups: [...p.groups] };
}
