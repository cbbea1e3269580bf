// PLACEHOLDER (branch gate): replaced by the Cedar module of branch `cedar` at merge.
import type { ToolSpec } from '../types/index.js';
import type { PolicyRequest, PolicyVerdict } from './gate.js';

export interface CedarPolicy {
  readonly file: string;
  readonly hash: string;
  evaluate(req: PolicyRequest): PolicyVerdict;
}
export class PolicyFile {
  static async open(_file: string, _pool: readonly ToolSpec[], _onReload?: (msg: string) => void): Promise<PolicyFile> {
    throw new Error('placeholder');
  }
  current(): CedarPolicy {
    throw new Error('placeholder');
  }
}
