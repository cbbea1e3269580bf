/**
 * What a check of the operator's Cedar policy file reports (PC1, PC3): its diagnostics and its
 * policies, as plain data. Kept apart from cedar-check.ts so an application's type declarations that
 * name them never reach the optional engine's types (`@cedar-policy/cedar-wasm`). Types only.
 */
export interface PolicyDiagnostic {
  severity: 'error' | 'warning';
  /** file:line:col */
  at: string;
  message: string;
  policy?: string;
}

/** One policy of the file, as the engine and the verdicts know it. */
export interface PolicyEntry {
  id: string;
  effect: 'permit' | 'forbid';
  /** file:line:col of its first character. */
  at: string;
  ask: boolean;
  approvers?: string[];
  /** O4: a permit annotated `@after_untrusted("allow")`: the calls it lets through run without a card after untrusted reads. */
  after_untrusted?: true;
  /** The tools its resource scope can reach: null for any tool. */
  scope: { tools?: ReadonlySet<string>; plugin?: string } | null;
}
