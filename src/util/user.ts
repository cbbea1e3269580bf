/**
 * Who is acting, for the audit: the OS account. Never taken from a model or a tool.
 */
import { userInfo } from 'node:os';

/**
 * Who is answering, for the audit: the OS account running Keel. `USER`/`LOGNAME` are used only
 * when the OS cannot say (a uid with no passwd entry, as in some containers).
 */
export function osUser(env: NodeJS.ProcessEnv = process.env): string {
  try {
    const name = userInfo().username;
    if (name) return name;
  } catch {
    // No passwd entry for this uid.
  }
  return env.USER || env.LOGNAME || `uid ${process.getuid?.() ?? 'unknown'}`;
}
