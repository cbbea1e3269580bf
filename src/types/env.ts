/**
 * The environment Keel reads its settings from (`process.env` fits). Written out rather than as
 * `NodeJS.ProcessEnv` so the published declarations compile in an app without `@types/node`.
 */
export type Env = Record<string, string | undefined>;
