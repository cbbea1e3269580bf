import type { ApprovalCard, ApprovalItem, CardText, ToolSpec } from '../types/index.js';
import { canonicalJson } from '../util/json.js';
import { storableText } from '../util/text.js';

/** The plugin's own words, or the raw call when it has none (or its describe fails). */
export function describeCall(tool: ToolSpec, args: Record<string, unknown>): CardText {
  const raw = { title: `${tool.name}`, lines: [`${tool.name}(${canonicalJson(args)})`] };
  if (!tool.describe) return raw;
  try {
    const c = tool.describe(args);
    if (!c || typeof c.title !== 'string' || !Array.isArray(c.lines)) return raw;
    // Issue 27: a plugin's words are untrusted text, made storable before the card is kept.
    return { title: storableText(c.title).text, lines: c.lines.map((l) => storableText(String(l)).text) };
  } catch {
    return raw;
  }
}

export function undoSentence(tool: ToolSpec): string {
  if (tool.onlyInModes) return 'approving switches the session to agent mode; rejecting keeps it as it is';
  return tool.declaration.undo ? `reversible with ${tool.declaration.undo}` : 'cannot be undone';
}

export function buildCard(items: readonly ApprovalItem[], tools: ReadonlyMap<string, ToolSpec>, request: string): ApprovalCard {
  // R16: a plan or goal card (its submit tool exists only in a contract mode) offers to let its writes run unasked.
  const contract = items.some((i) => tools.get(i.tool)?.onlyInModes);
  return {
    ...(contract ? { offers_write_consent: true as const } : {}),
    title: items.length === 1 ? items[0].card.title : `${items.length} actions need your approval`,
    items: items.map((i) => {
      const t = tools.get(i.tool);
      return {
        tool: i.tool,
        title: i.card.title,
        lines: i.card.lines,
        undo: t ? undoSentence(t) : 'cannot be undone',
        call: `${i.tool}(${canonicalJson(i.args)})`,
      };
    }),
    request,
  };
}

/** The card as text, for the CLI and the demo. */
export function renderCard(card: ApprovalCard, id?: string): string {
  const out = [`┌ Approval needed${id ? ` (${id})` : ''}: ${card.title}`, `│ You asked: ${card.request}`];
  for (const item of card.items) {
    out.push(`│ • ${item.title}`);
    for (const l of item.lines) out.push(`│     ${l}`);
    out.push(`│     ${item.undo[0].toUpperCase()}${item.undo.slice(1)}.`);
    out.push(`│     exact call: ${item.call}`);
  }
  if (card.offers_write_consent) {
    out.push('│ Approving may also let the confirm-once writes made while carrying it out run without asking');
    out.push('│ (keel approvals approve ID --allow-writes); destructive calls and pinned writes still get cards.');
  }
  out.push('└');
  return out.join('\n');
}

/**
 * The card as plain text for another program's window (an MCP client's elicitation): no box
 * drawing, which only a terminal lines up, and no "You asked" for an MCP session's card, whose
 * request is only the session's label: the client's user made the call themselves.
 */
export function renderCardText(card: ApprovalCard, id?: string): string {
  const out = [`Approval needed${id ? ` (${id})` : ''}: ${card.title}`];
  if (!card.request.startsWith('MCP session')) out.push(`You asked: ${card.request}`);
  for (const item of card.items) {
    out.push(`- ${item.title}`);
    for (const l of item.lines) out.push(`  ${l}`);
    out.push(`  ${item.undo[0].toUpperCase()}${item.undo.slice(1)}.`);
    out.push(`  Exact call: ${item.call}`);
  }
  return out.join('\n');
}
