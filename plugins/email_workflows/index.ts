// email_workflows: the owner's mailbox, its tools, and an email agent that runs its own loop over
// tools declared with api.declareTool. Data lives in KEEL_HOME/data/email_workflows.db, seeded on
// first use; dates are relative to the 'today' stored in the data, never the wall clock.
import type { PluginAPI } from '../../src/plugin-host/types.js';
import { agentTools, buildToolbox, runAgent } from './agent.js';
import { closeDb, deleteDb, openDb } from './mailbox.js';
import { sendEmail } from './send.js';
import { findAttachment, inboxDigest, listByCategory, readEmail, searchInbox } from './tools.js';
import { restoreEmail, trashCategory, trashEmail } from './trash.js';

export { dbPath } from './mailbox.js';

/** Deletes this plugin's data and seeds it again (`keel data reset`). */
export async function reset(home: string): Promise<void> {
  deleteDb(home);
  openDb(home);
  closeDb(home);
}

export default function setup(api: PluginAPI): void {
  const db = () => openDb(api.home);
  api.onClose(() => closeDb(api.home));

  for (const make of [
    searchInbox,
    readEmail,
    findAttachment,
    listByCategory,
    inboxDigest,
    trashEmail,
    restoreEmail,
    trashCategory,
    sendEmail,
  ]) {
    api.registerTool(make(db));
  }

  // Declared now, at setup, so the host checks them against the manifest before any run.
  const toolbox = buildToolbox(api, agentTools(db));

  api.registerTool({
    name: 'email_agent',
    description:
      "Hand an email task to the mailbox's own agent, which plans and runs read-only steps (find emails, classify what they " +
      "ask of the owner, summarize threads) and reports its findings with the steps it took. For 'triage my mail', " +
      "'which emails need a reply', 'summarize the Fabrikam thread', 'classify m101 and m104'. It never changes or sends anything.",
    parameters: {
      type: 'object',
      properties: {
        instruction: { type: 'string', minLength: 1, description: 'The task, in the owner’s words.' },
        max_steps: { type: 'integer', minimum: 1, maximum: 10, description: 'Most steps the agent may take (default 6).' },
      },
      required: ['instruction'],
      additionalProperties: false,
    },
    execute: (args, ctx) => {
      if (typeof args.instruction !== 'string' || !args.instruction.trim())
        return { content: 'instruction must describe the task', is_error: true };
      const max = typeof args.max_steps === 'number' && Number.isInteger(args.max_steps) ? Math.min(10, Math.max(1, args.max_steps)) : 6;
      return runAgent(args.instruction, toolbox, db(), ctx, max);
    },
  });
}
