/**
 * A9: who may answer a card — the one place the routing rule is decided. A card a policy annotated
 * `@approvers("GROUP")` carries those groups (`card.approvers`); only a token in one of them may
 * answer it. Every answer goes through `recordApprovalAnswer` (A3), which asks here with the
 * answerer it is given; the console asks here too, to show such a card without buttons.
 */
import type { ApprovalCard } from '../types/index.js';
import { KeelError } from '../util/errors.js';

/**
 * Who answers a card.
 * - `token`: a `keel serve` token (the API, the console, the CLI with `--server`): its groups apply.
 * - `mcp`: an MCP client over HTTP with a token: that token's groups apply.
 * - `user`: the machine's own user without a token (the local CLI, `keel chat`, an MCP client over
 *   stdio): the operator, who holds the store file itself, may answer any card.
 * - `app`: an application through the library (`keel.approve()`): the application is the authority
 *   and names its own actor.
 * - `app_user`: a person an application's own authentication signed in, answering through its chat
 *   (`chatHandler`'s actor): the groups the application gives apply, as a token's do.
 */
export interface Answerer {
  name: string;
  role?: string;
  groups: readonly string[];
  kind: 'token' | 'user' | 'mcp' | 'app' | 'app_user';
}

/** A card's groups, or none (a card with an empty list is not routed). */
export function approversOf(card: Pick<ApprovalCard, 'approvers'>): readonly string[] {
  return Array.isArray(card.approvers) ? card.approvers : [];
}

/**
 * A9: may `who` answer `card`? A card without approvers: yes (roles are checked where they are, as
 * before). With approvers: a token (or an MCP client's token, or an application's signed-in user) in
 * one of the groups; the machine's own user and an application itself, always.
 */
export function mayAnswer(card: Pick<ApprovalCard, 'approvers'>, who: Answerer): boolean {
  // Not routed: roles decide. Routed to no group at all (its calls' policies share none: card.ts
  // routedTo): only the machine's user or the app may answer it, never a token.
  if (!Array.isArray(card.approvers)) return true;
  const groups = card.approvers;
  if (who.kind === 'user' || who.kind === 'app') return true;
  return who.groups.some((g) => groups.includes(g));
}

/** The words a card's routing is shown in: "Only FINANCE may answer this card" (two: "FINANCE or OPS"). */
export function onlyGroups(card: Pick<ApprovalCard, 'approvers'>): string {
  const g = approversOf(card).map((x) => x.toUpperCase());
  const named = g.length <= 1 ? g.join('') : `${g.slice(0, -1).join(', ')} or ${g[g.length - 1]}`;
  return `Only ${named} may answer this card`;
}

/** A9: the refusal of an answer by someone outside the card's groups (HTTP 403); nothing is recorded. */
export function notYours(id: string, card: Pick<ApprovalCard, 'approvers'>, who: Answerer): KeelError {
  const groups = approversOf(card);
  const theirs = who.groups.length ? `in ${who.groups.join(', ')}` : 'in no group';
  return new KeelError(
    'forbidden',
    `approval ${id} is routed to ${groups.length === 1 ? 'the group' : 'the groups'} ${groups.join(', ')}: only a token in ${groups.length === 1 ? 'it' : 'one of them'} may answer it, and ${who.name} is ${theirs}`,
    `keel tokens groups NAME --add ${groups[0]}`,
  );
}
