/**
 * The operator's Cedar policy file as an application or `keel policy` asks about it (issue 47): checked
 * against the pool a run of this Keel would have — the application's own tools declared in code
 * among them — and one call explained as the run's gate would decide it. Explain never works a
 * decision out for itself: it asks the one gate (`decide`, src/policy/gate.ts) with a gate state built
 * from the reads it is told to imagine, and puts what the gate answered into words.
 */

import { type Decision, decide, deriveGateState, type GateState, type PolicyVerdict, SUBMIT_TOOL } from '../policy/gate.js';
import type { PolicyDiagnostic, PolicyEntry } from '../policy/policy-types.js';
import { checkedPrincipal } from '../policy/principal.js';
import type { AppTool, Mode, Principal, ToolSpec, UntrustedSource } from '../types/index.js';
import { MODES } from '../types/index.js';
import { KeelError } from '../util/errors.js';
import { callKey } from '../util/json.js';
import { osUser } from '../util/user.js';
import type { KeelCore } from './core.js';
import { appTools, refuseAppTools } from './legs.js';

/** Which policy file, and which pool it is checked against: the Keel's plugin folders and tools, and these. */
export interface PolicyCheckOptions {
  /** The policy file; default the config's `policy_file`. */
  file?: string;
  /** Plugin folders; default those a run of this Keel mounts. */
  pluginDirs?: readonly string[];
  /** Tools declared in code, added to the Keel's own (as a run's `tools` option adds them). */
  tools?: readonly AppTool[];
}

/** What `keel policy check` prints: every error and warning at its `file:line:col`, and the policies when there is no error. */
export interface PolicyCheck {
  file: string;
  /** No error (warnings may remain). */
  ok: boolean;
  diagnostics: PolicyDiagnostic[];
  policies: readonly PolicyEntry[];
}

/** One call to explain: who starts the run, in which mode, having read what, and when. */
export interface PolicyExplainOptions extends PolicyCheckOptions {
  /** Who starts the run; default the local user (no groups). */
  principal?: Principal;
  /** The session's mode; default agent. */
  mode?: Mode;
  /** The run has read words from outside the user. */
  untrusted?: boolean;
  /** The run has read untrusted results of these tools (implies `untrusted`). */
  readFrom?: readonly string[];
  session?: string | null;
  /** The time of the call; default now. */
  at?: Date;
  /** The IANA time zone a policy's hour and weekday are read in; default the process's own. */
  timeZone?: string;
}

/** What the gate does with one call, and the same in words. */
export interface GateAnswer {
  /** What the policy file said, when the gate asked it (a mode or a config rule can decide first). */
  verdict?: PolicyVerdict;
  /** The gate's own decision (`kind`: run, ask_user, hold_for_confirmation, needs_approval, deny, …). */
  gate: Decision;
  says: string;
}

/** One call decided as a run would decide it, with the policies that made the decision. */
export interface PolicyExplanation extends GateAnswer {
  tool: string;
  principal: Principal;
  mode: Mode;
  file: string;
  /** A short hash of the policy file's text (what a run's trace records). */
  policy: string;
  /** The reads imagined: what the run has read from outside the user. */
  untrusted: UntrustedSource[];
  /** A call held for the user's confirmation: what the gate does once the user said yes to this tool earlier in the run. */
  after_yes?: GateAnswer;
  /** Explained with nothing read, for an open-world tool or a permit that names the case: what the gate does after an untrusted read. */
  after_untrusted?: GateAnswer;
  /** The explanation as `keel policy explain` prints it. */
  text: string;
}

/** The pool a run of this Keel would have, with these tools; a tool declared in code with a mistake fails loudly, as a run does. */
async function poolOf(core: KeelCore, o: PolicyCheckOptions): Promise<readonly ToolSpec[]> {
  const { registry } = await core.registries.forRun(core.keel.pluginDirs(o.pluginDirs), appTools(core, o.tools));
  if (core.opts.degradedTools !== 'warn') refuseAppTools(registry.plugins.find((p) => p.source === 'code')?.degraded ?? []);
  return registry.pool;
}

function fileOf(core: KeelCore, given: string | undefined): string {
  const file = given ?? core.keel.policyFilePath();
  if (!file) throw new KeelError('bad_input', 'no policy file: pass `file`, or name one with policy_file: in the config file');
  return file;
}

