/**
 * API tokens: who may call `keel serve`, and as what. Only a hash of each token is kept, in a file
 * under KEEL_HOME readable by its owner only; the token itself is shown once, when it is made.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Principal } from '../../types/index.js';
import { KeelError } from '../../util/errors.js';
import { groupProblem } from '../../util/groups.js';
import { hashHex } from '../../util/hash.js';

export type Role = 'viewer' | 'approver' | 'admin';
export const ROLES: readonly Role[] = ['viewer', 'approver', 'admin'];

/** Viewers read; approvers also start runs and answer questions and cards; admins also manage tokens. */
export function allows(role: Role, needed: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

export interface TokenRecord {
  id: string;
  name: string;
  role: Role;
  created_at: string;
  revoked_at: string | null;
  /** A9: the approver groups the token is in (a card routed to a group only its tokens may answer); a file without them reads as []. */
  groups: string[];
}

interface Stored extends TokenRecord {
  /** sha256 of the token, hex. */
  hash: string;
}

/** PC9: a token that starts a run is the run's principal for the operator's policy: its name, role and groups. */
export function tokenPrincipal(who: { name: string; role: Role; groups?: readonly string[] }): Principal {
  return { kind: 'token', name: who.name, role: who.role, groups: [...(who.groups ?? [])] };
}

const hashOf = (token: string) => hashHex('sha256', token);
const PREFIX = 'keel_';

export class Tokens {
  private cache: { mtimeMs: number; rows: Stored[] } | undefined;

  constructor(readonly file: string) {}

  static at(home: string): Tokens {
    return new Tokens(join(home, 'tokens.json'));
  }

  private read(): Stored[] {
    // One stat per verify (a token's every request): no file is no token.
    const stat = statSync(this.file, { throwIfNoEntry: false });
    if (!stat) return [];
    const mtimeMs = stat.mtimeMs;
    if (this.cache?.mtimeMs === mtimeMs) return this.cache.rows;
    let rows: Stored[];
    try {
      const parsed = JSON.parse(readFileSync(this.file, 'utf8')) as { tokens?: Stored[] };
      rows = Array.isArray(parsed.tokens) ? parsed.tokens : [];
      // A9: a file written before groups existed: every token in none.
      rows = rows.map((r) => (Array.isArray(r.groups) ? r : { ...r, groups: [] }));
    } catch (err) {
      throw new KeelError('config', `${this.file}: not a token file Keel can read (${(err as Error).message})`);
    }
    this.cache = { mtimeMs, rows };
    return rows;
  }

  private write(rows: Stored[]): void {
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ tokens: rows }, null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.file);
    this.cache = undefined;
  }

  list(): TokenRecord[] {
    return this.read().map(({ hash: _h, ...r }) => r);
  }

  /** A new token: returned once, stored as a hash. An active token's name is not reused. */
  create(name: string, role: Role, now = new Date(), groups: readonly string[] = []): TokenRecord & { token: string } {
    if (!ROLES.includes(role)) throw new KeelError('bad_input', `unknown role ${role}: use viewer, approver or admin`);
    const inGroups = checkedGroups(groups);
    const rows = [...this.read()];
    if (rows.some((r) => r.name === name && !r.revoked_at)) {
      throw new KeelError('conflict', `a token named ${name} exists already: revoke it first, or choose another name`);
    }
    const token = `${PREFIX}${randomBytes(32).toString('base64url')}`;
    const rec: TokenRecord = {
      id: `tok_${randomUUID().slice(0, 8)}`,
      name,
      role,
      created_at: now.toISOString(),
      revoked_at: null,
      groups: inGroups,
    };
    rows.push({ ...rec, hash: hashOf(token) });
    this.write(rows);
    return { ...rec, token };
  }

  /** Revokes a token by id or name: it stops working at once, on a running server too. */
  revoke(idOrName: string, now = new Date()): TokenRecord {
    const rows = this.read().map((r) => ({ ...r }));
    const row = rows.find((r) => !r.revoked_at && (r.id === idOrName || r.name === idOrName));
    if (!row) throw new KeelError('not_found', `no active token ${idOrName}`, 'keel tokens list shows them');
    row.revoked_at = now.toISOString();
    this.write(rows);
    const { hash: _h, ...rec } = row;
    return rec;
  }

  /**
   * A9: sets an active token's groups (by id or name): `set` replaces them, `add` and `remove` change
   * them. A running server sees the change at the token's next request.
   */
  setGroups(idOrName: string, change: { set?: readonly string[]; add?: readonly string[]; remove?: readonly string[] }): TokenRecord {
    const rows = this.read().map((r) => ({ ...r }));
    const row = rows.find((r) => !r.revoked_at && (r.id === idOrName || r.name === idOrName));
    if (!row) throw new KeelError('not_found', `no active token ${idOrName}`, 'keel tokens list shows them');
    const set = change.set === undefined ? undefined : checkedGroups(change.set);
    const add = checkedGroups(change.add ?? []);
    const remove = checkedGroups(change.remove ?? []);
    const next = (set ?? row.groups).filter((g) => !remove.includes(g));
    for (const g of add) if (!next.includes(g)) next.push(g);
    row.groups = next;
    this.write(rows);
    const { hash: _h, ...rec } = row;
    return rec;
  }

  /** Who a presented token is, or undefined (unknown, revoked, malformed). */
  verify(token: string | undefined): { name: string; role: Role; groups: string[] } | undefined {
    if (!token?.startsWith(PREFIX) || token.length > 200) return undefined;
    const h = hashOf(token);
    const row = this.read().find((r) => r.hash === h && !r.revoked_at);
    return row ? { name: row.name, role: row.role, groups: row.groups } : undefined;
  }

  /** On a server's first start: an admin token, shown once. Undefined when tokens exist already. */
  firstAdmin(): (TokenRecord & { token: string }) | undefined {
    if (this.read().length > 0) return undefined;
    return this.create('admin', 'admin');
  }
}

