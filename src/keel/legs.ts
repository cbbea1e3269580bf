/**
 * The legs this Keel drives: what each is given (its registry and app tools, model, limits, the
 * operator's policy, shortlist, a delegate's own tools), how it is followed while it runs (its
 * session, the running count, its delegates or parent told) and the result it ends with (the
 * `output` parsed, the run's options kept or forgotten). Never claims a run or starts a leg (the
 * loop's legs do, called by the actions), never forgets a run's options while it is paused, and never
 * gives a run that records tools declared in code a leg without them (R18: what only its app has).
 */
import { join } from 'node:path';
import type { EngineDeps } from '../loop/engine.js';
import { collect, type Leg } from '../loop/legs.js';
import { outputCheck } from '../loop/output.js';
import { builtInSpec, createModel } from '../models/index.js';
import { type ModelClient, ModelError } from '../models/types.js';
import { APP_PLUGIN } from '../plugin-host/app-tools.js';
import type { Registry } from '../plugin-host/host.js';
import type { Row } from '../plugin-host/types.js';
import { countsTokens } from '../prompt/tokens.js';
import type { AppTool, LoopEvent, RunResult, RunState } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import type { KeelCore } from './core.js';
import { afterLeg, delegateDeps, settle } from './delegates.js';
import {
  type AppNeeds,
  type ContinueOptions,
  definedOnly,
  isMcpSession,
  type Kept,
  limitsFromEnv,
  positive,
  type RunOptions,
} from './options.js';

/**
 * R32 (issue 40): the application's own tools are its own code, not a plugin folder: a refused one
 * is an error naming the tool and the field, unless the app chose degraded mounting.
 */
export function refuseAppTools(rows: readonly Row[]): void {
  if (!rows.length) return;
  throw new KeelError(
    'config',
    `${rows.map((r) => r.message).join('; ')} — fix the tool${rows.length > 1 ? 's' : ''} declared in code, or mount the valid ones without ${rows.length > 1 ? 'them' : 'it'} with new Keel({ degradedTools: 'warn' })`,
  );
}

/**
 * R18 (issue 47): what a stored run needs that only its application can give and these options
 * (with this Keel's own tools) lack — its model, when it is an object of the app's own (a spec no
 * provider builds), and its tools declared in code — or undefined when nothing is missing. A process
 * that lacks them never carries the run on: an answer is recorded and the run waits for its app.
 */
export function appNeeds(core: KeelCore, run: Pick<RunState, 'model' | 'app_tools'>, o: Kept): AppNeeds | undefined {
  if (isMcpSession(run)) return undefined;
  const model = o.model === undefined && !builtInSpec(run.model) ? run.model : undefined;
  const have = new Set((appTools(core, o.tools) ?? []).map((t) => t.name));
  const tools = (run.app_tools ?? []).filter((name) => !have.has(name));
  if (model === undefined && !tools.length) return undefined;
  return { ...(model !== undefined ? { model } : {}), ...(tools.length ? { tools } : {}) };
}

/** R18: the names of the tools declared in code in a leg's pool (stored with a new run). */
export function appToolNames(registry: Registry): string[] {
  const out: string[] = [];
  for (const t of registry.pool) if (t.plugin === APP_PLUGIN) out.push(t.name);
  return out;
}

/** R18: a run carried on without its tools declared in code would lose them: refused in one sentence, before anything is claimed. */
function refuseWithoutTools(runId: string, tools: readonly string[]): never {
  throw new KeelError(
    'config',
    `run ${runId} belongs to an application: it needs its tools declared in code (${tools.join(', ')}), which this process does not have, so it was not carried on here: nothing ran, and a question or card it waits on stays as it was. Carry it on from that application (keel.resume, keel.answer or keel.approve with its tools: new Keel({ tools }) or the \`tools\` option)`,
  );
}

/** Where work a later process would redo is remembered: KEEL_HOME/cache/KIND. */
export function cacheDir(home: string, kind: 'scripts'): string {
  return join(home, 'cache', kind);
}

/**
 * What a leg is given. `stored` is the run being carried on: its model spec and plugin folders
 * are used unless the options name others, and a spec no provider can rebuild (a ModelClient of
 * the application's) is refused in one sentence that names the option.
 */
