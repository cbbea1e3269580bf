// Types of tools.js (bench/injection-agentdojo's slack tools), for the bench's TypeScript.
export declare class SlackError extends Error {}
export declare const TOOLS: Record<string, (state: unknown, args: Record<string, unknown>) => string>;
export declare function callTool(state: unknown, name: string, args: Record<string, unknown> | undefined): string | { error: string };
