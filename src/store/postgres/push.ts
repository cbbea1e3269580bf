/**
 * The PostgreSQL store's Web Push (S7): the VAPID key pair, made once and kept, and the browsers'
 * subscriptions. Never holds more subscriptions for one owner than its bound, even under races.
 */
import type { PushSubscriptionRecord, VapidKeys } from '../../types/index.js';
import type { PgPool } from './pool.js';

export async function pushKeys(db: PgPool, candidate?: VapidKeys): Promise<VapidKeys | undefined> {
  const read = async () => (await db.q<VapidKeys>('SELECT public_key, private_key, created_at FROM push_keys WHERE id = 1')).rows[0];
  const kept = await read();
  if (kept || !candidate) return kept;
  await db.q('INSERT INTO push_keys (id, public_key, private_key, created_at) VALUES (1, $1, $2, $3) ON CONFLICT (id) DO NOTHING', [
    candidate.public_key,
    candidate.private_key,
    candidate.created_at,
  ]);
  return read();
}

export async function addPushSubscription(
  db: PgPool,
  sub: PushSubscriptionRecord,
  max: number,
): Promise<{ status: 'added' | 'updated' | 'full'; subscription?: PushSubscriptionRecord }> {
  const cols = 'id, owner, owner_id, endpoint, p256dh, auth, label, created_at';
  return db.transaction(async (c) => {
    // One owner's subscriptions are counted and added one caller at a time (the bound holds under races).
    await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`keel_push:${sub.owner_id}`]);
    const had = await c.query<PushSubscriptionRecord>(
      `UPDATE push_subscriptions SET p256dh = $1, auth = $2, label = $3, owner = $4 WHERE owner_id = $5 AND endpoint = $6 RETURNING ${cols}`,
      [sub.p256dh, sub.auth, sub.label, sub.owner, sub.owner_id, sub.endpoint],
    );
    if (had.rows[0]) return { status: 'updated' as const, subscription: had.rows[0] };
    const n = Number((await c.query('SELECT COUNT(*) AS n FROM push_subscriptions WHERE owner_id = $1', [sub.owner_id])).rows[0].n);
    if (n >= max) return { status: 'full' as const };
    const added = await c.query<PushSubscriptionRecord>(
      `INSERT INTO push_subscriptions (${cols}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${cols}`,
      [sub.id, sub.owner, sub.owner_id, sub.endpoint, sub.p256dh, sub.auth, sub.label, sub.created_at],
    );
    return { status: 'added' as const, subscription: added.rows[0] };
  });
}

export async function listPushSubscriptions(db: PgPool, ownerId?: string): Promise<PushSubscriptionRecord[]> {
  const cols = 'id, owner, owner_id, endpoint, p256dh, auth, label, created_at';
  const r =
    ownerId === undefined
      ? await db.q<PushSubscriptionRecord>(`SELECT ${cols} FROM push_subscriptions ORDER BY created_at, ord`)
      : await db.q<PushSubscriptionRecord>(`SELECT ${cols} FROM push_subscriptions WHERE owner_id = $1 ORDER BY created_at, ord`, [
          ownerId,
        ]);
  return r.rows;
}

export async function removePushSubscription(db: PgPool, id: string): Promise<boolean> {
  return (await db.q('DELETE FROM push_subscriptions WHERE id = $1', [id])).rowCount === 1;
}
