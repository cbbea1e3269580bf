/**
 * Answering approval cards: one card (approve, reject, any card with answerCard), many at once
 * (answerApprovals, checked whole first), an owner's edit of the arguments, and cards past their
 * expiry ending their runs. Every answer goes through recordApprovalAnswer (A3), once, audited:
 * never runs a card's calls for an answer that was not recorded, and never answers a card routed
 * to groups the answerer is not in (A9).
 */
import {
  type ApprovalDecision,
  type ApprovalEdit,
  expireApprovals as expireCards,
  MAX_BATCH,
  recordApprovalAnswer,
} from '../approvals/respond.js';
import { mayAnswer, notYours } from '../approvals/who.js';
import { collect, type Leg, approvalLeg as loopApprovalLeg } from '../loop/legs.js';
import { validateProblem } from '../loop/pipeline.js';
import { untrustedRead } from '../loop/result.js';
import { type ModelClient, ModelError } from '../models/types.js';
import { UNRECORDED_PRINCIPAL } from '../policy/gate.js';
import type { ApprovalRecord, LoopEvent, RunResult, ToolSpec } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { osUser } from '../util/user.js';
import { type KeelCore, requireStore } from './core.js';
import { appNeeds, appTools, finish, kept, legDeps, tracked } from './legs.js';
import { type AppNeeds, type ApprovalOptions, type BatchAnswer, type ContinueOptions, isMcpSession } from './options.js';

/** Keel.expireApprovals: cards past their expiry expired, and their runs ended. */
export async function expireApprovals(
  core: KeelCore,
  o: { drive?: (leg: Leg) => void; onEvent?: (runId: string, e: LoopEvent) => void; stranded?: boolean; except?: string } = {},
): Promise<ApprovalRecord[]> {
  // A4: expiring a card and ending its run are one step, whoever notices.
  const store = requireStore(core);
  const expired = await expireCards(store);
  const ending = [...expired];
  if (o.stranded) {
    for (const r of await store.listRuns({ status: 'paused', limit: 500 })) {
      if (r.reason !== 'awaiting_approval') continue;
      const run = await store.loadRun(r.id);
      const card = run?.pause?.kind === 'approval' ? await store.getApproval(run.pause.approval_id) : undefined;
      if (card?.status === 'expired' && !ending.some((a) => a.id === card.id)) ending.push(card);
    }
  }
  for (const a of ending) {
    if (a.run_id === o.except) continue;
    const leg = await expiryLeg(core, a);
    if (!leg) continue;
    if (o.drive) o.drive(leg);
    else await collect(leg.drive(), o.onEvent && ((e) => o.onEvent?.(a.run_id, e)));
  }
  return expired;
}

/** The leg that ends a run whose card expired; undefined when nothing waits on it any more (ended or taken elsewhere). */
async function expiryLeg(core: KeelCore, a: ApprovalRecord): Promise<Leg | undefined> {
  const run = await requireStore(core).loadRun(a.run_id);
  if (run?.status !== 'paused' || run.pause?.kind !== 'approval' || run.pause.approval_id !== a.id) return undefined;
  // An MCP session's card: the server holding its call answers the call (no leg of the run waits on it).
  if (isMcpSession(run)) return undefined;
  // No model is called to end a run: one whose model can no longer be built still ends.
  const model: ModelClient = {
    spec: run.model,
    stream: () => {
      throw new ModelError('a run ended by its expired card calls no model');
    },
  };
  try {
    return tracked(core, await loopApprovalLeg(await legDeps(core, { model }, run, 'end'), a));
  } catch (err) {
    // Another reader or process claimed it first: it ends there.
    if (err instanceof KeelError && (err.code === 'conflict' || err.code === 'not_paused')) return undefined;
    throw err;
  }
}

/** approve and reject: a card answered and its run carried on, or refused in one sentence when only its application can carry it on. */
export async function decide<T>(core: KeelCore, id: string, decision: ApprovalDecision, o: ApprovalOptions<T>): Promise<RunResult<T>> {
  const store = requireStore(core);
  const card = await store.getApproval(id);
  if (card && isMcpSession(await store.loadRun(card.run_id))) {
    throw new KeelError(
      'bad_input',
      `approval ${id} belongs to an MCP session (run ${card.run_id}), whose server carries the call out: answer it with answerCard (or keel approvals approve|reject ${id})`,
    );
  }
  const answered = await core.keel.answerCard(id, decision, o);
  // S2/R18: a library call returns the run's result, so a run only its own model or tools can
  // continue is refused in one sentence naming the option — the answer is kept (the CLI says so and exits 0).
  const app = answered.app;
  if (app) {
    const run = answered.approval.run_id;
    const recorded = `approval ${id} is recorded (${answered.approval.status}); run ${run}`;
    if (app.model !== undefined) {
      throw new ModelError(
        `${recorded} was started with the model "${app.model}", which Keel cannot rebuild here: pass the model again (the \`model\` option) or resume the run with it`,
      );
    }
    throw new KeelError(
      'config',
      `${recorded} needs its tools declared in code (${(app.tools ?? []).join(', ')}), which this Keel does not have: pass them again (the \`tools\` option, or new Keel({ tools })) or resume the run with them`,
    );
  }
  return answered.result as RunResult<T>;
}

