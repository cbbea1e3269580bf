/**
 * Keel's library: what an application that embeds Keel needs. Everything the CLI does is a typed
 * function here first. Engine parts (the loop's legs, the gate, the menu, the manifest checker) are
 * in `keel/internals`, for tools built on Keel; they may change between minor versions.
 */

// Running requests, answering their questions and approval cards, reading runs back.
export { renderCard } from './approvals/card.js';
export type { ApprovalDecision } from './approvals/respond.js';
export type { Answerer } from './approvals/who.js';
export { type DelegateConfig, type KeelConfig, loadConfig } from './config/config.js';
export {
  type AppNeeds,
  type ApprovalAnswer,
  type ApprovalOptions,
  type BatchAnswer,
  BUNDLED_PLUGINS,
  type ContinueOptions,
  type GateAnswer,
  Keel,
  type KeelOptions,
  keelHome,
  type PauseResponder,
  type PolicyCheck,
  type PolicyCheckOptions,
  type PolicyExplainOptions,
  type PolicyExplanation,
  type RunOptions,
} from './keel/keel.js';
export type { Limits } from './loop/engine.js';
export type { Leg } from './loop/legs.js';
export type { OutputSchema } from './loop/output.js';
// Models: a spec (`ollama:MODEL`, `openai:MODEL`, `script:FILE`, …) or a client of your own.
export { createModel } from './models/index.js';
export { type AssistantReply, type ModelClient, ModelError, type ModelEvent, type ModelRequest } from './models/types.js';
// Plugins: the API a plugin's entry receives, its tool definitions, and what a mount reports.
export type { Registry } from './plugin-host/host.js';
export type * from './plugin-host/types.js';
export type { Shortlist } from './prompt/menu.js';
// Keel behind an AI SDK chat page (useChat): the handler an application mounts in its own route.
export type { ApprovalDescriptor } from './server/ui/chunks.js';
export { type ChatHandlerActor, type ChatHandlerOptions, chatHandler } from './server/ui/entry.js';
// The store: the interfaces (in the types below) and the default SQLite implementation.
export { SqliteStore } from './store/sqlite.js';
export { defineTool, type FromSchema, type ObjectSchema } from './tools/define.js';
// Runs, results, events, approvals, the store interfaces, tools and modes.
export * from './types/index.js';
export { KeelError } from './util/errors.js';
