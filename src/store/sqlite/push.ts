/**
 * The SQLite store's Web Push keeping (S7): the VAPID key pair, made once and kept, and the browsers'
 * subscriptions, each owned by a token. Never lets an owner past the cap: the count and the insert
 * are one IMMEDIATE transaction, holding the file's write lock together, across processes too.
 */
import type { PushSubscriptionRecord, VapidKeys } from '../../types/index.js';
import { write } from './journal.js';
import type { SqliteState } from './state.js';

export async function pushKeys(st: SqliteState, candidate?: VapidKeys): Promise<VapidKeys | undefined> {
  const read = () => st.db.prepare('SELECT public_key, private_key, created_at FROM push_keys WHERE id = 1').get() as VapidKeys | undefined;
  const kept = read();
  if (kept || !candidate) return kept;
  return write(st, () => {
    st.db
      .prepare('INSERT OR IGNORE INTO push_keys (id, public_key, private_key, created_at) VALUES (1, ?, ?, ?)')
      .run(candidate.public_key, candidate.private_key, candidate.created_at);
    return read();
  });
}

export async function addPushSubscription(
  st: SqliteState,
  sub: PushSubscriptionRecord,
  max: number,
): Promise<{ status: 'added' | 'updated' | 'full'; subscription?: PushSubscriptionRecord }> {
  const one = (owner_id: string, endpoint: string) =>
    st.db.prepare('SELECT * FROM push_subscriptions WHERE owner_id = ? AND endpoint = ?').get(owner_id, endpoint) as
      | PushSubscriptionRecord
      | undefined;
  return write(st, () =>
    // IMMEDIATE: the count and the insert hold the write lock together, across processes too.
    st.db
      .transaction(() => {
        const had = one(sub.owner_id, sub.endpoint);
        if (had) {
          st.db
            .prepare('UPDATE push_subscriptions SET p256dh = ?, auth = ?, label = ?, owner = ? WHERE id = ?')
            .run(sub.p256dh, sub.auth, sub.label, sub.owner, had.id);
          return { status: 'updated' as const, subscription: one(sub.owner_id, sub.endpoint) };
        }
        const count = st.db.prepare('SELECT COUNT(*) AS n FROM push_subscriptions WHERE owner_id = ?');
        const { n } = count.get(sub.owner_id) as { n: number };
        if (n >= max) return { status: 'full' as const };
        st.db
          .prepare(
            'INSERT INTO push_subscriptions (id, owner, owner_id, endpoint, p256dh, auth, label, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
          )
          .run(sub.id, sub.owner, sub.owner_id, sub.endpoint, sub.p256dh, sub.auth, sub.label, sub.created_at);
        return { status: 'added' as const, subscription: one(sub.owner_id, sub.endpoint) };
      })
      .immediate(),
  );
}

export async function listPushSubscriptions(st: SqliteState, ownerId?: string): Promise<PushSubscriptionRecord[]> {
  const rows =
    ownerId === undefined
      ? st.db.prepare('SELECT * FROM push_subscriptions ORDER BY created_at, rowid').all()
      : st.db.prepare('SELECT * FROM push_subscriptions WHERE owner_id = ? ORDER BY created_at, rowid').all(ownerId);
  return rows as PushSubscriptionRecord[];
}

export async function removePushSubscription(st: SqliteState, id: string): Promise<boolean> {
  return write(st, () => st.db.prepare('DELETE FROM push_subscriptions WHERE id = ?').run(id).changes === 1);
}
