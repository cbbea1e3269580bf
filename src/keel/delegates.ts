/**
 * Driving the delegates (D1–D4): starting a delegate's run, driving legs away from their caller
 * (in the background, or by the Keel's legSink), waking a parent when its delegate ends, a
 * caller's result settled once the delegates it waits for have moved, task_stop, and a delegate's
 * own tools and budget. Never takes over a run this process is driving (R18), and never starts a
 * second run for a task call met again.
 */
import type { EngineDeps } from '../loop/engine.js';
import { collect, type Leg, startLeg } from '../loop/legs.js';
import { toResult } from '../loop/result.js';
import { SAY } from '../loop/sentences.js';
import { ended } from '../loop/tasks.js';
import type { Registry } from '../plugin-host/host.js';
import { type ChildStart, missingNote, Subagents, TASK_TOOLS } from '../subagents/delegates.js';
import type { PausedResult, RunResult, RunState } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { hashHex } from '../util/hash.js';
import { type KeelCore, requireStore } from './core.js';
import { appNeeds, appToolNames, kept, legDeps, passOn, tracked } from './legs.js';
import type { Kept } from './options.js';

/** A plugin-folder set's delegates, from the config's `subagents` (none when it names none), driven through this Keel. */
export function makeSubagents(core: KeelCore, _registry: () => Registry): Subagents | undefined {
  const cfg = core.keel.getConfig().subagents;
  if (!cfg?.delegates.length) return undefined;
  return new Subagents(cfg, {
    hasStore: () => core.store !== null,
    loadRun: (id) => requireStore(core).loadRun(id),
    children: (id) => requireStore(core).listRuns({ parent_run: id, limit: 500 }),
    activeChildren: async () => {
      const store = requireStore(core);
      let n = 0;
      for (const status of ['running', 'paused'] as const) {
        for (const r of await store.listRuns({ status, limit: 1000 })) if (r.parent_run) n++;
      }
      return n;
    },
    startChild: (start) => startChild(core, start),
    stopChild: (parentRun, child) => stopChild(core, parentRun, child),
  });
}

/**
 * A delegate's run: stored at once (its id made from the parent and the task call, so a task
 * call met again starts no second run), in its parent's session (it reads the mode fresh),
 * with what its parent had read; then driven — here in the background, or by the legSink.
 */
async function startChild(core: KeelCore, c: ChildStart): Promise<RunState> {
  const store = requireStore(core);
  const id = childRunId(c.parent.id, c.call_id);
  const known = await store.loadRun(id);
  if (known) return known;
  const parentKept = core.remembered.get(c.parent.id);
  // The delegate's model, else its parent's (an application's own ModelClient too); none of the parent's output, steps or instructions.
  const model = c.delegate.model ?? parentKept?.model ?? c.parent.model;
  const given: Kept = { model, ...(parentKept?.tools ? { tools: parentKept.tools } : {}) };
  const parent = {
    run_id: c.parent.id,
    delegate: c.delegate.name,
    depth: (c.parent.parent?.depth ?? 0) + 1,
    task_id: c.task_id,
    request: c.parent.request,
  };
  const deps = await legDeps(core, given, {
    id,
    model: typeof model === 'string' ? model : model.spec,
    plugin_dirs: c.parent.plugin_dirs,
    parent,
  });
  const leg = tracked(
    core,
    await startLeg(deps, {
      message: c.prompt,
      mode: core.sessions.currentMode(c.parent),
      pluginDirs: c.parent.plugin_dirs,
      notes: [...deps.notes, ...missingNote(c.delegate.name, c.delegate.tools, deps.registry.pool)],
      delegate: { parent, session_id: c.parent.session_id, untrusted: c.untrusted },
      id,
      // D5: the store inserts the run only within max_total, atomically (RunLimitReached otherwise).
      limit: { activeDelegates: c.max_total },
      // R18 (issue 47): the delegate's own tools declared in code: a process without them never carries it on.
      appTools: appToolNames(deps.registry),
      // PC9: a delegate acts for whoever started its parent: the operator's policy sees the same principal.
      ...(c.parent.principal ? { principal: c.parent.principal } : {}),
    }),
  );
  if (typeof model === 'object' || given.tools) core.remembered.set(leg.run_id, given);
  spawn(core, leg);
  const run = await store.loadRun(leg.run_id);
  if (!run) throw new KeelError('not_found', `the delegate's run ${leg.run_id} is not in the store`);
  return run;
}

