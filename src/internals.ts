/**
 * `keel/internals`: the engine's parts, for tools built on Keel (benchmarks, alternative servers,
 * tests). Unlike the main entry, these may change between minor versions.
 */
export { buildCard, describeCall } from './approvals/card.js';
export { expireApprovals, recordApprovalAnswer } from './approvals/respond.js';
export { DEFAULT_LIMITS, type EngineDeps, RunLeg } from './loop/engine.js';
export { collect, streamApprovalContinuation, streamResume, streamRun } from './loop/legs.js';
export { type NewRun, type RunView, RunWriter } from './loop/run.js';
export { SAY } from './loop/sentences.js';
export { formatIssue, type ManifestIssue, parseManifest } from './manifest/load.js';
export { effectiveGate, manifestJsonSchema, manifestSchemas } from './manifest/schema.js';
export { parseScript, type ScriptEntry, ScriptModel } from './models/script.js';
export { discoverPlugins, mountPlugins, registryHealthy, registryOf } from './plugin-host/host.js';
export { type Decision, decide, deriveGateState, executableInMode, type GateState } from './policy/gate.js';
export { guardHandler, ModeDenied } from './policy/modes.js';
export { buildMenu, keepAll, type Menu } from './prompt/menu.js';
export { bm25Shortlist, DEFAULT_TOOL_CAP } from './prompt/shortlist.js';
export { CORE_DECLARATIONS } from './tools/builtins.js';
export { makeToolSpec } from './tools/spec.js';
export { callKey, canonicalJson } from './util/json.js';
