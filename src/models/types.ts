/**
 * The one thing the loop needs from a model (ModelClient) and the shapes it speaks. No provider's
 * own types cross this line.
 */
import type { Message, ToolCall, ToolDeclaration } from '../types/index.js';

export interface ModelRequest {
  system: string;
  messages: readonly Message[];
  tools: readonly ToolDeclaration[];
  /** How many model calls this run has made before this one (a scripted model's position). */
  seq: number;
  signal?: AbortSignal;
}

export interface Usage {
  input: number;
  output: number;
  cost?: number;
}

export interface AssistantReply {
  text: string;
  tool_calls: ToolCall[];
  usage?: Usage;
  /**
   * The provider stopped the reply at its output token limit (OpenAI `finish_reason: length`,
   * Anthropic `stop_reason: max_tokens`): the text, or the last tool call, is cut off. `tokens`: how
   * many output tokens the reply had, and `limit`: the limit asked for, when known.
   */
  truncated?: { tokens?: number; limit?: number };
}

export type ModelEvent =
  | { type: 'text_delta'; text: string }
  | { type: 'tool_call'; call: ToolCall }
  | { type: 'done'; reply: AssistantReply };

/** The one thing the loop needs from a model. Failures throw a ModelError. */
export interface ModelClient {
  /** The spec it was built from (`script:FILE`, `openai:gpt-4o-mini`, …): stored with the run. */
  readonly spec: string;
  stream(req: ModelRequest): AsyncIterable<ModelEvent>;
}

/** A model failure the user can act on: the message says what and how to fix it. */
export class ModelError extends Error {
  override name = 'ModelError';
}