/** Checks a policy file against the pool: errors and warnings, each at its `file:line:col`. */
export async function checkPolicy(core: KeelCore, o: PolicyCheckOptions = {}): Promise<PolicyCheck> {
  const file = fileOf(core, o.file);
  const pool = await poolOf(core, o);
  const { CedarPolicy } = await import('../policy/cedar.js');
  const { policy, diagnostics } = await CedarPolicy.diagnose(file, pool);
  return { file, ok: !diagnostics.some((d) => d.severity === 'error'), diagnostics, policies: policy?.policies ?? [] };
}

/** Decides one call as a run would: the policy file asked as the gate asks it, and the gate's answer. */
export async function explainPolicy(
  core: KeelCore,
  name: string,
  args: Record<string, unknown>,
  o: PolicyExplainOptions = {},
): Promise<PolicyExplanation> {
  const mode = o.mode ?? 'agent';
  if (!MODES.includes(mode)) throw new KeelError('bad_input', `mode must be one of ${MODES.join(', ')}, got "${mode}"`);
  if (!args || typeof args !== 'object' || Array.isArray(args)) throw new KeelError('bad_input', 'the arguments must be an object');
  const file = fileOf(core, o.file);
  const pool = await poolOf(core, o);
  const tool = pool.find((t) => t.name === name);
  if (!tool)
    throw new KeelError(
      'bad_input',
      `no tool named ${name} is mounted`,
      "keel plugins check lists the plugins' tools; an app's own tools declared in code: keel policy explain … --app MODULE",
    );
  const problem = tool.checkArgs(args);
  if (problem) throw new KeelError('bad_input', `the arguments of ${name}: ${problem}`);
  const principal = o.principal ? checkedPrincipal(o.principal) : { kind: 'user' as const, name: osUser(core.env), groups: [] };
  const untrusted: UntrustedSource[] = (o.readFrom ?? []).map((t, i) => ({ tool: t, call_id: `explain_${i}`, label: `read from ${t}` }));
  if (o.untrusted && !untrusted.length) untrusted.push(ANY_READ);
  const { CedarPolicy } = await import('../policy/cedar.js');
  const p = await CedarPolicy.load(file, pool);
  const at = o.at ?? new Date();
  const ask = (reads: readonly UntrustedSource[], state: GateState): GateAnswer => {
    let verdict: PolicyVerdict | undefined;
    const request = {
      tool,
      args,
      mode,
      session: o.session ?? null,
      principal,
      untrusted: reads,
      at,
      ...(o.timeZone ? { timeZone: o.timeZone } : {}),
    };
    // The one gate, as the run's pipeline calls it: the policy is asked only if the gate gets that far.
    const gate = decide({
      name,
      tool,
      admissible: true,
      key: callKey(name, args),
      args,
      mode,
      state,
      verdict: () => (verdict ??= p.evaluate(request)),
    });
    return { ...(verdict ? { verdict } : {}), gate, says: says(gate, tool, verdict, mode, state) };
  };
  const stateAfter = (reads: readonly UntrustedSource[]) => deriveGateState([], true, reads);
  const first = ask(untrusted, stateAfter(untrusted));
  const out: PolicyExplanation = { tool: name, principal, mode, file, policy: p.hash, untrusted, ...first, text: '' };
  if (first.gate.kind === 'hold_for_confirmation') {
    // R16/U3: the same call once the user said yes to this tool earlier in the run (a fan-out's next call).
    const yes = stateAfter(untrusted);
    yes.consented.add(name);
    out.after_yes = ask(untrusted, yes);
  }
  if (!untrusted.length && (tool.declaration.open_world || first.verdict?.after_untrusted?.length))
    out.after_untrusted = ask([ANY_READ], stateAfter([ANY_READ]));
  out.text = textOf(out, p.policies);
  return out;
}

/** An untrusted read of no tool in particular (`--untrusted`). */
const ANY_READ: UntrustedSource = Object.freeze({ tool: '', call_id: 'explain', label: 'an untrusted read' });

