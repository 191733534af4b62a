// `client.webhooks`: the team's webhook endpoints (the executor's /agent/webhooks), which receive
// signed events of its runs, and their deliveries.

import type { EndpointName } from '../../api/index.js';
import type {
  CreateWebhookRequest,
  DeliveryRecord,
  WebhookRecord,
  WebhookWithSecret
} from '../../api/webhooks.js';
import type { ClientCore, EndpointCall } from '../core.js';
import type { CallOptions } from '../poll.js';

export class Webhooks {
  constructor(private readonly core: ClientCore) {}

  async list(options: CallOptions = {}): Promise<WebhookRecord[]> {
    return (await this.core.object<{ webhooks?: WebhookRecord[] }>('listWebhooks', options)).webhooks ?? [];
  }

  get(webhookId: string, options: CallOptions = {}): Promise<WebhookRecord> {
    return this.one<WebhookRecord>('getWebhook', webhookId, options);
  }

  /** The answer holds the signing secret, shown only here and on rotation. Not retried (list to find one a lost answer made). */
  create(body: CreateWebhookRequest, options: CallOptions = {}): Promise<WebhookWithSecret> {
    return this.core.object<WebhookWithSecret>('createWebhook', { ...options, json: body, maxRetries: 0 });
  }

  async delete(webhookId: string, options: CallOptions = {}): Promise<void> {
    await this.one('deleteWebhook', webhookId, options);
  }

  /** A new secret; the old one still signs during the executor's rotation grace period. Not retried. */
  rotateSecret(webhookId: string, options: CallOptions = {}): Promise<WebhookWithSecret> {
    return this.one<WebhookWithSecret>('rotateWebhookSecret', webhookId, { ...options, maxRetries: 0 });
  }

  /** The endpoint's deliveries, newest first. */
  async deliveries(webhookId: string, options: CallOptions = {}): Promise<DeliveryRecord[]> {
    const answer = await this.one<{ deliveries?: DeliveryRecord[] }>(
      'listWebhookDeliveries',
      webhookId,
      options
    );
    return answer.deliveries ?? [];
  }

  /** Attempts a delivery once more, now (a disabled endpoint is enabled again). */
  retryDelivery(webhookId: string, deliveryId: string, options: CallOptions = {}): Promise<DeliveryRecord> {
    return this.core.object<DeliveryRecord>('retryWebhookDelivery', {
      ...options,
      params: { webhook_id: webhookId, delivery_id: deliveryId }
    });
  }

  /** A request about one endpoint. */
  private one<T>(name: EndpointName, webhookId: string, call: EndpointCall): Promise<T> {
    return this.core.object<T>(name, { ...call, params: { webhook_id: webhookId } });
  }
}
