/**
 * Approval cards: what a call shows the person asked (the plugin's describe, or the raw call), how
 * a card is built from a pause's calls, and to whom it is routed. Never lets a plugin's or a
 * model's text decide what the card asks or who may answer it.
 */
import type { ApprovalCard, ApprovalItem, CardText, Confirmation, OutsideValue, ToolSpec, UntrustedSource } from '../types/index.js';
import { canonicalJson } from '../util/json.js';
import { storableText } from '../util/text.js';
import { onlyGroups } from './who.js';

/** The plugin's own words, or the raw call when it has none (or its describe fails). */
export function describeCall(tool: ToolSpec, args: Record<string, unknown>): CardText {
  const raw = { title: `${tool.name}`, lines: [`${tool.name}(${canonicalJson(args)})`] };
  if (!tool.describe) return raw;
  try {
    const c = tool.describe(args);
    if (!c || typeof c.title !== 'string' || (c.lines !== undefined && !Array.isArray(c.lines))) return raw;
    // Issue 27: a plugin's words are untrusted text, made storable before the card is kept.
    return { title: storableText(c.title).text, lines: (c.lines ?? []).map((l) => storableText(String(l)).text) };
  } catch {
    return raw;
  }
}

export function undoSentence(tool: ToolSpec): string {
  if (tool.onlyInModes) return 'approving switches the session to agent mode; rejecting keeps it as it is';
  return tool.declaration.undo ? `reversible with ${tool.declaration.undo}` : 'cannot be undone';
}

export function buildCard(
  items: readonly ApprovalItem[],
  tools: ReadonlyMap<string, ToolSpec>,
  request: string,
  untrusted: readonly UntrustedSource[] = [],
): ApprovalCard {
  // R16: a plan or goal card (its submit tool exists only in a contract mode) offers to let its writes run unasked.
  const contract = items.some((i) => tools.get(i.tool)?.onlyInModes);
  const policy = [...new Set(items.flatMap((i) => i.policy ?? []))];
  const approvers = routedTo(items);
  return {
    ...(contract ? { offers_write_consent: true as const } : {}),
    // PC11/A9: which policies asked, and who may answer.
    ...(policy.length ? { policy } : {}),
    ...(approvers ? { approvers } : {}),
    // U6: the card says what outside content the run has read, from the run's own record of it.
    ...(untrusted.length ? { untrusted: untrusted.map((u) => ({ ...u })) } : {}),
    title: items.length === 1 ? items[0].card.title : `${items.length} actions need your approval`,
    items: items.map((i) => {
      const t = tools.get(i.tool);
      return {
        tool: i.tool,
        title: i.card.title,
        lines: i.card.lines,
        undo: t ? undoSentence(t) : 'cannot be undone',
        call: `${i.tool}(${canonicalJson(i.args)})`,
        ...(i.outside?.length ? { outside: i.outside.map((o) => ({ ...o })) } : {}),
      };
    }),
    request,
  };
}

/**
 * A9: the groups that may answer a card: each routed call's `@approvers` must be met, so a card of
 * calls routed to different groups goes to the groups they share (none shared: no token may answer
 * it — the local operator still can, A9). Undefined when no call is routed.
 */
export function routedTo(items: readonly Pick<ApprovalItem, 'approvers'>[]): string[] | undefined {
  let groups: string[] | undefined;
  for (const i of items) {
    if (!i.approvers?.length) continue;
    groups = groups ? groups.filter((g) => i.approvers?.includes(g)) : [...new Set(i.approvers)];
  }
  return groups;
}

/** U6: what a run read from outside the user, grouped by tool in order of first read: how many results, and their labels. */
export function groupSources(untrusted: readonly UntrustedSource[]): { tool: string; count: number; labels: string[] }[] {
  const groups = new Map<string, { tool: string; count: number; labels: string[] }>();
  for (const u of untrusted) {
    let g = groups.get(u.tool);
    if (!g) groups.set(u.tool, (g = { tool: u.tool, count: 0, labels: [] }));
    g.count++;
    if (!g.labels.includes(u.label)) g.labels.push(u.label);
  }
  return [...groups.values()];
}

/**
 * U6: one line saying what a run read from outside the user — "This run read words from outside
 * you: 2 results of read_email (eve@example.com; bob@example.com), 1 result of fetch_page (…)".
 * The labels are others' words: the caller escapes the line where it shows it.
 */
export function sourcesLine(untrusted: readonly UntrustedSource[], maxLabels = 3): string | undefined {
  if (!untrusted.length) return undefined;
  const parts = groupSources(untrusted).map((g) => {
    const shown = g.labels.slice(0, maxLabels).join('; ');
    const more = g.labels.length > maxLabels ? `; ${g.labels.length - maxLabels} more` : '';
    return `${g.count} result${g.count === 1 ? '' : 's'} of ${g.tool} (${shown}${more})`;
  });
  return `This run read words from outside you: ${parts.join(', ')}. Approve only what you asked for.`;
}

/**
 * U3: the calls a confirmation holds, as the core renders them (the tool's describe, then the exact
 * call), and what the run has read from outside — for the CLI, chat and the demo. Once the run has
 * read untrusted content, a yes covers exactly these calls.
 */
