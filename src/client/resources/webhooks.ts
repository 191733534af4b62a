// `client.webhooks`: the team's webhook endpoints (the executor's /agent/webhooks), which receive
// signed events of its runs, and their deliveries.

import type {
  CreateWebhookRequest,
  DeliveryRecord,
  WebhookRecord,
  WebhookWithSecret
} from '../../api/webhooks.js';
import type { ClientCore } from '../core.js';
import type { CallOptions } from '../poll.js';

export class Webhooks {
  constructor(private readonly core: ClientCore) {}

  async list(options: CallOptions = {}): Promise<WebhookRecord[]> {
    const body = await this.core.object('listWebhooks', options);
    return (body as { webhooks?: WebhookRecord[] }).webhooks ?? [];
  }

  async get(webhookId: string, options: CallOptions = {}): Promise<WebhookRecord> {
    return (await this.core.object('getWebhook', {
      ...options,
      params: { webhook_id: webhookId }
    })) as WebhookRecord;
  }

  /** The answer holds the signing secret, shown only here and on rotation. Not retried (list to find one a lost answer made). */
  async create(body: CreateWebhookRequest, options: CallOptions = {}): Promise<WebhookWithSecret> {
    return (await this.core.object('createWebhook', {
      ...options,
      json: body,
      maxRetries: 0
    })) as WebhookWithSecret;
  }

  async delete(webhookId: string, options: CallOptions = {}): Promise<void> {
    await this.core.object('deleteWebhook', { ...options, params: { webhook_id: webhookId } });
  }

  /** A new secret; the old one still signs during the executor's rotation grace period. Not retried. */
  async rotateSecret(webhookId: string, options: CallOptions = {}): Promise<WebhookWithSecret> {
    return (await this.core.object('rotateWebhookSecret', {
      ...options,
      params: { webhook_id: webhookId },
      maxRetries: 0
    })) as WebhookWithSecret;
  }

  /** The endpoint's deliveries, newest first. */
  async deliveries(webhookId: string, options: CallOptions = {}): Promise<DeliveryRecord[]> {
    const body = await this.core.object('listWebhookDeliveries', {
      ...options,
      params: { webhook_id: webhookId }
    });
    return (body as { deliveries?: DeliveryRecord[] }).deliveries ?? [];
  }

  /** Attempts a delivery once more, now (a disabled endpoint is enabled again). */
  async retryDelivery(
    webhookId: string,
    deliveryId: string,
    options: CallOptions = {}
  ): Promise<DeliveryRecord> {
    return (await this.core.object('retryWebhookDelivery', {
      ...options,
      params: { webhook_id: webhookId, delivery_id: deliveryId }
    })) as DeliveryRecord;
  }
}