/** A9: group names checked (a-z, 0-9, _ and -, 1 to 40), each once, in the order given. */
function checkedGroups(groups: readonly string[]): string[] {
  const out: string[] = [];
  for (const g of groups) {
    const problem = groupProblem(g);
    if (problem) throw new KeelError('bad_input', problem);
    if (!out.includes(g)) out.push(g);
  }
  return out;
}

/**
 * The console's logins: a token is exchanged once for a session (an HttpOnly, SameSite=Strict cookie
 * holding a random id) with its own CSRF token for form posts. Kept in memory: a restarted server
 * asks to log in again. A revoked token ends its sessions at the next request.
 */
export class WebSessions {
  private readonly byId = new Map<string, { token: string; csrf: string; expires: number }>();

  constructor(
    private readonly tokens: Tokens,
    private readonly ttlMs = 12 * 60 * 60_000,
  ) {}

  /** A session for a valid token, or undefined. */
  create(token: string): { id: string; csrf: string; who: { name: string; role: Role; groups: string[] } } | undefined {
    const who = this.tokens.verify(token);
    if (!who) return undefined;
    if (this.byId.size > 10_000) this.sweep();
    const id = randomBytes(32).toString('base64url');
    const csrf = randomBytes(24).toString('base64url');
    this.byId.set(id, { token, csrf, expires: Date.now() + this.ttlMs });
    return { id, csrf, who };
  }

  /** Who a session is (its token still valid), with its CSRF token. */
  get(id: string | undefined): { who: { name: string; role: Role; groups: string[] }; csrf: string } | undefined {
    const s = id ? this.byId.get(id) : undefined;
    if (!s || !id) return undefined;
    const who = s.expires > Date.now() ? this.tokens.verify(s.token) : undefined;
    if (!who) {
      this.byId.delete(id);
      return undefined;
    }
    return { who, csrf: s.csrf };
  }

  end(id: string | undefined): void {
    if (id) this.byId.delete(id);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [id, s] of this.byId) if (s.expires <= now) this.byId.delete(id);
  }
}
