/**
 * A9: the names of approver groups — a token's groups (`keel tokens`), a card's `approvers` (a
 * policy's `@approvers("GROUP")`), a webhook's `groups` — one spelling everywhere, so a group a
 * policy names is the group a token is given.
 */
export const GROUP_NAME = /^[a-z0-9_-]{1,40}$/;

/** What is wrong with a group's name, or undefined. */
export function groupProblem(name: string): string | undefined {
  if (GROUP_NAME.test(name)) return undefined;
  const shown = JSON.stringify(name.length > 60 ? `${name.slice(0, 60)}…` : name);
  return `${shown} is not a group name: use 1 to 40 of a-z, 0-9, _ and - (lower case, e.g. finance)`;
}
