/**
 * The two in-code tools of the mode-switch tests (C2, C3, C5; issue 27, item 1), shared by
 * test/keel/cross-process-mode.test.ts (two Keels over one store) and test/reliability/modes.ts (a
 * second process): `probe`, a read whose call switches the run's session to another mode somewhere
 * else, and `stamp`, a write that needs no confirmation and stays declared in Plan (labelled
 * unavailable, C3), so that a call of it after the switch is denied by mode (C2), not unknown.
 */
import { defineTool } from '../../src/tools/define.js';
import type { AppTool } from '../../src/types/index.js';

export interface ModeTools {
  tools: AppTool[];
  /** The documents stamped, in the order the calls ran. */
  stamped: string[];
}

/** `switchMode` is what a call of `probe` does, given the run it is called in; it returns once the switch is made. */
export function modeTools(switchMode: (runId: string) => Promise<void>): ModeTools {
  const stamped: string[] = [];
  const probe = defineTool({
    name: 'probe',
    description: 'Look at something',
    parameters: { type: 'object', properties: {} } as const,
    effect: 'read',
    execute: async (_args, ctx) => {
      await switchMode(ctx.run_id);
      return 'looked';
    },
  });
  const stamp = defineTool({
    name: 'stamp',
    description: 'Stamp a document',
    parameters: { type: 'object', properties: { doc: { type: 'string' } }, required: ['doc'] } as const,
    effect: 'write',
    confirm: 'never',
    contract_modes: 'declare',
    execute: ({ doc }) => {
      stamped.push(doc);
      return `Stamped ${doc}.`;
    },
  });
  return { tools: [probe, stamp], stamped };
}