/**
 * Keel.answerCard: any card answered, and what waits on it continued. `app`: the run belongs to
 * an application whose model or tools in code this process lacks — the answer is recorded and the
 * run continues when that application carries it on (`appModel`: its model's spec, when that is
 * what is missing).
 */
export async function answerCard(
  core: KeelCore,
  id: string,
  decision: ApprovalDecision,
  o: ApprovalOptions = {},
): Promise<{ approval: ApprovalRecord; result?: RunResult; app?: AppNeeds; appModel?: string }> {
  const { approval, leg, app } = await core.keel.answerApproval(id, decision, o);
  if (app) return { approval, app, ...(app.model !== undefined ? { appModel: app.model } : {}) };
  if (!leg) return { approval };
  return { approval, result: await continued(approval, () => finish(core, leg, o)) };
}

/**
 * Keel.answerApproval: the answer recorded, and its run's continuation claimed — unless only its
 * application can carry it on (R18: `app` says what this process lacks; no leg), or an MCP session's
 * server holds the call.
 */
export async function answerApproval(
  core: KeelCore,
  id: string,
  decision: ApprovalDecision,
  o: ApprovalOptions = {},
): Promise<{ approval: ApprovalRecord; leg?: Leg; app?: AppNeeds }> {
  const store = requireStore(core);
  const card = await store.getApproval(id);
  const run = card ? await store.loadRun(card.run_id) : undefined;
  // R18 (issue 47): a run an application drives with its own model or tools declared in code, which
  // this process lacks: the answer is recorded, and the run continues when that application carries
  // it on — never here without them (an approved call would find its tool gone, and nothing would run).
  const app = run ? appNeeds(core, run, kept(core, run.id, o)) : undefined;
  const approval = await recordAnswer(core, id, decision, o);
  // An MCP session's card: the server holding the call carries it out (no leg of the run waits on it).
  if (isMcpSession(run)) return { approval };
  if (app) {
    // A4: a card past its expiry ends its run all the same: that leg calls no model and runs no tool.
    const leg = approval.status === 'expired' ? await expiryLeg(core, approval) : undefined;
    return leg ? { approval, leg } : { approval, app };
  }
  const leg = await continued(approval, () => approvalLeg(core, approval, o));
  return { approval, leg };
}

/** Records the answer to a card (audited), its run left where it is. */
async function recordAnswer(core: KeelCore, id: string, decision: ApprovalDecision, o: ApprovalOptions): Promise<ApprovalRecord> {
  const actor = o.actor ?? osUser(core.env);
  // A9: an edit is not looked at for a card the answerer may not answer: recordApprovalAnswer refuses it first.
  const routed = o.who ? await requireStore(core).getApproval(id) : undefined;
  const refused = routed !== undefined && o.who !== undefined && !mayAnswer(routed.card, o.who);
  return recordApprovalAnswer(requireStore(core), id, decision, actor, o.reason ?? null, new Date(), {
    consentWrites: o.consentWrites,
    edit: o.arguments === undefined || refused ? undefined : await editOf(core, id, o),
    who: o.who,
  });
}