/** A leg driven away from its caller: by the legSink, else here in the background (its result kept in `inflight` while it runs). */
function spawn(core: KeelCore, leg: Leg): Promise<RunResult | undefined> {
  if (core.keel.legSink) {
    core.keel.legSink(leg);
    return Promise.resolve(undefined);
  }
  // A leg that fails here leaves its run as any failed process does: recovered by the next resume (R18).
  const p: Promise<RunResult | undefined> = collect(leg.drive(), core.listeners.get(leg.run_id)).catch(() => undefined);
  core.inflight.set(leg.run_id, p);
  void p.then(() => {
    if (core.inflight.get(leg.run_id) === p) core.inflight.delete(leg.run_id);
  });
  return p;
}

/**
 * A leg has ended or paused. A delegate's run that ended wakes its parent if the parent waits
 * for it; a run that paused for a delegate that has already ended (it ended while this run
 * paused) wakes itself. The pause is claimed once: one waker carries the parent on.
 */
export async function afterLeg(core: KeelCore, leg: Leg, r: RunResult): Promise<void> {
  if (leg.parent_run && (r.status === 'done' || r.status === 'failed')) {
    core.childStops.delete(leg.run_id);
    await wakeParent(core, leg.parent_run, leg.run_id);
  } else if (r.status === 'paused' && r.reason === 'awaiting_task') {
    const child = await requireStore(core).loadRun(r.task.run_id);
    if (child && ended(child)) await wakeParent(core, leg.run_id, child.id);
  }
}

async function wakeParent(core: KeelCore, parentRun: string, childRun: string): Promise<void> {
  const p = await requireStore(core).loadRun(parentRun);
  if (p?.status !== 'paused' || p.pause?.kind !== 'task' || p.pause.child_run !== childRun) return;
  // R18 (issue 47): a parent only its application can carry on (its model object, its tools in code,
  // not given to this Keel): it stays paused, and goes on when that application resumes it.
  if (appNeeds(core, p, kept(core, parentRun, {}))) return;
  let leg: Leg;
  try {
    leg = await core.keel.continueLeg(parentRun);
  } catch (err) {
    // Another process woke it first (or it is no longer waiting): it goes on there.
    if (err instanceof KeelError && (err.code === 'conflict' || err.code === 'not_paused')) return;
    throw err;
  }
  const next = spawn(core, leg);
  if (!core.keel.legSink) core.woken.set(childRun, next);
}

/**
 * A result as the caller should see it once the delegates it waits for have moved: a run
 * that ended and woke its parent here gives the parent's result; a parent waiting for a delegate
 * driven here waits for it; a delegate waiting for a person is shown on the parent's result.
 */
export async function settle(core: KeelCore, r: RunResult): Promise<RunResult> {
  for (;;) {
    if (r.status !== 'paused') {
      const next = core.woken.get(r.run_id);
      if (!next) return r;
      core.woken.delete(r.run_id);
      const p = await next;
      if (!p) return r;
      r = p;
      continue;
    }
    if (r.reason !== 'awaiting_task') return r;
    const child = r.task.run_id;
    const self = core.woken.get(child);
    if (self) {
      core.woken.delete(child);
      const p = await self;
      if (!p) return r;
      r = p;
      continue;
    }
    const running = core.inflight.get(child) ?? (await carryOnLeft(core, child));
    if (!running) return withWaiting(core, r);
    await running;
  }
}

/**
 * A delegate its parent waits for, left running by a process that died: taken over and driven
 * here in the background (its calls in flight reported, never run again), as any run is.
 */
async function carryOnLeft(core: KeelCore, runId: string): Promise<Promise<RunResult | undefined> | undefined> {
  const run = core.keel.legSink || core.driving.has(runId) ? undefined : await core.store?.loadRun(runId);
  if (run?.status !== 'running') return undefined;
  // Issue 47: what this Keel keeps for the parent that waits for it reaches the delegate (its tools, its model when it shares it).
  if (run.parent) passOn(core, run, kept(core, run.parent.run_id, {}), 'down');
  try {
    return spawn(core, await core.keel.continueLeg(runId));
  } catch (err) {
    // Its owner is alive (it goes on there), or another process took it first.
    if (err instanceof KeelError) return undefined;
    throw err;
  }
}

