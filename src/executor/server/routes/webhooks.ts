// The webhook endpoints (create, list, get, delete, rotate, deliveries, retry), one handler each,
// named in routes/table.ts. A team sees only its own endpoints (another team's id answers 404, as
// an unknown one). The URL is checked here as the deliverer checks it at every attempt
// (webhooks/address.ts): http(s), and, unless webhooks.allow_private_networks, a host that
// resolves to a public address. A secret is shown only in the answers of create and rotate.

import { randomBytes } from 'node:crypto';
import type {
  CreateWebhookRequest,
  DeliveryRecord,
  WebhookRecord,
  WebhookWithSecret
} from '../../../api/webhooks.js';
import { WEBHOOK_EVENT_TYPES } from '../../../api/webhooks.js';
import type { StoredDelivery, StoredWebhook, WebhookStore } from '../../store/webhook-types.js';
import { urlProblem } from '../../webhooks/address.js';
import { newSecret } from '../../webhooks/sign.js';
import { ProblemError } from '../problem.js';
import type { Handler } from './handler.js';

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

/** The team's endpoint with this id, or 404 (another team's answers as an unknown one). */
async function findWebhook(webhooks: WebhookStore, team: string, id: string): Promise<StoredWebhook> {
  const webhook = await webhooks.getWebhook(team, id);
  if (!webhook) throw notFound(id);
  return webhook;
}

/** A new endpoint of the team from a create body, with a fresh secret. */
function newWebhook(team: string, { url, events, description }: CreateWebhookRequest): StoredWebhook {
  return {
    id: `wh_${randomBytes(12).toString('hex')}`,
    team,
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
}

export const createWebhook: Handler<'createWebhook'> = async (context, request) => {
  const settings = context.settings.webhooks;
  const problem = await urlProblem(request.body.url, settings.allowPrivateNetworks);
  if (problem) throw new ProblemError('invalid_field', problem);
  const webhook = newWebhook(request.principal.team, request.body);
  const limit = settings.maxEndpointsPerTeam;
  if (!(await context.stores.webhooks.createWebhook(webhook, limit)))
    throw new ProblemError(
      'webhook_limit_reached',
      `this team has ${limit} webhook endpoints, the limit of webhooks.max_endpoints_per_team; delete one to add another`
    );
  context.wakeDeliveries();
  return withSecret(webhook);
};

export const listWebhooks: Handler<'listWebhooks'> = async (context, request) => ({
  webhooks: (await context.stores.webhooks.listWebhooks(request.principal.team)).map(webhookRecord)
});

export const getWebhook: Handler<'getWebhook'> = async (context, request) =>
  webhookRecord(
    await findWebhook(context.stores.webhooks, request.principal.team, request.params.webhook_id)
  );

export const deleteWebhook: Handler<'deleteWebhook'> = async (context, request) => {
  const webhooks = context.stores.webhooks;
  const { team } = request.principal;
  const id = request.params.webhook_id;
  if ((await findWebhook(webhooks, team, id)).source === 'config') throw declared(id);
  if (!(await webhooks.deleteWebhook(team, id))) throw notFound(id);
  return { success: true };
};

export const rotateWebhookSecret: Handler<'rotateWebhookSecret'> = async (context, request) => {
  const webhooks = context.stores.webhooks;
  const { team } = request.principal;
  const id = request.params.webhook_id;
  if ((await findWebhook(webhooks, team, id)).source === 'config') throw declared(id);
  const until = Date.now() + context.settings.webhooks.rotationGraceMs;
  if (!(await webhooks.rotateSecret(team, id, newSecret(), until))) throw notFound(id);
  return withSecret(await findWebhook(webhooks, team, id));
};

export const listWebhookDeliveries: Handler<'listWebhookDeliveries'> = async (context, request) => {
  const webhooks = context.stores.webhooks;
  const webhook = await findWebhook(webhooks, request.principal.team, request.params.webhook_id);
  return {
    deliveries: (await context.stores.deliveries.listDeliveries(webhook.id, DELIVERY_PAGE)).map(
      deliveryRecord
    )
  };
};

export const retryWebhookDelivery: Handler<'retryWebhookDelivery'> = async (context, request) => {
  const webhooks = context.stores.webhooks;
  const { team } = request.principal;
  const { webhook_id: id, delivery_id: deliveryId } = request.params;
  await findWebhook(webhooks, team, id);
  if (!(await context.stores.deliveries.retryDelivery(team, id, deliveryId)))
    throw new ProblemError(
      'not_found',
      `delivery ${JSON.stringify(deliveryId)} of webhook ${JSON.stringify(id)} does not exist`
    );
  context.wakeDeliveries();
  const delivery = await context.stores.deliveries.getDelivery(id, deliveryId);
  if (!delivery) throw notFound(id);
  return deliveryRecord(delivery);
};
