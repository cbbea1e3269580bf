/**
 * A second process for the crash tests: approves a card through a Keel of its own over the store
 * KEEL_HOME (and KEEL_STORE) name, as `keel approvals approve` would, and carries its run on — so a
 * crash point set for it (KEEL_TEST_CRASH_AT) kills it exactly there.
 *
 *   node --import tsx test/reliability/approve.ts APPROVAL_ID
 */
import { Keel } from '../../src/keel/keel.js';

const [id] = process.argv.slice(2);
const keel = new Keel({ home: process.env.KEEL_HOME });
try {
  const r = await keel.approve(id, { actor: 'ana' });
  process.stdout.write(`${JSON.stringify({ status: r.status, reason: r.reason })}\n`);
} finally {
  await keel.close();
}