export async function legDeps(
  core: KeelCore,
  o: Kept & Pick<RunOptions, 'signal'>,
  stored?: Pick<RunState, 'id' | 'model' | 'plugin_dirs' | 'parent' | 'app_tools'>,
  /** `end`: the leg only ends the run (a cancel, an expired card): it runs no tool and calls no model, so nothing of the app's is needed. */
  purpose: 'carry' | 'end' = 'carry',
): Promise<EngineDeps & { notes: string[] }> {
  // R18 (issue 47): a run whose tools declared in code this process lacks is not carried on without them.
  const missing = stored && purpose === 'carry' ? appNeeds(core, stored, o)?.tools : undefined;
  if (stored && missing) refuseWithoutTools(stored.id, missing);
  // Issue 47: what this leg is given is kept for the run's later legs here (a delegate it starts, a leg its delegate's end wakes).
  if (stored && purpose === 'carry') remember(core, stored.id, o);
  const dirs = o.pluginDirs?.length ? core.keel.pluginDirs(o.pluginDirs) : stored ? stored.plugin_dirs : core.keel.pluginDirs();
  const { registry, notes } = await core.registries.forRun(dirs, appTools(core, o.tools));
  // R32 (issue 40): an app tool the mount refused (its names meet the pool here) fails the run loudly.
  if (core.opts.degradedTools !== 'warn') refuseAppTools(registry.plugins.find((p) => p.source === 'code')?.degraded ?? []);
  const client = typeof o.model === 'object' ? o.model : await modelFor(core, o.model ?? stored?.model, stored);
  const spec = client.spec;
  const output = o.output ? await outputCheck(o.output) : undefined;
  const instructions = [o.instructions?.trim(), output?.instruction].filter(Boolean).join('\n\n');
  const limits = { ...limitsFromEnv(core.env), ...core.opts.limits };
  if (o.maxSteps !== undefined) limits.maxSteps = positive('maxSteps', o.maxSteps);
  if (o.timeoutMs !== undefined) limits.timeoutMs = positive('timeoutMs', o.timeoutMs);
  const cedar = await core.keel.operatorPolicy(registry.byName.values());
  const base: EngineDeps & { notes: string[] } = {
    ...(cedar ? { policy: () => cedar.current() } : {}),
    registry,
    notes,
    model: client,
    store: core.store,
    limits,
    shortlist: core.shortlist(o.menuSize),
    ...(instructions ? { instructions } : {}),
    ...(output ? { output } : {}),
    // Counted for real models when ai-tokenizer is installed; for the scripted one (tests, demos) only when asked (KEEL_COUNT_TOKENS=1).
    countTokens: countsTokens(core.env, spec),
    currentMode: (run) => core.sessions.currentMode(run),
    onModeChange: (run) => core.sessions.changed(run),
    sessionWatch: core.sessions,
    signal: o.signal ? AbortSignal.any([core.interruption(), o.signal]) : core.interruption(),
  };
  if (stored?.parent && purpose === 'carry') {
    // D1 (issue 47): what the app gave this delegate's leg (its model object, its tools) reaches the
    // run that started it, which goes on when this one ends — in this process, with no options of its own.
    const parent = await core.store?.loadRun(stored.parent.run_id);
    if (parent) passOn(core, parent, o, 'up');
  }
  // D1: a delegate's run, whichever leg and process: its delegate's tools, instructions and budget.
  return stored?.parent ? delegateDeps(core, base, stored) : base;
}

/** The Keel's own app tools, with a run's added (the same array for the same run's list: its menus are shared). */
export function appTools(core: KeelCore, extra: readonly AppTool[] | undefined): readonly AppTool[] | undefined {
  if (!extra?.length) return core.opts.tools;
  if (!core.opts.tools?.length) return extra;
  let both = core.combined.get(extra);
  if (!both) core.combined.set(extra, (both = [...core.opts.tools, ...extra]));
  return both;
}

async function modelFor(
  core: KeelCore,
  spec: string | undefined,
  stored: Pick<RunState, 'id' | 'model'> | undefined,
): Promise<ModelClient> {
  try {
    return await createModel(spec, core.env, cacheDir(core.keel.home, 'scripts'));
  } catch (err) {
    if (!stored || !(err instanceof KeelError || err instanceof ModelError)) throw err;
    // A ModelError: what continues the run after a card (continued) then says how (--model SPEC).
    throw new ModelError(
      `run ${stored.id} was started with the model "${stored.model}", which Keel cannot rebuild here (${err.message}): pass the model again (the \`model\` option; --model in the CLI)`,
    );
  }
}

/**
 * D1 (issue 47): the options an app gave one run of a delegate chain, kept for another run of it
 * that this Keel carries on later without being given any — the run that started it (`up`: every
 * option, as the app gave them for the chain), or a delegate it started (`down`: its tools, as a
 * delegate starts with). A model reaches only a run that was started with it (the same spec): a
 * delegate's own model from the config is its own. Options this Keel already keeps for the run stay.
 */
