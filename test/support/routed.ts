/**
 * A9 before the Cedar integration lands: cards routed as a policy annotated `@approvers("GROUP")`
 * will route them. `routeCards` wraps a store so that the card a pause saves (the approval record,
 * the paused run's own copy and the journal's paused event) gets `approvers` and `policy` when
 * `route` says so — the same fields the gate will set — so every surface can be tested on them.
 */
import type { ApprovalCard, JournalEntry, Store } from '../../src/types/index.js';

export type Route = (card: ApprovalCard) => { approvers: string[]; policy?: string[] } | undefined;

/** Routes the cards of `tools` to `approvers` (asked by `policy`). */
export const byTool =
  (tools: string[], approvers: string[], policy = ['test-policy']): Route =>
  (card) =>
    card.items.some((i) => tools.includes(i.tool)) ? { approvers, policy } : undefined;

function mark(card: ApprovalCard | undefined, route: Route): void {
  const r = card && route(card);
  if (card && r) Object.assign(card, { approvers: r.approvers, ...(r.policy ? { policy: r.policy } : {}) });
}

export function routeCards(store: Store, route: Route): void {
  const save = store.saveRun.bind(store);
  store.saveRun = (run, events?: JournalEntry[], card?) => {
    if (card) mark(card.card, route);
    if (run.pause?.kind === 'approval') mark(run.pause.card, route);
    for (const e of events ?? []) if (e.event.type === 'paused' && e.event.pause.kind === 'approval') mark(e.event.pause.card, route);
    return save(run, events, card);
  };
  const create = store.createApproval.bind(store);
  store.createApproval = (a) => {
    mark(a.card, route);
    return create(a);
  };
}
