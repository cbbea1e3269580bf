/**
 * The one conversation both agents replay: `steps` model calls, each but the last calling one read
 * tool (a different tool and different arguments every time), the last answering in text.
 */

export interface BenchToolDef {
  name: string;
  description: string;
  /** Plain JSON Schema (Keel takes it as is; pi-agent-core gets the same shape as a TypeBox object). */
  parameters: Record<string, unknown>;
}

export interface ScriptedCall {
  id: string;
  name: string;
  args: { path: string; limit: number };
}

export type ScriptedReply = { kind: 'call'; call: ScriptedCall } | { kind: 'text'; text: string };

export const REQUEST = 'Read the nine project files and tell me what they say.';
export const FINAL_TEXT = 'The nine files describe the release plan, the budget and the on-call rota; nothing is overdue.';

const DOMAINS = ['notes', 'tickets', 'invoices', 'calendar', 'contacts', 'docs', 'metrics', 'logs', 'orders', 'files'];

export function toolName(i: number): string {
  return `read_${DOMAINS[i % DOMAINS.length]}_${String(i).padStart(4, '0')}`;
}

export function benchTools(count: number): BenchToolDef[] {
  return Array.from({ length: count }, (_, i) => ({
    name: toolName(i),
    description: `Read one ${DOMAINS[i % DOMAINS.length]} record (source ${i}) by path and return its text, at most limit lines.`,
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Path of the record to read.' },
        limit: { type: 'integer', description: 'Maximum number of lines to return.' },
      },
      required: ['path'],
      additionalProperties: false,
    },
  }));
}

/** `steps` model replies: steps-1 single tool calls over tools spread across the pool, then the answer. */
export function conversation(toolCount: number, steps: number): ScriptedReply[] {
  const out: ScriptedReply[] = [];
  for (let k = 0; k < steps - 1; k++) {
    const index = (k * 7919 + 3) % toolCount;
    out.push({ kind: 'call', call: { id: `call_${k + 1}`, name: toolName(index), args: { path: `/data/file_${k + 1}.txt`, limit: 100 } } });
  }
  out.push({ kind: 'text', text: FINAL_TEXT });
  return out;
}

/** What every tool returns: short, deterministic, different per call. */
export function toolOutput(name: string, args: Record<string, unknown>): string {
  return `${name} ${String(args.path)}: 42 lines. First line: "Quarterly plan, owner Dana, due in 15 days."`;
}
