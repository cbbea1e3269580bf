/**
 * Who is acting, for the audit: the OS account. Never taken from a model or a tool.
 */
import { userInfo } from 'node:os';

/**
 * Who is answering, for the audit: the OS account running Keel. `USER`/`LOGNAME` are used only
 * when the OS cannot say (a uid with no passwd entry, as in some containers).
 */
export function osUser(env: NodeJS.ProcessEnv = process.env): string {
  const name = accountName();
  if (name) return name;
  return env.USER || env.LOGNAME || `uid ${process.getuid?.() ?? 'unknown'}`;
}

/** The account's name, looked up once per uid (each run of a server names it: a passwd lookup each time showed in profiles). */
let account: { uid: number | undefined; name: string | undefined } | undefined;
function accountName(): string | undefined {
  const uid = process.getuid?.();
  if (account && account.uid === uid) return account.name;
  let name: string | undefined;
  try {
    name = userInfo().username || undefined;
  } catch {
    // No passwd entry for this uid.
  }
  account = { uid, name };
  return name;
}