/** A run waiting for its delegate, with what the delegate itself waits for (a question, a card; or its own delegate's). */
async function withWaiting(core: KeelCore, r: Extract<RunResult, { reason: 'awaiting_task' }>): Promise<RunResult> {
  const child = core.store ? await core.store.loadRun(r.task.run_id) : undefined;
  if (child?.status !== 'paused') return r;
  let waiting = toResult(child) as PausedResult;
  if (waiting.reason === 'awaiting_task') waiting = (await withWaiting(core, waiting)) as PausedResult;
  return { ...r, task: { ...r.task, waiting } };
}

/** For task_stop: a delegate's run ends for good (cancelled, audited); one driven here is interrupted first. */
async function stopChild(core: KeelCore, parentRun: string, child: RunState): Promise<string> {
  const taskId = child.parent?.task_id ?? child.id;
  const running = core.inflight.get(child.id);
  if (running) {
    core.childStops.get(child.id)?.abort(new Error('stopped by task_stop'));
    await running;
  }
  try {
    await core.keel.cancel(child.id, { actor: `run ${parentRun} (task_stop)`, reason: 'stopped by task_stop' });
    return SAY.taskStopped(taskId);
  } catch (err) {
    if (err instanceof KeelError) return SAY.taskNotStopped(taskId, err.message);
    throw err;
  }
}

/**
 * What a delegate's leg is given over its parent's: its delegate's tools out of the parent's
 * pool (ask_user always: it asks the same person; the task tools while it may nest), its
 * instructions, its step budget, and a stop of its own (task_stop).
 */
export function delegateDeps<D extends EngineDeps>(core: KeelCore, base: D, run: Pick<RunState, 'id' | 'parent'>): D {
  const p = run.parent;
  const cfg = core.keel.getConfig().subagents;
  const d = p && cfg?.delegates.find((x) => x.name === p.delegate);
  if (!p || !cfg || !d) {
    throw new KeelError(
      'config',
      `run ${run.id} is the delegate ${p?.delegate}'s, which the config no longer names: add it back under subagents.delegates to carry the run on, or cancel it`,
      `keel runs cancel ${run.id}`,
    );
  }
  const registry = delegatePool(core, base.registry, d.name, d.tools, p.depth < cfg.max_depth);
  const steps = d.max_steps ?? cfg.max_steps;
  let stop = core.childStops.get(run.id);
  if (!stop) core.childStops.set(run.id, (stop = new AbortController()));
  const { output: _o, onModeChange: _m, ...rest } = base;
  return {
    ...rest,
    registry,
    instructions: d.instructions,
    limits: steps ? { ...base.limits, maxSteps: steps } : base.limits,
    signal: base.signal ? AbortSignal.any([base.signal, stop.signal]) : stop.signal,
  } as D;
}

function delegatePool(core: KeelCore, reg: Registry, name: string, tools: readonly string[], nests: boolean): Registry {
  let byName = core.delegatePools.get(reg);
  if (!byName) core.delegatePools.set(reg, (byName = new Map()));
  const key = `${name}\u0000${nests}`;
  let r = byName.get(key);
  if (!r) {
    const pool = reg.pool.filter((t) => (tools.includes(t.name) && (nests || !TASK_TOOLS.has(t.name))) || t.name === 'ask_user');
    r = { ...reg, pool, byName: new Map(pool.map((t) => [t.name, t])), close: async () => {} };
    byName.set(key, r);
  }
  return r;
}

/** The delegates' runs a run started, oldest first: each with its task id, delegate and status. */
export async function children(
  core: KeelCore,
  runId: string,
): Promise<{ run_id: string; task_id: string; delegate: string; status: string; reason: string | null }[]> {
  const store = requireStore(core);
  const out = [];
  for (const c of (await store.listRuns({ parent_run: runId, limit: 500 })).reverse()) {
    const run = await store.loadRun(c.id);
    if (run?.parent)
      out.push({ run_id: run.id, task_id: run.parent.task_id, delegate: run.parent.delegate, status: run.status, reason: run.reason });
  }
  return out;
}

/** A delegate's run id, made from its parent's and the task call's: the same task call never starts two runs. */
function childRunId(parentRun: string, callId: string): string {
  return `run_${hashHex('sha256', `${parentRun}\u0000${callId}`).slice(0, 12)}`;
}
