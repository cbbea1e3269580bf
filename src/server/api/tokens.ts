/**
 * What belongs to a token: the API tokens themselves (an admin's; a token is shown once, then only
 * its hash is kept) and the Web Push subscriptions of an approver or admin (S7). Never lists a token's
 * secret, a subscription's whole endpoint or its keys; every change is audited.
 */
import { z } from 'zod';
import {
  MAX_SUBSCRIPTIONS_PER_OWNER as MAX_SUBSCRIPTIONS,
  PushInfoSchema,
  PushSubscribeBody,
  PushSubscriptionSchema,
} from '../alerts/push.js';
import * as S from '../http/schemas.js';
import type { Api } from './context.js';
import { json } from './route.js';

/** Declares the token routes, then the push routes. */
export function tokenRoutes(api: Api): void {
  const { d, route, audit, push } = api;
  const { tokens } = d;

  route(
    {
      method: 'get',
      path: '/v1/tokens',
      summary: 'The API tokens (never the tokens themselves)',
      role: 'admin',
      ok: { status: 200, description: 'the tokens', schema: S.TokenListSchema },
      errors: [401, 403],
    },
    (c) => json(c, 200, { tokens: tokens.list() }),
  );

  route(
    {
      method: 'post',
      path: '/v1/tokens',
      summary: 'Make a token (shown once)',
      role: 'admin',
      body: S.TokenBody,
      ok: { status: 201, description: 'the token, shown this once', schema: S.TokenCreatedSchema },
      errors: [400, 401, 403, 409, 415],
    },
    async (c, { body, who }) => {
      const t = tokens.create(body.name, body.role, new Date(), body.groups ?? []);
      await audit(who, 'create_token', t.id, JSON.stringify(body));
      return json(c, 201, t);
    },
  );

  route(
    {
      method: 'delete',
      path: '/v1/tokens/:id',
      summary: 'Revoke a token (by id or name): it stops working at once',
      role: 'admin',
      ok: { status: 200, description: 'the revoked token', schema: S.TokenSchema },
      errors: [401, 403, 404],
    },
    async (c, { who }) => {
      const t = tokens.revoke(c.req.param('id') as string);
      await audit(who, 'revoke_token', t.id, t.name);
      return json(c, 200, t);
    },
  );

  // S7: Web Push. Subscriptions are an approver's or admin's own (they answer cards); src/server/alerts/push-message.ts says what is sent.
  route(
    {
      method: 'get',
      path: '/v1/push',
      summary: 'Web Push: whether it is on, and the VAPID public key a browser subscribes with (made on first use)',
      role: 'approver',
      ok: { status: 200, description: 'push on this server', schema: PushInfoSchema },
      errors: [401, 403],
    },
    async (c) => json(c, 200, await push.info()),
  );

  route(
    {
      method: 'get',
      path: '/v1/push/subscriptions',
      summary: "The caller's push subscriptions (an admin with ?all=1: everyone's); never their endpoints whole nor their keys",
      role: 'approver',
      query: z.object({ all: z.enum(['0', '1']).optional() }),
      ok: { status: 200, description: 'the subscriptions', schema: z.object({ subscriptions: z.array(PushSubscriptionSchema) }) },
      errors: [400, 401, 403],
    },
    async (c, { query, who }) => json(c, 200, { subscriptions: await push.list(who, query.all === '1') }),
  );

  route(
    {
      method: 'post',
      path: '/v1/push/subscriptions',
      summary: `Subscribe a browser (its PushSubscription.toJSON(), and a label) to a push for each new card or question; at most ${MAX_SUBSCRIPTIONS} a token`,
      role: 'approver',
      body: PushSubscribeBody,
      ok: { status: 201, description: 'subscribed (200 when the endpoint was already: its keys renewed)', schema: PushSubscriptionSchema },
      errors: [400, 401, 403, 409, 415, 422],
    },
    async (c, { body, who }) => {
      const r = await push.subscribe(who, body);
      await audit(
        who,
        'push_subscribe',
        r.subscription.id,
        JSON.stringify({ service: r.subscription.service, label: r.subscription.label, status: r.status }),
      );
      return json(c, r.status === 'added' ? 201 : 200, r.subscription);
    },
  );

  route(
    {
      method: 'delete',
      path: '/v1/push/subscriptions/:id',
      summary: "Revoke a push subscription: the caller's own (an admin: anyone's); nothing more is sent to it",
      role: 'approver',
      ok: { status: 200, description: 'the revoked subscription', schema: PushSubscriptionSchema },
      errors: [401, 403, 404],
    },
    async (c, { who }) => {
      const gone = await push.revoke(who, c.req.param('id') as string);
      await audit(who, 'push_unsubscribe', gone.id, JSON.stringify({ service: gone.service, owner: gone.owner }));
      return json(c, 200, gone);
    },
  );
}