export function renderConfirmation(confirm: Confirmation): string[] {
  const out = [`  Held until you confirm (${confirm.tools.join(', ')}):`];
  for (const i of confirm.items) {
    const call = `${i.tool}(${canonicalJson(i.args ?? {})})`;
    if (i.title && i.title !== i.tool)
      out.push(`    • ${i.title}`, ...(i.lines ?? []).map((l) => `        ${l}`), `        exact call: ${call}`);
    else out.push(`    • ${call}`);
  }
  const read = sourcesLine(confirm.untrusted ?? []);
  if (read) out.push(`  ${read} A yes covers exactly the calls above.`);
  return out;
}

/**
 * The card's lines, each at its depth (0 the card, 1 an item, 2 an item's detail, 3 an edited
 * call's original lines): the terminal's and a client window's renderings both walk this one list.
 * An MCP session's request is only the session's label (its client's user made the call): not shown.
 */
function cardLines(card: ApprovalCard): [depth: 0 | 1 | 2 | 3, text: string][] {
  const out: [0 | 1 | 2 | 3, string][] = [];
  // D3 (issue 38): a delegate's card names the chain; its request is the task its parent gave it.
  if (card.chain) {
    out.push([0, `Delegate ${card.chain.delegate}, started by run ${card.chain.parent_run} for: ${card.chain.request}`]);
    out.push([0, `Its task: ${card.request}`]);
  } else if (!card.request.startsWith('MCP session')) out.push([0, `You asked: ${card.request}`]);
  const read = sourcesLine(card.untrusted ?? []);
  if (read) out.push([0, read]);
  for (const item of card.items) {
    out.push([1, item.title]);
    for (const l of item.lines) out.push([2, l]);
    out.push([2, `${item.undo[0].toUpperCase()}${item.undo.slice(1)}.`]);
    out.push([2, `exact call: ${item.call}`]);
    // O2/O6: an open-world call's values that did not come from the user, each on a line of its own.
    for (const l of outsideLines(item.outside)) out.push([2, l]);
    // A7 (issue 40): an edited call is shown as it runs; what the model asked for is kept beside it.
    if (item.original) {
      out.push([2, `edited by ${item.edited_by ?? 'the approver'}; was: ${item.original.title}`]);
      for (const l of item.original.lines) out.push([3, l]);
      out.push([2, `was: ${item.original.call}`]);
    }
  }
  if (card.offers_write_consent) {
    out.push([0, 'Approving may also let the confirm-once writes made while carrying it out run without asking']);
    out.push([0, '(keel approvals approve ID --allow-writes); destructive calls and pinned writes still get cards.']);
  }
  // A9: which operator policy asked for the card, and who may answer it.
  if (card.policy?.length) out.push([0, `Asked by policy ${card.policy.join(', ')}`]);
  if (card.approvers?.length) out.push([0, onlyGroups(card)]);
  return out;
}

/**
 * O2/O6: the lines a card marks an open-world call's outside values with — "Not from you: url =
 * https://…" — the one wording of it for the terminal, a client's window and the chat UI. The values
 * are the model's text: the caller escapes them where it shows them (the CLI's io, JSX).
 */
export function outsideLines(outside: readonly OutsideValue[] | undefined): string[] {
  return (outside ?? []).map((o) => `${OUTSIDE_LABEL} ${o.path} = ${o.value}`);
}

/** O2: how every rendering of a card names a value the user did not write. */
export const OUTSIDE_LABEL = 'Not from you:';

const TERMINAL_INDENT = ['│ ', '│ • ', '│     ', '│       '];
const TEXT_INDENT = ['', '- ', '  ', '    '];

/** The card as text, for the CLI and the demo. */
export function renderCard(card: ApprovalCard, id?: string): string {
  const head = `┌ Approval needed${id ? ` (${id})` : ''}: ${card.title}`;
  return [head, ...cardLines(card).map(([d, t]) => `${TERMINAL_INDENT[d]}${t}`), '└'].join('\n');
}

/**
 * A7 (issue 40): the card after the owner's edit: each edited call in its tool's words (the items'
 * `card`, worded again at the edit) and its exact call, with the model's beside it. A card of one
 * call takes its title from the call, as buildCard gives it.
 */
export function editedCard(card: ApprovalCard, items: readonly ApprovalItem[]): ApprovalCard {
  const shown = card.items.map((c, n) => {
    const i = items[n];
    if (!i?.original_args || i.tool !== c.tool) return c;
    const was = i.original_card ?? { title: c.title, lines: c.lines };
    // O2: the values the owner typed are theirs: the marks of the model's call go with it ("was").
    const rest = { ...c };
    delete rest.outside;
    return {
      ...rest,
      title: i.card.title,
      lines: i.card.lines,
      call: `${i.tool}(${canonicalJson(i.args)})`,
      original: { title: was.title, lines: was.lines, call: `${i.tool}(${canonicalJson(i.original_args)})` },
      ...(i.edited_by ? { edited_by: i.edited_by } : {}),
    };
  });
  return { ...card, title: shown.length === 1 ? shown[0].title : card.title, items: shown };
}

/**
 * The card as plain text for another program's window (an MCP client's elicitation): the same lines
 * without the box drawing, which only a terminal lines up.
 */
export function renderCardText(card: ApprovalCard, id?: string): string {
  const head = `Approval needed${id ? ` (${id})` : ''}: ${card.title}`;
  return [head, ...cardLines(card).map(([d, t]) => `${TEXT_INDENT[d]}${t}`)].join('\n');
}