/** Keel.answerApprovals: several cards answered in one action, the batch checked whole first. */
export async function answerApprovals(
  core: KeelCore,
  ids: readonly string[],
  decision: ApprovalDecision,
  o: Omit<ApprovalOptions, 'arguments'> & { run?: string; runs?: readonly string[] } = {},
): Promise<BatchAnswer[]> {
  const { run, runs = [], ...opts } = o;
  const chosen = [...new Set([...(run === undefined ? [] : [run]), ...runs])];
  if (ids.length > MAX_BATCH || chosen.length > MAX_BATCH) {
    throw new KeelError(
      'bad_input',
      `a batch answers at most ${MAX_BATCH} cards and ${MAX_BATCH} runs at once (given ${ids.length} and ${chosen.length}); nothing was answered`,
    );
  }
  for (const r of chosen) if (!(await requireStore(core).loadRun(r))) throw new KeelError('not_found', `no run ${r}; nothing was answered`);
  const all = [...ids];
  for (const r of chosen) for (const a of await core.keel.listApprovals({ status: 'pending', run_id: r })) all.push(a.id);
  // A9: a card of the batch routed to groups the answerer is not in refuses the whole batch, as its cap does.
  if (opts.who) {
    for (const id of new Set(all)) {
      const a = await requireStore(core).getApproval(id);
      if (a && !mayAnswer(a.card, opts.who)) {
        const refused = notYours(id, a.card, opts.who);
        throw new KeelError('forbidden', `${refused.message}; nothing was answered`, refused.cliHint);
      }
    }
  }
  const out: BatchAnswer[] = [];
  for (const id of new Set(all)) {
    try {
      const { approval, leg, app } = await core.keel.answerApproval(id, decision, opts);
      out.push({
        id,
        outcome: approval.status === 'expired' ? 'expired' : 'answered',
        approval,
        ...(leg ? { leg } : {}),
        ...(app ? { app } : {}),
      });
    } catch (err) {
      if (!(err instanceof KeelError) || err.code === 'unavailable') throw err;
      const outcome =
        err.code === 'conflict' || err.code === 'not_found'
          ? err.code
          : err.code === 'bad_input' || err.code === 'forbidden'
            ? 'refused'
            : 'error';
      out.push({ id, outcome, error: err.message });
    }
  }
  return out;
}

/** An edit is checked against the tools of the card's run (its pool: plugins and app tools). */
async function editOf(core: KeelCore, id: string, o: ApprovalOptions): Promise<ApprovalEdit | undefined> {
  const card = await requireStore(core).getApproval(id);
  if (!card) return undefined; // not_found, said by recordApprovalAnswer
  const run = await requireStore(core).loadRun(card.run_id);
  if (!run) throw new KeelError('not_found', `approval ${id}: its run ${card.run_id} is not in the store`);
  if (isMcpSession(run)) {
    throw new KeelError(
      'bad_input',
      `arguments: approval ${id} belongs to an MCP session, whose client made the call: its arguments cannot be changed here; approve or reject it as it is`,
    );
  }
  const dirs = o.pluginDirs?.length ? core.keel.pluginDirs(o.pluginDirs) : run.plugin_dirs;
  const { registry } = await core.registries.forRun(dirs, appTools(core, kept(core, run.id, o).tools));
  // R13 (issue 40): the run's calls so far — its steps, then the paused reply's — for the repeat guard.
  const calls = [...run.steps, ...(run.pause?.kind === 'approval' ? run.pause.calls : [])];
  // PC10: an edit is asked about as the model's call was: the run's principal, the session's mode now, what it has read.
  const cedar = await core.keel.operatorPolicy(registry.byName.values());
  const policy = cedar?.current();
  return {
    arguments: o.arguments as Record<string, unknown>,
    tool: (name) => registry.byName.get(name),
    validate: validateProblem,
    calls,
    ...(policy
      ? {
          policy: (tool: ToolSpec, args: Record<string, unknown>) =>
            policy.evaluate({
              tool,
              args,
              mode: core.sessions.currentMode(run),
              session: run.session_id,
              principal: run.principal ?? UNRECORDED_PRINCIPAL,
              untrusted: untrustedRead(run),
              at: new Date(),
            }),
        }
      : {}),
  };
}

/** The answer is stored whatever happens next: an error after it says so, and how to carry the run on. */
async function continued<T>(approval: ApprovalRecord, next: () => Promise<T>): Promise<T> {
  try {
    return await next();
  } catch (err) {
    if (!(err instanceof KeelError || err instanceof ModelError)) throw err;
    throw new KeelError(
      err instanceof KeelError ? err.code : 'config',
      `approval ${approval.id} is recorded (${approval.status}), but run ${approval.run_id} could not continue: ${err.message}. Fix that, then continue the run`,
      `keel resume ${approval.run_id}${err instanceof ModelError ? ' --model SPEC' : ''}`,
    );
  }
}

/** The leg that carries a run on once its card is answered. */
export async function approvalLeg(core: KeelCore, approval: ApprovalRecord, o: ContinueOptions = {}): Promise<Leg> {
  const run = await core.keel.getRun(approval.run_id);
  const deps = await legDeps(core, kept(core, run.id, o), run);
  return tracked(core, await loopApprovalLeg(deps, approval));
}