/** The gate's decision in words, after the policy's own decision (forbid, ask, permit) when it was asked. */
function says(d: Decision, tool: ToolSpec, v: PolicyVerdict | undefined, mode: Mode, state: GateState): string {
  const by = v ? `${v.decision === 'forbid' ? 'forbidden' : v.decision}: ` : '';
  const read = state.untrusted.length > 0;
  const gate = `its gate: ${tool.gate}${tool.policy?.gate_source ? `, set by ${tool.policy.gate_source}` : ''}`;
  switch (d.kind) {
    case 'deny':
      if (d.policies)
        return d.policies.length
          ? 'forbidden: the call is denied before it runs'
          : 'forbidden: no permit matches (Cedar denies by default)';
      return d.by === 'mode'
        ? `denied: in ${mode} mode only reads, ask_user${SUBMIT_TOOL[mode] ? ` and ${SUBMIT_TOOL[mode]}` : ''} run (the policy file is not asked)`
        : `denied: an operator rule in the config file (${tool.policy?.rule ?? 'policy:'}) forbids it${tool.policy?.modes ? ` in ${mode} mode` : ''} (the policy file is not asked)`;
    case 'ask_user':
      return `${by}runs: the question goes to the user`;
    case 'run':
      if (d.allowed_after_untrusted) return `${by}runs without a card after untrusted reads, by ${d.allowed_after_untrusted}`;
      if (read && tool.declaration.open_world)
        return `${by}runs: no argument carries a value (after untrusted reads, a value the user did not write would put this open-world call on a card)`;
      return `${by}runs without asking (${state.consented.has(tool.name) ? 'the earlier yes covers it' : gate})`;
    case 'hold_for_confirmation':
      return read
        ? `${by}held until the user confirms this exact call (${gate}; after untrusted reads a yes covers only the calls it showed)`
        : `${by}held until the user confirms (${gate}: asked once a run, and a yes covers this tool's other calls in it)`;
    case 'needs_approval': {
      const card = `${by}an approval card pinned to these arguments`;
      if (v?.decision === 'ask') return card;
      if (d.outside?.length)
        return `${card}, unless every value is the user's own: this open-world call sends its arguments out, and after untrusted reads a value the user did not write puts it on a card (here: ${d.outside.map((x) => `${x.path} ${JSON.stringify(x.value)}`).join(', ')})`;
      if (d.narrowed)
        return `${card}: after untrusted reads a yes covers only the exact call the person was shown (${gate}${state.consented.has(tool.name) ? ', and the earlier yes to the tool no longer covers it' : ''})`;
      // A permit that routes the call to approver groups (@approvers) may make the card itself: say so rather than credit the gate.
      if (v?.approvers?.length && tool.gate !== 'approval') return `${card} (routed to ${v.approvers.join(', ')} by @approvers)`;
      return `${card} (${gate})`;
    }
    case 'refuse_approval':
      return `${by}refused: it needs a card, and the run cannot pause for one`;
    default:
      return `${by}${d.kind}`;
  }
}

function textOf(x: PolicyExplanation, policies: readonly PolicyEntry[]): string {
  const who = x.principal;
  const reads = x.untrusted.length
    ? `, the run has read ${x.untrusted.some((u) => u.tool) ? `from ${[...new Set(x.untrusted.map((u) => u.tool))].join(', ')}` : 'untrusted content'}`
    : '';
  const lines = [
    `${x.tool} as ${who.name} (${who.kind}${who.role ? `, ${who.role}` : ''}${who.groups.length ? `, groups ${who.groups.join(', ')}` : ''}), mode ${x.mode}${reads}: ${x.says}`,
    ...(x.verdict?.policies ?? []).map((id) => `  by ${id}${placeOf(policies, id)}`),
    ...(x.verdict?.approvers ? [`  approvers: ${x.verdict.approvers.join(', ')}`] : []),
    ...(x.verdict?.errors ?? []).map((e) => `  error: ${e}`),
    ...(x.after_yes ? [`  after a yes to ${x.tool} earlier in the run: ${x.after_yes.says}`] : []),
    ...(x.after_untrusted ? [`  after untrusted reads: ${x.after_untrusted.says}`] : []),
  ];
  return `${lines.join('\n')}\n`;
}

/** Where a policy is, unless its generated id (`policy3 (file:line)`) already says. */
function placeOf(policies: readonly PolicyEntry[], id: string): string {
  const p = policies.find((x) => x.id === id);
  return p && !/^policy\d+ \(.*\)$/.test(id) ? ` (${p.at})` : '';
}