export function passOn(core: KeelCore, to: Pick<RunState, 'id' | 'model'>, o: Kept, way: 'up' | 'down'): void {
  if (core.remembered.has(to.id)) return;
  // A leg's signal and listener are its own, never another run's.
  const { model, signal: _s, onEvent: _e, ...rest } = definedOnly(o as Kept & Pick<RunOptions, 'signal' | 'onEvent'>);
  const spec = typeof model === 'object' ? model.spec : model;
  const given: Kept = {
    ...(way === 'up' ? rest : rest.tools ? { tools: rest.tools } : {}),
    ...(model !== undefined && spec === to.model ? { model } : {}),
  };
  // Only what a stored run cannot give itself: its own spec string, and nothing else, is no option.
  if (Object.keys(given).some((k) => k !== 'model') || typeof given.model === 'object') core.remembered.set(to.id, given);
}

/** The options a run's continuation is given: those given now over those its start was given here. */
export function kept(core: KeelCore, runId: string, o: ContinueOptions): Kept & Pick<RunOptions, 'signal'> {
  return { ...core.remembered.get(runId), ...definedOnly(o) };
}

/** Drives a leg to its end or pause, collecting its result (with `output` parsed); the run's options are forgotten once it ends. */
export async function finish<T>(core: KeelCore, leg: Leg, o: ContinueOptions<T>): Promise<RunResult<T>> {
  // D2: a continuation of this run that its delegate's end starts here tells the same listener.
  if (o.onEvent && core.keel.getConfig().subagents?.delegates.length) core.listeners.set(leg.run_id, o.onEvent);
  const r = await collect(leg.drive(), o.onEvent);
  // D2: a run that waits for its delegate (or woke its parent) gives the result the wait came to.
  const settled = delegating(core, r) ? await settle(core, r) : r;
  return outcome(core, settled, kept(core, settled.run_id, o)) as Promise<RunResult<T>>;
}

/** Whether a result may have delegates to wait for, or be followed by its parent's (a delegate's end woke it here). */
export function delegating(core: KeelCore, r: RunResult): boolean {
  return (r.status === 'paused' && r.reason === 'awaiting_task') || core.woken.size > 0;
}

export async function outcome(core: KeelCore, r: RunResult, o: Kept): Promise<RunResult> {
  if (r.status !== 'paused') {
    core.remembered.delete(r.run_id);
    core.listeners.delete(r.run_id);
  }
  if (r.status !== 'done' || !o.output) return r;
  const verdict = (await outputCheck(o.output)).parse(r.answer);
  if (verdict.ok) return { ...r, output: verdict.value };
  // A tool that answered directly (R12) is not sent back: its answer stands, without `output`.
  return { ...r, warnings: [...r.warnings, `the answer does not match the output schema: ${verdict.problem}`] };
}

/** Remembers a run's options for its continuations in this Keel (see RunOptions). */
export function remember(core: KeelCore, runId: string, o: RunOptions): void {
  const { signal: _s, onEvent: _e, mode: _m, session: _session, principal: _p, createSession: _c, ...kept } = definedOnly(o);
  if (Object.keys(kept).length) core.remembered.set(runId, kept);
}

/** A leg as this Keel drives it: its session followed, counted while it runs (interrupt()). */
export function tracked(core: KeelCore, leg: Leg): Leg {
  // D1: a delegate's run is not its session's last run (the session's next run continues the parent's transcript).
  if (leg.parent_run) return { ...leg, drive: () => followed(core, leg, core.active(leg.drive())) };
  // D2: a run that may wait for delegates is followed to its end (no generator of its own otherwise).
  if (core.keel.getConfig().subagents?.delegates.length && core.store) {
    return { ...leg, drive: () => followed(core, leg, core.sessions.track(core.active(leg.drive()))) };
  }
  return { ...leg, drive: () => core.sessions.track(core.active(leg.drive())) };
}

/** A leg's events as they come, then its delegates or parent told (afterLeg) before its result is given. */
async function* followed(core: KeelCore, leg: Leg, gen: AsyncGenerator<LoopEvent, RunResult>): AsyncGenerator<LoopEvent, RunResult> {
  core.driving.add(leg.run_id);
  let r: RunResult;
  try {
    r = yield* gen;
  } finally {
    core.driving.delete(leg.run_id);
  }
  await afterLeg(core, leg, r);
  return r;
}
