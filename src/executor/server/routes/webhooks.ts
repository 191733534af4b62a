// The webhook endpoints (create, list, get, delete, rotate, deliveries, retry) as a handler map for
// register.ts. A team sees only its own endpoints (another team's id answers 404, as an unknown
// one). The URL is checked here as the deliverer checks it at every attempt (webhooks/address.ts):
// http(s), and, unless webhooks.allow_private_networks, a host that resolves to a public address.
// A secret is shown only in the answers of create and rotate.

import { randomBytes } from 'node:crypto';
import type { DeliveryRecord, WebhookRecord, WebhookWithSecret } from '../../../api/webhooks.js';
import { WEBHOOK_EVENT_TYPES } from '../../../api/webhooks.js';
import type { StoredDelivery, StoredWebhook } from '../../store/webhook-types.js';
import { urlProblem } from '../../webhooks/address.js';
import { newSecret } from '../../webhooks/sign.js';
import type { ServerContext } from '../context.js';
import { ProblemError } from '../problem.js';
import type { Handlers } from './register.js';

/** Deliveries a log answer shows. */
const DELIVERY_PAGE = 100;

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export function webhookRecord(webhook: StoredWebhook): WebhookRecord {
  return {
    id: webhook.id,
    url: webhook.url,
    events: webhook.events ?? [...WEBHOOK_EVENT_TYPES],
    description: webhook.description,
    created_at: webhook.created_at,
    source: webhook.source,
    disabled_at: webhook.disabled_at,
    disabled_reason: webhook.disabled_reason
  };
}

function withSecret(webhook: StoredWebhook): WebhookWithSecret {
  const { disabled_at: _at, disabled_reason: _reason, ...record } = webhookRecord(webhook);
  return { ...record, secret: webhook.secret };
}

export function deliveryRecord(delivery: StoredDelivery): DeliveryRecord {
  return {
    id: delivery.id,
    event_type: delivery.event_type,
    run_id: delivery.run_id,
    created_at: delivery.created_at,
    status: delivery.status,
    attempts: delivery.attempts,
    last_status: delivery.last_status,
    last_error: delivery.last_error,
    last_attempt_at: delivery.last_attempt_at,
    next_attempt_at: delivery.status === 'pending' ? iso(delivery.next_attempt_ms) : null
  };
}

function notFound(id: string): ProblemError {
  return new ProblemError('not_found', `webhook ${JSON.stringify(id)} does not exist`);
}

function declared(id: string): ProblemError {
  return new ProblemError(
    'webhook_declared_in_config',
    `webhook ${JSON.stringify(id)} is declared in the executor's configuration file (webhooks.endpoints); change it there`
  );
}

export function webhookHandlers(
  context: ServerContext
): Handlers<
  | 'createWebhook'
  | 'listWebhooks'
  | 'getWebhook'
  | 'deleteWebhook'
  | 'rotateWebhookSecret'
  | 'listWebhookDeliveries'
  | 'retryWebhookDelivery'
> {
  const webhooks = context.store.webhooks;
  const settings = context.config.webhooks;

  async function find(team: string, id: string): Promise<StoredWebhook> {
    const webhook = await webhooks.getWebhook(team, id);
    if (!webhook) throw notFound(id);
    return webhook;
  }

  return {
    createWebhook: async request => {
      const { url, events, description } = request.body;
      const problem = await urlProblem(url, settings.allowPrivateNetworks);
      if (problem) throw new ProblemError('invalid_field', problem);
      const webhook: StoredWebhook = {
        id: `wh_${randomBytes(12).toString('hex')}`,
        team: request.principal.team,
        url,
        events: events === undefined ? null : [...new Set(events)],
        description: description ?? '',
        secret: newSecret(),
        previous_secret: null,
        previous_until_ms: null,
        source: 'api',
        created_at: new Date().toISOString(),
        disabled_at: null,
        disabled_reason: null
      };
      const limit = settings.maxEndpointsPerTeam;
      if (!(await webhooks.createWebhook(webhook, limit)))
        throw new ProblemError(
          'webhook_limit_reached',
          `this team has ${limit} webhook endpoints, the limit of webhooks.max_endpoints_per_team; delete one to add another`
        );
      context.wakeDeliveries();
      return withSecret(webhook);
    },

    listWebhooks: async request => ({
      webhooks: (await webhooks.listWebhooks(request.principal.team)).map(webhookRecord)
    }),

    getWebhook: async request => webhookRecord(await find(request.principal.team, request.params.webhook_id)),

    deleteWebhook: async request => {
      const { team } = request.principal;
      const id = request.params.webhook_id;
      if ((await find(team, id)).source === 'config') throw declared(id);
      if (!(await webhooks.deleteWebhook(team, id))) throw notFound(id);
      return { success: true };
    },

    rotateWebhookSecret: async request => {
      const { team } = request.principal;
      const id = request.params.webhook_id;
      if ((await find(team, id)).source === 'config') throw declared(id);
      const until = Date.now() + settings.rotationGraceMs;
      if (!(await webhooks.rotateSecret(team, id, newSecret(), until))) throw notFound(id);
      return withSecret(await find(team, id));
    },

    listWebhookDeliveries: async request => {
      const webhook = await find(request.principal.team, request.params.webhook_id);
      return { deliveries: (await webhooks.listDeliveries(webhook.id, DELIVERY_PAGE)).map(deliveryRecord) };
    },

    retryWebhookDelivery: async request => {
      const { team } = request.principal;
      const { webhook_id: id, delivery_id: deliveryId } = request.params;
      await find(team, id);
      if (!(await webhooks.retryDelivery(team, id, deliveryId)))
        throw new ProblemError(
          'not_found',
          `delivery ${JSON.stringify(deliveryId)} of webhook ${JSON.stringify(id)} does not exist`
        );
      context.wakeDeliveries();
      const delivery = await webhooks.getDelivery(id, deliveryId);
      if (!delivery) throw notFound(id);
      return deliveryRecord(delivery);
    }
  };
}
