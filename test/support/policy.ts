/** The operator-policy tests' plugin and policy file (issue 37): payments, a wipe, a post, an inbox others write. */
import { join } from 'node:path';
import { ROOT } from './helpers.js';

export const PAYMENTS = join(ROOT, 'test', 'fixtures', 'policy', 'payments');

/** A policy file with each kind of decision: a threshold routed to a group, a role, what the run has read, an argument. */
export const POLICY = `// Every call: its declared gate.
@id("everything")
permit (principal, action == Keel::Action::"call", resource);

// A payment over 500 needs a card, and only the finance group may answer it.
@id("big-payment")
@ask
@approvers("finance")
permit (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay")
when { context.args.amount > 500 };

// Only admins' runs may wipe anything.
@id("admins-wipe")
forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"wipe")
unless { principal.role == "admin" };

// Once a run has read outside content, posting to a URL is denied.
@id("no-post-after-outside")
forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"post_url")
when { context.untrusted };

// Payments to eve are never made.
@id("never-eve")
forbid (principal, action == Keel::Action::"call", resource == Keel::Tool::"pay")
when { context.args.to == "eve" };
`;
